// Placeholder until the CUDA runtime layer lands (this build reports no CUDA devices).
#include "core/cuda/cuda.h"

#include "core/error.h"

namespace minidl::cuda {

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { return 0; }
void set_device(int) { require_available("set_device"); }
void synchronize() { require_available("synchronize"); }
void require_available(const char* what) {
  MINIDL_CHECK(false, what, ": no CUDA device is available");
}

}  // namespace minidl::cuda
