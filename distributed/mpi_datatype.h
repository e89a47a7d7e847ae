#pragma once
// How minidl's tensors travel through MPI: the MPI datatype of each dtype, the MPI operation of
// each reduction, and the element count MPI can take. MPI has no 16-bit float types, so f16 and
// bf16 are moved as bits and reduced in f32.
#include <mpi.h>

#include "minidl/core/tensor.h"
#include "minidl/distributed/process_group.h"

namespace minidl::distributed::detail {

MPI_Datatype mpi_datatype(DType dtype);

// Average is a sum, divided afterwards.
MPI_Op mpi_op(ReduceOp op);

// f16 and bf16: a reduction converts them to f32 and back.
bool reduces_in_float32(DType dtype);

// MPI counts are int: throws, naming `op`, for a tensor of more than INT_MAX elements.
void check_mpi_count(const Tensor& tensor, const char* op);

}  // namespace minidl::distributed::detail
