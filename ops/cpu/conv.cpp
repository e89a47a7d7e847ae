// CPU convolution (ops/conv_kernels.h): on oneDNN where it takes it (ops/cpu/onednn_conv.cpp),
// else as im2col + OpenBLAS GEMM over chunks of samples.
//
// Note [Convolution as GEMM]: for a chunk of S samples, im2col lays out every receptive field
// as one column of
//   columns [C_in * kH * kW, S * P]        (P = H_out * W_out)
// row (c * kH + i) * kW + j holding input channel c at kernel tap (i, j), column
// s * P + oh * W_out + ow holding output position (oh, ow) of sample s (zero where the tap
// falls into the padding). Group g owns the K = C_in / groups * kH * kW rows from g * K and the
// C_out / groups weight rows from g * C_out / groups; with the weight read as [C_out, K]:
//   forward          results_g [C_out/groups, S*P] = weight_g [C_out/groups, K] @ columns_g
//   input gradient   columns_g [K, S*P]            = weight_g^T @ grad_results_g
//   weight gradient  weight_g  [C_out/groups, K]  += grad_results_g @ columns_g^T
// and col2im adds the input-gradient columns back onto the input positions they were read
// from. One GEMM per group and chunk keeps the GEMMs large even for small maps (ResNet's 4x4).
//
// Each CPU thread takes a share of the chunks and runs them start to end (im2col, GEMM,
// reordering between the GEMM's [C_out, S*P] and the tensors' [S, C_out, P], col2im) with
// OpenBLAS on the calling thread (ops/cpu/blas_threads.h). A chunk is small enough for its
// columns to stay in the thread's L2 cache, but wide enough for an efficient GEMM, and there are
// at least as many chunks as threads when the batch allows. Each thread sums its chunks' weight
// gradients in its own buffer and the buffers are added in thread order, so the result repeats
// exactly for a given thread count (and differs in the last bits between thread counts).
#include <cblas.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "minidl/core/ceil_div.h"
#include "minidl/core/parallel.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/cpu/blas_threads.h"
#include "minidl/ops/cpu/gemm.h"
#include "minidl/ops/cpu/onednn_conv.h"

namespace minidl::cpu {

namespace {

// A chunk's column buffer should fit about half of one core's L2 cache (1 MiB on the machines
// measured), so that im2col's writes are still cached when the GEMM reads them...
constexpr int64_t kColumnBufferBytes = int64_t{512} << 10;
// ...but a chunk has at least this many columns (when the batch has them), so the GEMM stays wide
// even where one sample's columns are large and few (ResNet-18's 4x4 maps of 512 channels).
constexpr int64_t kMinChunkColumns = 512;

// Every size of one convolution, derived once from the validated arguments.
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t groups = 1;
  Conv2dParams params;

  int64_t in_plane() const { return in_h * in_w; }
  int64_t out_plane() const { return out_h * out_w; }  // P
  int64_t kernel_taps() const { return kernel_h * kernel_w; }
  int64_t group_out_channels() const { return out_channels / groups; }
  int64_t group_rows() const { return in_channels / groups * kernel_taps(); }  // K
  int64_t column_rows() const { return in_channels * kernel_taps(); }
};

ConvGeometry geometry_of(const Shape& input_sizes, const Shape& weight_sizes,
                         const Conv2dParams& params) {
  const Shape out_sizes = conv2d_output_sizes(input_sizes, weight_sizes, params);
  ConvGeometry g;
  g.batch = input_sizes[0];
  g.in_channels = input_sizes[1];
  g.in_h = input_sizes[2];
  g.in_w = input_sizes[3];
  g.out_channels = weight_sizes[0];
  g.out_h = out_sizes[2];
  g.out_w = out_sizes[3];
  g.kernel_h = weight_sizes[2];
  g.kernel_w = weight_sizes[3];
  g.groups = params.groups;
  g.params = params;
  // GEMM sizes and leading dimensions go to OpenBLAS as blasint.
  constexpr int64_t kMaxBlasInt = std::numeric_limits<blasint>::max();
  MINIDL_CHECK(g.column_rows() <= kMaxBlasInt && g.out_plane() <= kMaxBlasInt &&
                   g.out_channels <= kMaxBlasInt,
               "conv2d: input of shape ", input_sizes, " and weight of shape ", weight_sizes,
               " are too large for OpenBLAS");
  return g;
}

// How the batch is cut into chunks, and the chunks into the threads' shares (tasks).
struct ChunkPlan {
  int64_t samples_per_chunk = 1;
  int64_t num_chunks = 1;
  int64_t num_tasks = 1;  // task t runs chunks [first_chunk(t), first_chunk(t + 1)) in order

