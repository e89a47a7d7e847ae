#include "minidl/core/cupti_activity_recorder.h"

#include "minidl/core/error.h"

#if MINIDL_WITH_CUPTI
#include <cupti.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "minidl/core/demangle.h"
#include "minidl/core/logging.h"
#endif

namespace minidl {

#if MINIDL_WITH_CUPTI

namespace {

// Set while a recorder exists: CUPTI's buffer callbacks are process-wide.
std::atomic<bool> recorder_exists{false};

// CUPTI's own samples use 8 MiB; a ResNet-18 step records a few hundred kernels of about 200
// bytes each, so a profile of 10 steps fills one buffer or two. Buffers must be 8-byte aligned.
constexpr size_t kBufferBytes = size_t{8} << 20;
constexpr size_t kBufferAlignment = 8;

constexpr CUpti_ActivityKind kRecordedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // kernels as they really ran, overlapping or not
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
// With correlate: the external ids pushed around each op come as records of their own, made only
// for API calls that CUPTI records, so the runtime's calls (cudaLaunchKernel, cudaMemcpyAsync)
// and the driver's (cuBLAS and cuDNN launch through cuLaunchKernel) are recorded too; their own
// records are read for nothing else.
constexpr CUpti_ActivityKind kCorrelationKinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                                    CUPTI_ACTIVITY_KIND_RUNTIME,
                                                    CUPTI_ACTIVITY_KIND_DRIVER};
// The kind of external id minidl's profiler pushes (CUPTI's CUSTOM0: one that no other API
// such as OpenACC uses).
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

std::string describe_cupti_failure(CUptiResult result, const char* call) {
  const char* message = nullptr;
  if (cuptiGetResultString(result, &message) != CUPTI_SUCCESS || message == nullptr)
    message = "unknown CUPTI status";
  return detail::concat(call, " failed with status ", static_cast<int>(result), ": ", message);
}

void check_cupti(CUptiResult result, const char* call) {
  MINIDL_CHECK(result == CUPTI_SUCCESS, "CUPTI recorder: ", describe_cupti_failure(result, call),
               " (CUPTI comes from libcupti.so.13, which must match the CUDA driver)");
}

#define MINIDL_CUPTI_CHECK(call) check_cupti((call), #call)

// What the completion callback, which CUPTI calls on a thread of its own, hands to the recorder.
struct RecordedActivities {
  std::mutex mutex;
  std::vector<DeviceActivity> activities;
  std::unordered_map<uint32_t, uint64_t> external_ids;  // correlation id -> external id
  size_t dropped_records = 0;                           // CUPTI found no buffer for them
  size_t untimed_records = 0;  // CUPTI could not time them (start or end 0); left out
  std::string first_error;     // a CUPTI failure inside the callback, thrown by finish()
  // CUPTI shares one name string between all records of a kernel, so each is demangled once.
  std::unordered_map<const char*, std::string> kernel_names;
};

RecordedActivities& recorded() {
  static RecordedActivities instance;
  return instance;
}

const char* memcpy_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

// The record structs are versioned (CUDA 13.0's are CUpti_ActivityKernel10, ...Memcpy6 and
// ...Memset4; a later libcupti.so.13 may deliver later versions), but kind, start, end, copyKind,
// name, streamId and correlationId have kept their offsets in every version since Kernel4,
// Memcpy5 and Memset2 (new fields go at the end), and only they are read.
// cuptiActivityGetNextRecord knows each record's real size.
static_assert(offsetof(CUpti_ActivityKernel10, start) == offsetof(CUpti_ActivityKernel4, start) &&
              offsetof(CUpti_ActivityKernel10, end) == offsetof(CUpti_ActivityKernel4, end) &&
              offsetof(CUpti_ActivityKernel10, name) == offsetof(CUpti_ActivityKernel4, name) &&
              offsetof(CUpti_ActivityKernel10, streamId) ==
                  offsetof(CUpti_ActivityKernel4, streamId) &&
              offsetof(CUpti_ActivityKernel10, correlationId) ==
                  offsetof(CUpti_ActivityKernel4, correlationId));
static_assert(offsetof(CUpti_ActivityMemcpy6, copyKind) ==
                  offsetof(CUpti_ActivityMemcpy, copyKind) &&
              offsetof(CUpti_ActivityMemcpy6, end) == offsetof(CUpti_ActivityMemcpy, end) &&
              offsetof(CUpti_ActivityMemcpy6, streamId) ==
                  offsetof(CUpti_ActivityMemcpy5, streamId) &&
              offsetof(CUpti_ActivityMemcpy6, correlationId) ==
                  offsetof(CUpti_ActivityMemcpy5, correlationId));
static_assert(offsetof(CUpti_ActivityMemset4, streamId) ==
                  offsetof(CUpti_ActivityMemset2, streamId) &&
              offsetof(CUpti_ActivityMemset4, correlationId) ==
                  offsetof(CUpti_ActivityMemset2, correlationId));
void add_record(RecordedActivities& into, const CUpti_Activity& record) {
  DeviceActivity activity;
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& kernel = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      auto [entry, is_new] = into.kernel_names.try_emplace(kernel.name);
      if (is_new) entry->second = kernel.name ? demangle(kernel.name) : "(unnamed kernel)";
      activity = {entry->second,   kernel.start,        kernel.end, DeviceActivityKind::kKernel,
                  kernel.streamId, kernel.correlationId};
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& copy = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      activity = {memcpy_name(copy.copyKind),  copy.start,    copy.end,
                  DeviceActivityKind::kMemcpy, copy.streamId, copy.correlationId};
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& set = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      activity = {"memset",     set.start,        set.end, DeviceActivityKind::kMemset,
                  set.streamId, set.correlationId};
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& external = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      if (external.externalKind == kExternalKind)
        into.external_ids[external.correlationId] = external.externalId;
      return;
    }
    default: return;  // the API records, or not a kind this recorder enables
  }
  if (activity.start_ns == 0 || activity.end_ns < activity.start_ns) {
    ++into.untimed_records;
    return;
  }
  into.activities.push_back(std::move(activity));
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;  // no buffer: CUPTI drops and counts records
  *max_records = 0;                               // as many as fit
}

