// A user's program: includes the umbrella header and uses views, copies, printing, logging and
// one BLAS-backed op, so compiling and linking it needs every public dependency of minidl. The
// project also has its own core/tensor.h, nn/module.h and data/datasets/dataset.h (src/, on the
// include path before minidl's), which minidl's headers must not capture.
#include <minidl/minidl.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "core/tensor.h"
#include "data/datasets/dataset.h"
#include "nn/module.h"

int main() {
  using namespace minidl;
  std::cout << "CUDA built: " << cuda::is_built() << ", C++ " << __cplusplus << "\n";
  std::cout << app::tensor_h() << ", " << app::module_h() << ", " << app::dataset_h() << "\n";

  Tensor x = arange(6, kFloat32).view({2, 3});  // [2, 3]
  Tensor xt = x.t().contiguous();               // [3, 2]
  std::cout << "xt = " << xt << "\n";
  Tensor product = matmul(x, xt);  // [2, 2]
  std::cout << "x @ xt = " << product << "\n";

  set_log_rank(0);
  logger().info("the consumer logs through minidl's logger");
  std::cout << "consumer ok\n";
  return 0;
}
