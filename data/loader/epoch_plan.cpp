#include "minidl/data/loader/epoch_plan.h"

#include <algorithm>

#include "minidl/core/error.h"

namespace minidl::data::loader {

int64_t EpochPlan::count_batches(int64_t order_size, int64_t batch_size, bool drop_last) {
  return drop_last ? order_size / batch_size : (order_size + batch_size - 1) / batch_size;
}

EpochPlan::EpochPlan(int64_t epoch, std::vector<int64_t> order, int64_t batch_size, bool drop_last,
                     int64_t dataset_size, int64_t first_batch)
    : epoch_(epoch), order_(std::move(order)), batch_size_(batch_size), first_batch_(first_batch) {
  for (size_t position = 0; position < order_.size(); ++position)
    MINIDL_CHECK(order_[position] >= 0 && order_[position] < dataset_size,
                 "DataLoader: the sampler gave index ", order_[position], " at position ", position,
                 " of epoch ", epoch, ", but the dataset has ", dataset_size, " samples");
  num_batches_ = count_batches(static_cast<int64_t>(order_.size()), batch_size, drop_last);
  MINIDL_CHECK(first_batch >= 0 && first_batch <= num_batches_, "DataLoader: start batch ",
               first_batch, " is outside epoch ", epoch, ", which has ", num_batches_, " batches");
}

std::span<const int64_t> EpochPlan::batch(int64_t k) const {
  const int64_t begin = k * batch_size_;
  const int64_t end = std::min<int64_t>(begin + batch_size_, static_cast<int64_t>(order_.size()));
  return std::span<const int64_t>(order_).subspan(static_cast<size_t>(begin),
                                                  static_cast<size_t>(end - begin));
}

}  // namespace minidl::data::loader
