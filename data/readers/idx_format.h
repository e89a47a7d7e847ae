#pragma once
// The IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), parsed from
// memory with every field validated, so that no input can make the reader read out of bounds
// or allocate what the file does not hold (tests/fuzz/idx_reader_fuzzer.cpp checks this).
//
//   offset 0-1   two zero bytes
//   offset 2     element type: 0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32,
//                0x0D float32, 0x0E float64
//   offset 3     number of dimensions (rank)
//   offset 4     one big-endian uint32 per dimension
//   then         the elements, row-major, exactly as many as the dimensions multiply to
//
// MNIST's images are unsigned bytes of rank 3 ([N, rows, columns]) and its labels unsigned
// bytes of rank 1 ([N]); those are the only arrays minidl reads, so other types are rejected.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace minidl::data {

inline constexpr uint8_t kIdxUnsignedByte = 0x08;

// An array of unsigned bytes inside a parsed buffer (which must outlive it).
struct IdxArray {
  std::vector<int64_t> dims;
  size_t data_offset = 0;         // byte offset of the first element in the buffer
  std::span<const uint8_t> data;  // all elements, product of dims bytes
};

// Parses `bytes` as one IDX array of unsigned bytes with `expected_rank` dimensions, and checks
// that the data is exactly as long as the header says. `source` names the data (the file) in
// errors, which give the byte offset and what was expected.
IdxArray parse_idx(std::span<const uint8_t> bytes, int expected_rank, std::string_view source);

// Checks that every label (a rank-1 array) is below `num_classes`.
void check_idx_labels(const IdxArray& labels, int64_t num_classes, std::string_view source);

}  // namespace minidl::data
