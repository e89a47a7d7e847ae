#pragma once
// The CIFAR-10 binary format (https://www.cs.toronto.edu/~kriz/cifar.html), validated from
// memory. A file is a sequence of 3073-byte records: one label byte (0-9), then a 32x32 colour
// image as 1024 red, 1024 green and 1024 blue bytes, each plane row-major. This is already the
// [C, H, W] layout minidl uses, so images are copied as they are.
#include <cstdint>
#include <span>
#include <string_view>

namespace minidl::data {

inline constexpr int64_t kCifar10Channels = 3;
inline constexpr int64_t kCifar10Size = 32;  // height and width
inline constexpr int64_t kCifar10ImageBytes = kCifar10Channels * kCifar10Size * kCifar10Size;
inline constexpr int64_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;  // 3073
inline constexpr int64_t kCifar10NumClasses = 10;

// Checks that `bytes` are one or more whole records with labels below 10, and returns how many
// records there are. `source` names the file in errors, which give the byte offset.
int64_t count_cifar10_records(std::span<const uint8_t> bytes, std::string_view source);

}  // namespace minidl::data
