// nn::LayerNorm and F::layer_norm: forward against the functional op, PyTorch's parameters and
// their initialisation, reset_parameters, the options, printing, and option errors.
#include "minidl/ops/layer_norm.h"

#include <sstream>
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;

// Bit-for-bit equality of values and shapes.
::testing::AssertionResult identical(const Tensor& actual, const Tensor& expected) {
  return all_close(actual, expected, 0, 0);
}

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

TEST(LayerNormModule, RegistersPyTorchsParametersInitialisedToOneAndZero) {
  nn::LayerNorm ln(nn::LayerNormOptions({8}));
  EXPECT_EQ(ln->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TRUE(ln->named_buffers().keys().empty());
  EXPECT_EQ(ln->weight.sizes(), (Shape{8}));
  EXPECT_EQ(to_vector<float>(ln->weight), std::vector<float>(8, 1.0f));
  EXPECT_EQ(to_vector<float>(ln->bias), std::vector<float>(8, 0.0f));
  EXPECT_TRUE(ln->weight.requires_grad());
  EXPECT_EQ(printed(*ln), "LayerNorm([8], eps=1e-05, elementwise_affine=true)");
  // Two dims, another eps, and no affine parameters.
  nn::LayerNorm plain(nn::LayerNormOptions({4, 5}).eps(1e-3).elementwise_affine(false));
  EXPECT_TRUE(plain->parameters().empty());
  EXPECT_EQ(printed(*plain), "LayerNorm([4, 5], eps=0.001, elementwise_affine=false)");
  // A weight without a bias.
  nn::LayerNorm unbiased(nn::LayerNormOptions({3}).bias(false));
  EXPECT_EQ(unbiased->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_FALSE(unbiased->bias.defined());
}

TEST(LayerNormModule, ForwardIsTheFunctionalLayerNorm) {
  nn::LayerNorm ln(nn::LayerNormOptions({3, 4}).eps(1e-4));
  nn::init::uniform_(ln->weight, 0.5, 2.0);
  nn::init::uniform_(ln->bias, -1.0, 1.0);
  const Tensor x = randn({2, 5, 3, 4}) * 3.0 + 1.0;
  const Tensor expected =
      F::layer_norm(x, F::LayerNormFuncOptions({3, 4}).weight(ln->weight).bias(ln->bias).eps(1e-4));
  EXPECT_TRUE(identical(ln(x), expected));
  EXPECT_TRUE(identical(expected, layer_norm(x, {3, 4}, ln->weight, ln->bias, 1e-4)));
  // The same in evaluation mode: layer norm keeps no running statistics.
  ln->eval();
  EXPECT_TRUE(identical(ln(x), expected));
  // And without parameters, the normalised input (nn::LayerNormFuncOptions is the same struct).
  nn::LayerNorm plain(nn::LayerNormOptions({4}).elementwise_affine(false));
  EXPECT_TRUE(identical(plain(x), F::layer_norm(x, nn::LayerNormFuncOptions({4}))));
}

TEST(LayerNormModule, TrainsItsParameters) {
  nn::LayerNorm ln(nn::LayerNormOptions({6}));
  const Tensor x = randn({4, 6});
  (ln(x) * randn({4, 6})).sum().backward();
  ASSERT_TRUE(ln->weight.grad().defined());
  ASSERT_TRUE(ln->bias.grad().defined());
  EXPECT_EQ(ln->weight.grad().sizes(), (Shape{6}));
  EXPECT_FALSE(identical(ln->bias.grad(), zeros({6})));
}

TEST(LayerNormModule, TakesItsPlaceInASequentialUnderPyTorchsNames) {
  nn::Sequential net{nn::Linear(4, 6), nn::LayerNorm(nn::LayerNormOptions({6})), nn::ReLU()};
  EXPECT_EQ(net->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
  EXPECT_EQ(net->forward(randn({3, 4})).sizes(), (Shape{3, 6}));
}

TEST(LayerNormModule, ResetParametersRestoresOneAndZero) {
  nn::LayerNorm ln(nn::LayerNormOptions({5}));
  nn::init::uniform_(ln->weight, -1.0, 1.0);
  nn::init::uniform_(ln->bias, -1.0, 1.0);
  ln->reset_parameters();
  EXPECT_EQ(to_vector<float>(ln->weight), std::vector<float>(5, 1.0f));
  EXPECT_EQ(to_vector<float>(ln->bias), std::vector<float>(5, 0.0f));
}

TEST(LayerNormModule, ChecksTheOptionsAndTheInput) {
  EXPECT_ERROR_CONTAINS(nn::LayerNorm(nn::LayerNormOptions(Shape{})),
                        "LayerNorm: expected a normalized_shape of at least one dim, got []");
  EXPECT_ERROR_CONTAINS(nn::LayerNorm(nn::LayerNormOptions({3, 0})),
                        "LayerNorm: expected a normalized_shape of positive sizes, got [3, 0]");
  EXPECT_ERROR_CONTAINS(nn::LayerNorm(nn::LayerNormOptions({3}).eps(-1.0)),
                        "LayerNorm: expected eps >= 0, got -1");
  nn::LayerNorm ln(nn::LayerNormOptions({8}));
  EXPECT_ERROR_CONTAINS(ln(randn({2, 4})),
                        "layer_norm: expected an input whose last dims are [8] (normalized_shape), "
                        "got shape [2, 4]");
}

}  // namespace
}  // namespace minidl
