// Tensor::str() of CUDA tensors: the device suffix PyTorch prints, before the dtype and
// autograd suffixes, and the same values as the CPU copy.
#include <gtest/gtest.h>

#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

TEST(TensorPrintCuda, NamesTheDeviceAsPyTorchDoes) {
  SKIP_WITHOUT_CUDA();
  EXPECT_EQ(ones({2}).cuda().str(), "tensor([1., 1.], device='cuda:0')");
  EXPECT_EQ(tensor({0.5, 1.25}, kFloat16).cuda().str(),
            "tensor([0.5000, 1.2500], device='cuda:0', dtype=torch.float16)");
  EXPECT_EQ(zeros({0, 3}).cuda().str(), "tensor([], device='cuda:0', size=(0, 3))");
  Tensor leaf = ones({2}).cuda().requires_grad_();
  EXPECT_EQ(leaf.str(), "tensor([1., 1.], device='cuda:0', requires_grad=True)");
  // PyTorch's str() of torch.arange(2000.) * 0.5, with the device suffix on the last line.
  EXPECT_EQ((arange(2000, kFloat32).cuda() * 0.5).str(),
            "tensor([0.0000e+00, 5.0000e-01, 1.0000e+00,  ..., 9.9850e+02, 9.9900e+02,\n"
            "        9.9950e+02], device='cuda:0')");
}

}  // namespace
}  // namespace minidl
