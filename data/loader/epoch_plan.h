#pragma once
// One epoch's order of sample indices (from the sampler), cut into batches.
#include <cstdint>
#include <span>
#include <vector>

namespace minidl::data::loader {

class EpochPlan {
 public:
  // Checks every index against `dataset_size`, so a bad sampler fails before any work starts.
  // The pass delivers batches first_batch, first_batch + 1, ... (a resumed run starts
  // mid-epoch); first_batch may equal num_batches(), which delivers nothing.
  EpochPlan(int64_t epoch, std::vector<int64_t> order, int64_t batch_size, bool drop_last,
            int64_t dataset_size, int64_t first_batch = 0);

  int64_t epoch() const { return epoch_; }
  int64_t num_batches() const { return num_batches_; }
  int64_t first_batch() const { return first_batch_; }
  int64_t batch_size() const { return batch_size_; }
  // The sample indices of batch k (the last may be short unless drop_last).
  std::span<const int64_t> batch(int64_t k) const;
  // Position in the order of batch k's first sample.
  int64_t batch_start(int64_t k) const { return k * batch_size_; }
  const std::vector<int64_t>& order() const { return order_; }

  // Batches an epoch of `order_size` indices gives.
  static int64_t count_batches(int64_t order_size, int64_t batch_size, bool drop_last);

 private:
  int64_t epoch_;
  std::vector<int64_t> order_;
  int64_t batch_size_;
  int64_t num_batches_;
  int64_t first_batch_;
};

}  // namespace minidl::data::loader
