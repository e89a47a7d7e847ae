#pragma once
// Where a tensor lives: the CPU, or CUDA device n. Parsed from "cpu", "cuda", "cuda:1".
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace minidl {

enum class DeviceType : int8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // always 0 for the CPU

  constexpr Device() = default;
  constexpr Device(DeviceType device_type, int device_index = 0)
      : type(device_type), index(device_type == DeviceType::CPU ? 0 : device_index) {}
  explicit Device(std::string_view spec);  // "cpu", "cuda", "cuda:N"

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  friend constexpr bool operator==(const Device&, const Device&) = default;
};

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

inline std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.str();
}

}  // namespace minidl
