#pragma once
// CUDA graphs: the device work of a whole training step captured once and replayed with one
// launch, as torch.cuda.CUDAGraph and torch.cuda.graph do. For a small network most of an eager
// step is host overhead (ops, autograd, kernel launches); a replay skips all of it.
//
//   cuda::Stream stream = cuda::Stream::create(device);
//   cuda::StreamGuard on_stream(stream);     // warm-up, capture and replays on one stream
//   step();                                  // eager warm-up: state, algorithms, workspaces
//   cuda::CudaGraph graph;
//   {
//     cuda::GraphCapture capture(graph);     // captures on the current stream
//     step();                                // queued into the graph, not run
//     capture.end();
//   }
//   for (...) {
//     static_images.copy_(batch.images);     // inputs live in tensors made before capture
//     graph.replay();                        // the whole step: one launch
//   }
//
// Note [What a captured step may do]
// Capture records device work only: kernels, device-to-device copies and memsets, with their
// addresses and scalar arguments. The host side of the step runs once, at capture, so
// - warm up eagerly first, on the stream that will capture: the first step creates optimizer
//   and GradScaler state, picks cuDNN algorithms and allocates the stream's cuBLAS workspace,
//   none of which may happen during a capture (a cuDNN choice or a missing momentum buffer is a
//   clear error then);
// - values the host decides each step must live in device memory that a replay hook refreshes
//   before each replay, outside the graph: an optimizer's learning rate and other
//   hyper-parameters, the addresses in its multi-tensor table and in GradScaler's unscale table
//   (Note [Multi-tensor steps under CUDA graph capture] in optim/multi_tensor_optimizer.cpp,
//   optim/cuda/amp_kernel.cu). Anything else is frozen at its value during capture;
// - what cannot be captured fails with an error naming the op: copies between host and device
//   (item(), .to(kCPU), uploads from host memory), random ops (the Philox offset advances on
//   the host, so every replay would draw the same numbers), empty_cache();
// - memory allocated during the capture comes from the graph's private pool (Note [CUDA graph
//   private pools] in caching_allocator.cpp) and stays the graph's until reset(). Tensors made
//   before the capture and used by it (parameters, gradients kept by zero_grad(false),
//   optimizer and scaler state, static inputs) must keep their storage while the graph lives:
//   optimizer.load_state_dict or replacing a parameter means capturing again;
// - after a replay, param.grad() still names the tensors of the last host-side step (the
//   capture, or a later eager step); the graph's gradients are in the private pool.
// Replays run on the current stream. Eager work that touches what the graph touches (an eager
// step between replays, the cuBLAS workspace of the capture stream) must run on that stream too,
// or be ordered with it by events.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/stream.h"

struct CUgraphExec_st;

namespace minidl::cuda {

using GraphExecHandle = CUgraphExec_st*;  // cudaGraphExec_t

// How strictly the driver rejects calls that would break a capture (cudaStreamCaptureMode).
// kThreadLocal is minidl's default, where PyTorch's is global: the DataLoader's worker threads
// allocate pinned memory and query events while the main thread captures, which global mode
// would refuse, invalidating the capture; the capturing thread is still checked.
enum class CaptureErrorMode {
  kGlobal,       // calls that could break the capture fail in every thread
  kThreadLocal,  // ...in the capturing thread only
  kRelaxed,      // never (for code known to be safe)
};

// A fresh pool id: graphs captured with it share one private pool (torch.cuda.graph_pool_handle).
MempoolId graph_pool_handle();

class CudaGraph {
 public:
  CudaGraph();
  // reset(); errors are logged.
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Begins capturing the work queued on the current stream of the current device, which must
  // be a stream made by Stream::create (the legacy default stream cannot be captured; see
  // GraphCapture). Allocations of the capture come from `pool` (another graph's pool(), or
  // graph_pool_handle()), or from a new private pool when it is 0.
  void capture_begin(MempoolId pool = 0, CaptureErrorMode mode = CaptureErrorMode::kThreadLocal);
  // Ends the capture and instantiates the graph. Throws when the capture was invalidated (an
  // operation that cannot be captured ran) or cannot be instantiated; the graph is then empty.
  void capture_end();
  // Runs the replay hooks, then launches the graph on the current stream of its device.
  void replay();
  // Drops the captured graph, its hooks and its hold on the private pool; capture_begin may
  // follow.
  void reset();

