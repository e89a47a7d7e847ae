// CUDA graphs: capture, replay, and the capture state of streams (see core/cuda/graph.h).
#include "minidl/core/cuda/graph.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#endif

namespace minidl::cuda {

namespace {

// The graphs this thread is capturing, with their streams. Captures other than relaxed ones
// must end in the thread that began them, so a thread-local list sees all that matter.
std::vector<std::pair<StreamHandle, CudaGraph*>>& captures_of_this_thread() {
  thread_local std::vector<std::pair<StreamHandle, CudaGraph*>> captures;
  return captures;
}

}  // namespace

MempoolId graph_pool_handle() { return new_mempool_id(); }

CudaGraph::CudaGraph() = default;

CudaGraph::~CudaGraph() {
  try {
    reset();
  } catch (const std::exception& error) {
    logger().error("CudaGraph: destroying the graph failed: {}", error.what());
  }
}

void CudaGraph::add_replay_hook(std::function<void()> hook) {
  MINIDL_CHECK(hook != nullptr, "CudaGraph::add_replay_hook: expected a callable hook, got none");
  replay_hooks_.push_back(std::move(hook));
}

CudaGraph* capturing_graph(const Stream& stream) {
  for (const auto& [handle, graph] : captures_of_this_thread())
    if (handle == stream.handle()) return graph;
  if (!is_capturing(stream)) return nullptr;
  MINIDL_CHECK(false, "the current stream of cuda:", stream.device(), " is being captured into a ",
               "CUDA graph that no cuda::CudaGraph of this thread began (the raw CUDA API, or ",
               "another thread); minidl's optimizers and GradScaler refresh device state before ",
               "each replay through a CudaGraph's replay hooks, so capture with cuda::CudaGraph");
  return nullptr;
}

void check_not_capturing(int device, const char* op, const char* reason) {
  if (!is_capturing(current_stream(device))) return;
  MINIDL_CHECK(false, op, " cannot run while a CUDA graph is being captured on the current ",
               "stream of cuda:", device, ": ", reason, " (Note [What a captured step may do] in ",
               "core/cuda/graph.h)");
}

#if MINIDL_WITH_CUDA

namespace {

void register_capture(StreamHandle stream, CudaGraph* graph) {
  captures_of_this_thread().emplace_back(stream, graph);
}

void unregister_capture(CudaGraph* graph) {
  std::erase_if(captures_of_this_thread(),
                [graph](const auto& entry) { return entry.second == graph; });
}

cudaStreamCaptureMode to_cuda(CaptureErrorMode mode) {
  switch (mode) {
    case CaptureErrorMode::kGlobal: return cudaStreamCaptureModeGlobal;
    case CaptureErrorMode::kThreadLocal: return cudaStreamCaptureModeThreadLocal;
    case CaptureErrorMode::kRelaxed: return cudaStreamCaptureModeRelaxed;
  }
  return cudaStreamCaptureModeGlobal;
}

}  // namespace

Stream graph_side_stream(int device) {
  // Per thread, as the cuBLAS handles whose workspaces it keeps from being made again.
  thread_local std::vector<std::optional<Stream>> streams;
  const auto index = static_cast<size_t>(device);
  if (streams.size() <= index) streams.resize(index + 1);
  std::optional<Stream>& stream = streams[index];
  if (!stream) stream = Stream::create(device);
  return *stream;
}

bool is_capturing(const Stream& stream) {
  // The legacy default stream is never captured, and asking about it while a blocking stream
  // captures fails (cudaErrorStreamCaptureImplicit).
  if (stream.handle() == nullptr) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  MINIDL_CUDA_CHECK(cudaStreamIsCapturing(stream.handle(), &status));
  // An invalidated capture is still underway until cudaStreamEndCapture.
  return status != cudaStreamCaptureStatusNone;
}

void CudaGraph::capture_begin(MempoolId pool, CaptureErrorMode mode) {
  require_available("CudaGraph::capture_begin");
  MINIDL_CHECK(!capturing_, "CudaGraph::capture_begin: this graph is capturing already; call ",
               "capture_end() first");
  MINIDL_CHECK(exec_ == nullptr, "CudaGraph::capture_begin: this graph holds a capture already; ",
               "call reset() before capturing again");
  const int device = current_device();
  const Stream stream = current_stream(device);
  MINIDL_CHECK(stream.handle() != nullptr,
               "CudaGraph::capture_begin: the current stream of cuda:", device,
               " is the legacy default stream, which cannot be captured; make one with ",
               "cuda::Stream::create and a cuda::StreamGuard, or use cuda::GraphCapture");
  MINIDL_CHECK(!cuda::is_capturing(stream), "CudaGraph::capture_begin: the current stream of ",
               "cuda:", device, " is being captured already");
  DeviceCachingAllocator& allocator = CachingAllocator::for_device(device);

  MINIDL_CUDA_CHECK(cudaStreamBeginCapture(stream.handle(), to_cuda(mode)));
  capturing_ = true;
  capture_stream_ = stream;
  device_ = device;
  try {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long capture_id = 0;
    MINIDL_CUDA_CHECK(cudaStreamGetCaptureInfo(stream.handle(), &status, &capture_id));
    capture_id_ = static_cast<uint64_t>(capture_id);
    pool_ = pool != 0 ? pool : new_mempool_id();
    allocator.begin_allocate_to_pool(pool_, capture_id_);
    holds_pool_ = true;
    register_capture(stream.handle(), this);
  } catch (...) {
    abort_capture();
    throw;
  }
}

void CudaGraph::capture_end() {
  MINIDL_CHECK(capturing_, "CudaGraph::capture_end: no capture is underway; call capture_begin() ",
               "first");
  DeviceGuard device_guard(device_);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_stream_.handle(), &graph);
  capturing_ = false;
  unregister_capture(this);
  CachingAllocator::for_device(device_).end_allocate_to_pool(capture_id_);
  if (ended != cudaSuccess || graph == nullptr) {
    (void)cudaGetLastError();  // the capture's error is not sticky; do not report it twice
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    reset();
    MINIDL_CHECK(false, "CudaGraph::capture_end: the capture on cuda:", device_, " was ",
                 "invalidated (", cudaGetErrorString(ended), "): an operation that cannot be ",
                 "captured ran during it, such as a host synchronisation, a copy from pageable ",
                 "host memory or a driver call refused during capture (Note [What a captured ",
                 "step may do] in core/cuda/graph.h)");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);  // the executable graph does not need it
  if (instantiated != cudaSuccess) {
    reset();
    MINIDL_CUDA_CHECK(instantiated);
  }
  exec_ = exec;
  // Uploads the graph's work to the device now, so that the first replay is as fast as the rest.
  MINIDL_CUDA_CHECK(cudaGraphUpload(exec_, capture_stream_.handle()));
}

