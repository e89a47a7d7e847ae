// CUDA convolution through cuDNN, ConvKernels::kCuda (ops/conv_kernels.h). Host code only, so a
// .cpp compiled in every build; without CUDA it defines nothing.
//
// cuDNN 9 still ships the cuDNN 7-style convolution API (cudnnConvolutionForward,
// ...BackwardData, ...BackwardFilter, cudnnGet*Algorithm_v7 and the tensor, filter and
// convolution descriptors in libcudnn_cnn and libcudnn_ops). It is marked deprecated in favour
// of the graph API but still supported, and covers conv2d with one call per pass, so minidl
// uses it.
//
// Note [cuDNN algorithm choice]: each pass (forward, backward data, backward filter) picks its
// algorithm once per ConvKey (device, dtype, layout, shapes, stride, padding, dilation, groups,
// and the deterministic, benchmark and TF32 switches) from cuDNN's heuristics,
// cudnnGet*Algorithm_v7, which rank the algorithms without running or timing anything, so the
// host never waits for the device. The first algorithm in that ranking that cuDNN supports for
// the shape, that is deterministic when deterministic mode is on, whose math type fits the
// precision policy (Note [cuDNN math types]) and whose workspace is at most kMaxWorkspaceBytes
// is cached with its math type and workspace size. In benchmark mode (set_cudnn_benchmark,
// ops/conv.h; not with deterministic mode) cuDNN instead runs and times every candidate on the
// call's own buffers (cudnnFind*AlgorithmEx, with a workspace as large as the largest usable
// candidate needs) and the fastest usable one is cached: the first call of a shape then waits
// for the device, as PyTorch's does with torch.backends.cudnn.benchmark; where the timing cannot
// run (no memory for its workspace, or cuDNN fails it) the heuristics choose, and the log says
// so. A call then only builds descriptors (host structs), takes the workspace from the caching
// allocator and launches on the current stream.
//
// Note [Convolution bias]: the bias is added by minidl's own broadcast add_ and its gradient is
// minidl's own sum over (N, H_out, W_out), as PyTorch's cuDNN path does, instead of
// cudnnAddTensor and cudnnConvolutionBackwardBias: those work on every dtype and layout
// (including bfloat16, which those cuDNN calls are not documented to take), accumulate 16-bit
// types in float32, and reduce in a fixed order, so deterministic mode covers them too.
//
// Note [cuDNN math types]: float32 runs with CUDNN_FMA_MATH (exact float32, no tensor cores)
// unless allow_tf32() is on, when CUDNN_DEFAULT_MATH lets Ampere and newer use TF32 tensor
// cores. float16 and bfloat16 run with CUDNN_TENSOR_OP_MATH and a float32 compute type, so
// products accumulate in float32. An algorithm that needs CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
// (float32 data rounded to half precision) is never taken.
#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <cudnn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/cuda/cudnn_descriptors.h"
#include "minidl/ops/cuda/cudnn_handle.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/reduce.h"

