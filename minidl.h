#pragma once
// minidl's umbrella header: `#include <minidl/minidl.h>` gives a user program the whole public API.
// Inside minidl itself, include the specific headers ("minidl/core/tensor.h") instead.
//
// The public API is this header and what it includes: only those are installed
// (tools/cmake/public_headers.cmake). Kernel-level headers (ops/cpu/, ops/cuda/,
// core/cuda/check.h, core/thread_pool.h, data/loader/) are internal to minidl.

// ---- core ----
#include "minidl/core/autograd/custom_function.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/device.h"
#include "minidl/core/dtype.h"
#include "minidl/core/error.h"
#include "minidl/core/factories.h"
#include "minidl/core/from_blob.h"
#include "minidl/core/half.h"
#include "minidl/core/indexing.h"
#include "minidl/core/logging.h"
#include "minidl/core/parallel.h"
#include "minidl/core/profile.h"
#include "minidl/core/profiler.h"
#include "minidl/core/safetensors.h"
#include "minidl/core/storage.h"
#include "minidl/core/tensor.h"
#include "minidl/core/tensor_options.h"

// ---- ops ----
#include "minidl/ops/attention.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/closeness.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/conv1d.h"
#include "minidl/ops/conv_transpose.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/einsum.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/group_norm.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/interpolate.h"
#include "minidl/ops/layer_norm.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/onednn.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"

// ---- nn ----
#include "minidl/nn/nn.h"

// ---- optim ----
#include "minidl/optim/amp.h"
#include "minidl/optim/optim.h"

// ---- data ----
#include "minidl/data/data.h"

// ---- models ----
#include "minidl/models/models.h"

// ---- distributed ----
#include "minidl/distributed/distributed.h"

// ---- train ----
#include "minidl/train/train.h"
