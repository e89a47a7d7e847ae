#include "minidl/data/datasets/token_window_dataset.h"

#include <utility>

#include "minidl/core/error.h"
#include "minidl/data/sample_random.h"

namespace minidl::data {

TokenWindowDataset::TokenWindowDataset(std::vector<uint16_t> tokens, TokenWindowOptions options)
    : tokens_(std::move(tokens)), options_(options) {
  const int64_t block_size = options_.block_size();
  const auto token_count = static_cast<int64_t>(tokens_.size());
  MINIDL_CHECK(block_size >= 1, "TokenWindowDataset: block_size must be at least 1, got ",
               block_size);
  MINIDL_CHECK(token_count >= block_size + 1,
               "TokenWindowDataset: a window is block_size + 1 = ", block_size + 1,
               " tokens, but the sequence holds only ", token_count, "; expected at least ",
               block_size + 1, " tokens");
  MINIDL_CHECK(options_.epoch_size() >= 0,
               "TokenWindowDataset: epoch_size must be non-negative (0: tokens / block_size), "
               "got ",
               options_.epoch_size());
  if (options_.placement() == WindowPlacement::Consecutive) {
    MINIDL_CHECK(options_.epoch_size() == 0, "TokenWindowDataset: epoch_size is ",
                 options_.epoch_size(),
                 ", but consecutive windows number (tokens - 1) / block_size; expected "
                 "epoch_size 0 with WindowPlacement::Consecutive");
    size_ = (token_count - 1) / block_size;
  } else {
    size_ = options_.epoch_size() > 0 ? options_.epoch_size() : token_count / block_size;
  }
}

ImageSpec TokenWindowDataset::image_spec() const {
  return {1, 1, options_.block_size() + 1, kInt64};
}

int64_t TokenWindowDataset::window_start(int64_t index, int64_t epoch) const {
  MINIDL_CHECK(index >= 0 && index < size_, "TokenWindowDataset: sample index ", index,
               " is out of range, expected [0, ", size_, ")");
  const int64_t block_size = options_.block_size();
  if (options_.placement() == WindowPlacement::Consecutive) return index * block_size;
  // Starts in [0, tokens - block_size), so the window's last token, start + block_size, exists.
  const philox::Block words =
      sample_random_words(options_.seed(), static_cast<uint64_t>(index),
                          static_cast<uint64_t>(epoch), DrawPurpose::TokenWindow);
  const auto start_count = static_cast<uint64_t>(static_cast<int64_t>(tokens_.size()) - block_size);
  return static_cast<int64_t>(uniform_below_64(philox::join(words.w0, words.w1), start_count));
}

int64_t TokenWindowDataset::read(int64_t index, int64_t epoch, void* image) const {
  const auto start = static_cast<size_t>(window_start(index, epoch));
  auto* window = static_cast<int64_t*>(image);
  for (int64_t t = 0; t <= options_.block_size(); ++t)
    window[t] = tokens_[start + static_cast<size_t>(t)];
  return 0;
}

TokenWindowBatch split_token_windows(const Tensor& windows) {
  MINIDL_CHECK(windows.defined(), "split_token_windows: windows is undefined");
  MINIDL_CHECK(windows.dtype() == kInt64 && windows.dim() == 4 && windows.size(1) == 1 &&
                   windows.size(2) == 1 && windows.size(3) >= 2,
               "split_token_windows: expected int64 windows [B, 1, 1, T + 1] with T >= 1 (a "
               "TokenWindowDataset's batch images), got ",
               windows.dtype(), " ", windows.sizes());
  const int64_t block_size = windows.size(3) - 1;
  const Tensor rows = windows.reshape({windows.size(0), block_size + 1});
  return {rows.narrow(1, 0, block_size).contiguous(), rows.narrow(1, 1, block_size).contiguous()};
}

}  // namespace minidl::data
