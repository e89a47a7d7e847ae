#include "minidl/nn/modules/normalization.h"

#include <cmath>
#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"

namespace minidl::nn {

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options)
    : Module("GroupNorm"), options(options) {
  const int64_t groups = options.num_groups(), channels = options.num_channels();
  MINIDL_CHECK(groups > 0 && channels > 0, "GroupNorm: expected positive num_groups and ",
               "num_channels, got ", groups, " and ", channels);
  MINIDL_CHECK(channels % groups == 0, "GroupNorm: num_channels (", channels, ") must be ",
               "divisible by num_groups (", groups, ")");
  MINIDL_CHECK(std::isfinite(options.eps()) && options.eps() >= 0,
               "GroupNorm: expected eps >= 0, got ", options.eps());
  if (options.affine()) {
    weight = register_parameter("weight", empty({channels}));
    bias = register_parameter("bias", empty({channels}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() >= 2 && x.size(1) == options.num_channels(), "GroupNorm: expected input ",
               "of shape [N, ", options.num_channels(), " (num_channels), *], got ", x.sizes());
  return functional::group_norm(
      x, GroupNormFuncOptions(options.num_groups()).weight(weight).bias(bias).eps(options.eps()));
}

// As PyTorch's repr: GroupNorm(2, 6, eps=1e-05, affine=true).
void GroupNormImpl::pretty_print(std::ostream& out) const {
  out << "GroupNorm(" << options.num_groups() << ", " << options.num_channels()
      << ", eps=" << options.eps() << ", affine=" << (options.affine() ? "true" : "false") << ")";
}

}  // namespace minidl::nn
