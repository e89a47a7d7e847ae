#include "minidl/data/readers/data_root.h"

#include <cstdlib>

namespace minidl::data {

std::filesystem::path data_root() {
  const char* from_environment = std::getenv(kDataRootVariable);
  if (from_environment != nullptr && *from_environment != '\0') return from_environment;
  return kDefaultDataRoot;
}

}  // namespace minidl::data
