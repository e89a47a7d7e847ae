// Stream identity without a GPU: a stream is its handle on its device, and every device's
// legacy default stream has the null handle, so two devices' default streams differ.
#include "minidl/core/cuda/stream.h"

#include <gtest/gtest.h>

namespace minidl::cuda {
namespace {

TEST(Stream, DefaultStreamsOfTwoDevicesAreDifferentStreams) {
  const Stream on_device_0 = Stream::default_stream(0);
  const Stream on_device_1 = Stream::default_stream(1);
  ASSERT_EQ(on_device_0.handle(), on_device_1.handle());  // both null
  EXPECT_FALSE(on_device_0 == on_device_1);
  EXPECT_TRUE(on_device_0 != on_device_1);
}

TEST(Stream, TheSameDevicesDefaultStreamIsTheSameStream) {
  EXPECT_EQ(Stream::default_stream(1), Stream::default_stream(1));
  EXPECT_EQ(Stream(), Stream::default_stream(0));  // a default-made Stream is device 0's
}

}  // namespace
}  // namespace minidl::cuda
