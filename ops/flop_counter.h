#pragma once
// Counts the floating-point operations of the convolutions and matrix products that run on
// this thread while a FlopCounter is alive, 2 per multiply-add, as tools/bench reports them:
//
//   FlopCounter counter;
//   model->forward(images);
//   int64_t forward_flops = counter.flops();
//
// Only conv2d, matmul, linear and scaled_dot_product_attention count (nearly all of a CNN's or a
// transformer's work); the backward
// passes are not counted (they do about twice the forward's work). Counters nest: an inner one
// counts into the outer one too.
#include <cstdint>

namespace minidl {

class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  int64_t flops() const { return flops_; }

 private:
  friend void count_flops(int64_t flops);
  int64_t flops_ = 0;
  FlopCounter* outer_;
};

// Called by the counted ops with the FLOPs of one call; costs a thread-local read otherwise.
void count_flops(int64_t flops);

}  // namespace minidl
