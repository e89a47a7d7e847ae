#pragma once
// One thing the GPU did, as CUPTI reports it (core/cupti_activity_recorder.h): a kernel, a memory
// copy or a memset, with its device timestamps. A plain struct with no CUDA in it, so that what
// is computed from a list of them (bench --profile's per-step figures, a profile's kernels under
// their ops) is tested on the CPU.
#include <cstdint>
#include <string>

namespace minidl {

enum class DeviceActivityKind { kKernel, kMemcpy, kMemset };

struct DeviceActivity {
  std::string name;   // a kernel's (demangled) name; "memcpy HtoD", "memset", ... otherwise
  uint64_t start_ns;  // device timestamps, in ns on CUPTI's clock
  uint64_t end_ns;    // >= start_ns
  DeviceActivityKind kind;
  uint32_t stream_id = 0;
  // CUPTI's id of the API call that launched it, which the recorder's external ids map to the
  // span of minidl's profiler that was open on the launching thread.
  uint32_t correlation_id = 0;
};

}  // namespace minidl
