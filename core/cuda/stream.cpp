// Streams, the per-thread current stream of each device, and events.
#include "minidl/core/cuda/stream.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_error.h"
#endif

namespace minidl::cuda {

namespace {

int resolve_device(int device) { return device < 0 ? current_device() : device; }

// The stream set by the innermost StreamGuard of this thread, per device; a device without an
// entry (or with an empty one) uses its default stream.
std::vector<Stream>& current_streams_of_this_thread() {
  thread_local std::vector<Stream> streams;
  return streams;
}

}  // namespace

Stream::Stream(std::shared_ptr<CUstream_st> owner, int device)
    : owner_(std::move(owner)), handle_(owner_.get()), device_(device) {}

Stream Stream::default_stream(int device) { return Stream(nullptr, device); }

Stream current_stream(int device) {
  device = resolve_device(device);
  const std::vector<Stream>& streams = current_streams_of_this_thread();
  if (static_cast<size_t>(device) < streams.size()) return streams[device];
  return Stream::default_stream(device);
}

StreamHandle current_stream_handle(int device) { return current_stream(device).handle(); }

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  std::vector<Stream>& streams = current_streams_of_this_thread();
  const auto device = static_cast<size_t>(stream.device());
  if (streams.size() <= device) {
    streams.resize(device + 1);
    for (size_t d = 0; d < streams.size(); ++d)
      if (streams[d].handle() == nullptr) streams[d] = Stream::default_stream(static_cast<int>(d));
  }
  streams[device] = stream;
}

StreamGuard::~StreamGuard() {
  current_streams_of_this_thread()[static_cast<size_t>(previous_.device())] = previous_;
}

#if MINIDL_WITH_CUDA

Stream Stream::create(int device) {
  DeviceGuard device_guard(device);
  cudaStream_t raw = nullptr;
  MINIDL_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  std::shared_ptr<CUstream_st> owner(raw, [device](cudaStream_t s) {
    const cudaError_t status = cudaStreamDestroy(s);
    if (status != cudaSuccess)
      logger().error("cudaStreamDestroy on device {} failed: {}", device,
                     cudaGetErrorString(status));
  });
  return Stream(std::move(owner), device);
}

void Stream::synchronize() const {
  DeviceGuard device_guard(device_);  // the null stream means the current device's
  MINIDL_CUDA_CHECK(cudaStreamSynchronize(handle_));
  raise_device_error_if_any(device_);  // Note [Deferred device errors]
}

Event::Event() = default;

Event::~Event() {
  if (handle_ == nullptr) return;
  const cudaError_t status = cudaEventDestroy(handle_);
  if (status != cudaSuccess)
    logger().error("cudaEventDestroy failed: {}", cudaGetErrorString(status));
}

void Event::record(const Stream& stream) {
  DeviceGuard device_guard(stream.device());
  if (handle_ == nullptr) {
    // Created on first record, on the stream's device: an Event that is never recorded needs
    // no GPU at all.
    MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&handle_, cudaEventDisableTiming));
    device_ = stream.device();
  }
  MINIDL_CHECK(device_ == stream.device(), "Event::record: this event belongs to device ", device_,
               ", but the stream is on device ", stream.device());
  MINIDL_CUDA_CHECK(cudaEventRecord(handle_, stream.handle()));
}

void Event::wait(const Stream& stream) const {
  if (handle_ == nullptr) return;  // nothing recorded: nothing to wait for
  DeviceGuard device_guard(stream.device());
  MINIDL_CUDA_CHECK(cudaStreamWaitEvent(stream.handle(), handle_, 0));
}

bool Event::query() const {
  if (handle_ == nullptr) return true;
  const cudaError_t status = cudaEventQuery(handle_);
  if (status == cudaErrorNotReady) return false;
  MINIDL_CUDA_CHECK(status);
  return true;
}

void Event::synchronize() const {
  if (handle_ == nullptr) return;
  MINIDL_CUDA_CHECK(cudaEventSynchronize(handle_));
  raise_device_error_if_any(device_);  // Note [Deferred device errors]
}

#else  // a build without CUDA: only the default stream exists, and events have nothing to do

Stream Stream::create(int) {
  require_available("Stream::create");
  return {};
}
void Stream::synchronize() const { require_available("Stream::synchronize"); }
Event::Event() = default;
Event::~Event() = default;
void Event::record(const Stream&) { require_available("Event::record"); }
void Event::wait(const Stream&) const {}
bool Event::query() const { return true; }
void Event::synchronize() const {}

#endif

}  // namespace minidl::cuda
