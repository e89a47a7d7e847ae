#include "minidl/distributed/process_group.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "minidl/core/error.h"

namespace minidl::distributed {

namespace {
constexpr double kDefaultTimeoutSeconds = 300.0;  // long enough for a slow checkpoint write
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Average: return "average";
    case ReduceOp::Max: return "max";
  }
  return "unknown";
}

std::chrono::milliseconds default_collective_timeout() {
  double seconds = kDefaultTimeoutSeconds;
  if (const char* env = std::getenv("MINIDL_COLLECTIVE_TIMEOUT_S"); env != nullptr && *env) {
    char* end = nullptr;
    seconds = std::strtod(env, &end);
    MINIDL_CHECK(end != env && *end == '\0' && std::isfinite(seconds) && seconds > 0,
                 "MINIDL_COLLECTIVE_TIMEOUT_S: expected a positive number of seconds, got \"", env,
                 "\"");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
}

void CompletedWork::wait() {
  if (!error_.empty()) throw Error(error_);  // already says where it failed
}

namespace detail {

void check_collective_tensor(const Tensor& tensor, const char* op) {
  MINIDL_CHECK(tensor.defined(), op, ": expected a defined tensor, got an undefined one");
  MINIDL_CHECK(tensor.is_contiguous(), op, ": expected a contiguous tensor, got one of shape ",
               tensor.sizes(), " with strides ", tensor.strides());
  const DType dtype = tensor.dtype();
  MINIDL_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kFloat16 || dtype == kBFloat16 ||
                   dtype == kInt32 || dtype == kInt64 || dtype == kUInt8,
               op, ": supports f32, f64, f16, bf16, i32, i64 and u8 tensors, got ", dtype);
}

void check_reduce_op(ReduceOp reduce_op, DType dtype, const char* op) {
  MINIDL_CHECK(reduce_op != ReduceOp::Average || is_floating_point(dtype), op,
               ": average needs a floating-point tensor, got ", dtype,
               "; use sum and divide instead");
}

void check_root(int root, int world_size, const char* op) {
  MINIDL_CHECK(root >= 0 && root < world_size, op, ": expected a root rank in [0, ", world_size,
               "), got ", root);
}

void check_gather_sizes(const Tensor& large, const Tensor& small, int world_size, const char* op,
                        const char* large_name, const char* small_name) {
  check_collective_tensor(large, op);
  check_collective_tensor(small, op);
  MINIDL_CHECK(large.dtype() == small.dtype() && large.device() == small.device(), op, ": ",
               large_name, " and ", small_name, " must have the same dtype and device, got ",
               large.dtype(), " on ", large.device(), " and ", small.dtype(), " on ",
               small.device());
  MINIDL_CHECK(large.numel() == small.numel() * world_size, op, ": expected ", large_name,
               " to have world size (", world_size, ") x ", small.numel(), " = ",
               small.numel() * world_size, " elements, got ", large.numel());
}

}  // namespace detail

}  // namespace minidl::distributed
