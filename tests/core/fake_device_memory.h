#pragma once
// A fake device for the caching allocator's tests (tests/core/caching_allocator_test.cpp,
// tests/core/graph_pool_test.cpp): no GPU needed.
#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device_memory.h"

namespace minidl::cuda::fake_device {

inline constexpr size_t kMiB = size_t{1} << 20;

// Device memory with a capacity limit. Addresses are made up (never dereferenced) and never
// reused, so a test can tell a cached block from a fresh one. Events complete when the test
// says so, and streams are captured into CUDA graphs when the test says so.
class FakeDeviceMemory final : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t capacity) : capacity_(capacity) {}

  void* allocate(size_t nbytes) override {
    ++allocate_calls;
    if (used_ + nbytes > capacity_) return nullptr;
    used_ += nbytes;
    void* ptr = reinterpret_cast<void*>(next_address_);
    next_address_ += nbytes + 4096;  // gaps: segments are never adjacent
    sizes_[ptr] = nbytes;
    return ptr;
  }
  void free(void* ptr) override {
    used_ -= sizes_.at(ptr);
    sizes_.erase(ptr);
  }
  EventHandle record_event(StreamHandle) override {
    ++record_event_calls;
    const uintptr_t id = ++next_event_;
    pending_events_.insert(id);
    return reinterpret_cast<EventHandle>(id);
  }
  bool event_completed(EventHandle event) override {
    ++event_completed_calls;
    return pending_events_.count(reinterpret_cast<uintptr_t>(event)) == 0;
  }
  void synchronize_event(EventHandle event) override {
    ++synchronize_event_calls;
    pending_events_.erase(reinterpret_cast<uintptr_t>(event));
  }
  void release_event(EventHandle) override { ++released_events; }
  void complete_all_events() { pending_events_.clear(); }
  CaptureStatus capture_status(StreamHandle stream) override {
    ++capture_status_calls;
    const auto found = captures_.find(stream);
    if (found == captures_.end()) return {};
    return {true, found->second};
  }
  void begin_capture(StreamHandle stream, uint64_t capture_id) { captures_[stream] = capture_id; }
  void end_capture(StreamHandle stream) { captures_.erase(stream); }

  size_t used() const { return used_; }
  int allocate_calls = 0;
  int released_events = 0;
  int record_event_calls = 0;
  int event_completed_calls = 0;
  int synchronize_event_calls = 0;
  int capture_status_calls = 0;

 private:
  size_t capacity_;
  size_t used_ = 0;
  uintptr_t next_address_ = 0x10000000;
  uintptr_t next_event_ = 0;
  std::unordered_map<void*, size_t> sizes_;
  std::set<uintptr_t> pending_events_;
  std::unordered_map<StreamHandle, uint64_t> captures_;
};

inline StreamHandle fake_stream(uintptr_t id) { return reinterpret_cast<StreamHandle>(id); }

// An allocator over a fake device of `capacity` bytes, and a view of that fake.
struct Fixture {
  explicit Fixture(size_t capacity = 1024 * kMiB) {
    auto memory = std::make_unique<FakeDeviceMemory>(capacity);
    fake = memory.get();
    allocator = std::make_unique<DeviceCachingAllocator>(0, std::move(memory));
  }
  FakeDeviceMemory* fake;
  std::unique_ptr<DeviceCachingAllocator> allocator;
};

inline const StreamHandle kStreamA = fake_stream(0x100);
inline const StreamHandle kStreamB = fake_stream(0x200);

}  // namespace minidl::cuda::fake_device
