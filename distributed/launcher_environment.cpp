#include "minidl/distributed/launcher_environment.h"

#include <cstdlib>

#include "minidl/core/error.h"

namespace minidl::distributed::detail {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int env_int(const char* name, int fallback) {
  const char* value = env(name);
  if (value == nullptr) return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  MINIDL_CHECK(end != value && *end == '\0' && parsed >= 0, "distributed::init: expected ", name,
               " to be a non-negative integer, got \"", value, "\"");
  return static_cast<int>(parsed);
}

bool launched_by_mpirun() {
  return env("OMPI_COMM_WORLD_SIZE") != nullptr || env("PMIX_RANK") != nullptr ||
         env("PMI_SIZE") != nullptr;
}

}  // namespace minidl::distributed::detail
