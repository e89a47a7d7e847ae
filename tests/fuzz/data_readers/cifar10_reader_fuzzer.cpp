// libFuzzer target for the CIFAR-10 binary reader's validation (data/readers/cifar10_format.cpp):
// arbitrary bytes must be accepted as whole records with labels below 10, or rejected with
// minidl::Error. An accepted input is checked against those invariants here.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "minidl/core/error.h"
#include "minidl/data/readers/cifar10_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minidl::data;
  const std::span<const uint8_t> bytes(data, size);
  try {
    const int64_t records = count_cifar10_records(bytes, "fuzz input");
    if (records <= 0 || static_cast<size_t>(records * kCifar10RecordBytes) != size) std::abort();
    for (int64_t r = 0; r < records; ++r)
      if (bytes[static_cast<size_t>(r * kCifar10RecordBytes)] >= kCifar10NumClasses) std::abort();
  } catch (const minidl::Error&) {
  }
  return 0;
}
