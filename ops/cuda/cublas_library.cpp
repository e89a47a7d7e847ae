// cuBLAS opened on first use (see ops/cuda/cublas_library.h). Host code only, so a .cpp compiled
// in every build; without CUDA it defines nothing.
#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <dlfcn.h>

#include <atomic>
#include <string>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/ops/cuda/cublas_library.h"

namespace minidl::cuda {

namespace {

std::atomic<bool> opened{false};

// The loader's reason for the last failure, or `fallback` when it has none.
std::string loader_reason(const char* fallback) {
  const char* reason = dlerror();
  return reason != nullptr ? reason : fallback;
}

// The files to try, in order: the library's name for the headers' major version, which the
// dynamic loader searches for, then the file the build was configured with.
std::vector<std::string> candidate_files() {
  std::vector<std::string> files{"libcublas.so." + std::to_string(CUBLAS_VER_MAJOR)};
#ifdef MINIDL_CUBLAS_CONFIGURED_FILE
  files.emplace_back(MINIDL_CUBLAS_CONFIGURED_FILE);
#endif
  return files;
}

void* open_library() {
  std::string reasons;
  for (const std::string& file : candidate_files()) {
    if (void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    reasons += minidl::detail::concat("\n  ", file, ": ", loader_reason("not opened"));
  }
  MINIDL_CHECK(false, "cuBLAS, which minidl's CUDA matrix products call, could not be opened; ",
               "tried:", reasons,
               "\nIt comes with the CUDA toolkit (or the nvidia-cublas Python package): put its ",
               "folder on LD_LIBRARY_PATH");
  return nullptr;
}

template <class Function>
void find(void* library, const char* name, Function& function) {
  (void)dlerror();  // clears an earlier failure's reason
  function = reinterpret_cast<Function>(dlsym(library, name));
  MINIDL_CHECK(function != nullptr, "cuBLAS: the library opened has no ", name, " (",
               loader_reason("a null symbol"), "); minidl was built against cuBLAS ",
               CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR);
}

CublasLibrary open_cublas() {
  void* library = open_library();
  CublasLibrary api;
  find(library, "cublasCreate_v2", api.create);
  find(library, "cublasDestroy_v2", api.destroy);
  find(library, "cublasSetStream_v2", api.set_stream);
  find(library, "cublasSetWorkspace_v2", api.set_workspace);
  find(library, "cublasSetMathMode", api.set_math_mode);
  find(library, "cublasGetStatusString", api.status_string);
  find(library, "cublasGemmEx", api.gemm_ex);
  find(library, "cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
  opened.store(true);
  return api;
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = open_cublas();
  return library;
}

bool cublas_opened() { return opened.load(); }

}  // namespace minidl::cuda

#endif  // MINIDL_WITH_CUDA