void CudaGraph::replay() {
  MINIDL_CHECK(exec_ != nullptr, "CudaGraph::replay: the graph is empty; capture a step first ",
               "(capture_begin() and capture_end(), or cuda::GraphCapture)");
  DeviceGuard device_guard(device_);
  const Stream stream = current_stream(device_);
  for (const std::function<void()>& hook : replay_hooks_) hook();
  MINIDL_CUDA_CHECK(cudaGraphLaunch(exec_, stream.handle()));
  ++replays_;
}

void CudaGraph::reset() {
  if (capturing_) abort_capture();
  if (exec_ != nullptr) {
    const cudaError_t status = cudaGraphExecDestroy(exec_);  // in-flight replays still finish
    exec_ = nullptr;
    MINIDL_CUDA_CHECK(status);
  }
  // The hooks hold device buffers of the private pool; freed first, so releasing the pool can
  // return its segments at once.
  replay_hooks_.clear();
  if (holds_pool_) {
    holds_pool_ = false;
    CachingAllocator::for_device(device_).release_pool(pool_);
  }
}

void CudaGraph::abort_capture() noexcept {
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(capture_stream_.handle(), &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  capturing_ = false;
  unregister_capture(this);
  try {
    DeviceCachingAllocator& allocator = CachingAllocator::for_device(device_);
    if (holds_pool_) allocator.end_allocate_to_pool(capture_id_);
    replay_hooks_.clear();
    if (holds_pool_) {
      holds_pool_ = false;
      allocator.release_pool(pool_);
    }
  } catch (const std::exception& error) {
    logger().error("CudaGraph: discarding the capture on cuda:{} failed: {}", device_,
                   error.what());
  }
}

GraphCapture::GraphCapture(CudaGraph& graph, const GraphCaptureOptions& options) : graph_(graph) {
  require_available("GraphCapture");
  const int device = current_device();
  previous_stream_ = current_stream(device);
  if (options.stream())
    capture_stream_ = *options.stream();
  else
    capture_stream_ =
        previous_stream_.handle() != nullptr ? previous_stream_ : graph_side_stream(device);
  MINIDL_CHECK(capture_stream_.device() == device,
               "GraphCapture: the capture stream is on cuda:", capture_stream_.device(),
               " but the current device is cuda:", device);
  // Errors of the eager warm-up surface here, not as an invalidated capture.
  synchronize();
  // As torch.cuda.graph does: the warm-up's cached blocks go back to the driver, so that the
  // graph's private pool, which takes the captured step's activations anew, does not hold them
  // beside a second copy of the same size (ResNet-18 fp32 on an H200 had reserved 10070 MiB,
  // PyTorch eager 4404). Only this device's: another device may be capturing now, and a cudaFree
  // there would break its capture; and not while another capture on this device is underway,
  // whose pool is in use (the capture goes on without the release).
  CachingAllocator::for_device(device).empty_cache_unless_capturing();
  if (!(capture_stream_ == previous_stream_)) {
    Event queued_so_far;
    queued_so_far.record(previous_stream_);
    queued_so_far.wait(capture_stream_);
  }
  stream_guard_.emplace(capture_stream_);
  try {
    graph_.capture_begin(options.pool(), options.error_mode());
  } catch (...) {
    stream_guard_.reset();
    throw;
  }
}

void GraphCapture::end() {
  MINIDL_CHECK(!ended_, "GraphCapture::end: the capture has ended already");
  ended_ = true;
  struct RestoreStream {
    GraphCapture& capture;
    ~RestoreStream() { capture.stream_guard_.reset(); }
  } restore{*this};
  graph_.capture_end();
  if (!(capture_stream_ == previous_stream_)) {
    Event capture_stream_done;
    capture_stream_done.record(capture_stream_);
    capture_stream_done.wait(previous_stream_);
  }
}

GraphCapture::~GraphCapture() {
  if (ended_) return;
  if (std::uncaught_exceptions() == 0)
    logger().warn("GraphCapture: destroyed without end(); the capture is discarded");
  try {
    graph_.reset();
  } catch (const std::exception& error) {
    logger().error("GraphCapture: discarding the capture failed: {}", error.what());
  }
  stream_guard_.reset();
}

#else  // a build without CUDA: there is nothing to capture

bool is_capturing(const Stream&) { return false; }
Stream graph_side_stream(int) {
  require_available("graph_side_stream");
  return {};
}
void CudaGraph::capture_begin(MempoolId, CaptureErrorMode) {
  require_available("CudaGraph::capture_begin");
}
void CudaGraph::capture_end() { require_available("CudaGraph::capture_end"); }
void CudaGraph::replay() { require_available("CudaGraph::replay"); }
void CudaGraph::reset() { replay_hooks_.clear(); }
void CudaGraph::abort_capture() noexcept {}
GraphCapture::GraphCapture(CudaGraph& graph, const GraphCaptureOptions&) : graph_(graph) {
  require_available("GraphCapture");
}
void GraphCapture::end() { require_available("GraphCapture::end"); }
GraphCapture::~GraphCapture() = default;

#endif

}  // namespace minidl::cuda
