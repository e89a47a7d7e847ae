// CUDA launchers of the element-wise ops: a dtype switch, then the functor from
// ops/elementwise_math.h run by launch_elementwise (ops/cuda/loops.cuh). float64 never reaches
// the device (factories refuse it), so it is not instantiated here.
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/ops/cuda/loops.cuh"
#include "minidl/ops/elementwise_kernels.h"

namespace minidl::cuda {

namespace {

using namespace elementwise;

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& x, Scalars scalars) {
  visit_device_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_unary_functor<T>(op, scalars, [&](auto functor) {
      launch_elementwise<T, T>(Computing<T, decltype(functor), T>{functor}, out, {x});
    });
  });
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   Scalars scalars) {
  visit_device_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_binary_functor<T>(op, scalars, [&](auto functor) {
      launch_elementwise<T, T, T>(Computing<T, decltype(functor), T, T>{functor}, out, {a, b});
    });
  });
}

void ternary_kernel(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                    const Tensor& c) {
  visit_device_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_ternary_functor<T>(op, [&](auto functor) {
      launch_elementwise<T, T, T, T>(Computing<T, decltype(functor), T, T, T>{functor}, out,
                                     {a, b, c});
    });
  });
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_device_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_compare_functor<T>(op, [&](auto functor) {
      launch_elementwise<bool, T, T>(Computing<bool, decltype(functor), T, T>{functor}, out,
                                     {a, b});
    });
  });
}

void compare_scalar_kernel(CompareOp op, const Tensor& out, const Tensor& a, double scalar) {
  visit_device_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_compare_scalar_functor<T>(op, scalar, [&](auto functor) {
      launch_elementwise<bool, T>(Computing<bool, decltype(functor), T>{functor}, out, {a});
    });
  });
}

void predicate_kernel(PredicateOp op, const Tensor& out, const Tensor& x) {
  visit_device_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_predicate_functor<T>(op, [&](auto functor) {
      launch_elementwise<bool, T>(Computing<bool, decltype(functor), T>{functor}, out, {x});
    });
  });
}

void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  visit_device_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Functor = Where<compute_t<T>>;
    launch_elementwise<T, bool, T, T>(Computing<T, Functor, bool, T, T>{Functor{}}, out,
                                      {condition, a, b});
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const ElementwiseKernels ElementwiseKernels::kCuda{
    .unary = cuda::unary_kernel,
    .binary = cuda::binary_kernel,
    .ternary = cuda::ternary_kernel,
    .compare = cuda::compare_kernel,
    .compare_scalar = cuda::compare_scalar_kernel,
    .predicate = cuda::predicate_kernel,
    .where = cuda::where_kernel,
};

}  // namespace minidl
