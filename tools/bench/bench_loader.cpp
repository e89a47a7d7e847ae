// DataLoader throughput, in images per second, over whole epochs:
//
//   cpu/fashion_mnist/workers:N         the real Fashion-MNIST training split (60,000 28x28
//                                       images, /usr/share/datasets/fashion-mnist or MINIDL_DATA)
//   cpu/cifar_crop_flip/workers:N       50,000 CIFAR-shaped synthetic images (3x32x32) with the
//                                       per-sample RandomCrop(32, padding 4) and
//                                       RandomHorizontalFlip on the workers
// for N = 0 (the calling thread), 1 and 2 workers; batches of 256, shuffled, pinned. Each
// iteration is one epoch; the loop only touches each batch.
//
// With a GPU (registered only when cuda::is_available()):
//   cuda/fashion_mnist/workers:2        host batches copied on the copy stream
//   cuda/cifar_crop_flip/workers:2      the same with the per-sample augmentation
//   cuda/cifar_augment/device_resident  the dataset on the device, crop, flip and normalise
//                                       there (each epoch ends with a device synchronisation)
//   cuda/lenet_epoch                    a LeNet training epoch on Fashion-MNIST (batch 256, SGD)
//                                       fed by the loader (2 workers, device normalisation);
//                                       counters: prestaged_epoch_ms, the same steps on one
//                                       batch already on the device, and gpu_wait_ms, the
//                                       difference per epoch: how long the GPU waited for data
//
//   bench_loader [Google Benchmark flags, e.g. --benchmark_filter=cpu/ --benchmark_min_time=2]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/data/data.h"
#include "minidl/models/lenet.h"
#include "minidl/ops/loss.h"
#include "minidl/optim/sgd.h"

