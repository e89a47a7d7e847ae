// Which CUDA device a DataLoader worker selects before it builds batches
// (data/loader/worker_stage.h): the starting thread's, when the workers touch a GPU at all.
#include "minidl/data/loader/worker_stage.h"

#include <gtest/gtest.h>

#include <optional>

namespace minidl::data::loader {
namespace {

TEST(WorkerCudaDevice, PinnedBatchesWithAGpuTakeTheCallersDevice) {
  EXPECT_EQ(worker_cuda_device(/*pin_memory=*/true, /*page_locked=*/true, 3), 3);
  EXPECT_EQ(worker_cuda_device(true, true, 0), 0);
}

TEST(WorkerCudaDevice, WorkersThatNeverTouchAGpuSelectNoDevice) {
  EXPECT_EQ(worker_cuda_device(/*pin_memory=*/false, /*page_locked=*/true, 3), std::nullopt);
  EXPECT_EQ(worker_cuda_device(true, /*page_locked=*/false, 0), std::nullopt);  // no GPU
  EXPECT_EQ(worker_cuda_device(false, false, 0), std::nullopt);
}

}  // namespace
}  // namespace minidl::data::loader