namespace minidl::cuda {

namespace {

// Algorithms that need more workspace than this are passed over (FFT variants can ask for
// several GiB); cuDNN always has algorithms that need little or none.
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

// The type products accumulate in: float32 for every type but float64.
cudnnDataType_t cudnn_compute_type(DType dtype) {
  return dtype == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

// See Note [cuDNN math types].
cudnnMathType_t math_policy(DType dtype, bool allow_tf32) {
  if (dtype == kFloat16 || dtype == kBFloat16) return CUDNN_TENSOR_OP_MATH;
  if (dtype == kFloat32 && !allow_tf32) return CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}

bool math_type_allowed(cudnnMathType_t candidate, cudnnMathType_t policy) {
  if (candidate == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
  if (policy == CUDNN_FMA_MATH) return candidate != CUDNN_TENSOR_OP_MATH;
  return true;
}

// The math type an accepted algorithm runs with: its own, but never more than FMA when the
// policy is exact float32.
cudnnMathType_t math_type_to_run(cudnnMathType_t candidate, cudnnMathType_t policy) {
  return policy == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : candidate;
}

// The global switches a cuDNN convolution depends on (cudnn_deterministic() in ops/conv.h,
// allow_tf32() in ops/linalg.h), read at each call; part of the algorithm cache key.
struct CudnnConvOptions {
  bool deterministic = false;  // only algorithms cuDNN reports as deterministic
  bool allow_tf32 = false;     // float32 may use TF32 tensor cores
  bool benchmark = false;      // time the candidates (never with deterministic)
};

// One convolution as cuDNN sees it: everything its descriptors and its cache key hold.
struct ConvProblem {
  int device = 0;
  DType dtype = kFloat32;
  MemoryFormat layout = MemoryFormat::Contiguous;  // of the input, output, weight and gradients
  Shape input_sizes;                               // [N, C_in, H, W]
  Shape weight_sizes;                              // [C_out, C_in / groups, kH, kW]
  Shape output_sizes;                              // [N, C_out, H_out, W_out]
  Conv2dParams params;
  CudnnConvOptions options;
};

ConvProblem make_problem(const Tensor& input, const Tensor& weight, const Conv2dParams& params) {
  ConvProblem problem;
  problem.device = input.device().index;
  problem.dtype = input.dtype();
  problem.layout = input.suggest_memory_format();
  problem.input_sizes = input.sizes();
  problem.weight_sizes = weight.sizes();
  problem.output_sizes = conv2d_output_sizes(input.sizes(), weight.sizes(), params);
  problem.params = params;
  problem.options = {cudnn_deterministic(), allow_tf32(),
                     cudnn_benchmark() && !cudnn_deterministic()};
  return problem;
}

// For error messages: the shapes, geometry, dtype and layout.
std::string describe(const ConvProblem& problem) {
  const Conv2dParams& p = problem.params;
  return minidl::detail::concat(
      "input shape ", problem.input_sizes, ", weight shape ", problem.weight_sizes, ", stride (",
      p.stride.h, ", ", p.stride.w, "), padding (", p.padding.h, ", ", p.padding.w, "), dilation (",
      p.dilation.h, ", ", p.dilation.w, "), groups ", p.groups, ", ", problem.dtype, ", ",
      problem.layout == MemoryFormat::ChannelsLast ? "channels-last" : "NCHW",
      problem.options.deterministic ? ", deterministic" : "",
      problem.options.benchmark ? ", benchmark mode" : "");
}

// ---- descriptors (host structs, created per call) ----

class FilterDescriptor {
 public:
  // A weight [C_out, C_in / groups, kH, kW]: KCRS in NCHW layout, KRSC in channels-last.
  FilterDescriptor(const Shape& sizes, DType dtype, MemoryFormat layout) {
    MINIDL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&descriptor_));
    const cudnnTensorFormat_t format =
        layout == MemoryFormat::ChannelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    MINIDL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(descriptor_, cudnn_data_type(dtype), format,
                                                  cudnn_int(sizes[0]), cudnn_int(sizes[1]),
                                                  cudnn_int(sizes[2]), cudnn_int(sizes[3])));
  }
  ~FilterDescriptor() { (void)cudnnDestroyFilterDescriptor(descriptor_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return descriptor_; }

 private:
  cudnnFilterDescriptor_t descriptor_ = nullptr;
};

class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(const Conv2dParams& params, DType dtype) {
    MINIDL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&descriptor_));
    MINIDL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        descriptor_, cudnn_int(params.padding.h), cudnn_int(params.padding.w),
        cudnn_int(params.stride.h), cudnn_int(params.stride.w), cudnn_int(params.dilation.h),
        cudnn_int(params.dilation.w), CUDNN_CROSS_CORRELATION, cudnn_compute_type(dtype)));
    MINIDL_CUDNN_CHECK(cudnnSetConvolutionGroupCount(descriptor_, cudnn_int(params.groups)));
  }
  ~ConvolutionDescriptor() { (void)cudnnDestroyConvolutionDescriptor(descriptor_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return descriptor_; }
  void set_math_type(cudnnMathType_t math_type) {
    MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(descriptor_, math_type));
  }

 private:
  cudnnConvolutionDescriptor_t descriptor_ = nullptr;
};

