#pragma once
// minidl's data pipeline: datasets and their readers, per-sample transforms, batch
// augmentation on the CPU or a GPU, samplers, and the DataLoader.
//
// Internals (data/loader/, data/cpu/, data/cuda/, the format parsers) are not included here.

// ---- datasets ----
#include "data/dataset.h"
#include "data/example.h"
#include "data/image_spec.h"
#include "data/in_memory_dataset.h"
#include "data/synthetic_dataset.h"
#include "data/transform_dataset.h"

// ---- readers ----
#include "data/cifar10.h"
#include "data/data_root.h"
#include "data/mnist.h"
#include "data/split.h"

// ---- transforms ----
#include "data/batch_augment.h"
#include "data/compose.h"
#include "data/normalize.h"
#include "data/random_crop.h"
#include "data/random_horizontal_flip.h"
#include "data/to_float.h"
#include "data/transform.h"

// ---- samplers ----
#include "data/distributed_sampler.h"
#include "data/random_sampler.h"
#include "data/sampler.h"
#include "data/sequential_sampler.h"

// ---- loading ----
#include "data/batch.h"
#include "data/dataloader.h"
#include "data/dataloader_options.h"
