#include "minidl/core/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace minidl {

std::string demangle(const char* mangled) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> readable(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(mangled);
}

}  // namespace minidl
