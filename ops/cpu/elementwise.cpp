// CPU kernels of the element-wise ops: a dtype switch, then the functor from
// ops/elementwise_math.h run by elementwise_loop.
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/loops.h"
#include "minidl/ops/cpu/vector_versions.h"
#include "minidl/ops/cpu/vectorisable_math.h"
#include "minidl/ops/dense_layout.h"
#include "minidl/ops/elementwise_kernels.h"

namespace minidl::cpu {

using namespace elementwise;

namespace {

// out[i] = op(in[i]...) for i in [begin, end): the flat loop.
template <class Op, class Out, class... In>
inline void flat_range(const Op& op, int64_t begin, int64_t end, Out* out, const In*... in) {
  for (int64_t i = begin; i < end; ++i) out[i] = op(in[i]...);
}

// The same loop compiled for AVX-512 and for AVX2 (Note [Loops compiled for AVX-512 and AVX2] in
// ops/cpu/vector_versions.h).
template <class Op, class Out, class... In>
MINIDL_AVX512 void flat_range_avx512(const Op& op, int64_t begin, int64_t end, Out* out,
                                     const In*... in) {
  flat_range(op, begin, end, out, in...);
}
template <class Op, class Out, class... In>
MINIDL_AVX2 void flat_range_avx2(const Op& op, int64_t begin, int64_t end, Out* out,
                                 const In*... in) {
  flat_range(op, begin, end, out, in...);
}

// Whether a flat loop with these element types has an AVX-512 version: where bfloat16 is read or
// written (the other types vectorise on the baseline too). Only those are compiled twice.
template <class Out, class... In>
constexpr bool reads_or_writes_bfloat16 = (std::is_same_v<Out, BFloat16> || ... ||
                                           std::is_same_v<In, BFloat16>);

// Whether the flat loop's functor is one of vectorisable_math.h's, which gain from AVX-512's
// 16 lanes and AVX2's 8 (and give the same bits there: no FMA either way).
template <class Op>
constexpr bool uses_vectorisable_math = false;
template <class Out, class Functor, class... In>
constexpr bool uses_vectorisable_math<Computing<Out, Functor, In...>> =
    std::is_same_v<Functor, VectorisableExp> || std::is_same_v<Functor, VectorisableSigmoid> ||
    std::is_same_v<Functor, VectorisableSilu> || std::is_same_v<Functor, VectorisableGelu> ||
    std::is_same_v<Functor, VectorisableSiluBackward> ||
    std::is_same_v<Functor, VectorisableGeluBackward>;

// out[i] = op(inputs[0][i], ...) over every element of out's shape. When all operands share one
// dense layout the elements are walked as flat arrays in memory order; otherwise through
// strided_loop with each operand's own strides.
template <class Out, class... In, class Op>
void elementwise_loop(const Op& op, const Tensor& out,
                      const std::array<Tensor, sizeof...(In)>& inputs) {
  constexpr size_t kInputs = sizeof...(In);
  Out* out_data = static_cast<Out*>(out.data_ptr());
  bool flat = is_non_overlapping_and_dense(out);
  for (const Tensor& input : inputs) flat = flat && input.strides() == out.strides();
  auto walk = [&]<size_t... I>(std::index_sequence<I...>) {
    const std::tuple<const In*...> in_data{static_cast<const In*>(inputs[I].data_ptr())...};
    if (flat) {
      parallel_for(0, out.numel(), kDefaultGrain, [&](int64_t begin, int64_t end) {
        if constexpr (reads_or_writes_bfloat16<Out, In...> || uses_vectorisable_math<Op>) {
          if (has_avx512())
            return flat_range_avx512(op, begin, end, out_data, std::get<I>(in_data)...);
        }
        if constexpr (uses_vectorisable_math<Op>) {
          if (has_avx2()) return flat_range_avx2(op, begin, end, out_data, std::get<I>(in_data)...);
        }
        flat_range(op, begin, end, out_data, std::get<I>(in_data)...);
      });
    } else {
      strided_loop<kInputs + 1>(out.sizes(), {out.strides(), inputs[I].strides()...},
                                [&](const std::array<int64_t, kInputs + 1>& at) {
                                  out_data[at[0]] = op(std::get<I>(in_data)[at[I + 1]]...);
                                });
    }
  };
  walk(std::index_sequence_for<In...>{});
}

// Calls fn with the CPU's vectorisable float functor of `op` and returns true, where it has one
// (Note [Vectorisable exp and erf on the CPU]); returns false otherwise.
template <class Fn>
bool with_vectorisable_functor(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::Exp: fn(VectorisableExp{}); return true;
    case UnaryOp::Sigmoid: fn(VectorisableSigmoid{}); return true;
    case UnaryOp::Silu: fn(VectorisableSilu{}); return true;
    case UnaryOp::Gelu: fn(VectorisableGelu{}); return true;
    default: return false;
  }
}

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& x, Scalars scalars) {
  visit_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<compute_t<T>, float>) {
      const bool done = with_vectorisable_functor(op, [&](auto functor) {
        elementwise_loop<T, T>(Computing<T, decltype(functor), T>{functor}, out, {x});
      });
      if (done) return;
    }
    with_unary_functor<T>(op, scalars, [&](auto functor) {
      elementwise_loop<T, T>(Computing<T, decltype(functor), T>{functor}, out, {x});
    });
  });
}

