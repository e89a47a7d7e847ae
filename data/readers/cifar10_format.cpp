#include "minidl/data/readers/cifar10_format.h"

#include "minidl/core/error.h"

namespace minidl::data {

int64_t count_cifar10_records(std::span<const uint8_t> bytes, std::string_view source) {
  const auto size = static_cast<int64_t>(bytes.size());
  MINIDL_CHECK(size > 0, "CIFAR-10 file ", source, ": is empty, expected records of ",
               kCifar10RecordBytes, " bytes");
  const int64_t records = size / kCifar10RecordBytes;
  const int64_t remainder = size % kCifar10RecordBytes;
  MINIDL_CHECK(remainder == 0, "CIFAR-10 file ", source, ": has ", size, " bytes, not a whole ",
               "number of ", kCifar10RecordBytes, "-byte records: the last record starts at byte ",
               records * kCifar10RecordBytes, " and is cut off after ", remainder,
               " bytes (truncated file?)");
  for (int64_t r = 0; r < records; ++r) {
    const int64_t offset = r * kCifar10RecordBytes;
    const uint8_t label = bytes[static_cast<size_t>(offset)];
    MINIDL_CHECK(label < kCifar10NumClasses, "CIFAR-10 file ", source, ": label ", int{label},
                 " of record ", r, " (at byte ", offset, ") is out of range, expected a class ",
                 "below ", kCifar10NumClasses);
  }
  return records;
}

}  // namespace minidl::data
