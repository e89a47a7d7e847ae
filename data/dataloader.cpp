#include "minidl/data/dataloader.h"

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/data/loader/augment_stage.h"
#include "minidl/data/loader/device_copy_stage.h"
#include "minidl/data/loader/epoch_plan.h"
#include "minidl/data/loader/epoch_run.h"
#include "minidl/data/loader/inline_stage.h"
#include "minidl/data/loader/resident_stage.h"
#include "minidl/data/loader/worker_stage.h"
#include "minidl/data/samplers/random_sampler.h"
#include "minidl/data/samplers/sequential_sampler.h"

namespace minidl::data {

namespace {

std::shared_ptr<const Sampler> default_sampler(const Dataset& dataset,
                                               const DataLoaderOptions& options) {
  if (options.shuffle()) return std::make_shared<RandomSampler>(dataset.size(), options.seed());
  return std::make_shared<SequentialSampler>(dataset.size());
}

void check_options(const Dataset& dataset, const DataLoaderOptions& options) {
  MINIDL_CHECK(options.batch_size() >= 1, "DataLoader: batch_size must be at least 1, got ",
               options.batch_size());
  MINIDL_CHECK(options.num_workers() >= 0, "DataLoader: num_workers must be non-negative, got ",
               options.num_workers());
  MINIDL_CHECK(options.prefetch_depth() >= 0,
               "DataLoader: prefetch_depth must be non-negative (0 for the default), got ",
               options.prefetch_depth());
  MINIDL_CHECK(options.timeout().count() >= 0,
               "DataLoader: timeout must be non-negative (0 waits forever), got ",
               options.timeout().count(), " ms");
  if (options.device().is_cuda()) {
    MINIDL_CHECK(
        cuda::is_available(), "DataLoader: the target device is ", options.device(), ", but ",
        cuda::is_built() ? "no CUDA device is available" : "minidl was built without CUDA");
    MINIDL_CHECK(options.device().index < cuda::device_count(), "DataLoader: the target ",
                 "device is ", options.device(), ", but there are only ", cuda::device_count(),
                 " CUDA devices");
  }
  if (options.device_resident())
    MINIDL_CHECK(!dataset.varies_with_epoch(),
                 "DataLoader: device_resident uploads the dataset once, but this dataset's images "
                 "change with the epoch (random transforms); augment the batches with "
                 "DataLoaderOptions::augment instead");
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  MINIDL_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  sampler_ = default_sampler(*dataset_, options_);
  initialize();
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset,
                       std::shared_ptr<const Sampler> sampler, DataLoaderOptions options)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(std::move(options)) {
  MINIDL_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  MINIDL_CHECK(sampler_ != nullptr, "DataLoader: the sampler is null");
  MINIDL_CHECK(!options_.shuffle(), "DataLoader: shuffle(true) cannot be combined with an ",
               "explicit sampler; the sampler decides the order (use a RandomSampler, or a ",
               "DistributedSampler with shuffle)");
  initialize();
}

void DataLoader::initialize() {
  check_options(*dataset_, options_);
  if (options_.device_resident()) resident_ = loader::upload_dataset(*dataset_, options_.device());
}

DataLoader::~DataLoader() {
  if (std::shared_ptr<loader::EpochRun> run = active_run_.lock()) run->close();
}

int64_t DataLoader::num_batches() const {
  return loader::EpochPlan::count_batches(sampler_->size(), options_.batch_size(),
                                          options_.drop_last());
}

DataLoader::Iterator DataLoader::begin() {
  if (std::shared_ptr<loader::EpochRun> previous = active_run_.lock()) previous->close();
  auto plan = std::make_shared<const loader::EpochPlan>(epoch_, sampler_->indices(epoch_),
                                                        options_.batch_size(), options_.drop_last(),
                                                        dataset_->size(), start_batch_);
  ++epoch_;
  start_batch_ = 0;  // the next pass runs the next epoch, unless set_epoch says otherwise
  const Device device = options_.device();

  std::unique_ptr<loader::BatchStage> pipeline;
  if (resident_) {
    pipeline = std::make_unique<loader::ResidentStage>(resident_, plan, device);
  } else {
    if (options_.num_workers() == 0) {
      pipeline = std::make_unique<loader::InlineStage>(dataset_, plan, options_.pin_memory());
    } else {
      loader::WorkerStageOptions worker_options;
      worker_options.num_workers = options_.num_workers();
      worker_options.prefetch_depth = options_.effective_prefetch_depth();
      worker_options.pin_memory = options_.pin_memory();
      worker_options.timeout = options_.timeout();
      pipeline = std::make_unique<loader::WorkerStage>(dataset_, plan, worker_options);
    }
    if (device.is_cuda()) {
      if (!copy_stream_) copy_stream_ = cuda::Stream::create(device.index);
      pipeline =
          std::make_unique<loader::DeviceCopyStage>(std::move(pipeline), device, *copy_stream_);
    }
  }
  if (options_.augment() && options_.augment()->does_anything())
    pipeline = std::make_unique<loader::AugmentStage>(std::move(pipeline), *options_.augment());

  auto run = std::make_shared<loader::EpochRun>(std::move(pipeline));
  active_run_ = run;
  if (!run->advance()) return end();
  return Iterator(std::move(run));
}

Batch& DataLoader::Iterator::operator*() const {
  MINIDL_CHECK(run_ != nullptr, "DataLoader: dereferencing the end iterator");
  return run_->current();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  MINIDL_CHECK(run_ != nullptr, "DataLoader: incrementing the end iterator");
  if (!run_->advance()) run_.reset();
  return *this;
}

}  // namespace minidl::data
