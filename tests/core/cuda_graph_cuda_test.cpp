// CUDA graphs on a GPU (core/cuda/graph.h): an element-wise sequence captured and replayed with
// new inputs, replay hooks, the graph's private memory pool, and the clear errors of what cannot
// be captured. Skipped without a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

using minidl::testing::all_close;
using minidl::testing::wiggly;

const Device kGpu(kCUDA, 0);

// Captures `step` into `graph` on the current stream.
void capture_into(CudaGraph& graph, const std::function<void()>& step) {
  GraphCapture capture(graph);
  step();
  capture.end();
}

// y = relu(x * 2 + 1) - x / 4, through temporaries that are freed inside the capture.
Tensor elementwise_sequence(const Tensor& x) {
  const Tensor doubled = mul(x, 2.0);
  const Tensor shifted = add(doubled, 1.0);
  return sub(relu(shifted), div(x, 4.0));
}

TEST(CudaGraphCuda, ReplaysAnElementwiseSequenceOnNewInputs) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor x = wiggly({1000}, 0.0).to(kGpu);  // the static input
  (void)elementwise_sequence(x);            // warm-up
  CudaGraph graph;
  Tensor y;
  {
    GraphCapture capture(graph);
    y = elementwise_sequence(x);
    capture.end();
  }
  ASSERT_TRUE(graph.has_graph());
  EXPECT_FALSE(is_capturing(stream));
  EXPECT_EQ(current_stream(0), stream);  // GraphCapture captured on the current stream
  for (int i = 1; i <= 3; ++i) {
    const Tensor input = wiggly({1000}, static_cast<double>(i));
    x.copy_(input.to(kGpu));
    graph.replay();
    EXPECT_TRUE(all_close(y.to(kCPU), elementwise_sequence(input), 1e-6, 1e-6)) << "replay " << i;
  }
  EXPECT_EQ(graph.replays(), 3u);
}

TEST(CudaGraphCuda, CapturesOnASideStreamWhenTheCurrentStreamIsTheDefaultStream) {
  SKIP_WITHOUT_CUDA();
  ASSERT_EQ(current_stream_handle(0), nullptr);
  Tensor x = wiggly({257}, 0.5).to(kGpu);
  (void)elementwise_sequence(x);
  CudaGraph graph;
  Tensor y;
  {
    GraphCapture capture(graph);
    EXPECT_NE(current_stream_handle(0), nullptr);  // the side stream
    y = elementwise_sequence(x);
    capture.end();
  }
  EXPECT_EQ(current_stream_handle(0), nullptr);  // restored
  graph.replay();                                // on the default stream
  EXPECT_TRUE(all_close(y.to(kCPU), elementwise_sequence(wiggly({257}, 0.5)), 1e-6, 1e-6));
}

TEST(CudaGraphCuda, CaptureBeginOnTheDefaultStreamIsAClearError) {
  SKIP_WITHOUT_CUDA();
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(graph.capture_begin(),
                        "is the legacy default stream, which cannot be "
                        "captured");
  EXPECT_FALSE(graph.is_capturing());
}

TEST(CudaGraphCuda, ReplayHooksRunBeforeEveryReplayInTheOrderAdded) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor counter = zeros({1}, kGpu);
  (void)add(counter, 1.0);
  CudaGraph graph;
  std::vector<int> calls;
  Tensor seen;
  {
    GraphCapture capture(graph);
    seen = add(counter, 0.0);  // reads what the hook wrote before the launch
    graph.add_replay_hook([&] { calls.push_back(1); });
    graph.add_replay_hook([&] {
      calls.push_back(2);
      counter.add_(1.0);  // queued on the replay stream, before the graph
    });
    capture.end();
  }
  EXPECT_TRUE(calls.empty());  // not at capture
  graph.replay();
  graph.replay();
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 1, 2}));
  EXPECT_EQ(seen.item<float>(), 2.0f);
}

