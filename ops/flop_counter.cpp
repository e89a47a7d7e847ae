#include "minidl/ops/flop_counter.h"

namespace minidl {

namespace {
thread_local FlopCounter* innermost_counter = nullptr;
}  // namespace

FlopCounter::FlopCounter() : outer_(innermost_counter) { innermost_counter = this; }

FlopCounter::~FlopCounter() { innermost_counter = outer_; }

void count_flops(int64_t flops) {
  for (FlopCounter* counter = innermost_counter; counter != nullptr; counter = counter->outer_)
    counter->flops_ += flops;
}

}  // namespace minidl
