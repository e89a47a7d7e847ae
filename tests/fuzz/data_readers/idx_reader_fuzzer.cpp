// libFuzzer target for the IDX reader (data/readers/idx_format.cpp, data/readers/gzip.cpp):
// arbitrary bytes go through what read_mnist does with a file's contents, gunzip when they start
// with the gzip magic, then parse as an images file (rank 3) and as a labels file (rank 1, labels
// checked). Every input must parse or throw minidl::Error; a crash, a sanitizer report, a leak or a
// broken invariant (checked below) is a bug.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/data/readers/gzip.h"
#include "minidl/data/readers/idx_format.h"

namespace {

// Keeps a fuzzed gzip bomb well inside libFuzzer's memory limit.
constexpr size_t kMaxDecompressedBytes = size_t{64} << 20;

void check_parsed(std::span<const uint8_t> bytes, int rank) {
  const minidl::data::IdxArray array = minidl::data::parse_idx(bytes, rank, "fuzz input");
  // Invariants: the array covers the rest of the input exactly, and its size is the product
  // of its dimensions.
  uint64_t numel = 1;
  for (int64_t dim : array.dims) numel *= static_cast<uint64_t>(dim);
  if (array.dims.size() != static_cast<size_t>(rank) || numel != array.data.size() ||
      array.data_offset + array.data.size() != bytes.size() ||
      array.data.data() != bytes.data() + array.data_offset)
    std::abort();
  // Read every byte, so AddressSanitizer checks the span really lies inside the input.
  unsigned sum = 0;
  for (uint8_t byte : array.data) sum += byte;
  if (rank == 1) minidl::data::check_idx_labels(array, 10, "fuzz input");
  static volatile unsigned sink;
  sink = sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  std::vector<uint8_t> decompressed;
  try {
    if (minidl::data::is_gzip(bytes)) {
      decompressed = minidl::data::gunzip(bytes, "fuzz input", kMaxDecompressedBytes);
      bytes = decompressed;
    }
  } catch (const minidl::Error&) {
    return 0;
  }
  for (int rank : {3, 1}) {
    try {
      check_parsed(bytes, rank);
    } catch (const minidl::Error&) {
    }
  }
  return 0;
}
