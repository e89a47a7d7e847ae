#include "minidl/nn/modules/linear.h"

#include <cmath>
#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"

namespace minidl::nn {

LinearImpl::LinearImpl(const LinearOptions& options) : Module("Linear"), options(options) {
  MINIDL_CHECK(options.in_features() > 0 && options.out_features() > 0,
               "Linear: expected positive in_features and out_features, got ",
               options.in_features(), " and ", options.out_features());
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_features()}));
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(options.in_features()));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() >= 1 && x.size(-1) == options.in_features(), "Linear: expected input of ",
               "shape [..., ", options.in_features(), "] (in_features), got ", x.sizes());
  return functional::linear(x, weight, bias);
}

void LinearImpl::pretty_print(std::ostream& out) const {
  out << "Linear(in_features=" << options.in_features()
      << ", out_features=" << options.out_features()
      << ", bias=" << (options.bias() ? "true" : "false") << ")";
}

}  // namespace minidl::nn
