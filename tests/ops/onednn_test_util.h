#pragma once
// What the oneDNN tests share (onednn_conv_test.cpp, onednn_batch_norm_test.cpp): skipping in a
// build without it, switching it on or off for a scope, and counting the process's threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>

#include "minidl/ops/onednn.h"

#define SKIP_WITHOUT_ONEDNN()      \
  if (!minidl::onednn_available()) \
  GTEST_SKIP() << "this build has no oneDNN (-DMINIDL_ONEDNN=OFF or libdnnl-dev missing)"

namespace minidl::testing {

// Switches oneDNN on or off for a scope.
class ScopedOnednn {
 public:
  explicit ScopedOnednn(bool enabled) : previous_(onednn_enabled()) { set_onednn_enabled(enabled); }
  ~ScopedOnednn() { set_onednn_enabled(previous_); }
  ScopedOnednn(const ScopedOnednn&) = delete;
  ScopedOnednn& operator=(const ScopedOnednn&) = delete;

 private:
  bool previous_;
};

// The threads of this process (to see that oneDNN's OpenMP starts none of its own).
inline int64_t process_thread_count() {
  int64_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++count;
  return count;
}

}  // namespace minidl::testing