  int64_t first_chunk(int64_t task) const { return num_chunks * task / num_tasks; }
};

ChunkPlan plan_chunks(const ConvGeometry& g, size_t element_bytes) {
  const int64_t plane = g.out_plane();
  const int64_t bytes_per_sample = g.column_rows() * plane * static_cast<int64_t>(element_bytes);
  const int64_t by_budget = kColumnBufferBytes / std::max<int64_t>(bytes_per_sample, 1);
  const int64_t for_width = (kMinChunkColumns + plane - 1) / plane;
  const int64_t per_thread = (g.batch + get_num_threads() - 1) / get_num_threads();
  const int64_t max_columns = std::numeric_limits<blasint>::max();  // S * P fits a blasint
  ChunkPlan plan;
  plan.samples_per_chunk = std::clamp<int64_t>(
      std::min({std::max(by_budget, for_width), per_thread, max_columns / plane}), 1, g.batch);
  plan.num_chunks = (g.batch + plan.samples_per_chunk - 1) / plan.samples_per_chunk;
  plan.num_tasks = std::min<int64_t>(plan.num_chunks, get_num_threads());
  return plan;
}

// Calls run_chunk(task, first, samples) for every chunk of samples [first, first + samples),
// the tasks on minidl's CPU threads.
template <class Fn>
void for_each_chunk(const ChunkPlan& plan, int64_t batch, const Fn& run_chunk) {
  use_calling_thread_blas();
  parallel_for(0, plan.num_tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      for (int64_t c = plan.first_chunk(task); c < plan.first_chunk(task + 1); ++c) {
        const int64_t first = c * plan.samples_per_chunk;
        run_chunk(task, first, std::min(plan.samples_per_chunk, batch - first));
      }
    }
  });
}

// parallel_for's grain for items of `work` elements each: about kDefaultGrain per task.
int64_t grain_for(int64_t work) {
  return std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(work, 1));
}

// The outputs o in [0, out_size) whose tap o * stride + offset lies in [0, in_size): [begin, end).
struct OutputRange {
  int64_t begin;
  int64_t end;
};

OutputRange inside_input(int64_t offset, int64_t stride, int64_t in_size, int64_t out_size) {
  const int64_t begin = offset >= 0 ? 0 : ceil_div(-offset, stride);
  const int64_t end = offset >= in_size ? 0 : ceil_div(in_size - offset, stride);
  const int64_t clamped_end = std::min(end, out_size);
  return {std::min(begin, clamped_end), clamped_end};
}

// ---- im2col and col2im, one (sample, channel) plane at a time ----

