// libFuzzer target: the safetensors reader's validation on arbitrary bytes.
// read_safetensors_layout runs exactly the checks read_safetensors runs on a file before it makes
// a tensor (the header's length, JSON, dtypes, shapes, offsets, the data section's tiling).
// Every input must either pass them or throw minidl::Error; a crash, a sanitizer report, a leak
// or any other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "minidl/core/error.h"
#include "minidl/core/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As parse_safetensors reads a buffer: a read outside it is a bug of the checks.
  const minidl::serialize::SafetensorsReadAt read_at = [data, size](uint64_t offset, size_t count,
                                                                    void* destination) {
    if (offset > size || count > size - offset) __builtin_trap();
    std::memcpy(destination, data + offset, count);
  };
  try {
    const minidl::serialize::SafetensorsLayout layout =
        minidl::serialize::read_safetensors_layout(size, read_at, "fuzz input");
    // Read every byte of every tensor as decode() copies it: a tensor larger than the file
    // holds would show up as an out-of-bounds read under AddressSanitizer.
    uint8_t checksum = 0;
    for (const auto& record : layout.tensors) {
      if (layout.data_start + record.end > size) __builtin_trap();
      for (uint64_t i = layout.data_start + record.begin; i < layout.data_start + record.end; ++i)
        checksum ^= data[i];
      checksum ^= static_cast<uint8_t>(record.name.size());
    }
    volatile uint8_t sink = checksum;
    (void)sink;
  } catch (const minidl::Error&) {
    // A refused input: the expected outcome for almost every mutation.
  }
  return 0;
}
