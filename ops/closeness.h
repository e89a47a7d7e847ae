#pragma once
// Closeness: isclose, allclose and equal, as their torch namesakes, composed of the element-wise
// ops (ops/closeness.cpp), so they run on every backend; none is differentiable.
//
// isclose and allclose want two tensors of one dtype and one device (PyTorch's "Float did not
// match Double"), which broadcast together; equal compares values of any two dtypes, as
// torch.equal does.
#include "minidl/core/tensor.h"

namespace minidl {

// Element-wise, as torch.isclose: a == b, or |a - b| <= atol + rtol * |b| with |a - b| finite
// (so inf is close only to the same inf), or, with equal_nan, both NaN. A bool tensor of the
// broadcast shape. rtol and atol must be >= 0; both 0 is equality. Integer tensors compare
// exactly where their difference fits (uint8 is widened to int64 first, so 1 and 2 differ by 1),
// bool ones as float32, as PyTorch's.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);

// Whether isclose holds for every element (true for empty tensors), as torch.allclose. On CUDA
// it waits for the device once, to read the answer.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);

// Whether a and b have the same sizes and the same values (of any dtypes, compared as
// a == b would: int64 1 equals float32 1.0), as torch.equal: no broadcasting (sizes [2] and
// [1, 2] are not equal), and NaN equals nothing, itself included. The two must be on one
// device; on CUDA it waits for the device once.
bool equal(const Tensor& a, const Tensor& b);

}  // namespace minidl
