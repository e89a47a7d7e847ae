#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/parallel.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"

// Asserts that `statement` throws minidl::Error whose message contains `expected`.
#define EXPECT_ERROR_CONTAINS(statement, expected)                           \
  do {                                                                       \
    try {                                                                    \
      (void)(statement);                                                     \
      ADD_FAILURE() << "expected minidl::Error containing \"" << (expected)  \
                    << "\", but nothing was thrown";                         \
    } catch (const ::minidl::Error& error) {                                 \
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) \
          << "message was: " << error.what();                                \
    }                                                                        \
  } while (0)

// In CUDA tests: skips, saying why, when no GPU can be used; fails instead when the
// environment says a GPU is there (MINIDL_EXPECT_GPU=1, see cuda_test_disposition).
#define SKIP_WITHOUT_CUDA()                                                                     \
  do {                                                                                          \
    switch (::minidl::testing::cuda_test_disposition(::minidl::cuda::device_count(),            \
                                                     std::getenv("MINIDL_EXPECT_GPU"))) {       \
      case ::minidl::testing::CudaTestDisposition::kRun: break;                                 \
      case ::minidl::testing::CudaTestDisposition::kSkip:                                       \
        GTEST_SKIP() << "no CUDA device is available (" << ::minidl::cuda::unavailable_reason() \
                     << ")";                                                                    \
      case ::minidl::testing::CudaTestDisposition::kFail:                                       \
        GTEST_FAIL() << "MINIDL_EXPECT_GPU=1, but no CUDA device is available ("                \
                     << ::minidl::cuda::unavailable_reason() << "); not skipping";              \
    }                                                                                           \
  } while (0)

namespace minidl::testing {

// What a CUDA test does where it starts (SKIP_WITHOUT_CUDA).
enum class CudaTestDisposition { kRun, kSkip, kFail };

// Runs with a device. Without one it skips, unless `expect_gpu_env` (MINIDL_EXPECT_GPU's value,
// null when unset) is "1": on a machine meant to have a GPU (the GPU kit sets it) each CUDA test
// fails instead, so a driver too old for this build cannot pass the GPU run by skipping it.
inline CudaTestDisposition cuda_test_disposition(int device_count, const char* expect_gpu_env) {
  if (device_count > 0) return CudaTestDisposition::kRun;
  const bool gpu_expected = expect_gpu_env != nullptr && std::string_view(expect_gpu_env) == "1";
  return gpu_expected ? CudaTestDisposition::kFail : CudaTestDisposition::kSkip;
}

// cuDNN's deterministic convolution algorithms for the scope, so that two runs of the same
// computation on a GPU agree to the bit.
class DeterministicConvolutions {
 public:
  DeterministicConvolutions() : previous_(cudnn_deterministic()) { set_cudnn_deterministic(true); }
  ~DeterministicConvolutions() { set_cudnn_deterministic(previous_); }
  DeterministicConvolutions(const DeterministicConvolutions&) = delete;
  DeterministicConvolutions& operator=(const DeterministicConvolutions&) = delete;

 private:
  bool previous_;
};

// Sets minidl's CPU thread count for the scope, to test how kernels split their work (more
// threads than cores is fine: only the split changes).
class ScopedThreadCount {
 public:
  explicit ScopedThreadCount(int64_t threads) : previous_(get_num_threads()) {
    set_num_threads(threads);
  }
  ~ScopedThreadCount() { set_num_threads(previous_); }
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int64_t previous_;
};

// |actual - expected| <= atol + rtol * |expected| for every element (llm.c's tolerance rule).
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double atol = 1e-5, double rtol = 1e-5) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure() << "shapes differ: " << shape_str(actual.sizes()) << " vs "
                                         << shape_str(expected.sizes());
  std::vector<double> a = to_vector<double>(actual), e = to_vector<double>(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i]) continue;  // infinities of one sign too, as torch.allclose
    const double diff = a[i] > e[i] ? a[i] - e[i] : e[i] - a[i];
    const double scale = e[i] < 0 ? -e[i] : e[i];
    if (!(diff <= atol + rtol * scale))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs expected "
                                           << e[i] << " (atol " << atol << ", rtol " << rtol << ")";
  }
  return ::testing::AssertionSuccess();
}

// The sequence a wiggly() tensor holds: element i, in row-major order, is
//   amplitude * sin(start + phase + step * i) + offset.
struct Wiggle {
  double phase = 0.0;
  double amplitude = 1.0;
  double offset = 0.0;
  double start = 1.0;
  double step = 0.37;
};

// Distinct, smoothly varying values of the given shape and dtype, on the CPU: `w`'s sequence,
// computed in double and then rounded to dtype.
inline Tensor wiggly(const Shape& sizes, DType dtype, const Wiggle& w) {
  std::vector<double> values(static_cast<size_t>(shape_numel(sizes)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] =
        w.amplitude * std::sin(w.start + w.phase + w.step * static_cast<double>(i)) + w.offset;
  return from_host(values.data(), sizes, kFloat64).to(dtype);
}

// Distinct, sign-mixed values sin(1 + phase + 0.37 * i) of the given shape, on the CPU.
inline Tensor wiggly(const Shape& sizes, double phase = 0.0, DType dtype = kFloat32) {
  return wiggly(sizes, dtype, Wiggle{.phase = phase});
}

// The same view (sizes, strides, offset) over a CUDA copy of `t`'s whole storage, so that a
// transposed, permuted or sliced CPU tensor keeps its layout on the device.
inline Tensor same_layout_on_cuda(const Tensor& t) {
  const int64_t storage_elements = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  Tensor base = make_view(t, {storage_elements}, {1}, 0).cuda();
  return make_view(base, t.sizes(), t.strides(), t.storage_offset());
}

// The largest |element| of t (0 for an empty tensor): the scale of a normwise allowance.
inline double largest_magnitude(const Tensor& t) {
  double largest = 0.0;
  for (double v : to_vector<double>(t)) largest = std::max(largest, std::abs(v));
  return largest;
}

// The same sizes, dtype and bytes (on any device, in any layout): for results that must repeat
// bit for bit.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.cpu().contiguous(), cb = b.cpu().contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Sets an environment variable for a scope and puts back what was there after.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (previous_)
      ::setenv(name_, previous_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

}  // namespace minidl::testing
