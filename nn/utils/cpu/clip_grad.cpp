// The CPU kernels of gradient clipping (conventions in nn/utils/clip_grad_kernels.h, math and
// functors in nn/utils/clip_grad_math.h): the chunks' partials split across minidl's threads,
// each into its own slot, and the scaling and clamping through ops/cpu/multi_tensor_apply.h with
// the functors the CUDA kernels run.
#include <algorithm>
#include <array>
#include <cstdint>

#include "minidl/core/parallel.h"
#include "minidl/nn/utils/clip_grad_kernels.h"
#include "minidl/nn/utils/clip_grad_math.h"
#include "minidl/ops/cpu/multi_tensor_apply.h"

namespace minidl::nn::utils {

namespace {

constexpr const char* kNormOp = "clip_grad_norm_";
// Chunks per parallel_for grain (a grain is kDefaultGrain elements, as the element-wise loops
// split theirs).
constexpr int64_t kChunksPerGrain = kDefaultGrain / kMultiTensorChunkElements;
// Independent accumulators inside a chunk: shorter dependency chains, and smaller sums to round
// than one running total.
constexpr int kLanes = 8;

// The reduction of elements [begin, end) of one tensor.
template <class Op>
typename Op::Acc chunk_partial(const Op& op, int64_t begin, int64_t end) {
  std::array<typename Op::Acc, kLanes> lanes;
  lanes.fill(op.identity());
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] = op.combine(lanes[lane], op(i + lane));
  for (; i < end; ++i) lanes[0] = op.combine(lanes[0], op(i));
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int lane = 0; lane < width; ++lane)
      lanes[lane] = op.combine(lanes[lane], lanes[lane + width]);
  return lanes[0];
}

void clip_reduce_chunks(const MultiTensorArgs& args, const Tensor& partials) {
  visit_floating(args.dtype, kNormOp, [&](auto zero) {
    using Op = ClipNormTermOp<decltype(zero)>;
    const MultiTensorLayout& layout = args.layout;
    const auto* group = reinterpret_cast<const ClipNormGroup*>(args.table + layout.groups_offset);
    const auto* tensors =
        reinterpret_cast<const TensorListEntry*>(args.table + layout.tensors_offset);
    const auto* chunks =
        reinterpret_cast<const MultiTensorChunk*>(args.table + layout.chunks_offset);
    double* out = partials.data_ptr<double>();
    parallel_for(0, layout.num_chunks, kChunksPerGrain, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const TensorListEntry& entry = tensors[chunks[c].tensor];
        const Op op(group[entry.group], entry);
        out[c] = static_cast<double>(
            chunk_partial(op, chunks[c].begin,
                          std::min(chunks[c].begin + kMultiTensorChunkElements, entry.numel)));
      }
    });
  });
}

void clip_finish_norm(const NormFinishArgs& args, const Tensor& partials, const Tensor& total_norm,
                      const Tensor& clip_coef) {
  const double* partial = partials.data_ptr<double>();
  visit_floating(total_norm.dtype(), kNormOp, [&](auto zero) {
    using R = decltype(zero);
    using AccR = clip_acc_t<R>;
    const GradNormOp<AccR> total_op(args.norm_type);
    AccR acc = total_op.identity();
    for (int32_t g = 0; g < args.num_tables; ++g) {
      const NormTablePart& part = args.tables[g];
      const auto* chunks =
          reinterpret_cast<const MultiTensorChunk*>(part.table + part.layout.chunks_offset);
      const auto* tensors =
          reinterpret_cast<const TensorListEntry*>(part.table + part.layout.tensors_offset);
      // A tensor's chunks are consecutive in the table, the first one beginning at element 0.
      for (int64_t c = 0; c < part.layout.num_chunks; ++c) {
        if (chunks[c].begin != 0) continue;
        const int64_t count = (tensors[chunks[c].tensor].numel + kMultiTensorChunkElements - 1) /
                              kMultiTensorChunkElements;
        const double* first = partial + part.partials_offset + c;
        // Each norm is a value of its dtype, which R (their promotion) holds exactly.
        const AccR norm = part.dtype == kFloat64
                              ? static_cast<AccR>(tensor_norm_from_partials(
                                    first, count, GradNormOp<double>(args.norm_type), part.dtype))
                              : static_cast<AccR>(tensor_norm_from_partials(
                                    first, count, GradNormOp<float>(args.norm_type), part.dtype));
        acc = total_op.combine(acc, total_op.term(norm));
      }
    }
    const R total = R(total_op.root(acc));
    *total_norm.data_ptr<R>() = total;
    *clip_coef.data_ptr<AccR>() = clip_coefficient<R>(total, args.max_norm);
  });
}

void clip_scale(const MultiTensorArgs& args) {
  cpu::multi_tensor_apply<ClipScaleOp>(args, kNormOp);
}

void clip_clamp(const MultiTensorArgs& args) {
  cpu::multi_tensor_apply<ClipClampOp>(args, "clip_grad_value_");
}

}  // namespace

const ClipGradKernels ClipGradKernels::kCpu{
    .reduce_chunks = clip_reduce_chunks,
    .finish_norm = clip_finish_norm,
    .scale = clip_scale,
    .clamp = clip_clamp,
};

}  // namespace minidl::nn::utils