// Writes the kH * kW rows (row stride `row_stride`, each [H_out, W_out]) that one input plane
// [H, W] contributes to the columns; `columns` points at the plane's first row and sample.
template <class T>
void im2col_plane(const T* plane, T* columns, int64_t row_stride, const ConvGeometry& g) {
  const Conv2dParams& p = g.params;
  for (int64_t i = 0; i < g.kernel_h; ++i) {
    const int64_t h_offset = i * p.dilation.h - p.padding.h;
    const OutputRange rows = inside_input(h_offset, p.stride.h, g.in_h, g.out_h);
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t w_offset = j * p.dilation.w - p.padding.w;
      const OutputRange cols = inside_input(w_offset, p.stride.w, g.in_w, g.out_w);
      T* tap = columns + (i * g.kernel_w + j) * row_stride;  // [H_out, W_out]
      std::fill(tap, tap + rows.begin * g.out_w, T(0));
      for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
        const T* in_row = plane + (oh * p.stride.h + h_offset) * g.in_w;  // [W]
        T* out_row = tap + oh * g.out_w;                                  // [W_out]
        std::fill(out_row, out_row + cols.begin, T(0));
        if (p.stride.w == 1 && cols.begin < cols.end) {
          std::copy(in_row + cols.begin + w_offset, in_row + cols.end + w_offset,
                    out_row + cols.begin);
        } else {
          for (int64_t ow = cols.begin; ow < cols.end; ++ow)
            out_row[ow] = in_row[ow * p.stride.w + w_offset];
        }
        std::fill(out_row + cols.end, out_row + g.out_w, T(0));
      }
      std::fill(tap + rows.end * g.out_w, tap + g.out_plane(), T(0));
    }
  }
}

// The adjoint of im2col_plane: overwrites the plane [H, W] with the sum of the column entries
// that were read from each of its positions.
template <class T>
void col2im_plane(const T* columns, int64_t row_stride, T* plane, const ConvGeometry& g) {
  const Conv2dParams& p = g.params;
  std::fill(plane, plane + g.in_plane(), T(0));
  for (int64_t i = 0; i < g.kernel_h; ++i) {
    const int64_t h_offset = i * p.dilation.h - p.padding.h;
    const OutputRange rows = inside_input(h_offset, p.stride.h, g.in_h, g.out_h);
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t w_offset = j * p.dilation.w - p.padding.w;
      const OutputRange cols = inside_input(w_offset, p.stride.w, g.in_w, g.out_w);
      const T* tap = columns + (i * g.kernel_w + j) * row_stride;  // [H_out, W_out]
      for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
        T* in_row = plane + (oh * p.stride.h + h_offset) * g.in_w;  // [W]
        const T* out_row = tap + oh * g.out_w;                      // [W_out]
        for (int64_t ow = cols.begin; ow < cols.end; ++ow)
          in_row[ow * p.stride.w + w_offset] += out_row[ow];
      }
    }
  }
}

// columns [C_in * kH * kW, S * P] from samples [first, first + S) of input [N, C_in, H, W].
template <class T>
void im2col(const T* input, int64_t first, int64_t samples, T* columns, const ConvGeometry& g) {
  const int64_t row_stride = samples * g.out_plane();
  parallel_for(0, samples * g.in_channels, grain_for(g.kernel_taps() * g.out_plane()),
               [&](int64_t begin, int64_t end) {
                 for (int64_t index = begin; index < end; ++index) {
                   const int64_t s = index / g.in_channels, c = index % g.in_channels;
                   const T* plane = input + ((first + s) * g.in_channels + c) * g.in_plane();
                   T* plane_columns =
                       columns + c * g.kernel_taps() * row_stride + s * g.out_plane();
                   im2col_plane(plane, plane_columns, row_stride, g);
                 }
               });
}

// Samples [first, first + S) of grad_input [N, C_in, H, W] from columns [C_in * kH * kW, S * P].
template <class T>
void col2im(const T* columns, int64_t first, int64_t samples, T* grad_input,
            const ConvGeometry& g) {
  const int64_t row_stride = samples * g.out_plane();
  parallel_for(0, samples * g.in_channels, grain_for(g.kernel_taps() * g.out_plane()),
               [&](int64_t begin, int64_t end) {
                 for (int64_t index = begin; index < end; ++index) {
                   const int64_t s = index / g.in_channels, c = index % g.in_channels;
                   const T* plane_columns =
                       columns + c * g.kernel_taps() * row_stride + s * g.out_plane();
                   T* plane = grad_input + ((first + s) * g.in_channels + c) * g.in_plane();
                   col2im_plane(plane_columns, row_stride, plane, g);
                 }
               });
}

