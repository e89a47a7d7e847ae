#pragma once
// Random tensors from the global Philox-4x32-10 generator: element i of a call draws from
// counter (offset + i) under the seed, so the same seed gives the same values on CPU and CUDA.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

void manual_seed(uint64_t seed);

Tensor rand(const Shape& sizes, TensorOptions options = {});   // uniform [0, 1)
Tensor randn(const Shape& sizes, TensorOptions options = {});  // standard normal
// In place: uniform in [low, high) and normal(mean, std), for nn::init.
Tensor& uniform_(Tensor& t, double low = 0, double high = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
// normal(mean, std) of the given shape, as torch.normal(mean, std, size).
Tensor normal(double mean, double std, const Shape& sizes, TensorOptions options = {});
// rand and randn of t's shape, dtype and device.
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
// Integers uniform on [low, high) (on [0, high) for the second form), int64 unless options
// say otherwise, as torch.randint.
Tensor randint(int64_t low, int64_t high, const Shape& sizes, TensorOptions options = kInt64);
Tensor randint(int64_t high, const Shape& sizes, TensorOptions options = kInt64);
// 1 with probability p, else 0, element-wise, in p's (floating) dtype; p in [0, 1].
Tensor bernoulli(const Tensor& p);
// num_samples category indices (int64) per row of non-negative weights, drawn in proportion to
// them (they need not sum to 1), as torch.multinomial: probs [C] -> [num_samples],
// [N, C] -> [N, num_samples]. Without replacement a category is drawn at most once per row,
// and the draws come in the order drawn. Errors as PyTorch's: a negative, infinite or NaN
// weight, a row summing to 0, num_samples > C (or than a row's positive weights) without
// replacement. Not differentiable. The checks read four numbers back from the device (a
// synchronisation, as PyTorch's CUDA multinomial makes).
//   Tensor next_tokens = multinomial(softmax(logits / temperature, -1), 1);  // [batch, 1]
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);

}  // namespace minidl
