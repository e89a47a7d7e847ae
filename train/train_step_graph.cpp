// The Trainer's step in a CUDA graph (see train/train_step_graph.h).
#include "minidl/train/train_step_graph.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "minidl/core/error.h"
#include "minidl/core/logging.h"

namespace minidl::train {

TrainStepGraph::TrainStepGraph(int device, int64_t batch_size, Step step, int64_t warmup_steps)
    : previous_stream_(cuda::current_stream(device)),
      stream_(cuda::graph_side_stream(device)),
      batch_size_(batch_size),
      step_(std::move(step)),
      warmup_left_(warmup_steps) {
  MINIDL_CHECK(warmup_steps >= 1, "TrainStepGraph: expected at least one eager warm-up step ",
               "before the capture, got ", warmup_steps);
  // The model and the restored state were queued on the previous stream; the new stream is
  // non-blocking, so it waits for them explicitly.
  cuda::Event queued_so_far;
  queued_so_far.record(previous_stream_);
  queued_so_far.wait(stream_);
  on_stream_.emplace(stream_);
}

TrainStepGraph::~TrainStepGraph() {
  try {
    cuda::Event steps_done;
    steps_done.record(stream_);
    on_stream_.reset();
    steps_done.wait(previous_stream_);
  } catch (const std::exception& error) {
    logger().error(
        "TrainStepGraph: ordering the previous stream after the training stream "
        "failed: {}",
        error.what());
  }
}

void TrainStepGraph::run(const Tensor& images, const Tensor& labels) {
  const bool full_batch = images.size(0) == batch_size_ && labels.size(0) == batch_size_;
  if (!full_batch || warmup_left_ > 0) {
    if (full_batch) --warmup_left_;
    step_(images, labels);
    ++eager_steps_;
    return;
  }
  if (!graph_.has_graph()) capture(images, labels);
  if (!fits_static_inputs(images, labels)) {  // same batch size, other shapes: not the graph's
    step_(images, labels);
    ++eager_steps_;
    return;
  }
  static_images_.copy_(images);
  static_labels_.copy_(labels);
  graph_.replay();
}

bool TrainStepGraph::fits_static_inputs(const Tensor& images, const Tensor& labels) const {
  return images.sizes() == static_images_.sizes() && images.dtype() == static_images_.dtype() &&
         labels.sizes() == static_labels_.sizes() && labels.dtype() == static_labels_.dtype();
}

void TrainStepGraph::capture(const Tensor& images, const Tensor& labels) {
  // Made before the capture, in the general pool: they must outlive the graph, which reads them.
  static_images_ = images.clone();
  static_labels_ = labels.clone();
  cuda::GraphCapture capture(graph_, cuda::GraphCaptureOptions().stream(stream_));
  step_(static_images_, static_labels_);  // queued into the graph; the replay that follows runs it
  capture.end();
  logger().info(
      "captured the training step in a CUDA graph (batch size {}); full batches are "
      "replays from now on",
      batch_size_);
}

}  // namespace minidl::train
