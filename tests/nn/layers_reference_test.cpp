// F::conv1d, F::conv_transpose2d, F::group_norm and F::batch_norm in training over BatchNorm1d's
// [N, C] and [N, C, L] against PyTorch's values
// (tests/nn/layers_reference.h, written by tools/reference/make_layers_reference.py): the output
// and the gradients of input, weight and bias, float64, float32 and bfloat16 input, with groups,
// strides, padding, output_padding and dilation.
#include "layers_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "minidl/nn/functional.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;

DType dtype_named(std::string_view name) {
  if (name == "float64") return kFloat64;
  if (name == "bfloat16") return kBFloat16;
  if (name == "float16") return kFloat16;
  return kFloat32;
}

// |ours - PyTorch's| allowed, relative and absolute: a few units in the last place of the dtype
// (sums of products are added in other orders).
double tolerance(DType dtype) {
  if (dtype == kFloat64) return 1e-12;
  if (dtype == kBFloat16) return 1.6e-2;
  return 2e-5;
}

Shape sizes_of(const int64_t* sizes, int dim) { return Shape(sizes, sizes + dim); }

Tensor reference_tensor(const double* values, const Shape& sizes, DType dtype) {
  return tensor(std::vector<double>(values, values + shape_numel(sizes)), sizes).to(dtype);
}

Tensor run(const testing::LayersReference& c, const Tensor& x, const Tensor& weight,
           const Tensor& bias) {
  const std::string_view op = c.op;
  if (op == "conv1d")
    return F::conv1d(x, weight, bias,
                     nn::Conv1dFuncOptions()
                         .stride(c.stride[0])
                         .padding(c.padding[0])
                         .dilation(c.dilation[0])
                         .groups(c.groups));
  if (op == "conv_transpose2d")
    return F::conv_transpose2d(x, weight, bias,
                               nn::ConvTranspose2dFuncOptions()
                                   .stride({c.stride[0], c.stride[1]})
                                   .padding({c.padding[0], c.padding[1]})
                                   .output_padding({c.output_padding[0], c.output_padding[1]})
                                   .groups(c.groups)
                                   .dilation({c.dilation[0], c.dilation[1]}));
  if (op == "batch_norm")
    return F::batch_norm(
        x, Tensor(), Tensor(),
        nn::BatchNormFuncOptions().weight(weight).bias(bias).training(true).eps(c.eps));
  return F::group_norm(x,
                       F::GroupNormFuncOptions(c.num_groups).weight(weight).bias(bias).eps(c.eps));
}

TEST(LayersReference, EveryCaseMatchesPyTorch) {
  for (const testing::LayersReference& c : testing::kLayersReferences) {
    const DType dtype = dtype_named(c.dtype);
    const bool sixteen_bit = dtype == kBFloat16 || dtype == kFloat16;
    const DType parameter_dtype = sixteen_bit ? kFloat32 : dtype;
    const Shape input_sizes = sizes_of(c.input_sizes, c.input_dim);
    const Shape weight_sizes = sizes_of(c.weight_sizes, c.weight_dim);
    const Shape output_sizes = sizes_of(c.output_sizes, c.output_dim);
    const Tensor x = reference_tensor(c.input, input_sizes, dtype).requires_grad_();
    const bool has_weight = c.weight_dim > 0;
    const Tensor weight =
        has_weight ? reference_tensor(c.weight, weight_sizes, parameter_dtype).requires_grad_()
                   : Tensor();
    const int64_t bias_size = output_sizes[1];
    const Tensor bias =
        c.has_bias ? reference_tensor(c.bias, {bias_size}, parameter_dtype).requires_grad_()
                   : Tensor();
    const Tensor y = run(c, x, weight, bias);
    ASSERT_EQ(y.sizes(), output_sizes) << c.what;
    EXPECT_EQ(y.dtype(), dtype) << c.what;
    y.backward(reference_tensor(c.upstream, output_sizes, dtype));
    const double tol = tolerance(dtype);
    EXPECT_TRUE(all_close(y, reference_tensor(c.output, output_sizes, kFloat64), tol, tol))
        << c.what;
    EXPECT_TRUE(
        all_close(x.grad(), reference_tensor(c.grad_input, input_sizes, kFloat64), tol, tol))
        << c.what;
    // 16-bit input: the parameters' gradients are float32 sums, against float64 references.
    const double parameter_tol = sixteen_bit ? 1e-4 : tol;
    if (has_weight) {
      EXPECT_EQ(weight.grad().dtype(), parameter_dtype) << c.what;
      EXPECT_TRUE(all_close(weight.grad(), reference_tensor(c.grad_weight, weight_sizes, kFloat64),
                            parameter_tol, parameter_tol))
          << c.what;
    }
    if (c.has_bias)
      EXPECT_TRUE(all_close(bias.grad(), reference_tensor(c.grad_bias, {bias_size}, kFloat64),
                            parameter_tol, parameter_tol))
          << c.what;
  }
}

}  // namespace
}  // namespace minidl
