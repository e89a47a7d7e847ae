#pragma once
// Streams and events. Each device has a current stream (the default stream until a StreamGuard
// switches it, per thread); ops launch their kernels on it. Handles are the CUDA runtime's own
// types, declared here without including cuda_runtime.h so this header stays light.
#include <memory>

struct CUstream_st;
struct CUevent_st;

namespace minidl::cuda {

using StreamHandle = CUstream_st*;  // cudaStream_t
using EventHandle = CUevent_st*;    // cudaEvent_t

// A stream owned by minidl (created non-blocking on `device`), or the null stream.
class Stream {
 public:
  Stream() = default;                // the legacy null stream of device 0, as default_stream(0)
  static Stream create(int device);  // a new non-blocking stream
  static Stream default_stream(int device);  // the legacy null stream of `device`
  StreamHandle handle() const { return handle_; }
  int device() const { return device_; }
  void synchronize() const;
  // The same stream: the same handle on the same device. Every device's legacy default stream
  // has the null handle, so the handle alone would take two devices' default streams for one.
  friend bool operator==(const Stream& a, const Stream& b) {
    return a.handle_ == b.handle_ && a.device_ == b.device_;
  }

 private:
  Stream(std::shared_ptr<CUstream_st> owner, int device);
  std::shared_ptr<CUstream_st> owner_;
  StreamHandle handle_ = nullptr;
  int device_ = 0;
};

// The stream ops on `device` launch on, from this thread. device -1 means the current device.
Stream current_stream(int device = -1);
StreamHandle current_stream_handle(int device = -1);

// Makes `stream` current on its device for the scope, and restores the previous one after.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// A CUDA event without timing (cheap), for ordering streams without the host.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& stream);
  void wait(const Stream& stream) const;  // `stream` waits for the work recorded before
  bool query() const;                     // true when that work has finished
  void synchronize() const;               // the host waits

 private:
  EventHandle handle_ = nullptr;
  int device_ = -1;
};

}  // namespace minidl::cuda
