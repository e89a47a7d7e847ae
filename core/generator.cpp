#include "minidl/core/generator.h"

#include "minidl/core/error.h"

namespace minidl {

void PhiloxGenerator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  state_ = {seed, 0};
}

GeneratorState PhiloxGenerator::reserve(uint64_t count) {
  const uint64_t rounded = (count + kCounterAlignment - 1) / kCounterAlignment * kCounterAlignment;
  std::lock_guard lock(mutex_);
  const GeneratorState start = state_;
  state_.offset += rounded;
  return start;
}

GeneratorState PhiloxGenerator::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

void PhiloxGenerator::set_state(const GeneratorState& state) {
  MINIDL_CHECK(state.offset % kCounterAlignment == 0, "PhiloxGenerator::set_state: expected an ",
               "offset that is a multiple of ", kCounterAlignment, ", got ", state.offset);
  std::lock_guard lock(mutex_);
  state_ = state;
}

PhiloxGenerator& default_generator() {
  static PhiloxGenerator generator;
  return generator;
}

}  // namespace minidl