  // Runs `hook` on the host before every replay, with the replay's stream current, after the
  // hooks added before it. Work it queues runs before the graph. For device state the host
  // refreshes between replays; added by ops while they are being captured.
  void add_replay_hook(std::function<void()> hook);

  bool is_capturing() const { return capturing_; }
  bool has_graph() const { return exec_ != nullptr; }
  MempoolId pool() const { return pool_; }
  int device() const { return device_; }
  uint64_t replays() const { return replays_; }

 private:
  void abort_capture() noexcept;

  GraphExecHandle exec_ = nullptr;
  bool capturing_ = false;
  Stream capture_stream_;
  uint64_t capture_id_ = 0;
  MempoolId pool_ = 0;
  bool holds_pool_ = false;  // release_pool is owed on reset
  int device_ = -1;
  std::vector<std::function<void()>> replay_hooks_;
  uint64_t replays_ = 0;
};

// Where and how GraphCapture captures, as a small struct with chained setters.
class GraphCaptureOptions {
 public:
  // The stream to capture on. Unset: the current stream, or, when that is the legacy default
  // stream, graph_side_stream(device).
  GraphCaptureOptions& stream(const Stream& value) {
    stream_ = value;
    return *this;
  }
  GraphCaptureOptions& pool(MempoolId value) {
    pool_ = value;
    return *this;
  }
  GraphCaptureOptions& error_mode(CaptureErrorMode value) {
    error_mode_ = value;
    return *this;
  }

  const std::optional<Stream>& stream() const { return stream_; }
  MempoolId pool() const { return pool_; }
  CaptureErrorMode error_mode() const { return error_mode_; }

 private:
  std::optional<Stream> stream_;
  MempoolId pool_ = 0;
  CaptureErrorMode error_mode_ = CaptureErrorMode::kThreadLocal;
};

// Captures into `graph` for its lifetime, as torch.cuda.graph does: waits for the device (so an
// error of the warm-up surfaces here, not as a broken capture), returns the device's cached
// blocks to the driver unless another capture on it is underway, makes the capture stream wait
// for the work queued so far on the current stream, makes it current and begins the capture.
// end() ends the capture and makes the previous stream wait for the capture stream. Without
// end() (an exception left the scope) the capture is discarded and the graph stays empty.
class GraphCapture {
 public:
  explicit GraphCapture(CudaGraph& graph, const GraphCaptureOptions& options = {});
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  void end();

 private:
  CudaGraph& graph_;
  Stream previous_stream_;
  Stream capture_stream_;
  std::optional<StreamGuard> stream_guard_;
  bool ended_ = false;
};

// This thread's side stream for CUDA graph work on `device`, made once and kept, so that what
// libraries keep per stream (the cuBLAS workspace) is made once too. GraphCapture captures on it
// when the current stream is the default stream; the Trainer and bench run their steps on it.
Stream graph_side_stream(int device);

// Whether work queued on `stream` is being captured into a CUDA graph (false for the legacy
// default stream, which cannot be).
bool is_capturing(const Stream& stream);
// The CudaGraph that this thread is capturing on `stream`, or nullptr when the stream is not
// being captured. Throws when the stream is being captured by a capture that no CudaGraph
// began (the raw CUDA API), since the step's device state could not be made replay-safe.
CudaGraph* capturing_graph(const Stream& stream);
// Throws "<op> cannot run while a CUDA graph is being captured ...: <reason>" when the current
// stream of `device` is being captured.
void check_not_capturing(int device, const char* op, const char* reason);

}  // namespace minidl::cuda
