#pragma once
// The device side of Note [Deferred device errors] (core/cuda/device_error.h): what a kernel
// calls when it finds a bad value. Include from .cu files only.
#include <cstdint>

#include "minidl/core/cuda/device_error.h"

namespace minidl::cuda {

// Records (value, position, bound) unless some thread has reported since the host last raised
// a report. The caller then goes on without using the bad value.
__device__ inline void report_device_error(const DeviceErrorSlot& slot, int64_t value,
                                           int64_t position, int64_t bound) {
  const unsigned long long armed = *static_cast<const volatile unsigned long long*>(slot.armed);
  if (atomicCAS(slot.claim, armed, armed + 1) != armed) return;  // another report came first
  DeviceErrorRecord* record = slot.record;
  record->value = value;
  record->position = position;
  record->bound = bound;
  record->describe = slot.describe;
  // The fields reach the host before the flag that says they are there.
  __threadfence_system();
  *static_cast<volatile int32_t*>(&record->published) = 1;
}

}  // namespace minidl::cuda
