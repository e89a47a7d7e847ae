#include "minidl/ops/onednn.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace minidl {

namespace {

bool enabled_from_environment() {
  const char* value = std::getenv("MINIDL_ONEDNN");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

std::atomic<bool> onednn_switch{enabled_from_environment()};

}  // namespace

void set_onednn_enabled(bool enabled) { onednn_switch.store(enabled, std::memory_order_relaxed); }

bool onednn_enabled() {
  return onednn_available() && onednn_switch.load(std::memory_order_relaxed);
}

}  // namespace minidl
