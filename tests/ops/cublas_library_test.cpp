// cuBLAS opened on first use (ops/cuda/cublas_library.h): a program of a CUDA build starts
// without it, and opening it finds every function minidl calls. Runs without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "minidl/core/cuda/build.h"
#include "test_util.h"

#if MINIDL_WITH_CUDA
#include <dlfcn.h>

#include "minidl/ops/cuda/cublas_library.h"
#endif

namespace minidl {
namespace {

#if MINIDL_WITH_CUDA

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

// Whether the process has the library loaded (RTLD_NOLOAD: only looks).
bool loaded(const std::string& file) {
  void* library = dlopen(file.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (library == nullptr) return false;
  dlclose(library);  // drops the reference the look took
  return true;
}

TEST(CublasLibrary, AProgramStartsWithoutIt) {
  if (cuda::cublas_opened()) GTEST_SKIP() << "an earlier test of this process opened cuBLAS";
  EXPECT_FALSE(loaded(kSoname)) << kSoname << " was loaded before any CUDA matrix product";
  EXPECT_FALSE(loaded("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)));
}

TEST(CublasLibrary, OpeningItFindsEveryFunctionMinidlCalls) {
  const cuda::CublasLibrary& library = cuda::cublas();
  EXPECT_TRUE(cuda::cublas_opened());
  EXPECT_TRUE(loaded(kSoname));
  for (const bool found : {library.create != nullptr, library.destroy != nullptr,
                           library.set_stream != nullptr, library.set_workspace != nullptr,
                           library.set_math_mode != nullptr, library.status_string != nullptr,
                           library.gemm_ex != nullptr, library.gemm_strided_batched_ex != nullptr})
    EXPECT_TRUE(found);
  // A call through a pointer reaches cuBLAS itself (no device needed for this one).
  EXPECT_STREQ(library.status_string(CUBLAS_STATUS_NOT_SUPPORTED),
               "the requested functionality is not supported");
  EXPECT_EQ(&cuda::cublas(), &library);  // opened once
}

#else

TEST(CublasLibrary, AProgramStartsWithoutIt) { GTEST_SKIP() << "a build without CUDA"; }

#endif

}  // namespace
}  // namespace minidl