// ---- between the GEMM's [C_out, S * P] and the tensors' [N, C_out, P] ----

// output[first + s, co, :] = results[co, s * P : (s + 1) * P] + bias[co] (bias may be null).
template <class T>
void scatter_results(const T* results, const T* bias, int64_t first, int64_t samples, T* output,
                     const ConvGeometry& g) {
  const int64_t plane = g.out_plane(), row_stride = samples * plane;
  parallel_for(0, samples * g.out_channels, grain_for(plane), [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      const int64_t s = index / g.out_channels, co = index % g.out_channels;
      const T* source = results + co * row_stride + s * plane;
      T* target = output + ((first + s) * g.out_channels + co) * plane;
      const T shift = bias != nullptr ? bias[co] : T(0);
      for (int64_t p = 0; p < plane; ++p) target[p] = source[p] + shift;
    }
  });
}

// grad_results[co, s * P : (s + 1) * P] = grad_output[first + s, co, :].
template <class T>
void gather_grad_results(const T* grad_output, int64_t first, int64_t samples, T* grad_results,
                         const ConvGeometry& g) {
  const int64_t plane = g.out_plane(), row_stride = samples * plane;
  parallel_for(0, samples * g.out_channels, grain_for(plane), [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      const int64_t s = index / g.out_channels, co = index % g.out_channels;
      const T* source = grad_output + ((first + s) * g.out_channels + co) * plane;
      std::copy(source, source + plane, grad_results + co * row_stride + s * plane);
    }
  });
}

// ---- the convolution, on contiguous tensors of the compute dtype ----

// output [N, C_out, H_out, W_out] = conv(input [N, C_in, H, W], weight [C_out, K]) + bias.
template <class T>
void forward_kernel(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const Tensor& output, const ConvGeometry& g) {
  const T* input_data = static_cast<const T*>(input.data_ptr());
  const T* weight_data = static_cast<const T*>(weight.data_ptr());
  const T* bias_data = bias.defined() ? static_cast<const T*>(bias.data_ptr()) : nullptr;
  T* output_data = static_cast<T*>(output.data_ptr());
  const ChunkPlan plan = plan_chunks(g, sizeof(T));
  const int64_t plane = g.out_plane(), columns_width = plan.samples_per_chunk * plane;
  const int64_t rows = g.group_rows(), group_out = g.group_out_channels();
  // Per task: the columns [C_in*kH*kW, S*P], then the GEMM's results [C_out, S*P].
  const int64_t task_elements = (g.column_rows() + g.out_channels) * columns_width;
  Tensor workspace = empty({plan.num_tasks, task_elements}, input.dtype());
  for_each_chunk(plan, g.batch, [&](int64_t task, int64_t first, int64_t samples) {
    T* columns = static_cast<T*>(workspace.data_ptr()) + task * task_elements;
    T* results = columns + g.column_rows() * columns_width;
    const int64_t width = samples * plane;
    im2col(input_data, first, samples, columns, g);
    for (int64_t group = 0; group < g.groups; ++group)
      gemm<T>(CblasNoTrans, CblasNoTrans, group_out, width, rows,
              weight_data + group * group_out * rows, rows, columns + group * rows * width, width,
              T(0), results + group * group_out * width, width);
    scatter_results(results, bias_data, first, samples, output_data, g);
  });
}

