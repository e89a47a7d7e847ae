#pragma once
// nn::Functional: a function from tensor to tensor as a module, as LibTorch's
// torch::nn::Functional, so that a function can sit in a Sequential between layers:
//
//   nn::Sequential net{nn::Linear(4, 8), nn::Functional(F::relu), nn::Linear(8, 2)};
//   nn::Functional scale_down([](const Tensor& x) { return div(x, 2.0); });
//   nn::Functional leaky(F::leaky_relu, nn::LeakyReLUFuncOptions().negative_slope(0.2));
//
// Further arguments after the function are bound behind the input (std::bind), as LibTorch's.
// It has no parameters, buffers or state of its own.
#include <functional>
#include <iosfwd>
#include <utility>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;

  explicit FunctionalImpl(Function function);
  // The function called as function(input, arguments...).
  template <class SomeFunction, class... Arguments,
            class = std::enable_if_t<(sizeof...(Arguments) > 0)>>
  explicit FunctionalImpl(SomeFunction original_function, Arguments&&... arguments)
      : FunctionalImpl(Function(std::bind(original_function, std::placeholders::_1,
                                          std::forward<Arguments>(arguments)...))) {}

  Tensor forward(Tensor input);
  void pretty_print(std::ostream& out) const override;

 private:
  Function function_;
};
MINIDL_MODULE(Functional);

}  // namespace minidl::nn
