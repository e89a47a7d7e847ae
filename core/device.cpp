#include "minidl/core/device.h"

#include <charconv>

#include "minidl/core/error.h"

namespace minidl {

Device::Device(std::string_view spec) {
  if (spec == "cpu") return;
  MINIDL_CHECK(spec.starts_with("cuda"), "Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"",
               spec, "\"");
  type = DeviceType::CUDA;
  std::string_view rest = spec.substr(4);
  if (rest.empty()) return;
  MINIDL_CHECK(rest.front() == ':' && rest.size() > 1,
               "Device: expected \"cuda:N\" with a device number, got \"", spec, "\"");
  rest.remove_prefix(1);
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  MINIDL_CHECK(ec == std::errc() && end == rest.data() + rest.size() && index >= 0,
               "Device: expected a non-negative device number in \"", spec, "\"");
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace minidl
