#include "minidl/nn/modules/layer_norm.h"

#include <cmath>
#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"

namespace minidl::nn {

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options)
    : Module("LayerNorm"), options(options) {
  const Shape& shape = options.normalized_shape();
  MINIDL_CHECK(!shape.empty(), "LayerNorm: expected a normalized_shape of at least one dim, got ",
               shape);
  for (int64_t size : shape)
    MINIDL_CHECK(size > 0, "LayerNorm: expected a normalized_shape of positive sizes, got ", shape);
  MINIDL_CHECK(std::isfinite(options.eps()) && options.eps() >= 0,
               "LayerNorm: expected eps >= 0, got ", options.eps());
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", empty(shape));
    if (options.bias()) bias = register_parameter("bias", empty(shape));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return functional::layer_norm(x, LayerNormFuncOptions(options.normalized_shape())
                                       .weight(weight)
                                       .bias(bias)
                                       .eps(options.eps()));
}

// As LibTorch's repr: LayerNorm([8], eps=1e-05, elementwise_affine=true).
void LayerNormImpl::pretty_print(std::ostream& out) const {
  out << "LayerNorm(" << shape_str(options.normalized_shape()) << ", eps=" << options.eps()
      << ", elementwise_affine=" << (options.elementwise_affine() ? "true" : "false") << ")";
}

}  // namespace minidl::nn
