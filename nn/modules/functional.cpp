#include "minidl/nn/modules/functional.h"

#include <ostream>

namespace minidl::nn {

FunctionalImpl::FunctionalImpl(Function function)
    : Module("Functional"), function_(std::move(function)) {
  MINIDL_CHECK(static_cast<bool>(function_), "Functional: expected a function, got an empty one");
}

Tensor FunctionalImpl::forward(Tensor input) { return function_(std::move(input)); }

void FunctionalImpl::pretty_print(std::ostream& out) const { out << "Functional()"; }

}  // namespace minidl::nn
