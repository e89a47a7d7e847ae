// models::ResNet18 and models::ResNet20: sizes, names, shapes, gradients, and the two kinds of
// shortcut.
#include <cmath>
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

bool has_parameter(const nn::Module& module, const std::string& name) {
  return module.named_parameters().contains(name);
}

// Building ResNet-18 fills 11 million parameters, so the tests of the default model share one.
class ResNet18Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { net_ = models::ResNet18(); }
  static void TearDownTestSuite() { net_ = nullptr; }
  static inline models::ResNet18 net_{nullptr};
};

TEST_F(ResNet18Test, Has11173962ParametersForCifar10) {
  EXPECT_EQ(parameter_count(*net_), 11173962);
}

TEST(ResNet18, InChannelsAndNumClassesChangeOnlyTheStemAndTheHead) {
  models::ResNet18 gray(models::ResNetOptions().in_channels(1).num_classes(100));
  const int64_t stem_difference = 64 * (3 - 1) * 3 * 3;    // conv1 weight [64, C, 3, 3]
  const int64_t head_difference = (512 + 1) * (100 - 10);  // fc weight and bias
  EXPECT_EQ(parameter_count(*gray), 11173962 - stem_difference + head_difference);
  EXPECT_EQ(gray->conv1->weight.sizes(), (Shape{64, 1, 3, 3}));
  EXPECT_EQ(gray->fc->weight.sizes(), (Shape{100, 512}));
}

TEST_F(ResNet18Test, NamesFollowTorchvision) {
  const models::ResNet18& net = net_;
  for (const char* name :
       {"conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "layer1.1.bn2.bias",
        "layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight", "layer4.1.conv2.weight",
        "fc.weight", "fc.bias"})
    EXPECT_TRUE(has_parameter(*net, name)) << name;
  EXPECT_FALSE(has_parameter(*net, "layer1.0.downsample.0.weight"));  // same shape: identity
  EXPECT_FALSE(has_parameter(*net, "conv1.bias"));                    // batch norm follows
  const auto buffers = net->named_buffers();
  EXPECT_TRUE(buffers.contains("layer3.0.downsample.1.running_var"));
  EXPECT_TRUE(buffers.contains("bn1.num_batches_tracked"));
}

TEST_F(ResNet18Test, OutputsOneLogitPerClassAndGradientsReachEveryParameter) {
  const models::ResNet18& net = net_;
  Tensor logits = net(randn({2, 3, 32, 32}));
  EXPECT_EQ(logits.sizes(), (Shape{2, 10}));
  nn::functional::cross_entropy(logits, tensor(std::vector<int64_t>{3, 7})).backward();
  for (const auto& item : net->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(max(abs(item.value().grad())).item<float>(), 0.0f) << item.key();
  }
  net->eval();
  EXPECT_EQ(net(randn({1, 3, 32, 32})).sizes(), (Shape{1, 10}));
}

TEST(ResNet20, Has269722Parameters) { EXPECT_EQ(parameter_count(*models::ResNet20()), 269722); }

TEST(ResNet20, ShortcutsHaveNoParameters) {
  models::ResNet20 net;
  for (const auto& item : net->named_parameters())
    EXPECT_EQ(item.key().find("downsample"), std::string::npos) << item.key();
  for (const char* name : {"conv1.weight", "layer1.2.conv2.weight", "layer2.0.conv1.weight",
                           "layer3.2.bn2.bias", "fc.weight"})
    EXPECT_TRUE(has_parameter(*net, name)) << name;
  EXPECT_FALSE(has_parameter(*net, "layer4.0.conv1.weight"));  // three stages only
  EXPECT_EQ(net->stages.size(), 3u);
}

TEST(ResNet20, OutputsOneLogitPerClassAndGradientsReachEveryParameter) {
  models::ResNet20 net;
  Tensor logits = net(randn({4, 3, 32, 32}));
  EXPECT_EQ(logits.sizes(), (Shape{4, 10}));
  nn::functional::cross_entropy(logits, tensor(std::vector<int64_t>{0, 1, 2, 3})).backward();
  for (const auto& item : net->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(max(abs(item.value().grad())).item<float>(), 0.0f) << item.key();
  }
}

TEST(BasicBlock, ZeroPadShortcutSubsamplesAndAddsZeroChannels) {
  models::BasicBlock block(
      models::BasicBlockOptions(2, 6).stride(2).shortcut(models::ShortcutKind::ZeroPad));
  EXPECT_TRUE(block->downsample.is_empty());
  // With the residual branch silenced (conv weights zero, so batch norm sees zeros and gives
  // its bias 0), the block is relu(shortcut(x)).
  nn::init::zeros_(block->conv1->weight);
  nn::init::zeros_(block->conv2->weight);
  Tensor x = rand({1, 2, 4, 4}) + 0.5;  // positive, so the final relu keeps it
  Tensor out = block(x);
  ASSERT_EQ(out.sizes(), (Shape{1, 6, 2, 2}));
  const Tensor sampled = x.slice(2, 0, 4, 2).slice(3, 0, 4, 2);
  // (6 - 2) = 4 zero channels: 2 before and 2 after the input's 2.
  EXPECT_TRUE(testing::all_close(out.slice(1, 2, 4), sampled, 1e-6, 0));
  EXPECT_EQ(max(abs(out.slice(1, 0, 2))).item<float>(), 0.0f);
  EXPECT_EQ(max(abs(out.slice(1, 4, 6))).item<float>(), 0.0f);
}

TEST(BasicBlock, ProjectionShortcutIsA1x1ConvolutionAndBatchNorm) {
  models::BasicBlock block(models::BasicBlockOptions(4, 8).stride(2));
  ASSERT_FALSE(block->downsample.is_empty());
  EXPECT_EQ(block->downsample->at<nn::Conv2dImpl>(0).weight.sizes(), (Shape{8, 4, 1, 1}));
  EXPECT_EQ(block->downsample->at<nn::BatchNorm2dImpl>(1).options.num_features(), 8);
  EXPECT_EQ(block(randn({2, 4, 8, 8})).sizes(), (Shape{2, 8, 4, 4}));
  models::BasicBlock same_shape(models::BasicBlockOptions(4, 4));
  EXPECT_TRUE(same_shape->downsample.is_empty());
}

TEST(ResNet, PrintingShowsTheStagesAndCounts) {
  models::ResNet20 net;
  std::ostringstream printed;
  printed << net;
  const std::string text = printed.str();
  EXPECT_EQ(text.rfind("ResNet20(in_channels=3, num_classes=10)  # 269,722 parameters\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("\n  (layer2): Sequential  # "), std::string::npos) << text;
  EXPECT_NE(text.find("\n    (0): BasicBlock(16, 32, stride=2, shortcut=zero_pad)  # "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n      (conv1): Conv2d(16, 32, kernel_size=(3, 3), stride=(2, 2), "
                      "padding=(1, 1), bias=false)  # 4,608 parameters: weight [32, 16, 3, 3]"),
            std::string::npos)
      << text;
}

TEST(ResNet, ConvolutionWeightsStartFromKaimingNormalFanOut) {
  manual_seed(4);
  models::ResNet20 net;
  // layer3's 3x3 convolutions: fan_out = 64 * 9, so std = sqrt(2 / 576).
  const Tensor weight = net->named_parameters()["layer3.1.conv1.weight"];
  const double std = std::sqrt(to_vector<double>(mean(pow(weight, 2)))[0]);
  EXPECT_NEAR(std, std::sqrt(2.0 / (64 * 9)), 0.05 * std::sqrt(2.0 / (64 * 9)));
}

}  // namespace
}  // namespace minidl
