#include "minidl/ops/cpu/blas_threads.h"

#include <cblas.h>

namespace minidl::cpu {

void use_calling_thread_blas() {
  static const bool single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single_threaded;
}

}  // namespace minidl::cpu
