// models::LeNet: size, names, shapes, gradients, both variants, and a checkpoint round trip.
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/models/models.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "model_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::parameter_count;

TEST(LeNet, Has61706Parameters) {
  EXPECT_EQ(parameter_count(*models::LeNet()), 61706);
  EXPECT_EQ(parameter_count(*models::LeNet(models::LeNetOptions().classic(true))), 61706);
}

TEST(LeNet, ParameterNamesAndShapes) {
  models::LeNet net;
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  for (const auto& item : net->named_parameters()) {
    names.push_back(item.key());
    shapes.push_back(item.value().sizes());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight",
                                             "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight",
                                             "fc2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(shapes[0], (Shape{6, 1, 5, 5}));
  EXPECT_EQ(shapes[2], (Shape{16, 6, 5, 5}));
  EXPECT_EQ(shapes[4], (Shape{120, 400}));
  EXPECT_EQ(shapes[8], (Shape{10, 84}));
  EXPECT_TRUE(net->buffers().empty());
}

TEST(LeNet, OutputsOneLogitPerClass) {
  models::LeNet net;
  EXPECT_EQ(net(randn({5, 1, 28, 28})).sizes(), (Shape{5, 10}));
  models::LeNet classic(models::LeNetOptions().classic(true).num_classes(26));
  EXPECT_EQ(classic(randn({2, 1, 28, 28})).sizes(), (Shape{2, 26}));
  EXPECT_ERROR_CONTAINS(net(randn({2, 3, 32, 32})),
                        "LeNet: expected input of shape [N, 1, 28, 28], got [2, 3, 32, 32]");
}

TEST(LeNet, ClassicVariantUsesSigmoidAndAveragePooling) {
  manual_seed(3);
  models::LeNet modern;
  manual_seed(3);
  models::LeNet classic(models::LeNetOptions().classic(true));
  // Same weights (same seed), different activation and pooling: different outputs.
  Tensor x = randn({2, 1, 28, 28});
  EXPECT_FALSE(testing::all_close(modern(x), classic(x), 1e-3, 1e-3));
  // The printed tree names the variant.
  std::ostringstream printed;
  printed << classic;
  EXPECT_NE(printed.str().find(
                "LeNet(num_classes=10, activation=sigmoid, pooling=average)  # 61,706 parameters"),
            std::string::npos)
      << printed.str();
  std::ostringstream printed_modern;
  printed_modern << modern;
  EXPECT_NE(printed_modern.str().find("activation=relu, pooling=max"), std::string::npos);
  EXPECT_NE(printed_modern.str().find(
                "  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))  # 156 "
                "parameters: weight [6, 1, 5, 5], bias [6]"),
            std::string::npos)
      << printed_modern.str();
}

TEST(LeNet, GradientReachesEveryParameter) {
  for (bool classic : {false, true}) {
    models::LeNet net(models::LeNetOptions().classic(classic));
    Tensor logits = net(randn({4, 1, 28, 28}));
    Tensor loss = nn::functional::cross_entropy(logits, tensor(std::vector<int64_t>{1, 0, 9, 3}));
    loss.backward();
    for (const auto& item : net->named_parameters()) {
      const Tensor grad = item.value().grad();
      ASSERT_TRUE(grad.defined()) << item.key();
      EXPECT_EQ(grad.sizes(), item.value().sizes()) << item.key();
      EXPECT_GT(max(abs(grad)).item<float>(), 0.0f) << item.key() << (classic ? " (classic)" : "");
    }
  }
}

TEST(LeNet, SaveAndLoadReproduceTheOutputsBitForBit) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("minidl_lenet_" + std::to_string(::getpid()) + ".safetensors");
  manual_seed(10);
  models::LeNet trained;
  nn::save(trained, path);
  manual_seed(20);
  models::LeNet fresh;
  Tensor x = randn({3, 1, 28, 28});
  EXPECT_FALSE(testing::all_close(fresh(x), trained(x), 1e-3, 1e-3));
  nn::load(fresh, path);
  std::filesystem::remove(path);
  EXPECT_TRUE(testing::all_close(fresh(x), trained(x), 0, 0));
}

}  // namespace
}  // namespace minidl
