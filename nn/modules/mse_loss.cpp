#include "minidl/nn/modules/mse_loss.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

MSELossImpl::MSELossImpl(const MSELossOptions& options) : Module("MSELoss"), options(options) {}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options);
}

void MSELossImpl::pretty_print(std::ostream& out) const { out << "MSELoss()"; }

}  // namespace minidl::nn
