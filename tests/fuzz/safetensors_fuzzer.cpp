// libFuzzer target: the safetensors reader on arbitrary bytes. parse_safetensors runs exactly the
// validation read_safetensors runs on a file (minus the file I/O). Every input must either parse
// or throw minidl::Error; a crash, a sanitizer report, a leak or any other exception is a finding.
#include <cstddef>
#include <cstdint>

#include "minidl/core/error.h"
#include "minidl/core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const minidl::serialize::SafetensorsContents contents =
        minidl::serialize::parse_safetensors(data, size, "fuzz input");
    // Read every byte of every tensor: a tensor smaller than its header claims would show up
    // as an out-of-bounds read under AddressSanitizer.
    uint8_t checksum = 0;
    for (const auto& [name, tensor] : contents.tensors) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.data_ptr());
      for (size_t i = 0; i < tensor.nbytes(); ++i) checksum ^= bytes[i];
      checksum ^= static_cast<uint8_t>(name.size());
    }
    volatile uint8_t sink = checksum;
    (void)sink;
  } catch (const minidl::Error&) {
    // A refused input: the expected outcome for almost every mutation.
  }
  return 0;
}
