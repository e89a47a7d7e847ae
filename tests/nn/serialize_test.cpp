// nn::save / nn::load and Module::load_state_dict: round trips bit for bit, names as PyTorch's
// state_dict keys, and errors for missing, unexpected and mis-shaped tensors.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "minidl/core/safetensors.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_modules.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::ConvNet;
using testing::TinyNet;

// A file in the temporary directory named after the running test, removed afterwards.
class TempFile {
 public:
  TempFile() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("minidl_") + info->test_suite_name() + "_" + info->name() + "_" +
             std::to_string(::getpid()) + ".safetensors");
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every tensor of the state dict, as doubles, in order.
std::vector<std::vector<double>> state_values(const nn::Module& module) {
  std::vector<std::vector<double>> values;
  for (const auto& item : module.state_dict()) values.push_back(to_vector<double>(item.value()));
  return values;
}

TEST(Serialize, SaveThenLoadIntoAFreshModelGivesIdenticalOutputs) {
  TempFile file;
  manual_seed(1);
  ConvNet trained;
  trained(randn({4, 2, 5, 5}));  // one training-mode batch: running statistics move
  trained->eval();
  nn::save(trained, file.path());

  manual_seed(2);  // different initial values
  ConvNet fresh;
  ASSERT_NE(state_values(*trained), state_values(*fresh));
  const Tensor conv_weight_alias = fresh->conv->weight;  // as an optimizer would hold it
  nn::load(fresh, file.path());
  fresh->eval();

  EXPECT_EQ(state_values(*fresh), state_values(*trained));
  EXPECT_EQ(fresh->bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_TRUE(conv_weight_alias.is_same(fresh->conv->weight));
  Tensor x = randn({3, 2, 5, 5});
  EXPECT_TRUE(testing::all_close(fresh(x), trained(x), 0, 0));  // bit for bit
  for (const Tensor& parameter : fresh->parameters()) {
    EXPECT_TRUE(parameter.requires_grad());
    EXPECT_TRUE(parameter.is_leaf());
  }
}

TEST(Serialize, FileHoldsTheStateDictUnderPyTorchNames) {
  TempFile file;
  ConvNet net;
  nn::save(net, file.path());
  const serialize::SafetensorsContents contents = serialize::read_safetensors(file.path());
  std::vector<std::string> names;
  for (const auto& [name, tensor] : contents.tensors) names.push_back(name);
  EXPECT_EQ(names, net->state_dict().keys());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                       "bn.num_batches_tracked", "head.1.weight", "head.1.bias"}));
  const Tensor* weight = contents.find("head.1.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->sizes(), net->head->at<nn::LinearImpl>(1).weight.sizes());
  EXPECT_EQ(contents.find("bn.num_batches_tracked")->dtype(), kInt64);
}

TEST(Serialize, LoadKeepsTheModulesDtype) {
  TempFile file;
  TinyNet source;
  nn::save(source, file.path());
  TinyNet target;
  target->to(kFloat64);
  nn::load(target, file.path());
  EXPECT_EQ(target->fc1->weight.dtype(), kFloat64);
  EXPECT_EQ(to_vector<double>(target->fc1->weight), to_vector<double>(source->fc1->weight));
}

TEST(Serialize, MissingAndUnexpectedKeysAreListed) {
  TempFile file;
  nn::Sequential small{nn::Linear(4, 3)};
  nn::save(small, file.path());

  nn::Sequential larger{nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2)};
  EXPECT_ERROR_CONTAINS(nn::load(larger, file.path()), "Missing key(s): \"2.weight\", \"2.bias\".");
  EXPECT_ERROR_CONTAINS(nn::load(larger, file.path()), file.path().string());

  struct RenamedImpl : nn::Module {
    RenamedImpl() { layer = register_module("layer", nn::Linear(4, 3)); }
    nn::Linear layer{nullptr};
  };
  auto renamed = std::make_shared<RenamedImpl>();
  try {
    nn::load(*renamed, file.path());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("error(s) in loading the state dict of Renamed"), std::string::npos)
        << message;
    EXPECT_NE(message.find("Missing key(s): \"layer.weight\", \"layer.bias\"."), std::string::npos)
        << message;
    EXPECT_NE(message.find("Unexpected key(s): \"0.weight\", \"0.bias\"."), std::string::npos)
        << message;
  }
}

TEST(Serialize, WrongShapesAreErrorsEvenWhenNotStrict) {
  TempFile file;
  nn::Sequential saved{nn::Linear(4, 3)};
  nn::save(saved, file.path());
  nn::Sequential other{nn::Linear(5, 3)};
  const std::vector<std::vector<double>> before = state_values(*other);
  EXPECT_ERROR_CONTAINS(nn::load(other, file.path()),
                        "size mismatch for 0.weight: the checkpoint has shape [3, 4], the module "
                        "has shape [3, 5]");
  EXPECT_ERROR_CONTAINS(nn::load(other, file.path(), /*strict=*/false),
                        "size mismatch for 0.weight");
  // Checked before anything is copied: 0.bias has the right shape but was not loaded either.
  EXPECT_EQ(state_values(*other), before);
}

TEST(Serialize, NonStrictLoadsWhatMatchesAndIgnoresTheRest) {
  TempFile file;
  nn::Sequential saved{nn::Linear(4, 3), nn::Tanh(), nn::Linear(3, 3)};
  nn::save(saved, file.path());
  // Shares "0.*" with the file, lacks "2.*" (unexpected) and has "extra.*" (missing).
  struct PartialImpl : nn::Module {
    PartialImpl() {
      first = register_module("0", nn::Linear(4, 3));
      extra = register_module("extra", nn::Linear(2, 2));
    }
    nn::Linear first{nullptr}, extra{nullptr};
  };
  auto partial = std::make_shared<PartialImpl>();
  const std::vector<double> extra_before = to_vector<double>(partial->extra->weight);
  EXPECT_ERROR_CONTAINS(nn::load(*partial, file.path()), "Missing key(s): \"extra.weight\"");
  EXPECT_ERROR_CONTAINS(nn::load(*partial, file.path()), "Unexpected key(s): \"2.weight\"");
  nn::load(*partial, file.path(), /*strict=*/false);
  EXPECT_EQ(to_vector<double>(partial->first->weight),
            to_vector<double>(saved->at<nn::LinearImpl>(0).weight));
  EXPECT_EQ(to_vector<double>(partial->first->bias),
            to_vector<double>(saved->at<nn::LinearImpl>(0).bias));
  EXPECT_EQ(to_vector<double>(partial->extra->weight), extra_before);
}

TEST(Serialize, LoadStateDictWorksWithoutAFile) {
  TinyNet source, target;
  target->load_state_dict(source->state_dict());
  EXPECT_EQ(state_values(*target), state_values(*source));
  nn::Module::NamedTensors partial = source->state_dict();
  partial.insert("unknown", zeros({1}));
  EXPECT_ERROR_CONTAINS(target->load_state_dict(partial), "Unexpected key(s): \"unknown\".");
  target->load_state_dict(partial, /*strict=*/false);
}

TEST(Serialize, ErrorsFromTheFileNameIt) {
  TinyNet net;
  EXPECT_ERROR_CONTAINS(nn::load(net, "/nonexistent/dir/model.safetensors"), "model.safetensors");
}

}  // namespace
}  // namespace minidl
