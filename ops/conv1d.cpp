// conv1d as conv2d over a unit height: [N, C, L] is viewed as [N, C, 1, L] and the weight
// [C_out, C_in / groups, k] as [C_out, C_in / groups, 1, k]. The checks that name 1-D shapes are
// made here; conv2d checks the rest (dtypes, devices), naming the 4-D views.
#include "minidl/ops/conv1d.h"

#include "minidl/core/profiler.h"
#include "minidl/ops/conv.h"

namespace minidl {

namespace {

constexpr const char* kOp = "conv1d";

void check_arguments(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups) {
  check_defined(input, kOp, "input");
  check_defined(weight, kOp, "weight");
  MINIDL_CHECK(input.dim() == 3, kOp, ": expected a 3-D input [N, C_in, L], got shape ",
               input.sizes());
  MINIDL_CHECK(weight.dim() == 3, kOp, ": expected a 3-D weight [C_out, C_in / groups, k], got ",
               "shape ", weight.sizes());
  MINIDL_CHECK(groups >= 1, kOp, ": expected groups >= 1, got ", groups);
  MINIDL_CHECK(stride > 0, kOp, ": expected a positive stride, got ", stride);
  MINIDL_CHECK(dilation > 0, kOp, ": expected a positive dilation, got ", dilation);
  MINIDL_CHECK(padding >= 0, kOp, ": expected a non-negative padding, got ", padding);
  const int64_t in_channels = input.size(1), out_channels = weight.size(0);
  MINIDL_CHECK(in_channels == weight.size(1) * groups, kOp, ": channel mismatch: input of shape ",
               input.sizes(), " has C_in = ", in_channels, ", but weight of shape ", weight.sizes(),
               " with groups = ", groups,
               " expects weight.size(1) * groups = ", weight.size(1) * groups);
  MINIDL_CHECK(out_channels % groups == 0, kOp, ": groups = ", groups, " must divide the output ",
               "channels C_out = ", out_channels, " (weight shape ", weight.sizes(), ")");
  MINIDL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), kOp,
               ": expected a bias of shape [", out_channels, "] (C_out of weight shape ",
               weight.sizes(), "), got shape ", bias.sizes());
  const int64_t kernel = weight.size(2);
  MINIDL_CHECK(kernel > 0, kOp, ": expected a kernel of positive size, got weight shape ",
               weight.sizes());
  const int64_t dilated_kernel = dilation * (kernel - 1) + 1;
  const int64_t padded_length = input.size(2) + 2 * padding;
  MINIDL_CHECK(dilated_kernel <= padded_length, kOp,
               ": kernel larger than the padded input: ", "the (dilated) kernel is ",
               dilated_kernel, " long but the padded input is ", padded_length, " (input shape ",
               input.sizes(), ", weight shape ", weight.sizes(), ", padding ", padding,
               ", dilation ", dilation, ")");
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  const ProfileScope profile("conv1d", {input, weight, bias});
  check_arguments(input, weight, bias, stride, padding, dilation, groups);
  return conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, Size2(1, stride), Size2(0, padding),
                Size2(1, dilation), groups)
      .squeeze(2);
}

}  // namespace minidl