void CUPTIAPI on_buffer_completed(CUcontext /*context*/, uint32_t stream_id, uint8_t* buffer,
                                  size_t /*size*/, size_t valid_size) {
  RecordedActivities& into = recorded();
  {
    std::lock_guard lock(into.mutex);
    CUpti_Activity* record = nullptr;
    for (;;) {
      const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_size, &record);
      if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the end of the buffer
      if (status != CUPTI_SUCCESS) {
        if (into.first_error.empty())
          into.first_error = describe_cupti_failure(status, "cuptiActivityGetNextRecord");
        break;
      }
      add_record(into, *record);
    }
    size_t dropped = 0;
    const CUptiResult status = cuptiActivityGetNumDroppedRecords(nullptr, stream_id, &dropped);
    if (status == CUPTI_SUCCESS)
      into.dropped_records += dropped;
    else if (into.first_error.empty())
      into.first_error = describe_cupti_failure(status, "cuptiActivityGetNumDroppedRecords");
  }
  std::free(buffer);
}

// The kinds a recorder enables.
std::vector<CUpti_ActivityKind> kinds_to_record(bool correlate) {
  std::vector<CUpti_ActivityKind> kinds(std::begin(kRecordedKinds), std::end(kRecordedKinds));
  if (correlate)
    kinds.insert(kinds.end(), std::begin(kCorrelationKinds), std::end(kCorrelationKinds));
  return kinds;
}

void disable_kinds_quietly(bool correlate) {
  for (CUpti_ActivityKind kind : kinds_to_record(correlate)) {
    const CUptiResult status = cuptiActivityDisable(kind);
    if (status != CUPTI_SUCCESS)
      logger().error("CUPTI recorder: {}", describe_cupti_failure(status, "cuptiActivityDisable"));
  }
}

}  // namespace

bool CuptiActivityRecorder::available() { return true; }

uint64_t CuptiActivityRecorder::timestamp_ns() {
  uint64_t now = 0;
  MINIDL_CUPTI_CHECK(cuptiGetTimestamp(&now));
  return now;
}

// Called from the profiler's scopes, around every op: a failure is logged, never thrown (an op
// must not fail for its profile, and a scope's destructor must not throw); the launches then
// miss their op in the trace.
void CuptiActivityRecorder::push_external_id(uint64_t id) {
  const CUptiResult status = cuptiActivityPushExternalCorrelationId(kExternalKind, id);
  if (status != CUPTI_SUCCESS)
    logger().error("CUPTI recorder: {}",
                   describe_cupti_failure(status, "cuptiActivityPushExternalCorrelationId"));
}

