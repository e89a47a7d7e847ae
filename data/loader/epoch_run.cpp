#include "minidl/data/loader/epoch_run.h"

#include "minidl/core/error.h"

namespace minidl::data::loader {

namespace {
constexpr const char* kClosedMessage =
    "DataLoader: this iterator's pass was stopped, because the loader was destroyed or another "
    "pass (begin()) started";
}

bool EpochRun::advance() {
  MINIDL_CHECK(!closed_, kClosedMessage);
  current_ = pipeline_->next();
  return current_.has_value();
}

Batch& EpochRun::current() {
  MINIDL_CHECK(!closed_, kClosedMessage);
  MINIDL_CHECK(current_.has_value(), "DataLoader: dereferencing an iterator past the last batch");
  return *current_;
}

void EpochRun::close() noexcept {
  closed_ = true;
  current_.reset();
  pipeline_.reset();
}

}  // namespace minidl::data::loader
