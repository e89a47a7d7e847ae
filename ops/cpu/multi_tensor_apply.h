#pragma once
// The CPU side of Note [Multi-tensor apply] (ops/multi_tensor_table.h): the table's image in
// host memory, walked tensor by tensor, each tensor's elements split across minidl's CPU threads.
//
// Element functor convention (shared with ops/cuda/multi_tensor_apply.cuh), a class template
// over the element type T:
//
//   template <class T>
//   class ScaleOp {
//    public:
//     using Group = ScaleGroup;  // the trivially copyable per-group record of the table
//     // Once per tensor on the CPU, once per chunk on CUDA: convert the group's scalars to the
//     // accumulate type here, not per element.
//     MINIDL_HOST_DEVICE ScaleOp(const Group& group, const TensorListEntry& entry);
//     // Updates element i of every list the op uses (offset i: the lists share a dense layout).
//     MINIDL_HOST_DEVICE void operator()(int64_t i) const;
//   };
//
// The functor must be instantiable for float, double, Half and BFloat16 (double on the CPU only).
// It may also define `void run(int64_t begin, int64_t end) const`, which the CPU calls for each
// share of a tensor's elements instead of the element loop: one loop per setting of a branch the
// compiler would not hoist out of the loop itself (Adam's amsgrad), so each loop vectorises.
#include <cstddef>
#include <cstdint>

#include "minidl/core/dtype.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::cpu {

// Runs Op<T> over every tensor of the table at args.table (host memory), T being args.dtype
// (float32, float64, float16 or bfloat16; another is an error naming `op_name`). Does nothing
// when args.skip_flag (host memory) is nonzero.
template <template <class> class Op>
void multi_tensor_apply(const MultiTensorArgs& args, const char* op_name) {
  if (args.skip_flag != nullptr && *args.skip_flag != 0.0f) return;
  visit_floating(args.dtype, op_name, [&](auto zero) {
    using Functor = Op<decltype(zero)>;
    const auto* groups =
        reinterpret_cast<const typename Functor::Group*>(args.table + args.layout.groups_offset);
    const auto* tensors =
        reinterpret_cast<const TensorListEntry*>(args.table + args.layout.tensors_offset);
    for (int64_t t = 0; t < args.layout.num_tensors; ++t) {
      const TensorListEntry& entry = tensors[t];
      const Functor op(groups[entry.group], entry);
      parallel_for(0, entry.numel, kDefaultGrain, [&](int64_t begin, int64_t end) {
        // A copy of its own in each chunk: the stores through the functor's pointers cannot
        // alias a local whose address is never taken, so its scalars stay in registers and the
        // compiler can vectorise the loop (the shared `op` would be re-read at every element).
        const Functor local = op;
        if constexpr (requires { local.run(begin, end); })
          local.run(begin, end);
        else
          for (int64_t i = begin; i < end; ++i) local(i);
      });
    }
  });
}

}  // namespace minidl::cpu
