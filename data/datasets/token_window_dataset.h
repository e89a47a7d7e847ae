#pragma once
// Windows of a token sequence as a dataset, for a GPT: sample i is block_size + 1 consecutive
// tokens, whose first block_size are the inputs x and whose last block_size (shifted by one)
// are the targets y, as nanoGPT's get_batch cuts them.
//
//   auto train = std::make_shared<data::TokenWindowDataset>(
//       data::read_token_file(dir / "train.bin", 256), data::TokenWindowOptions(256).seed(1337));
//   data::DataLoader loader(train, data::DataLoaderOptions(64).num_workers(2).device(device));
//   for (data::Batch& batch : loader) {
//     data::TokenWindowBatch xy = data::split_token_windows(batch.images);  // int64 [64, 256] each
//   }
//
// Note [Token windows as images]
//   The Dataset interface is image-and-label shaped: an ImageSpec [C, H, W] and an int64
//   label. A window fits it as an int64 "image" [1, 1, block_size + 1] with label 0, so the
//   DataLoader, its workers, prefetching, pinned batches, device copies and every sampler
//   (DistributedSampler's shards included) serve token windows unchanged; the batch's images
//   are [B, 1, 1, block_size + 1], which split_token_windows cuts into x and y. Generalising
//   the spec to any sample shape would touch every stage of the loader for no gain here. The
//   tokens are widened to int64 when read because that is what the embedding and
//   cross_entropy's targets take (8 bytes a token: 128 KiB for a batch of 64 x 257).
//
// Placement of the windows:
//   - Random (training): the window of sample i in epoch e starts at a position drawn from
//     (seed, e, i) alone (data/sample_random.h, Note [Randomness of samples]), uniform over
//     [0, tokens - block_size), as nanoGPT's torch.randint: the same windows for a seed at any
//     worker count, on any rank, in any batch. An epoch is epoch_size windows (default
//     tokens / block_size, about one pass over the tokens).
//   - Consecutive (evaluation): sample i starts at i * block_size, so the windows' targets
//     cover tokens 1 .. size() * block_size of the sequence once each, in order, the same every
//     epoch; the last (tokens - 1) % block_size tokens, too few for a whole window, are left out.
#include <cstdint>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/data/datasets/dataset.h"

namespace minidl::data {

enum class WindowPlacement { Random, Consecutive };

class TokenWindowOptions {
 public:
  explicit TokenWindowOptions(int64_t block_size) : block_size_(block_size) {}

  MINIDL_ARG(int64_t, block_size);  // T: the tokens of x (and of y) in one sample, >= 1
  MINIDL_ARG(WindowPlacement, placement) = WindowPlacement::Random;
  MINIDL_ARG(uint64_t, seed) = 0;  // Random placement: where the windows fall
  // Random placement: windows per epoch; 0 (the default) means tokens / block_size. Must stay 0
  // for Consecutive placement, whose size the tokens decide.
  MINIDL_ARG(int64_t, epoch_size) = 0;
};

class TokenWindowDataset final : public Dataset {
 public:
  // Checks the options against the tokens: block_size >= 1, at least block_size + 1 tokens,
  // epoch_size >= 0 (and 0 for Consecutive placement).
  TokenWindowDataset(std::vector<uint16_t> tokens, TokenWindowOptions options);

  int64_t size() const override { return size_; }
  // int64 [1, 1, block_size + 1] (Note [Token windows as images]).
  ImageSpec image_spec() const override;
  // Writes the window of sample `index` as int64 tokens; the label is 0.
  int64_t read(int64_t index, int64_t epoch, void* image) const override;
  bool varies_with_epoch() const override {
    return options_.placement() == WindowPlacement::Random;
  }

  // The position in tokens() of the first token of sample `index`'s window in `epoch`.
  int64_t window_start(int64_t index, int64_t epoch) const;
  const std::vector<uint16_t>& tokens() const { return tokens_; }
  const TokenWindowOptions& options() const { return options_; }

 private:
  std::vector<uint16_t> tokens_;
  TokenWindowOptions options_;
  int64_t size_ = 0;
};

// A batch of windows cut into what a GPT's step takes.
struct TokenWindowBatch {
  Tensor inputs;   // x: int64 [B, T], tokens 0 .. T-1 of each window
  Tensor targets;  // y: int64 [B, T], tokens 1 .. T of each window (x shifted by one)
};

// Cuts `windows` (a batch's images from a TokenWindowDataset: int64 [B, 1, 1, T + 1], on any
// device) into contiguous x and y on the same device.
TokenWindowBatch split_token_windows(const Tensor& windows);

}  // namespace minidl::data