namespace {

using namespace minidl;

constexpr int64_t kBatchSize = 256;
constexpr int64_t kCifarTrainImages = 50000;
constexpr uint64_t kSeed = 1;
// Fashion-MNIST's mean and std over the training pixels (scaled to [0, 1]).
constexpr float kFashionMnistMean = 0.2860f, kFashionMnistStd = 0.3530f;

std::shared_ptr<const data::Dataset> fashion_mnist() {
  static const std::shared_ptr<const data::Dataset> dataset =
      data::read_fashion_mnist(data::Split::Train);
  return dataset;
}

std::shared_ptr<const data::InMemoryDataset> cifar_shaped() {
  static const std::shared_ptr<const data::InMemoryDataset> dataset =
      data::make_synthetic_dataset(kCifarTrainImages, {3, 32, 32}, 10, kSeed);
  return dataset;
}

std::shared_ptr<const data::Dataset> cifar_crop_flip() {
  static const std::shared_ptr<const data::Dataset> dataset =
      std::make_shared<data::TransformDataset>(
          cifar_shaped(),
          std::make_shared<data::Compose>(std::vector<std::shared_ptr<const data::Transform>>{
              std::make_shared<data::RandomCrop>(32, 4, kSeed),
              std::make_shared<data::RandomHorizontalFlip>(0.5, kSeed)}));
  return dataset;
}

// One epoch per iteration; images/s over the whole run.
void run_epochs(benchmark::State& state, data::DataLoader& loader, bool synchronize_device) {
  int64_t images = 0;
  for (auto _ : state) {
    for (data::Batch& batch : loader) {
      benchmark::DoNotOptimize(batch.images.data_ptr());
      images += batch.size();
    }
    if (synchronize_device) cuda::synchronize();
  }
  state.counters["images_per_second"] =
      benchmark::Counter(static_cast<double>(images), benchmark::Counter::kIsRate);
}

void bench_loader(benchmark::State& state, std::shared_ptr<const data::Dataset> (*dataset)(),
                  data::DataLoaderOptions options) {
  data::DataLoader loader(dataset(), options);
  run_epochs(state, loader, options.device().is_cuda());
}

data::DataLoaderOptions cpu_options(int workers) {
  return data::DataLoaderOptions(kBatchSize).shuffle(true).seed(kSeed).num_workers(workers);
}

// ---- GPU: device-resident mode, and the GPU's wait for data in a LeNet epoch ----

void bench_device_resident(benchmark::State& state) {
  data::DataLoader loader(cifar_shaped(), data::DataLoaderOptions(kBatchSize)
                                              .shuffle(true)
                                              .seed(kSeed)
                                              .device(Device(kCUDA))
                                              .device_resident(true)
                                              .augment(data::AugmentOptions()
                                                           .random_crop(4)
                                                           .horizontal_flip()
                                                           .normalize({0.491f, 0.482f, 0.447f},
                                                                      {0.247f, 0.243f, 0.262f})
                                                           .seed(kSeed)));
  run_epochs(state, loader, /*synchronize_device=*/true);
}

struct LeNetStep {
  models::LeNet model;
  optim::SGD optimizer;
  LeNetStep() : model(models::LeNetOptions()), optimizer(init_model(), optim::SGDOptions(0.05)) {}
  std::vector<Tensor> init_model() {
    model->to(Device(kCUDA));
    return model->parameters();
  }
  // Queues one training step; reads nothing back.
  void run(const Tensor& images, const Tensor& labels) {
    optimizer.zero_grad();
    cross_entropy(model->forward(images), labels).backward();
    optimizer.step();
  }
};

data::AugmentOptions fashion_mnist_normalization() {
  return data::AugmentOptions().normalize({kFashionMnistMean}, {kFashionMnistStd});
}

// A LeNet training epoch fed by the loader (the benchmark's time), against the same number of
// steps on one batch already on the device (measured once, before): the difference is how long
// the GPU waited for data in an epoch.
void bench_lenet_epoch(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  LeNetStep step;
  data::DataLoader loader(
      fashion_mnist(), cpu_options(2).device(Device(kCUDA)).augment(fashion_mnist_normalization()));
  const data::Batch staged = *loader.begin();
  const int64_t steps = loader.num_batches();
  const auto time_prestaged_epoch = [&] {
    const auto start = Clock::now();
    for (int64_t s = 0; s < steps; ++s) step.run(staged.images, staged.labels);
    cuda::synchronize();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  time_prestaged_epoch();  // warm-up: cuDNN algorithm choice, allocator
  const double prestaged_seconds = time_prestaged_epoch();

  int64_t images = 0;
  double loader_seconds = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    for (data::Batch& batch : loader) {
      step.run(batch.images, batch.labels);
      images += batch.size();
    }
    cuda::synchronize();
    loader_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  const double epochs = static_cast<double>(state.iterations());
  state.counters["images_per_second"] =
      benchmark::Counter(static_cast<double>(images), benchmark::Counter::kIsRate);
  state.counters["prestaged_epoch_ms"] = 1e3 * prestaged_seconds;
  state.counters["gpu_wait_ms"] = 1e3 * (loader_seconds / epochs - prestaged_seconds);
}

bool fashion_mnist_is_installed() {
  return std::filesystem::is_directory(data::fashion_mnist_directory());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const bool have_fashion_mnist = fashion_mnist_is_installed();
  if (!have_fashion_mnist)
    std::fprintf(stderr, "bench_loader: %s not found, skipping the Fashion-MNIST modes\n",
                 data::fashion_mnist_directory().c_str());

  for (int workers : {0, 1, 2}) {
    const std::string suffix = "/workers:" + std::to_string(workers);
    if (have_fashion_mnist)
      benchmark::RegisterBenchmark(("cpu/fashion_mnist" + suffix).c_str(), bench_loader,
                                   fashion_mnist, cpu_options(workers))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    benchmark::RegisterBenchmark(("cpu/cifar_crop_flip" + suffix).c_str(), bench_loader,
                                 cifar_crop_flip, cpu_options(workers))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  if (cuda::is_available()) {
    const data::DataLoaderOptions to_gpu = cpu_options(2).device(Device(kCUDA));
    if (have_fashion_mnist)
      benchmark::RegisterBenchmark("cuda/fashion_mnist/workers:2", bench_loader, fashion_mnist,
                                   to_gpu)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    benchmark::RegisterBenchmark("cuda/cifar_crop_flip/workers:2", bench_loader, cifar_crop_flip,
                                 to_gpu)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("cuda/cifar_augment/device_resident", bench_device_resident)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (have_fashion_mnist)
      benchmark::RegisterBenchmark("cuda/lenet_epoch", bench_lenet_epoch)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