TEST(CudaGraphCuda, TheGraphKeepsItsMemoryFromEagerCodeAndReturnsItOnReset) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  DeviceCachingAllocator& allocator = CachingAllocator::for_device(0);
  const size_t pools_before = allocator.private_pool_count();
  Tensor x = wiggly({4096}, 0.0).to(kGpu);
  (void)elementwise_sequence(x);
  auto graph = std::make_unique<CudaGraph>();
  Tensor y;
  capture_into(*graph, [&] { y = elementwise_sequence(x); });
  EXPECT_EQ(allocator.private_pool_count(), pools_before + 1);
  const void* graph_output = y.data_ptr();
  y = Tensor();  // freed on the host; the graph still writes there at each replay
  // Eager tensors of the same size must not land on the graph's memory.
  std::vector<Tensor> eager;
  for (int i = 0; i < 8; ++i) {
    eager.push_back(full({4096}, static_cast<double>(i), kGpu));
    EXPECT_NE(eager.back().data_ptr(), graph_output);
  }
  graph->replay();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(sum(eager[static_cast<size_t>(i)]).item<float>(), 4096.0f * static_cast<float>(i));
  graph = nullptr;  // destroyed: its pool goes back to the driver, nothing of it being in use
  stream.synchronize();
  (void)empty({1}, kGpu);  // the next allocation does any deferred work
  EXPECT_EQ(allocator.private_pool_count(), pools_before);
}

TEST(CudaGraphCuda, ACaptureFirstReturnsTheWarmUpsCachedBlocksToTheDriver) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor x = wiggly({4096}, 0.0).to(kGpu);
  { (void)empty({16 << 20}, kGpu); }  // 64 MiB of float32, freed at once: cached, still reserved
  stream.synchronize();
  const size_t reserved_with_cache = memory_stats(0).reserved_bytes;
  ASSERT_GE(reserved_with_cache, size_t{64} << 20);
  CudaGraph graph;
  Tensor y;
  capture_into(graph, [&] { y = elementwise_sequence(x); });
  // The 64 MiB went back; the graph's own pool holds a segment of a few MiB at most.
  EXPECT_LT(memory_stats(0).reserved_bytes + (size_t{32} << 20), reserved_with_cache);
}

TEST(CudaGraphCuda, ReadingAValueOnTheHostDuringACaptureIsAClearError) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor x = ones({4}, kGpu);
  (void)sum(x);
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(
      capture_into(graph, [&] { (void)sum(x).item<float>(); }),
      "a copy from CUDA to the host (item(), .to(kCPU)) cannot run while a CUDA graph is being "
      "captured");
  // The capture was discarded, and the stream works eagerly again.
  EXPECT_FALSE(graph.has_graph());
  EXPECT_FALSE(is_capturing(stream));
  EXPECT_EQ(sum(x).item<float>(), 4.0f);
}

TEST(CudaGraphCuda, RandomOpsDuringACaptureAreAClearError) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  (void)randn({8}, kGpu);
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS((capture_into(graph, [&] { (void)randn({8}, kGpu); })),
                        "normal_ (randn) on CUDA cannot run while a CUDA graph is being captured");
  EXPECT_FALSE(is_capturing(stream));
}

TEST(CudaGraphCuda, ACopyFromHostMemoryDuringACaptureIsAClearError) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor x = zeros({16}, kGpu);
  const Tensor host = ones({16});
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(
      capture_into(graph, [&] { x.copy_(host); }),
      "a copy from host memory to CUDA cannot run while a CUDA graph is being captured");
}

TEST(CudaGraphCuda, ResetAllowsCapturingAgain) {
  SKIP_WITHOUT_CUDA();
  const Stream stream = Stream::create(0);
  StreamGuard on_stream(stream);
  Tensor x = full({32}, 3.0, kGpu);
  (void)elementwise_sequence(x);
  CudaGraph graph;
  Tensor first, second;
  {
    GraphCapture capture(graph);
    first = mul(x, 2.0);
    capture.end();
  }
  EXPECT_ERROR_CONTAINS(graph.capture_begin(), "this graph holds a capture already");
  graph.reset();
  {
    GraphCapture capture(graph);
    second = mul(x, 5.0);
    capture.end();
  }
  graph.replay();
  EXPECT_EQ(sum(second).item<float>(), 32 * 15.0f);
}

}  // namespace
}  // namespace minidl::cuda
