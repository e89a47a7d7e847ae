#pragma once
// minidl's data pipeline: datasets and their readers, per-sample transforms, batch
// augmentation on the CPU or a GPU, samplers, and the DataLoader. One folder per concern:
//
//   datasets/    the Dataset interface, in-memory and synthetic datasets
//   readers/     MNIST/Fashion-MNIST (IDX), CIFAR-10 and llm.c token files, gzip, the data root
//   text/        the byte tokenizer and text files to train/validation token files
//   transforms/  per-sample transforms, TransformDataset, and batch augmentation
//   samplers/    the epoch's order of sample indices
//   loader/      the DataLoader's internal stages (its public face is dataloader.h, here)
//   cpu/, cuda/  the kernels of batch augmentation and of the loader's device-side gather
//
// readers/ and transforms/ build on datasets/, text/ on readers/; the DataLoader on datasets/,
// samplers/ and transforms/, and nothing on it. sample_random.h, the randomness all of them
// draw from, stays here.
// Internals (loader/, cpu/, cuda/, the file-format parsers in readers/) are not included here.

// ---- datasets ----
#include "minidl/data/datasets/dataset.h"
#include "minidl/data/datasets/example.h"
#include "minidl/data/datasets/image_spec.h"
#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/data/datasets/token_window_dataset.h"

// ---- readers ----
#include "minidl/data/readers/cifar10.h"
#include "minidl/data/readers/data_root.h"
#include "minidl/data/readers/mnist.h"
#include "minidl/data/readers/split.h"
#include "minidl/data/readers/token_file.h"

// ---- text ----
#include "minidl/data/text/byte_tokenizer.h"
#include "minidl/data/text/text_token_files.h"

// ---- transforms ----
#include "minidl/data/transforms/batch_augment.h"
#include "minidl/data/transforms/compose.h"
#include "minidl/data/transforms/normalize.h"
#include "minidl/data/transforms/random_crop.h"
#include "minidl/data/transforms/random_horizontal_flip.h"
#include "minidl/data/transforms/to_float.h"
#include "minidl/data/transforms/transform.h"
#include "minidl/data/transforms/transform_dataset.h"

// ---- samplers ----
#include "minidl/data/samplers/distributed_sampler.h"
#include "minidl/data/samplers/random_sampler.h"
#include "minidl/data/samplers/sampler.h"
#include "minidl/data/samplers/sequential_sampler.h"

// ---- loading ----
#include "minidl/data/batch.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/dataloader_options.h"
