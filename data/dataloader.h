#pragma once
// Batches of a dataset, in sampler order, built ahead by worker threads and delivered on the
// target device:
//
//   auto train = data::read_fashion_mnist(data::Split::Train);
//   data::DataLoader loader(train, data::DataLoaderOptions(128).shuffle(true).num_workers(2)
//                                      .device(Device(kCUDA)));
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     loader.set_epoch(epoch);
//     for (data::Batch& batch : loader) { ... batch.images, batch.labels ... }
//   }
//
// Epochs: each pass over the loader runs epoch epoch(), then advances it by one, so repeated
// passes reshuffle even without set_epoch(); set_epoch(e) says which epoch the next pass runs
// (for resuming, and to keep DistributedSampler ranks in step). The order, the random
// transforms and the augmentation of epoch e depend only on the seeds and e: the same batches
// come out for any number of workers.
//
// The pipeline (data/loader/batch_stage.h): workers (or the calling thread) read samples into
// pinned batches; for a CUDA target each batch is copied on the loader's copy stream and the
// current stream waits on an event (Note [Overlapping batch copies]); in device-resident mode
// batches are gathered on the device instead; then the optional augmentation runs where the
// batch is.
//
// Shutdown: leaving a loop early, an exception unwinding it, or the end of the epoch stops and
// joins the workers (Note [DataLoader workers]); so does destroying the loader or starting
// another pass, after which the old iterator throws when used.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include "minidl/core/cuda/stream.h"
#include "minidl/data/batch.h"
#include "minidl/data/dataloader_options.h"
#include "minidl/data/datasets/dataset.h"
#include "minidl/data/samplers/sampler.h"

namespace minidl::data {

namespace loader {
class EpochRun;
struct ResidentDataset;
}  // namespace loader

class DataLoader {
 public:
  // Samples sequentially, or with a RandomSampler(dataset size, options.seed()) when
  // options.shuffle().
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  // Samples with `sampler` (a DistributedSampler, say); options.shuffle() must be false.
  DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
             DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator() = default;  // the end
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    Iterator& operator++();  // may throw a worker's error, or a timeout
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.run_ == b.run_; }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<loader::EpochRun> run) : run_(std::move(run)) {}
    std::shared_ptr<loader::EpochRun> run_;  // null at the end
  };

  // Starts a pass over epoch epoch() (stopping any pass still running) and advances epoch().
  Iterator begin();
  Iterator end() { return {}; }

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  // The next pass starts at batch `batch` of its epoch instead of batch 0, delivering the same
  // batches an uninterrupted pass would from there on (a run resumed mid-epoch). Applies to
  // that one pass.
  void set_start_batch(int64_t batch) { start_batch_ = batch; }
  // The epoch the next pass runs.
  int64_t epoch() const { return epoch_; }
  // Batches per epoch.
  int64_t num_batches() const;
  int64_t size() const { return num_batches(); }
  const DataLoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  const Sampler& sampler() const { return *sampler_; }

 private:
  void initialize();  // checks the options; uploads the dataset in device-resident mode

  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
  int64_t start_batch_ = 0;
  std::shared_ptr<const loader::ResidentDataset> resident_;  // device-resident mode
  std::optional<cuda::Stream> copy_stream_;                  // CUDA targets, created on first use
  std::weak_ptr<loader::EpochRun> active_run_;
};

}  // namespace minidl::data
