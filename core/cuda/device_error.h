#pragma once
// Deferred device errors: how a kernel reports a bad input (an index out of range) without the
// host waiting for it, and where the host raises it.
//
// Note [Deferred device errors]
// A check of device data on the host would synchronise every step, and a device-side trap (as
// a PyTorch device assert) leaves the CUDA context unusable. Instead, a kernel that finds a bad
// value writes a small record and carries on without touching memory out of range; the host raises
// it as a minidl::Error at the next point where it waits for the device anyway:
//
//   - a copy from the device to the host (item(), cpu(), to(kCPU); ops/cuda/copy.cu),
//   - Stream::synchronize and Event::synchronize (core/cuda/stream.cpp),
//   - cuda::synchronize (core/cuda/device.cpp).
//
// Each device has one record, created at the first launch of a reporting kernel on it (so not
// inside a CUDA graph capture: run a step before capturing, as warm-up does anyway):
//
//   - the record itself is mapped pinned host memory: the device writes it over the bus and
//     the host reads it with a plain load, so a sync point that finds nothing pays one read;
//   - the first reporting thread wins with atomicCAS on a claim word in device memory (atomics
//     on mapped host memory are not portable), comparing it with `armed`, a ticket in mapped
//     memory. The winner moves the claim word one past `armed`, so every later report fails
//     its compare until the host raises the record and arms the next ticket. Resetting thus
//     needs no device call, and the record keeps one report, whole: the first the device made.
//   - "first" is in time, not in position: the record may name any bad value of the launch
//     (the CPU names the lowest position). A report raced by the raising itself (a kernel on
//     another stream still running at the sync point) is dropped; the error was raised anyway.
//
// How the message reads is the launcher's: it passes a DescribeDeviceError function, whose
// address the kernel copies into the record as bits, and the host calls it when raising.
#include <cstdint>
#include <string>

namespace minidl::cuda {

// Builds the error message from what the kernel saw, e.g. "embedding: index 300 at position 7
// is out of range for an embedding table of 256 rows".
using DescribeDeviceError = std::string (*)(int64_t value, int64_t position, int64_t bound);

// The record a kernel writes (in mapped pinned memory).
struct DeviceErrorRecord {
  int64_t value = 0;      // the bad value (an index)
  int64_t position = 0;   // where it was (the element of the index tensor)
  int64_t bound = 0;      // what it had to stay below (the rows of the table)
  uint64_t describe = 0;  // a DescribeDeviceError, as bits
  int32_t published = 0;  // 1 once the fields above are written; the host clears it
};

// Everything a kernel needs to report, passed by value to the kernel (device pointers).
struct DeviceErrorSlot {
  unsigned long long* claim = nullptr;        // device memory
  const unsigned long long* armed = nullptr;  // mapped host memory
  DeviceErrorRecord* record = nullptr;        // mapped host memory
  uint64_t describe = 0;                      // the launcher's DescribeDeviceError
};

// The slot of `device` for a kernel about to be launched (creates the record on first use).
DeviceErrorSlot device_error_slot(int device, DescribeDeviceError describe);

// At a sync point: throws the error a kernel on `device` reported since the last call, if any,
// and arms the record again. Costs one load of mapped memory when there is none.
void raise_device_error_if_any(int device);

}  // namespace minidl::cuda
