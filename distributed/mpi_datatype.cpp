#include "minidl/distributed/mpi_datatype.h"

#include <climits>

#include "minidl/core/error.h"

namespace minidl::distributed::detail {

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kFloat16:
    case kBFloat16: return MPI_UINT16_T;  // moved as bits; reductions go through f32
    case kInt32: return MPI_INT32_T;
    case kInt64: return MPI_INT64_T;
    case kUInt8: return MPI_UINT8_T;
    default: break;
  }
  MINIDL_INTERNAL_ASSERT(false, "no MPI datatype for ", dtype);
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Max ? MPI_MAX : MPI_SUM; }

bool reduces_in_float32(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

void check_mpi_count(const Tensor& tensor, const char* op) {
  MINIDL_CHECK(tensor.numel() <= INT_MAX, op, ": MPI counts are int, so at most ", INT_MAX,
               " elements per collective, got ", tensor.numel());
}

}  // namespace minidl::distributed::detail
