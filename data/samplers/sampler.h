#pragma once
// Samplers decide which sample indices an epoch visits, and in which order. The DataLoader
// asks for the whole epoch's order at its start and cuts it into batches. An order is a pure
// function of the sampler's settings and the epoch, so every rank and every resumed run sees
// the same one.
#include <cstdint>
#include <vector>

namespace minidl::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices of epoch `epoch`, in order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  // How many indices every epoch has.
  virtual int64_t size() const = 0;
};

}  // namespace minidl::data
