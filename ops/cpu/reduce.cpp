#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/reduce_kernels.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cpu {

namespace {

using reduce_math::compute_t;

// Elements one task reads: enough to amortise the task, small enough that one long row is
// spread over every thread. Fixed (not derived from the thread count), so the order in which
// partial results are merged, and hence the rounding, is the same on every machine.
constexpr int64_t kBlockElements = 16384;
// Independent accumulators per row, which lets the compiler vectorise the sums.
constexpr int64_t kLanes = 8;
// Outputs one task of a column reduction (inner > 1) works on side by side.
constexpr int64_t kStripWidth = 64;

struct Geometry {
  int64_t outer, reduce, inner;
};

Geometry geometry_of(const Tensor& input) {
  // An empty tensor may fail is_contiguous() but has no elements to read.
  MINIDL_INTERNAL_ASSERT(input.dim() == 3 && (input.numel() == 0 || input.is_contiguous()),
                         "reduction kernels take a contiguous [outer, reduce, inner] input");
  return {input.size(0), input.size(1), input.size(2)};
}

// Folds row[begin, end) (one reduced run, stride 1) into one accumulator.
template <class Compute, class T, class Op>
auto reduce_run(const T* row, int64_t begin, int64_t end, const Op& op) {
  using Acc = decltype(op.identity());
  std::array<Acc, kLanes> lanes;
  lanes.fill(op.identity());
  int64_t r = begin;
  for (; r + kLanes <= end; r += kLanes)
    for (int64_t lane = 0; lane < kLanes; ++lane)
      lanes[lane] = op.accumulate(lanes[lane], static_cast<Compute>(row[r + lane]), r + lane);
  for (; r < end; ++r) lanes[0] = op.accumulate(lanes[0], static_cast<Compute>(row[r]), r);
  Acc acc = lanes[0];
  for (int64_t lane = 1; lane < kLanes; ++lane) acc = op.combine(acc, lanes[lane]);
  return acc;
}

// inner == 1: each output folds one contiguous row. Rows longer than a block are cut into
// blocks folded in parallel, then merged in block order.
template <class Compute, class T, class Op, class Store>
void reduce_rows(const T* in, Geometry g, const Op& op, const Store& store) {
  using Acc = decltype(op.identity());
  const int64_t blocks = std::max<int64_t>(1, ceil_div(g.reduce, kBlockElements));
  if (blocks == 1) {
    const int64_t grain = std::max<int64_t>(1, kBlockElements / std::max<int64_t>(g.reduce, 1));
    parallel_for(0, g.outer, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o)
        store(o, reduce_run<Compute>(in + o * g.reduce, 0, g.reduce, op));
    });
    return;
  }
  std::vector<Acc> partial(static_cast<size_t>(g.outer * blocks));
  parallel_for(0, g.outer * blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t o = task / blocks, begin = (task % blocks) * kBlockElements;
      partial[task] = reduce_run<Compute>(in + o * g.reduce, begin,
                                          std::min(g.reduce, begin + kBlockElements), op);
    }
  });
  parallel_for(0, g.outer, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      Acc acc = partial[o * blocks];
      for (int64_t b = 1; b < blocks; ++b) acc = op.combine(acc, partial[o * blocks + b]);
      store(o, acc);
    }
  });
}

// inner > 1: a task folds a strip of up to kStripWidth neighbouring outputs over a block of
// reduced rows, reading each row of the strip contiguously. When the reduced range needs
// several blocks, partial results [outer, blocks, inner] are merged in block order.
template <class Compute, class T, class Op, class Store>
void reduce_columns(const T* in, Geometry g, const Op& op, const Store& store) {
  using Acc = decltype(op.identity());
  const int64_t strips = ceil_div(g.inner, kStripWidth);
  const int64_t rows_per_block =
      std::max<int64_t>(1, kBlockElements / std::min(g.inner, kStripWidth));
  const int64_t blocks = std::max<int64_t>(1, ceil_div(g.reduce, rows_per_block));
  std::vector<Acc> partial(blocks > 1 ? static_cast<size_t>(g.outer * blocks * g.inner) : 0);
  parallel_for(0, g.outer * blocks * strips, 1, [&](int64_t lo, int64_t hi) {
    std::array<Acc, kStripWidth> acc;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t strip = task % strips, block = (task / strips) % blocks;
      const int64_t o = task / (strips * blocks);
      const int64_t i0 = strip * kStripWidth, width = std::min(kStripWidth, g.inner - i0);
      const int64_t r0 = block * rows_per_block, r1 = std::min(g.reduce, r0 + rows_per_block);
      std::fill(acc.begin(), acc.begin() + width, op.identity());
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = in + (o * g.reduce + r) * g.inner + i0;
        for (int64_t j = 0; j < width; ++j)
          acc[j] = op.accumulate(acc[j], static_cast<Compute>(row[j]), r);
      }
      for (int64_t j = 0; j < width; ++j) {
        if (blocks == 1)
          store(o * g.inner + i0 + j, acc[j]);
        else
          partial[(o * blocks + block) * g.inner + i0 + j] = acc[j];
      }
    }
  });
  if (blocks == 1) return;
  parallel_for(0, g.outer * g.inner, kBlockElements / blocks + 1, [&](int64_t lo, int64_t hi) {
    for (int64_t out = lo; out < hi; ++out) {
      const int64_t o = out / g.inner, i = out % g.inner;
      Acc acc = partial[o * blocks * g.inner + i];
      for (int64_t b = 1; b < blocks; ++b)
        acc = op.combine(acc, partial[(o * blocks + b) * g.inner + i]);
      store(out, acc);
    }
  });
}

