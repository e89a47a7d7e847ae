#pragma once
// Reads TensorBoard event files back for the tests (tests/train/tensorboard_writer_test.cpp,
// trainer_tensorboard_test.cpp): TFRecord records with their lengths and masked CRC-32Cs checked,
// and protocol buffer messages decoded field by field, independently of the writer's encoder.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "minidl/train/tfrecord_writer.h"

namespace minidl::testing {

inline uint64_t little_endian(const std::string& bytes, size_t at, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

// The records of a TFRecord file, each checked against its length and masked CRC-32Cs.
inline std::vector<std::string> read_records(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size()) << "a record header cut short";
    const uint64_t length = little_endian(file, at, 8);
    EXPECT_EQ(little_endian(file, at + 8, 4), train::masked_crc32c(file.substr(at, 8)));
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(little_endian(file, at + 12 + length, 4), train::masked_crc32c(data));
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

// One field of a message: its wire type and raw value (varint, or the bytes of the rest).
struct Field {
  uint32_t wire_type = 0;
  uint64_t number = 0;  // a varint's value, or fixed bits
  std::string bytes;    // a length-delimited field's bytes
};

inline uint64_t read_varint(const std::string& message, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(message.at(at++));
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

// The fields of `message` by field number (repeated ones: the last).
inline std::multimap<uint32_t, Field> decode(const std::string& message) {
  std::multimap<uint32_t, Field> fields;
  size_t at = 0;
  while (at < message.size()) {
    const uint64_t key = read_varint(message, at);
    Field field;
    field.wire_type = static_cast<uint32_t>(key & 7);
    switch (field.wire_type) {
      case 0: field.number = read_varint(message, at); break;
      case 1: field.number = little_endian(message, at, 8), at += 8; break;
      case 5: field.number = little_endian(message, at, 4), at += 4; break;
      case 2: {
        const uint64_t length = read_varint(message, at);
        field.bytes = message.substr(at, length);
        at += length;
        break;
      }
      default: ADD_FAILURE() << "wire type " << field.wire_type; return fields;
    }
    fields.emplace(static_cast<uint32_t>(key >> 3), field);
  }
  return fields;
}

inline double as_double(const Field& field) {
  double value;
  std::memcpy(&value, &field.number, sizeof value);
  return value;
}

inline float as_float(const Field& field) {
  const auto bits = static_cast<uint32_t>(field.number);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::vector<double> packed_doubles(const Field& field) {
  std::vector<double> values(field.bytes.size() / 8);
  std::memcpy(values.data(), field.bytes.data(), values.size() * 8);
  return values;
}

// The one Summary.Value of an Event: its tag and fields.
inline std::multimap<uint32_t, Field> summary_value(const std::multimap<uint32_t, Field>& event,
                                                    std::string& tag) {
  const auto summary = decode(event.find(5)->second.bytes);
  EXPECT_EQ(summary.count(1), 1u);
  const auto value = decode(summary.find(1)->second.bytes);
  tag = value.find(1)->second.bytes;
  return value;
}

// Every scalar of an event file: tag -> (step, value) in file order.
inline std::map<std::string, std::vector<std::pair<int64_t, float>>> read_scalars(
    const std::filesystem::path& path) {
  std::map<std::string, std::vector<std::pair<int64_t, float>>> scalars;
  for (const std::string& record : read_records(path)) {
    const auto event = decode(record);
    if (event.count(5) == 0) continue;  // the version event
    std::string tag;
    const auto value = summary_value(event, tag);
    if (value.count(2) == 0) continue;  // a histogram
    scalars[tag].emplace_back(static_cast<int64_t>(event.find(2)->second.number),
                              as_float(value.find(2)->second));
  }
  return scalars;
}

}  // namespace minidl::testing
