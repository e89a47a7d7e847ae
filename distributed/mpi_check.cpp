#include "minidl/distributed/mpi_check.h"

#include <string>

namespace minidl::distributed::detail {

void throw_mpi_error(int status, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(status, message, &length) != MPI_SUCCESS) length = 0;
  ::minidl::detail::throw_error(file, line,
                                ::minidl::detail::concat("MPI error ", status, " in ", call, ": ",
                                                         std::string(message, length)));
}

}  // namespace minidl::distributed::detail
