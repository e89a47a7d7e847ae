// Dtype conversions on the CPU (ops/cpu/copy.cpp): between tensors of one dense layout they run
// as flat loops (compiled for AVX-512 too where bfloat16 is read or written), as do the rows of a
// copy whose innermost dimension is dense on both sides; in any other layout element by element.
// Both must give the same bits for every pair of dtypes, over values that exercise the rounding:
// NaN, infinities, signed zeros, bfloat16's and float16's ties, overflow, and the wrap of negative
// values into unsigned integers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

constexpr DType kDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16,
                             kInt32,   kInt64,   kUInt8,   kBool};

// 40 special values, repeated past the thread pool's grain (32768 elements) so that a
// conversion splits over the threads.
Tensor special_values() {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special = {
      std::nan(""),
      inf,
      -inf,
      0.0,
      -0.0,
      1.0,
      -1.0,
      1.5,
      -2.5,
      3.140625,
      1.0 + std::ldexp(1.0, -8),      // halfway between two bfloat16 values: to even
      1.0 + 3 * std::ldexp(1.0, -8),  // halfway: to even, upwards
      1.0 + std::ldexp(1.0, -11),     // halfway between two float16 values
      1.0 + std::ldexp(1.0, -20),     // a float32 value that rounds in both 16-bit types
      65504.0,
      65520.0,
      70000.0,  // float16's largest, its rounding to inf, beyond
      3.0e38,
      3.5e38,
      -1.0e20,
      1.0e-8,
      6.0e-8,
      1.0e-40,
      -1.0e-45,
      255.0,
      255.5,
      256.0,
      300.0,
      -300.0,
      127.9,
      -129.0,
      2147483647.0,
      2147483648.0,
      -2147483649.0,
      9.3e18,
      -9.3e18,
      0.49999997,
      2.5,
      -0.5,
      12345.678};
  std::vector<double> values;
  while (values.size() < 40000) values.insert(values.end(), special.begin(), special.end());
  return tensor(values).view({2, -1});  // float64, from the element type
}

TEST(Copy, DenseConversionsGiveTheStridedWalksBitsForEveryPairOfDtypes) {
  const Tensor values = special_values();
  for (DType from : kDtypes) {
    // The source in both layouts: row-major (dense, as the destination) and column-major.
    const Tensor source = values.to(from);
    const Tensor column_major = source.t().contiguous().t();
    ASSERT_TRUE(testing::bitwise_equal(source, column_major));
    for (DType to : kDtypes) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
      const Tensor flat = source.to(to);
      Tensor strided = empty(values.sizes(), to);
      strided.copy_(column_major);  // layouts differ: the strided walk
      EXPECT_TRUE(testing::bitwise_equal(flat, strided));
      // Transposed, both operands share one dense layout again: the flat loop in that order.
      const Tensor transposed = column_major.to(to);
      EXPECT_EQ(transposed.strides(), column_major.strides());
      EXPECT_TRUE(testing::bitwise_equal(transposed, strided));
    }
  }
}

// A copy whose innermost dimension is dense on both sides but whose outer ones are not (a
// transposing copy, as attention's heads made contiguous) converts each row as a flat run: row
// for row, the bytes of the dense conversion.
TEST(Copy, TransposingCopiesConvertEachRowAsTheDenseLoopDoes) {
  constexpr int64_t kRows = 4, kColumns = 5, kRun = 2000;
  const Tensor values = special_values().view({kRows, kColumns, kRun});
  for (DType from : kDtypes) {
    const Tensor source = values.to(from);
    for (DType to : kDtypes) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
      const Tensor dense = source.to(to);  // [rows, columns, run]
      Tensor transposed = empty({kColumns, kRows, kRun}, to);
      transposed.copy_(source.transpose(0, 1));
      const auto* got = static_cast<const std::byte*>(transposed.data_ptr());
      const auto* want = static_cast<const std::byte*>(dense.data_ptr());
      const size_t row_bytes = static_cast<size_t>(kRun) * element_size(to);
      for (int64_t c = 0; c < kColumns; ++c)
        for (int64_t r = 0; r < kRows; ++r)
          EXPECT_EQ(std::memcmp(got + (c * kRows + r) * row_bytes,
                                want + (r * kColumns + c) * row_bytes, row_bytes),
                    0)
              << "row " << r << ", column " << c;
    }
  }
}

// A single element, whose walk has no dimension left once its sizes of 1 are merged away.
TEST(Copy, SingleElementsConvertInEveryLayout) {
  EXPECT_EQ(tensor(2.5).to(kBFloat16).item<double>(), 2.5);
  Tensor one = empty({1, 1}, kInt32);
  one.copy_(full({1, 3}, -7.75).narrow(1, 2, 1));  // a strided view of one element
  EXPECT_EQ(one.item<int64_t>(), -7);
  Tensor scalar = empty({}, kFloat16);
  scalar.copy_(full({}, 65504.0, kFloat64));
  EXPECT_EQ(scalar.item<double>(), 65504.0);
}

TEST(Copy, DenseConversionsRoundToNearestEven) {
  const Tensor values = tensor(
      {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), 65520.0, -1.0, std::nan("")},
      kFloat32);
  const std::vector<float> bfloat16 = to_vector<float>(values.to(kBFloat16));
  EXPECT_EQ(bfloat16[0], 1.0f);
  EXPECT_EQ(bfloat16[1], 1.015625f);
  EXPECT_EQ(bfloat16[2], 65536.0f);
  EXPECT_EQ(bfloat16[3], -1.0f);
  EXPECT_TRUE(std::isnan(bfloat16[4]));
  const std::vector<float> float16 = to_vector<float>(values.to(kFloat16));
  EXPECT_EQ(float16[2], std::numeric_limits<float>::infinity());  // past 65504 + half an ulp
  EXPECT_TRUE(std::isnan(float16[4]));
}

}  // namespace
}  // namespace minidl