// Everything cuDNN needs to know about one convolution. The input descriptor also describes
// the input's gradient, the output's the output's gradient, the weight's the weight's gradient.
struct ConvDescriptors {
  explicit ConvDescriptors(const ConvProblem& problem)
      : input(problem.input_sizes, problem.dtype, problem.layout),
        weight(problem.weight_sizes, problem.dtype, problem.layout),
        output(problem.output_sizes, problem.dtype, problem.layout),
        conv(problem.params, problem.dtype) {}
  TensorDescriptor input;   // [N, C_in, H, W]
  FilterDescriptor weight;  // [C_out, C_in / groups, kH, kW]
  TensorDescriptor output;  // [N, C_out, H_out, W_out]
  ConvolutionDescriptor conv;
};

// ---- the algorithm cache (Note [cuDNN algorithm choice]) ----

// A ConvProblem's fields, flattened (see make_key).
struct ConvKey {
  std::array<int64_t, 21> fields{};
  bool operator==(const ConvKey&) const = default;
};

struct ConvKeyHash {
  size_t operator()(const ConvKey& key) const {
    size_t hash = 0;
    for (int64_t field : key.fields) hash = hash * 1000003u ^ std::hash<int64_t>{}(field);
    return hash;
  }
};

// The output sizes follow from the rest, so they are left out.
ConvKey make_key(const ConvProblem& problem) {
  const Shape& in = problem.input_sizes;
  const Shape& w = problem.weight_sizes;
  const Conv2dParams& p = problem.params;
  return ConvKey{{problem.device,
                  static_cast<int64_t>(problem.dtype),
                  static_cast<int64_t>(problem.layout),
                  in[0],
                  in[1],
                  in[2],
                  in[3],
                  w[0],
                  w[1],
                  w[2],
                  w[3],
                  p.stride.h,
                  p.stride.w,
                  p.padding.h,
                  p.padding.w,
                  p.dilation.h,
                  p.dilation.w,
                  p.groups,
                  problem.options.deterministic,
                  problem.options.allow_tf32,
                  problem.options.benchmark}};
}

struct AlgoChoice {
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math_type = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;
};

