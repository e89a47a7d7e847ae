// CUDA graphs where no GPU can be used (core/cuda/graph.h): every call that needs a device says
// so, and the capture queries answer "not capturing". tests/core/cuda_graph_cuda_test.cpp
// captures and replays on a GPU.
#include "minidl/core/cuda/graph.h"

#include <gtest/gtest.h>

#include "minidl/core/cuda/device.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

#define SKIP_WITH_A_GPU()                                          \
  do {                                                             \
    if (is_available())                                            \
      GTEST_SKIP() << "a CUDA device is present; this checks the " \
                      "path without one";                          \
  } while (0)

TEST(CudaGraph, WithoutAGpuCapturingIsAClearError) {
  SKIP_WITH_A_GPU();
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(graph.capture_begin(),
                        "CudaGraph::capture_begin: no CUDA device is available");
  EXPECT_ERROR_CONTAINS(GraphCapture(graph), "GraphCapture: no CUDA device is available");
  EXPECT_FALSE(graph.is_capturing());
  EXPECT_FALSE(graph.has_graph());
}

TEST(CudaGraph, ReplayingAnEmptyGraphIsAnError) {
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(graph.replay(), is_built()
                                            ? "CudaGraph::replay: the graph is empty"
                                            : "CudaGraph::replay: no CUDA device is available");
  graph.reset();  // nothing to drop, and no error
}

TEST(CudaGraph, AReplayHookMustBeCallable) {
  CudaGraph graph;
  EXPECT_ERROR_CONTAINS(graph.add_replay_hook(nullptr),
                        "CudaGraph::add_replay_hook: expected a callable hook, got none");
}

TEST(CudaGraph, NothingIsCapturedWithoutAGpu) {
  SKIP_WITH_A_GPU();
  const Stream default_stream;
  EXPECT_FALSE(is_capturing(default_stream));
  EXPECT_EQ(capturing_graph(default_stream), nullptr);
  check_not_capturing(0, "an op", "a reason");  // does not throw
}

TEST(CudaGraph, PoolHandlesAreDistinct) {
  EXPECT_NE(graph_pool_handle(), graph_pool_handle());
  EXPECT_NE(graph_pool_handle(), 0u);
}

TEST(CudaGraph, CaptureOptionsChain) {
  const GraphCaptureOptions options =
      GraphCaptureOptions().pool(42).error_mode(CaptureErrorMode::kGlobal);
  EXPECT_EQ(options.pool(), 42u);
  EXPECT_EQ(options.error_mode(), CaptureErrorMode::kGlobal);
  EXPECT_FALSE(options.stream().has_value());
  EXPECT_EQ(GraphCaptureOptions().error_mode(), CaptureErrorMode::kThreadLocal);
}

}  // namespace
}  // namespace minidl::cuda
