// The throwing halves of the checks in check.h (kept out of line so that each check site costs
// one compare and a call, and the message is built only on failure).
#if MINIDL_WITH_CUDA
#include "minidl/core/cuda/check.h"

namespace minidl::cuda::detail {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  ::minidl::detail::throw_error(
      file, line,
      ::minidl::detail::concat("CUDA error ", cudaGetErrorName(status), " (",
                               static_cast<int>(status), "): ", cudaGetErrorString(status),
                               ", from ", call));
}

void throw_library_error(const char* library, int status, const char* message, const char* call,
                         const char* file, int line) {
  ::minidl::detail::throw_error(
      file, line,
      ::minidl::detail::concat(library, " error ", status, ": ", message ? message : "(no message)",
                               ", from ", call));
}

}  // namespace minidl::cuda::detail
#endif  // MINIDL_WITH_CUDA: without CUDA nothing includes check.h