// The choices of one pass. Thread-safe; lookups are one short critical section.
class AlgoCache {
 public:
  std::optional<AlgoChoice> find(const ConvKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = choices_.find(key);
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }
  void insert(const ConvKey& key, const AlgoChoice& choice) {
    std::lock_guard<std::mutex> lock(mutex_);
    choices_.emplace(key, choice);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<ConvKey, AlgoChoice, ConvKeyHash> choices_;
};

// The device buffers of one call of a pass, for benchmark mode's timed trials: the pass's two
// operands and its output, which the trials overwrite before the call writes it for real.
struct PassOperands {
  const void* first;   // forward: x; backward data: w; backward filter: x
  const void* second;  // forward: w; backward data and filter: dy
  void* output;        // forward: y; backward data: dx; backward filter: dw
};

// The three passes, as choose_algorithm sees them: their perf type, heuristics, timed trials
// and workspace queries, each with the descriptors in the order cuDNN takes them.
struct ForwardPass {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "forward";
  static AlgoCache& cache() {
    static AlgoCache* choices = new AlgoCache;  // never destroyed: used until process exit
    return *choices;
  }
  static cudnnStatus_t max_count(cudnnHandle_t handle, int* count) {
    return cudnnGetConvolutionForwardAlgorithmMaxCount(handle, count);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t handle, const ConvDescriptors& d, int requested,
                                  int* returned, Perf* perfs) {
    return cudnnGetConvolutionForwardAlgorithm_v7(handle, d.input.get(), d.weight.get(),
                                                  d.conv.get(), d.output.get(), requested, returned,
                                                  perfs);
  }
  static cudnnStatus_t find(cudnnHandle_t handle, const ConvDescriptors& d, const PassOperands& o,
                            int requested, int* returned, Perf* perfs, void* space, size_t bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(handle, d.input.get(), o.first, d.weight.get(),
                                                  o.second, d.conv.get(), d.output.get(), o.output,
                                                  requested, returned, perfs, space, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t handle, const ConvDescriptors& d, int algo,
                                      size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(
        handle, d.input.get(), d.weight.get(), d.conv.get(), d.output.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
};

struct BackwardDataPass {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "backward-data";
  static AlgoCache& cache() {
    static AlgoCache* choices = new AlgoCache;  // never destroyed: used until process exit
    return *choices;
  }
  static cudnnStatus_t max_count(cudnnHandle_t handle, int* count) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, count);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t handle, const ConvDescriptors& d, int requested,
                                  int* returned, Perf* perfs) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.weight.get(), d.output.get(),
                                                       d.conv.get(), d.input.get(), requested,
                                                       returned, perfs);
  }
  static cudnnStatus_t find(cudnnHandle_t handle, const ConvDescriptors& d, const PassOperands& o,
                            int requested, int* returned, Perf* perfs, void* space, size_t bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(
        handle, d.weight.get(), o.first, d.output.get(), o.second, d.conv.get(), d.input.get(),
        o.output, requested, returned, perfs, space, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t handle, const ConvDescriptors& d, int algo,
                                      size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, d.weight.get(), d.output.get(), d.conv.get(), d.input.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
};

struct BackwardFilterPass {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "backward-filter";
  static AlgoCache& cache() {
    static AlgoCache* choices = new AlgoCache;  // never destroyed: used until process exit
    return *choices;
  }
  static cudnnStatus_t max_count(cudnnHandle_t handle, int* count) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, count);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t handle, const ConvDescriptors& d, int requested,
                                  int* returned, Perf* perfs) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.input.get(), d.output.get(),
                                                         d.conv.get(), d.weight.get(), requested,
                                                         returned, perfs);
  }
  static cudnnStatus_t find(cudnnHandle_t handle, const ConvDescriptors& d, const PassOperands& o,
                            int requested, int* returned, Perf* perfs, void* space, size_t bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(
        handle, d.input.get(), o.first, d.output.get(), o.second, d.conv.get(), d.weight.get(),
        o.output, requested, returned, perfs, space, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t handle, const ConvDescriptors& d, int algo,
                                      size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, d.input.get(), d.output.get(), d.conv.get(), d.weight.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
};

// A workspace from the caching allocator, on the current stream (the one the call launches
// on, so the block is reused only after the call's work on that stream).
std::shared_ptr<void> workspace(size_t bytes, int device) {
  if (bytes == 0) return nullptr;
  return CachingAllocator::allocate_shared(bytes, device);
}

// The choice `perf` makes, where it is usable: supported for the shape, deterministic when
// that is asked, of a math type the policy allows and with a workspace within
// kMaxWorkspaceBytes. Leaves `d.conv` set to its math type.
template <class Pass>
std::optional<AlgoChoice> usable(cudnnHandle_t handle, ConvDescriptors& d,
                                 const ConvProblem& problem, const typename Pass::Perf& perf) {
  const cudnnMathType_t policy = math_policy(problem.dtype, problem.options.allow_tf32);
  if (perf.status != CUDNN_STATUS_SUCCESS) return std::nullopt;
  if (problem.options.deterministic && perf.determinism != CUDNN_DETERMINISTIC) return std::nullopt;
  if (!math_type_allowed(perf.mathType, policy)) return std::nullopt;
  AlgoChoice choice;
  choice.algo = static_cast<int>(perf.algo);
  choice.math_type = math_type_to_run(perf.mathType, policy);
  d.conv.set_math_type(choice.math_type);
  if (Pass::workspace_size(handle, d, choice.algo, &choice.workspace_bytes) != CUDNN_STATUS_SUCCESS)
    return std::nullopt;  // not available with this math type after all
  if (choice.workspace_bytes > kMaxWorkspaceBytes) return std::nullopt;
  return choice;
}

// cuDNN's heuristic ranking of the pass's algorithms, best first, for the policy's math type.
template <class Pass>
std::vector<typename Pass::Perf> heuristic_ranking(cudnnHandle_t handle, ConvDescriptors& d,
                                                   const ConvProblem& problem) {
  d.conv.set_math_type(math_policy(problem.dtype, problem.options.allow_tf32));
  int max_count = 0;
  MINIDL_CUDNN_CHECK(Pass::max_count(handle, &max_count));
  std::vector<typename Pass::Perf> perfs(static_cast<size_t>(max_count));
  int returned = 0;
  MINIDL_CUDNN_CHECK(Pass::heuristics(handle, d, max_count, &returned, perfs.data()));
  perfs.resize(static_cast<size_t>(returned));
  return perfs;
}

// Benchmark mode: the fastest usable algorithm of cuDNN's timed trials on `operands`, with a
// workspace as large as the largest usable candidate of `ranking` needs; nullopt, said in the
// log, where the trials cannot run.
template <class Pass>
std::optional<AlgoChoice> fastest_usable(cudnnHandle_t handle, ConvDescriptors& d,
                                         const ConvProblem& problem,
                                         const std::vector<typename Pass::Perf>& ranking,
                                         const PassOperands& operands) {
  size_t bytes = 0;
  for (const typename Pass::Perf& perf : ranking)
    if (const std::optional<AlgoChoice> choice = usable<Pass>(handle, d, problem, perf))
      bytes = std::max(bytes, choice->workspace_bytes);
  std::shared_ptr<void> space;
  try {
    space = workspace(bytes, problem.device);
  } catch (const Error& error) {
    logger().warn(
        "conv2d: no memory for the {} pass's timed trials ({} bytes of workspace), so "
        "cuDNN's heuristics choose for {}: {}",
        Pass::kName, bytes, describe(problem), error.what());
    return std::nullopt;
  }
  d.conv.set_math_type(math_policy(problem.dtype, problem.options.allow_tf32));
  int max_count = 0;
  MINIDL_CUDNN_CHECK(Pass::max_count(handle, &max_count));
  std::vector<typename Pass::Perf> timed(static_cast<size_t>(max_count));
  int returned = 0;
  const cudnnStatus_t status =
      Pass::find(handle, d, operands, max_count, &returned, timed.data(), space.get(), bytes);
  if (status != CUDNN_STATUS_SUCCESS) {
    logger().warn(
        "conv2d: cuDNN failed the {} pass's timed trials ({}), so its heuristics choose "
        "for {}",
        Pass::kName, cudnnGetErrorString(status), describe(problem));
    return std::nullopt;
  }
  for (int i = 0; i < returned; ++i) {  // fastest first
    const typename Pass::Perf& perf = timed[static_cast<size_t>(i)];
    if (perf.memory > bytes) continue;
    if (std::optional<AlgoChoice> choice = usable<Pass>(handle, d, problem, perf)) {
      logger().debug("conv2d: cuDNN's timed trials chose {} algorithm {} ({:.3f} ms) for {}",
                     Pass::kName, choice->algo, perf.time, describe(problem));
      return choice;
    }
  }
  return std::nullopt;
}

// The cached choice for `key`, or else the fastest usable algorithm of timed trials on
// `operands` (benchmark mode) or the first usable one of cuDNN's ranking, which is then cached.
// Leaves `d.conv` set to the choice's math type.
template <class Pass>
AlgoChoice choose_algorithm(cudnnHandle_t handle, ConvDescriptors& d, const ConvProblem& problem,
                            const PassOperands& operands) {
  const ConvKey key = make_key(problem);
  if (std::optional<AlgoChoice> cached = Pass::cache().find(key)) {
    d.conv.set_math_type(cached->math_type);
    return *cached;
  }
  // The choice is made once per shape, by the warm-up; a capture must only replay it (cuDNN's
  // first use of an algorithm may load its kernels, which the driver refuses during capture).
  check_not_capturing(problem.device, "conv2d: choosing a cuDNN algorithm for a new shape",
                      "run the step once eagerly, with the same shapes, before capturing it");
  const std::vector<typename Pass::Perf> ranking = heuristic_ranking<Pass>(handle, d, problem);
  std::optional<AlgoChoice> choice;
  if (problem.options.benchmark)
    choice = fastest_usable<Pass>(handle, d, problem, ranking, operands);
  for (size_t i = 0; !choice && i < ranking.size(); ++i)
    choice = usable<Pass>(handle, d, problem, ranking[i]);
  MINIDL_CHECK(choice.has_value(), "conv2d: cuDNN offers no usable ", Pass::kName,
               " algorithm for ", describe(problem), " (", ranking.size(), " ranked)");
  d.conv.set_math_type(choice->math_type);
  Pass::cache().insert(key, *choice);
  return *choice;
}

// ---- tensors as cuDNN reads them ----

// cuDNN's legacy API takes int sizes and strides and addresses each tensor with 32-bit offsets.
void check_cudnn_sizes(const ConvProblem& problem) {
  for (const Shape* sizes : {&problem.input_sizes, &problem.weight_sizes, &problem.output_sizes})
    MINIDL_CHECK(shape_numel(*sizes) <= INT_MAX, "conv2d: a tensor of shape ", *sizes,
                 " has more elements than cuDNN's limit of 2^31 - 1 (", describe(problem),
                 "); split the batch");
}

Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& params) {
  const ConvProblem problem = make_problem(input, weight, params);
  check_cudnn_sizes(problem);
  DeviceGuard device_guard(problem.device);  // handle, descriptors and workspace of this device
  const Tensor x = cudnn_ready(input, problem.layout), w = cudnn_ready(weight, problem.layout);
  Tensor y = empty(problem.output_sizes, input.options(), problem.layout);

  cudnnHandle_t handle = cudnn_handle(problem.device);
  ConvDescriptors d(problem);
  const AlgoChoice choice =
      choose_algorithm<ForwardPass>(handle, d, problem, {x.data_ptr(), w.data_ptr(), y.data_ptr()});
  const std::shared_ptr<void> space = workspace(choice.workspace_bytes, problem.device);
  const ScalingFactor one(1, problem.dtype), zero(0, problem.dtype);
  MINIDL_CUDNN_CHECK(cudnnConvolutionForward(
      handle, one.get(), d.input.get(), x.data_ptr(), d.weight.get(), w.data_ptr(), d.conv.get(),
      static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), space.get(), choice.workspace_bytes,
      zero.get(), d.output.get(), y.data_ptr()));
  if (bias.defined()) y.add_(bias.view({1, bias.size(0), 1, 1}));  // Note [Convolution bias]
  return y;
}