// The same for the binary ops that have one: the derivatives of silu and gelu.
template <class Fn>
bool with_vectorisable_functor(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::SiluBackward: fn(VectorisableSiluBackward{}); return true;
    case BinaryOp::GeluBackward: fn(VectorisableGeluBackward{}); return true;
    default: return false;
  }
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   Scalars scalars) {
  visit_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<compute_t<T>, float>) {
      const bool done = with_vectorisable_functor(op, [&](auto functor) {
        elementwise_loop<T, T, T>(Computing<T, decltype(functor), T, T>{functor}, out, {a, b});
      });
      if (done) return;
    }
    with_binary_functor<T>(op, scalars, [&](auto functor) {
      elementwise_loop<T, T, T>(Computing<T, decltype(functor), T, T>{functor}, out, {a, b});
    });
  });
}

void ternary_kernel(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                    const Tensor& c) {
  visit_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_ternary_functor<T>(op, [&](auto functor) {
      elementwise_loop<T, T, T, T>(Computing<T, decltype(functor), T, T, T>{functor}, out,
                                   {a, b, c});
    });
  });
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_compare_functor<T>(op, [&](auto functor) {
      elementwise_loop<bool, T, T>(Computing<bool, decltype(functor), T, T>{functor}, out, {a, b});
    });
  });
}

void compare_scalar_kernel(CompareOp op, const Tensor& out, const Tensor& a, double scalar) {
  visit_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_compare_scalar_functor<T>(op, scalar, [&](auto functor) {
      elementwise_loop<bool, T>(Computing<bool, decltype(functor), T>{functor}, out, {a});
    });
  });
}

void predicate_kernel(PredicateOp op, const Tensor& out, const Tensor& x) {
  visit_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    with_predicate_functor<T>(op, [&](auto functor) {
      elementwise_loop<bool, T>(Computing<bool, decltype(functor), T>{functor}, out, {x});
    });
  });
}

void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  visit_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Functor = Where<compute_t<T>>;
    elementwise_loop<T, bool, T, T>(Computing<T, Functor, bool, T, T>{Functor{}}, out,
                                    {condition, a, b});
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const ElementwiseKernels ElementwiseKernels::kCpu{
    .unary = cpu::unary_kernel,
    .binary = cpu::binary_kernel,
    .ternary = cpu::ternary_kernel,
    .compare = cpu::compare_kernel,
    .compare_scalar = cpu::compare_scalar_kernel,
    .predicate = cpu::predicate_kernel,
    .where = cpu::where_kernel,
};

}  // namespace minidl
