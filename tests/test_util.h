#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda/cuda.h"
#include "core/error.h"
#include "core/tensor.h"

// Asserts that `statement` throws minidl::Error whose message contains `expected`.
#define EXPECT_ERROR_CONTAINS(statement, expected)                                        \
  do {                                                                                    \
    try {                                                                                 \
      (void)(statement);                                                                  \
      ADD_FAILURE() << "expected minidl::Error containing \"" << (expected)               \
                    << "\", but nothing was thrown";                                      \
    } catch (const ::minidl::Error& error) {                                              \
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)              \
          << "message was: " << error.what();                                             \
    }                                                                                     \
  } while (0)

// In CUDA tests: skips, saying why, when no GPU can be used.
#define SKIP_WITHOUT_CUDA()                                                               \
  do {                                                                                    \
    if (!::minidl::cuda::is_built()) GTEST_SKIP() << "minidl was built without CUDA";    \
    if (!::minidl::cuda::is_available()) GTEST_SKIP() << "no CUDA device is available";  \
  } while (0)

namespace minidl::testing {

// |actual - expected| <= atol + rtol * |expected| for every element (llm.c's tolerance rule).
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double atol = 1e-5, double rtol = 1e-5) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure()
           << "shapes differ: " << shape_str(actual.sizes()) << " vs " << shape_str(expected.sizes());
  std::vector<double> a = to_vector<double>(actual), e = to_vector<double>(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = a[i] > e[i] ? a[i] - e[i] : e[i] - a[i];
    const double scale = e[i] < 0 ? -e[i] : e[i];
    if (!(diff <= atol + rtol * scale))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs expected " << e[i] << " (atol " << atol
             << ", rtol " << rtol << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace minidl::testing
