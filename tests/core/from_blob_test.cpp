// from_blob: tensors over the caller's memory without a copy, with strides, with a deleter that
// runs when the last tensor sharing the memory dies, requires_grad, and errors.
#include "minidl/core/from_blob.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/indexing.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

TEST(FromBlob, AliasesTheBufferWithoutACopy) {
  std::vector<float> buffer{1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buffer.data(), {2, 3});
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(buffer.data()));
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_TRUE(t.is_cpu());
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.storage()->nbytes(), 6 * sizeof(float));
  EXPECT_EQ(to_vector<float>(t), buffer);
  // Writes through the tensor (and its views) land in the buffer, and the other way round.
  t.index({1, indexing::Slice()}).fill_(-1);
  EXPECT_EQ(buffer, (std::vector<float>{1, 2, 3, -1, -1, -1}));
  t[0].mul_(10);
  EXPECT_EQ(buffer, (std::vector<float>{10, 20, 30, -1, -1, -1}));
  buffer[1] = 7;
  EXPECT_EQ(t.index({0, 1}).item<float>(), 7.0f);
}

TEST(FromBlob, DtypeFromTheOptions) {
  std::vector<int64_t> labels{3, 1, 4, 1, 5};
  Tensor t = from_blob(labels.data(), {5}, kInt64);
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(max(t).item<int64_t>(), 5);
  std::vector<double> values{0.5, 1.5};
  EXPECT_EQ(sum(from_blob(values.data(), {2}, TensorOptions(kFloat64))).item<double>(), 2.0);
}

TEST(FromBlob, StridesReadTheBufferInTheirOrder) {
  // A 3x2 column-major matrix: element (i, j) at i + 3 j.
  std::vector<float> column_major{1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(column_major.data(), {3, 2}, {1, 3});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(to_vector<float>(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(to_vector<float>(t.t()), column_major);
  // Every other element of a longer buffer; the storage spans only what is addressed.
  std::vector<float> interleaved{0, 9, 1, 9, 2, 9, 3};
  Tensor even = from_blob(interleaved.data(), {4}, {2});
  EXPECT_EQ(to_vector<float>(even), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(even.storage()->nbytes(), 7 * sizeof(float));
  even.fill_(5);
  EXPECT_EQ(interleaved, (std::vector<float>{5, 9, 5, 9, 5, 9, 5}));
}

TEST(FromBlob, DeleterRunsOnceWhenTheLastTensorDies) {
  auto* memory = new float[4]{1, 2, 3, 4};
  int deleted = 0;
  void* deleted_pointer = nullptr;
  auto deleter = [&](void* p) {
    ++deleted;
    deleted_pointer = p;
    delete[] static_cast<float*>(p);
  };
  {
    Tensor t = from_blob(memory, {2, 2}, deleter);
    Tensor alias = t;
    Tensor view = t.index({indexing::Slice(), 1});
    Tensor transposed = t.t();
    t = Tensor();
    alias = Tensor();
    EXPECT_EQ(deleted, 0);
    EXPECT_EQ(to_vector<float>(view), (std::vector<float>{2, 4}));
    view = Tensor();
    EXPECT_EQ(deleted, 0);  // `transposed` still shares the memory
    EXPECT_EQ(to_vector<float>(transposed), (std::vector<float>{1, 3, 2, 4}));
  }
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(deleted_pointer, static_cast<void*>(memory));
}

TEST(FromBlob, DeleterWithStridesAndTheGraphKeepingTheMemory) {
  auto* memory = new double[6]{1, 2, 3, 4, 5, 6};
  int deleted = 0;
  Tensor loss;
  {
    Tensor t = from_blob(
        memory, {2, 3}, {1, 2},
        [&](void* p) {
          ++deleted;
          delete[] static_cast<double*>(p);
        },
        TensorOptions(kFloat64).requires_grad());
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
    EXPECT_EQ(to_vector<double>(t), (std::vector<double>{1, 3, 5, 2, 4, 6}));
    loss = (t * t).sum();  // mul saves t for backward
  }
  EXPECT_EQ(deleted, 0);  // the graph still holds the memory
  loss = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(FromBlob, RequiresGradGivesALeafWhoseGradientIsComputed) {
  std::vector<float> weights{1, -2, 3};
  Tensor w = from_blob(weights.data(), {3}, TensorOptions().requires_grad());
  ASSERT_TRUE(w.requires_grad());
  (w * w).sum().backward();
  EXPECT_EQ(to_vector<float>(w.grad()), (std::vector<float>{2, -4, 6}));
  // As for any leaf that requires grad, in-place updates run under NoGradGuard.
  EXPECT_ERROR_CONTAINS(w.sub_(w.grad()), "sub_: in-place operation on a tensor of shape [3]");
  {
    NoGradGuard no_grad;
    w.sub_(w.grad(), 0.5);
  }
  EXPECT_EQ(weights, (std::vector<float>{0, 0, 0}));
}

TEST(FromBlob, BadArgumentsAreErrorsAndLeaveTheMemoryToTheCaller) {
  float buffer[4] = {};
  int deleted = 0;
  auto deleter = [&](void*) { ++deleted; };
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {2, -2}, deleter),
                        "from_blob: sizes must be non-negative, got [2, -2]");
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {2, 2}, {2}, deleter),
                        "from_blob: got 2 sizes [2, 2] and 1 strides [2]");
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {2, 2}, {-1, 1}),
                        "from_blob: strides must be non-negative, got [-1, 1]");
  EXPECT_ERROR_CONTAINS(from_blob(nullptr, {2}), "from_blob: data is null but sizes [2] hold 2");
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {4}, TensorOptions(kInt32).requires_grad()),
                        "from_blob: only floating-point tensors can require gradients, got int32");
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {4}, BlobDeleter()), "from_blob: the deleter is empty");
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(from_blob(nullptr, {0, 3}).sizes(), (Shape{0, 3}));  // nothing to read
}

TEST(FromBlob, CudaDeviceNeedsAGpu) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is available: the CUDA test covers it";
  float buffer[2] = {};
  EXPECT_ERROR_CONTAINS(from_blob(buffer, {2}, TensorOptions(Device(kCUDA))),
                        "from_blob on a CUDA device");
}

}  // namespace
}  // namespace minidl
