#pragma once
// The kernel interface of ops/random.h, implemented by ops/cpu/random.cpp and
// ops/cuda/random.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// `out` is contiguous (floating point for uniform and normal); element i draws from counter
// start.offset + i (Note [Philox counters in minidl], core/philox.h), so both backends give the
// same values for the same generator state. CUDA kernels run on the current stream.
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl {

struct RandomKernels {
  void (*uniform)(const Tensor& out, double low, double high, GeneratorState start);
  void (*normal)(const Tensor& out, double mean, double std, GeneratorState start);
  // multinomial (Note [Multinomial draws] in ops/random_math.h). `weights` [rows, categories]
  // is contiguous, floating, non-negative, every row with a positive sum.
  // With replacement (samples > 1): out int64 [rows, samples], sample s of row r from counter
  // start.offset + r * samples + s.
  void (*multinomial_with_replacement)(const Tensor& out, const Tensor& weights,
                                       GeneratorState start);
  // Without replacement, or one sample: keys float32 [rows, categories], the exponential-race
  // key of category c of row r from counter start.offset + r * categories + c; the op takes
  // the smallest keys with topk (min for one sample).
  void (*exponential_race_keys)(const Tensor& keys, const Tensor& weights, GeneratorState start);
  // randint: out int64 (numel), element i uniform on [low, low + range) from counter
  // start.offset + i; range >= 1.
  void (*random_integers)(const Tensor& out, int64_t low, uint64_t range, GeneratorState start);
  // bernoulli: out (probabilities' floating dtype, numel) element i is 1 when the uniform of
  // counter start.offset + i is below probabilities[i], else 0. Both contiguous.
  void (*bernoulli)(const Tensor& out, const Tensor& probabilities, GeneratorState start);

  static const RandomKernels kCpu;
  static const RandomKernels kCuda;
};

}  // namespace minidl
