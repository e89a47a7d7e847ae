#pragma once
// out[j] = source[rows[j]] along the first dimension, on the CPU or a CUDA device: how the
// DataLoader's device-resident mode picks a batch out of the uploaded dataset. Rows are moved
// as bytes, so any dtype works. data/ depends on core only, so this small gather lives here
// rather than using ops' index_select (which also carries autograd and device-side checks).
//
// `rows` is int64 [B] on source's device, every value in [0, source.size(0)): the caller
// checks them on the host (the loader does, once per epoch), because a device cannot report a
// bad index without a synchronisation. On CUDA the work is queued on the current stream.
#include "minidl/core/tensor.h"

namespace minidl::data {

Tensor gather_rows(const Tensor& source, const Tensor& rows);

}  // namespace minidl::data
