#include "minidl/core/error.h"

#include <cstring>

namespace minidl::detail {

namespace {
const char* basename_of(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
}  // namespace

void throw_error(const char* file, int line, const std::string& message) {
  throw Error(concat(message, " (", basename_of(file), ":", line, ")"));
}

void throw_internal(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(concat("internal error in minidl, please report it: ", condition, " failed at ",
                     basename_of(file), ":", line, message.empty() ? "" : ": ", message));
}

}  // namespace minidl::detail