// Runs `op` over input [outer, reduce, inner]; store(output_index, acc) writes each result.
template <class Compute, class T, class Op, class Store>
void reduce(const Tensor& input, const Op& op, const Store& store) {
  const Geometry g = geometry_of(input);
  if (g.outer * g.inner == 0) return;  // no outputs
  const T* in = static_cast<const T*>(input.data_ptr());
  if (g.inner == 1)
    reduce_rows<Compute>(in, g, op, store);
  else
    reduce_columns<Compute>(in, g, op, store);
}

// float64 for float64 inputs, int64 for integer and bool inputs, float otherwise.
template <class T>
using sum_acc_t = std::conditional_t<std::is_same_v<T, double>, double,
                                     std::conditional_t<std::is_integral_v<T>, int64_t, float>>;

template <class T>
using sum_out_t = std::conditional_t<std::is_integral_v<T>, int64_t, T>;

// Sum, divided by the reduced count when `divide` (mean).
void sum_or_mean(const Tensor& out, const Tensor& input, bool divide) {
  visit_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Acc = sum_acc_t<T>;
    using Out = sum_out_t<T>;
    Out* result = out.data_ptr<Out>();
    const Acc count = static_cast<Acc>(input.size(1));
    reduce<Acc, T>(input, reduce_math::SumOp<Acc>{}, [&](int64_t o, Acc acc) {
      result[o] = static_cast<Out>(divide ? acc / count : acc);
    });
  });
}

template <bool kLargest>
void extreme(const Tensor& values, const Tensor& indices, const Tensor& input) {
  visit_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Compute = compute_t<T>;
    using Op = reduce_math::ExtremeOp<Compute, kLargest>;
    T* value_out = values.defined() ? values.data_ptr<T>() : nullptr;
    int64_t* index_out = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
    reduce<Compute, T>(input, Op{}, [&](int64_t o, typename Op::Acc acc) {
      if (value_out) value_out[o] = static_cast<T>(acc.value);
      if (index_out) index_out[o] = acc.index;
    });
  });
}

void sum_kernel(const Tensor& out, const Tensor& input) { sum_or_mean(out, input, false); }

void mean_kernel(const Tensor& out, const Tensor& input) { sum_or_mean(out, input, true); }

void var_kernel(const Tensor& out, const Tensor& input, int64_t correction) {
  visit_floating(input.dtype(), "var", [&](auto zero) {
    using T = decltype(zero);
    using Compute = compute_t<T>;
    using Op = reduce_math::MomentsOp<Compute>;
    T* result = out.data_ptr<T>();
    reduce<Compute, T>(input, Op{}, [&](int64_t o, typename Op::Acc acc) {
      result[o] = static_cast<T>(Op::variance(acc, correction));
    });
  });
}

void max_kernel(const Tensor& values, const Tensor& indices, const Tensor& input) {
  extreme<true>(values, indices, input);
}

void min_kernel(const Tensor& values, const Tensor& indices, const Tensor& input) {
  extreme<false>(values, indices, input);
}

void scatter_extreme_grad_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& indices) {
  const Geometry g = geometry_of(grad_input);
  std::memset(grad_input.data_ptr(), 0, grad_input.nbytes());
  visit_floating(grad.dtype(), "max/min backward", [&](auto zero) {
    using T = decltype(zero);
    T* out = grad_input.data_ptr<T>();
    const T* in = grad.data_ptr<T>();
    const int64_t* index = indices.data_ptr<int64_t>();
    parallel_for(0, g.outer * g.inner, kDefaultGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        const int64_t o = k / g.inner, i = k % g.inner;
        out[(o * g.reduce + index[k]) * g.inner + i] = in[k];
      }
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const ReduceKernels ReduceKernels::kCpu{
    .sum = cpu::sum_kernel,
    .mean = cpu::mean_kernel,
    .var = cpu::var_kernel,
    .max = cpu::max_kernel,
    .min = cpu::min_kernel,
    .scatter_extreme_grad = cpu::scatter_extreme_grad_kernel,
};

}  // namespace minidl