void CuptiActivityRecorder::pop_external_id() {
  uint64_t id = 0;
  const CUptiResult status = cuptiActivityPopExternalCorrelationId(kExternalKind, &id);
  if (status != CUPTI_SUCCESS)
    logger().error("CUPTI recorder: {}",
                   describe_cupti_failure(status, "cuptiActivityPopExternalCorrelationId"));
}

CuptiActivityRecorder::CuptiActivityRecorder(bool correlate) : correlate_(correlate) {
  MINIDL_CHECK(!recorder_exists.exchange(true),
               "CuptiActivityRecorder: expected one recorder at a time (CUPTI's buffer callbacks "
               "are process-wide), but one exists already");
  {
    RecordedActivities& into = recorded();
    std::lock_guard lock(into.mutex);
    into.activities.clear();
    into.external_ids.clear();
    into.dropped_records = into.untimed_records = 0;
    into.first_error.clear();
    into.kernel_names.clear();  // a name's address may be reused once its module is unloaded
  }
  try {
    MINIDL_CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
    for (CUpti_ActivityKind kind : kinds_to_record(correlate_))
      MINIDL_CUPTI_CHECK(cuptiActivityEnable(kind));
  } catch (...) {
    disable_kinds_quietly(correlate_);
    recorder_exists = false;
    throw;
  }
}

CuptiActivityRecorder::~CuptiActivityRecorder() {
  if (!finished_) disable_kinds_quietly(correlate_);
  recorder_exists = false;
}

void CuptiActivityRecorder::discard_recorded() {
  MINIDL_CHECK(!finished_, "CuptiActivityRecorder::discard_recorded: called after finish()");
  MINIDL_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  RecordedActivities& into = recorded();
  std::lock_guard lock(into.mutex);
  into.activities.clear();
  into.external_ids.clear();
  into.untimed_records = 0;
}

std::vector<DeviceActivity> CuptiActivityRecorder::finish() {
  MINIDL_CHECK(!finished_, "CuptiActivityRecorder::finish: called twice");
  // Forced: hand back every buffer, also those CUPTI would keep until they fill up.
  MINIDL_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  for (CUpti_ActivityKind kind : kinds_to_record(correlate_))
    MINIDL_CUPTI_CHECK(cuptiActivityDisable(kind));
  finished_ = true;
  RecordedActivities& into = recorded();
  std::lock_guard lock(into.mutex);
  MINIDL_CHECK(into.first_error.empty(), "CUPTI recorder: ", into.first_error);
  MINIDL_CHECK(into.dropped_records == 0, "CUPTI recorder: CUPTI dropped ", into.dropped_records,
               " activity records (no buffer could be allocated for them), so the profile would "
               "be incomplete");
  if (into.untimed_records > 0)
    logger().warn(
        "CUPTI recorder: CUPTI could not time {} of {} activity records; they are left "
        "out of the profile",
        into.untimed_records, into.untimed_records + into.activities.size());
  external_ids_ = std::move(into.external_ids);
  return std::move(into.activities);
}

#else  // a CPU-only build, or a toolkit without CUPTI

bool CuptiActivityRecorder::available() { return false; }

uint64_t CuptiActivityRecorder::timestamp_ns() { return 0; }

void CuptiActivityRecorder::push_external_id(uint64_t /*id*/) {}

void CuptiActivityRecorder::pop_external_id() {}

CuptiActivityRecorder::CuptiActivityRecorder(bool correlate) : correlate_(correlate) {
  MINIDL_CHECK(false, "CUPTI recorder: expected a build with CUDA and CUPTI to record GPU ",
               "kernels with, but this one has no CUPTI (configure with -DMINIDL_CUDA=ON and a ",
               "CUDA toolkit that has libcupti)");
}

CuptiActivityRecorder::~CuptiActivityRecorder() = default;

void CuptiActivityRecorder::discard_recorded() {}

std::vector<DeviceActivity> CuptiActivityRecorder::finish() { return {}; }

#endif  // MINIDL_WITH_CUPTI

}  // namespace minidl
