#pragma once
// MINIDL_MPI_CHECK, for distributed/mpi_*.cpp, the files that include <mpi.h> (CMake builds
// them only when it finds MPI). A failure throws minidl::Error with file:line, the call and
// MPI's own message. MPI reports errors as return codes only on communicators whose error handler
// is MPI_ERRORS_RETURN, which minidl sets on its own; the default handler aborts the job.
#include <mpi.h>

#include "minidl/core/error.h"

namespace minidl::distributed::detail {
[[noreturn]] void throw_mpi_error(int status, const char* call, const char* file, int line);
}  // namespace minidl::distributed::detail

#define MINIDL_MPI_CHECK(call)                                                                   \
  do {                                                                                           \
    const int minidl_status_ = (call);                                                           \
    if (minidl_status_ != MPI_SUCCESS) [[unlikely]]                                              \
      ::minidl::distributed::detail::throw_mpi_error(minidl_status_, #call, __FILE__, __LINE__); \
  } while (0)
