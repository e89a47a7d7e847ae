#pragma once
// The Trainer's training step replayed from a CUDA graph (TrainerOptions::cuda_graph; see
// core/cuda/graph.h). For its lifetime it makes cuda::graph_side_stream(device) current, so the
// data loader's deliveries, the eager steps, the capture and the replays all run in one order on
// that stream; the stream starts after the work queued on the previous one, and the previous one
// waits for it at the end.
//
// Batches of the loader's batch size run, in turn: `warmup_steps` eager steps (they create the
// optimizer's and the scaler's state and pick the cuDNN algorithms), one capture of the step on
// static copies of the batch's images and labels, then for that batch and every later one of
// that size, a copy into the static inputs and a replay. Other batches (an epoch's last, smaller
// one) run eagerly between replays: the graph keeps tables and memory of its own, so they change
// nothing in it.
#include <cstdint>
#include <functional>
#include <optional>

#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/tensor.h"

namespace minidl::train {

// Eager steps of full batches before the capture.
inline constexpr int64_t kGraphWarmupSteps = 2;

class TrainStepGraph {
 public:
  // `step` queues one whole training step on the current stream (zero_grad, forward, backward,
  // optimizer and scaler, the loss sum), for any batch size.
  using Step = std::function<void(const Tensor& images, const Tensor& labels)>;

  TrainStepGraph(int device, int64_t batch_size, Step step,
                 int64_t warmup_steps = kGraphWarmupSteps);
  ~TrainStepGraph();
  TrainStepGraph(const TrainStepGraph&) = delete;
  TrainStepGraph& operator=(const TrainStepGraph&) = delete;

  // One step on this batch: eagerly, or as a replay (capturing first when it is time).
  void run(const Tensor& images, const Tensor& labels);

  const cuda::Stream& stream() const { return stream_; }
  bool captured() const { return graph_.has_graph(); }
  uint64_t replays() const { return graph_.replays(); }
  int64_t eager_steps() const { return eager_steps_; }

 private:
  bool fits_static_inputs(const Tensor& images, const Tensor& labels) const;
  void capture(const Tensor& images, const Tensor& labels);

  cuda::Stream previous_stream_;
  cuda::Stream stream_;
  std::optional<cuda::StreamGuard> on_stream_;
  int64_t batch_size_;
  Step step_;
  int64_t warmup_left_;
  int64_t eager_steps_ = 0;
  Tensor static_images_;  // the captured step's inputs, refilled before each replay
  Tensor static_labels_;
  cuda::CudaGraph graph_;
};

}  // namespace minidl::train
