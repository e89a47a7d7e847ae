// A user's program: includes the umbrella header and uses views, copies, printing, logging and
// one BLAS-backed op, so compiling and linking it needs every public dependency of minidl.
#include <minidl.h>
#include <spdlog/spdlog.h>

#include <iostream>

int main() {
  using namespace minidl;
  std::cout << MINIDL_CONSUMER_DESCRIPTION << ", CUDA built: " << cuda::is_built() << "\n";

  Tensor x = arange(6, kFloat32).view({2, 3});  // [2, 3]
  Tensor xt = x.t().contiguous();               // [3, 2]
  std::cout << "xt = " << xt << "\n";
  try {
    Tensor product = matmul(x, xt);  // [2, 2]
    std::cout << "x @ xt = " << product << "\n";
  } catch (const Error& error) {
    std::cout << error.what() << "\n";  // until matmul has landed
  }

  set_log_rank(0);
  logger().info("the consumer logs through minidl's logger");
  std::cout << "consumer ok\n";
  return 0;
}