Conv2dGrads conv2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                            const Conv2dParams& params, Conv2dGradRequest request) {
  const ConvProblem problem = make_problem(input, weight, params);
  check_cudnn_sizes(problem);
  DeviceGuard device_guard(problem.device);
  const Tensor dy = cudnn_ready(grad_output, problem.layout);

  cudnnHandle_t handle = cudnn_handle(problem.device);
  ConvDescriptors d(problem);
  const ScalingFactor one(1, problem.dtype), zero(0, problem.dtype);
  Conv2dGrads grads;
  if (request.input) {
    const Tensor w = cudnn_ready(weight, problem.layout);
    Tensor dx = empty(problem.input_sizes, input.options(), problem.layout);
    const AlgoChoice choice = choose_algorithm<BackwardDataPass>(
        handle, d, problem, {w.data_ptr(), dy.data_ptr(), dx.data_ptr()});
    const std::shared_ptr<void> space = workspace(choice.workspace_bytes, problem.device);
    MINIDL_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, one.get(), d.weight.get(), w.data_ptr(), d.output.get(), dy.data_ptr(),
        d.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), space.get(),
        choice.workspace_bytes, zero.get(), d.input.get(), dx.data_ptr()));
    grads.input = dx;
  }
  if (request.weight) {
    const Tensor x = cudnn_ready(input, problem.layout);
    Tensor dw = empty(problem.weight_sizes, weight.options(), problem.layout);
    const AlgoChoice choice = choose_algorithm<BackwardFilterPass>(
        handle, d, problem, {x.data_ptr(), dy.data_ptr(), dw.data_ptr()});
    const std::shared_ptr<void> space = workspace(choice.workspace_bytes, problem.device);
    MINIDL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, one.get(), d.input.get(), x.data_ptr(), d.output.get(), dy.data_ptr(), d.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo), space.get(),
        choice.workspace_bytes, zero.get(), d.weight.get(), dw.data_ptr()));
    // The gradient takes the weight's own layout, so an optimizer reads both the same way.
    grads.weight = dw.contiguous(weight.suggest_memory_format());
  }
  if (request.bias) grads.bias = sum(dy, {0, 2, 3});  // Note [Convolution bias]
  return grads;
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const ConvKernels ConvKernels::kCuda{
    .conv2d_forward = cuda::conv2d_forward,
    .conv2d_backward = cuda::conv2d_backward,
};

}  // namespace minidl

#endif  // MINIDL_WITH_CUDA