// grad_input [N, C_in, H, W] and grad_weight [C_out, K] (either may be undefined), overwritten.
template <class T>
void backward_kernel(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                     const Tensor& grad_input, const Tensor& grad_weight, const ConvGeometry& g) {
  const T* grad_output_data = static_cast<const T*>(grad_output.data_ptr());
  const ChunkPlan plan = plan_chunks(g, sizeof(T));
  const int64_t plane = g.out_plane(), columns_width = plan.samples_per_chunk * plane;
  const int64_t rows = g.group_rows(), group_out = g.group_out_channels();
  const int64_t weight_elements = g.out_channels * rows;
  // Per task: the input's columns for the weight gradient, then the input gradient's columns
  // [C_in*kH*kW, S*P]; the chunk's output gradient [C_out, S*P]; and, when there are several
  // tasks, the task's own sum of weight gradients [C_out, K].
  const bool task_weight_sums = grad_weight.defined() && plan.num_tasks > 1;
  const int64_t task_elements =
      (g.column_rows() + g.out_channels) * columns_width + (task_weight_sums ? weight_elements : 0);
  Tensor workspace = empty({plan.num_tasks, task_elements}, grad_output.dtype());
  for_each_chunk(plan, g.batch, [&](int64_t task, int64_t first, int64_t samples) {
    T* columns = static_cast<T*>(workspace.data_ptr()) + task * task_elements;
    T* grad_results = columns + g.column_rows() * columns_width;
    const int64_t width = samples * plane;
    gather_grad_results(grad_output_data, first, samples, grad_results, g);
    if (grad_weight.defined()) {
      T* weight_sum = task_weight_sums ? grad_results + g.out_channels * columns_width
                                       : static_cast<T*>(grad_weight.data_ptr());
      const bool task_first = first == plan.first_chunk(task) * plan.samples_per_chunk;
      const T beta = task_first ? T(0) : T(1);  // the task's chunks add up
      im2col(static_cast<const T*>(input.data_ptr()), first, samples, columns, g);
      for (int64_t group = 0; group < g.groups; ++group)
        gemm<T>(CblasNoTrans, CblasTrans, group_out, rows, width,
                grad_results + group * group_out * width, width, columns + group * rows * width,
                width, beta, weight_sum + group * group_out * rows, rows);
    }
    if (grad_input.defined()) {
      const T* weight_data = static_cast<const T*>(weight.data_ptr());
      for (int64_t group = 0; group < g.groups; ++group)
        gemm<T>(CblasTrans, CblasNoTrans, rows, width, group_out,
                weight_data + group * group_out * rows, rows,
                grad_results + group * group_out * width, width, T(0),
                columns + group * rows * width, width);
      col2im(columns, first, samples, static_cast<T*>(grad_input.data_ptr()), g);
    }
  });
  if (task_weight_sums) {
    // grad_weight = the tasks' sums, added in task order.
    T* total = static_cast<T*>(grad_weight.data_ptr());
    const T* sums = static_cast<const T*>(workspace.data_ptr()) + task_elements - weight_elements;
    std::copy(sums, sums + weight_elements, total);
    for (int64_t task = 1; task < plan.num_tasks; ++task) {
      const T* sum = sums + task * task_elements;
      for (int64_t i = 0; i < weight_elements; ++i) total[i] += sum[i];
    }
  }
}

// grad_bias[co] = sum over samples and positions of grad_output [N, C_out, P], accumulated in
// double.
template <class T>
void bias_grad_kernel(const Tensor& grad_output, const Tensor& grad_bias, const ConvGeometry& g) {
  const T* grad_output_data = static_cast<const T*>(grad_output.data_ptr());
  T* grad_bias_data = static_cast<T*>(grad_bias.data_ptr());
  const int64_t plane = g.out_plane();
  parallel_for(0, g.out_channels, grain_for(g.batch * plane), [&](int64_t begin, int64_t end) {
    for (int64_t co = begin; co < end; ++co) {
      double total = 0;
      for (int64_t n = 0; n < g.batch; ++n) {
        const T* row = grad_output_data + (n * g.out_channels + co) * plane;
        for (int64_t p = 0; p < plane; ++p) total += static_cast<double>(row[p]);
      }
      grad_bias_data[co] = static_cast<T>(total);
    }
  });
}

// ---- dtypes and layouts ----

// float16 and bfloat16 are computed in float32.
DType compute_dtype(DType dtype) {
  return dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype;
}

