// The table a captured CUDA graph reads (ops/captured_device_table.h), with its "device" on
// the CPU: the first upload copies everything, later ones only the bytes the host changed.
#include "minidl/ops/captured_device_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace minidl {
namespace {

// A group record as an optimizer's table holds them (SGD's, say).
struct GroupRecord {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
};

std::vector<std::byte> bytes_counting_from(unsigned char first, size_t size) {
  std::vector<std::byte> image(size);
  for (size_t i = 0; i < size; ++i) image[i] = std::byte(static_cast<unsigned char>(first + i));
  return image;
}

std::vector<std::byte> device_bytes(const CapturedDeviceTable& table) {
  std::vector<std::byte> bytes(table.image().size());
  std::memcpy(bytes.data(), table.device_data(), bytes.size());
  return bytes;
}

TEST(CapturedDeviceTable, TheFirstUploadCopiesTheWholeImageAndTheNextNothing) {
  CapturedDeviceTable table(bytes_counting_from(1, 100), Device(kCPU));
  EXPECT_EQ(table.uploads(), 0u);  // nothing before the first replay's hook runs
  table.upload_changes();
  EXPECT_EQ(device_bytes(table), bytes_counting_from(1, 100));
  EXPECT_EQ(table.uploads(), 1u);
  EXPECT_EQ(table.bytes_uploaded(), 100u);
  table.upload_changes();  // a replay with nothing changed
  EXPECT_EQ(table.uploads(), 1u);
}

TEST(CapturedDeviceTable, WritingTheSameBytesUploadsNothing) {
  CapturedDeviceTable table(bytes_counting_from(1, 64), Device(kCPU));
  table.upload_changes();
  const std::vector<std::byte> same = bytes_counting_from(11, 8);
  table.write(10, same.data(), same.size());
  table.upload_changes();
  EXPECT_EQ(table.uploads(), 1u);
}

TEST(CapturedDeviceTable, OnlyTheChangedSpanIsUploaded) {
  // A table whose first section holds two groups, as an optimizer's table does.
  std::vector<GroupRecord> groups(2);
  groups[0].lr = 0.1;
  groups[0].momentum = 0.9;
  groups[1].lr = 0.01;
  std::vector<std::byte> image(2 * sizeof(GroupRecord) + 64, std::byte{7});
  std::memcpy(image.data(), groups.data(), 2 * sizeof(GroupRecord));
  CapturedDeviceTable table(image, Device(kCPU));
  table.upload_changes();
  const uint64_t bytes_before = table.bytes_uploaded();

  groups[1].lr = 0.005;  // a scheduler's step changed one learning rate
  table.write(0, groups.data(), 2 * sizeof(GroupRecord));
  table.upload_changes();
  EXPECT_EQ(table.uploads(), 2u);
  EXPECT_LE(table.bytes_uploaded() - bytes_before, sizeof(double));
  GroupRecord on_device[2];
  std::memcpy(on_device, table.device_data(), sizeof on_device);
  EXPECT_EQ(on_device[0].lr, 0.1);
  EXPECT_EQ(on_device[0].momentum, 0.9);
  EXPECT_EQ(on_device[1].lr, 0.005);
  EXPECT_EQ(device_bytes(table), table.image());
}

TEST(CapturedDeviceTable, WritesBetweenTwoUploadsGoInOneCopy) {
  CapturedDeviceTable table(bytes_counting_from(0, 32), Device(kCPU));
  table.upload_changes();
  const std::byte a{200}, b{201};
  table.write(3, &a, 1);
  table.write(20, &b, 1);
  table.upload_changes();
  EXPECT_EQ(table.uploads(), 2u);
  EXPECT_EQ(table.bytes_uploaded(), 32u + 18u);  // bytes 3 to 20
  EXPECT_EQ(device_bytes(table), table.image());
  EXPECT_EQ(table.image()[3], a);
  EXPECT_EQ(table.image()[20], b);
}

}  // namespace
}  // namespace minidl
