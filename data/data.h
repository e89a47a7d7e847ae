#pragma once
// minidl's data pipeline: datasets and their readers, per-sample transforms, batch
// augmentation on the CPU or a GPU, samplers, and the DataLoader.
//
// Internals (data/loader/, data/cpu/, data/cuda/, the format parsers) are not included here.

// ---- datasets ----
#include "minidl/data/dataset.h"
#include "minidl/data/example.h"
#include "minidl/data/image_spec.h"
#include "minidl/data/in_memory_dataset.h"
#include "minidl/data/synthetic_dataset.h"
#include "minidl/data/transform_dataset.h"

// ---- readers ----
#include "minidl/data/cifar10.h"
#include "minidl/data/data_root.h"
#include "minidl/data/mnist.h"
#include "minidl/data/split.h"

// ---- transforms ----
#include "minidl/data/batch_augment.h"
#include "minidl/data/compose.h"
#include "minidl/data/normalize.h"
#include "minidl/data/random_crop.h"
#include "minidl/data/random_horizontal_flip.h"
#include "minidl/data/to_float.h"
#include "minidl/data/transform.h"

// ---- samplers ----
#include "minidl/data/distributed_sampler.h"
#include "minidl/data/random_sampler.h"
#include "minidl/data/sampler.h"
#include "minidl/data/sequential_sampler.h"

// ---- loading ----
#include "minidl/data/batch.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/dataloader_options.h"