// `t` as a contiguous NCHW tensor of its compute dtype (itself when it is one already).
Tensor compute_operand(const Tensor& t) { return t.to(compute_dtype(t.dtype())).contiguous(); }

// A contiguous compute-dtype result as `dtype` in memory format `format`.
Tensor finish(const Tensor& result, DType dtype, MemoryFormat format) {
  return result.to(dtype).contiguous(format);
}

template <class Fn>
void visit_compute_dtype(DType dtype, Fn&& fn) {
  if (dtype == kFloat32) return fn(float{});
  MINIDL_INTERNAL_ASSERT(dtype == kFloat64, "cpu conv2d: unexpected compute dtype ", dtype);
  fn(double{});
}

Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& params) {
  if (std::optional<Tensor> output = onednn_conv2d_forward(input, weight, bias, params))
    return *output;
  const ProfileScope profile("conv2d forward (im2col)", {input, weight, bias});
  const ConvGeometry g = geometry_of(input.sizes(), weight.sizes(), params);
  const Tensor input_ready = compute_operand(input), weight_ready = compute_operand(weight);
  const Tensor bias_ready = bias.defined() ? compute_operand(bias) : Tensor();
  Tensor output =
      empty(conv2d_output_sizes(input.sizes(), weight.sizes(), params), input_ready.dtype());
  visit_compute_dtype(output.dtype(), [&](auto zero) {
    forward_kernel<decltype(zero)>(input_ready, weight_ready, bias_ready, output, g);
  });
  return finish(output, input.dtype(), input.suggest_memory_format());
}

Conv2dGrads conv2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                            const Conv2dParams& params, Conv2dGradRequest request) {
  // Each gradient from oneDNN where it takes it (the weight's and the bias's together); the rest
  // here.
  Conv2dGrads grads;
  if (request.input) {
    if (std::optional<Tensor> grad_input =
            onednn_conv2d_input_grad(grad_output, input, weight, params)) {
      grads.input = *grad_input;
      request.input = false;
    }
  }
  if (request.weight) {
    if (std::optional<OnednnConvWeightGrads> weight_grads =
            onednn_conv2d_weight_grad(grad_output, input, weight, params, request.bias)) {
      grads.weight = weight_grads->weight;
      grads.bias = weight_grads->bias;
      request.weight = request.bias = false;
    }
  }
  if (!request.input && !request.weight && !request.bias) return grads;
  const ProfileScope profile("conv2d backward (im2col)", {grad_output, input, weight});
  const ConvGeometry g = geometry_of(input.sizes(), weight.sizes(), params);
  const Tensor grad_output_ready = compute_operand(grad_output);
  const DType dtype = grad_output_ready.dtype();
  // Each operand is read only by the gradient that needs it.
  const Tensor input_ready = request.weight ? compute_operand(input) : Tensor();
  const Tensor weight_ready = request.input ? compute_operand(weight) : Tensor();
  const Tensor grad_input = request.input ? empty(input.sizes(), dtype) : Tensor();
  const Tensor grad_weight = request.weight ? empty(weight.sizes(), dtype) : Tensor();
  const Tensor grad_bias = request.bias ? empty({g.out_channels}, dtype) : Tensor();
  visit_compute_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (request.input || request.weight)
      backward_kernel<T>(grad_output_ready, input_ready, weight_ready, grad_input, grad_weight, g);
    if (request.bias) bias_grad_kernel<T>(grad_output_ready, grad_bias, g);
  });
  if (request.input) grads.input = finish(grad_input, input.dtype(), input.suggest_memory_format());
  if (request.weight)
    grads.weight = finish(grad_weight, weight.dtype(), weight.suggest_memory_format());
  if (request.bias) grads.bias = grad_bias.to(grad_output.dtype());
  return grads;
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const ConvKernels ConvKernels::kCpu{
    .conv2d_forward = cpu::conv2d_forward,
    .conv2d_backward = cpu::conv2d_backward,
};

}  // namespace minidl
