#pragma once
// minidl's umbrella header: `#include <minidl.h>` gives a user program the whole public API.
// Inside minidl itself, include the specific headers ("core/tensor.h") instead.
//
// Kernel-level headers (ops/cpu/, ops/cuda/, core/cuda/check.h, core/parallel.h) are installed
// but not included here: they need the CUDA runtime or OpenMP headers, and are for code that
// writes kernels.

// ---- core ----
#include "core/autograd/engine.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/autograd/node.h"
#include "core/autograd/saved_tensor.h"
#include "core/cuda/caching_allocator.h"
#include "core/cuda/cuda.h"
#include "core/cuda/graph.h"
#include "core/cuda/stream.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "core/logging.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "core/tensor_options.h"

// ---- ops ----
#include "ops/broadcast.h"
#include "ops/conv.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/loss.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/shape.h"

// ---- nn ----
#include "nn/nn.h"

// ---- optim ----
#include "optim/amp.h"
#include "optim/optim.h"

// ---- data ----
#include "data/data.h"

// ---- models ----
#include "models/models.h"

// ---- distributed ----
#include "distributed/distributed.h"
