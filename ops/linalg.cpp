// Matrix products: matmul and linear with their backward, and the TF32 switch.
//
// Every product ends in one gemm() over 3-D views [batch, rows, cols]: a 2-D operand is a
// batch of one with batch stride 0, which is also how a matrix is broadcast over a batch.
// Operands reach BLAS without a copy when each matrix has unit stride along its rows or its
// columns (so transposed views are passed as BLAS transposes); anything else is copied first.
// On the CPU, float16 and bfloat16 products are summed into float32 and rounded once at the end
// (ops/linalg_kernels.h).
#include "minidl/ops/linalg.h"

#include <algorithm>
#include <atomic>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/flop_counter.h"
#include "minidl/ops/linalg_kernels.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

std::atomic<bool> allow_tf32_flag{false};

bool is_16bit_float(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

// The 2-D or 3-D `t` as a 3-D view [batch, rows, cols]; a 2-D tensor, or a batch of one, gets
// batch stride 0 so that it can stand for every matrix of a larger batch.
Tensor as_batch(const Tensor& t, int64_t batch) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t batch_stride = t.dim() == 3 && t.size(0) != 1 ? t.stride(0) : 0;
  return make_view(t, {batch, rows, cols}, {batch_stride, t.stride(-2), t.stride(-1)},
                   t.storage_offset());
}

// A view of `matrices` ([batch, rows, cols], non-empty) whose every matrix BLAS can read in
// place: unit stride along the columns with row stride >= max(1, cols) (row-major), or unit
// stride along the rows with column stride >= max(1, rows) (a transposed row-major matrix).
// Strides of size-1 dimensions never move, so they are rewritten to fit; any other layout
// (a step inside a matrix, an expanded row or column) is copied.
Tensor blas_compatible(const Tensor& matrices) {
  const int64_t rows = matrices.size(1), cols = matrices.size(2);
  const int64_t batch_stride = matrices.size(0) == 1 ? 0 : matrices.stride(0);
  auto with_matrix_strides = [&](int64_t row_stride, int64_t col_stride) {
    return make_view(matrices, matrices.sizes(), {batch_stride, row_stride, col_stride},
                     matrices.storage_offset());
  };
  const int64_t row_major_row_stride = rows == 1 ? cols : matrices.stride(1);
  const int64_t row_major_col_stride = cols == 1 ? 1 : matrices.stride(2);
  if (row_major_col_stride == 1 && row_major_row_stride >= cols)
    return with_matrix_strides(row_major_row_stride, 1);
  const int64_t col_major_row_stride = rows == 1 ? 1 : matrices.stride(1);
  const int64_t col_major_col_stride = cols == 1 ? rows : matrices.stride(2);
  if (col_major_row_stride == 1 && col_major_col_stride >= rows)
    return with_matrix_strides(1, col_major_col_stride);
  if (batch_stride == 0) {  // one matrix standing for the batch: copy it once
    Tensor matrix = matrices.select(0, 0).contiguous();
    return make_view(matrix, matrices.sizes(), {0, cols, 1}, matrix.storage_offset());
  }
  return matrices.contiguous();
}

// c = a @ b + beta * c on 3-D views (the contract of LinalgKernels::gemm), on c's device.
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  const ProfileScope profile("gemm", {a, b, c});
  const Tensor a_ready = blas_compatible(a), b_ready = blas_compatible(b);
  kernels_for<LinalgKernels>(c.device()).gemm(a_ready, b_ready, c, beta);
}

// The options of the sums a GEMM accumulates onto (beta 1): a's, but float32 for 16-bit operands
// on the CPU (ops/linalg_kernels.h); the result is rounded to a's dtype once, at the end. With
// beta 0 every backend takes a result of a's dtype and rounds the sums into it itself.
TensorOptions sums_options(const Tensor& a) {
  return a.is_cpu() && is_16bit_float(a.dtype()) ? a.options().dtype(kFloat32) : a.options();
}

// True when the rows of every matrix of the 3-D `a` are evenly spaced across the whole batch,
// so [batch, n, k] can be read as one [batch * n, k] matrix.
bool rows_fold_over_batch(const Tensor& a) {
  return a.dim() == 3 && a.stride(0) == a.size(1) * a.stride(1);
}

// The product of validated 2-D or 3-D operands, without autograd: [n, m] when both are 2-D,
// else [batch, n, m] (a 2-D operand or a batch of one is broadcast over the other's batch).
Tensor product(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  const bool batched = a.dim() == 3 || b.dim() == 3;
  const int64_t a_batch = a.dim() == 3 ? a.size(0) : 1, b_batch = b.dim() == 3 ? b.size(0) : 1;
  const int64_t batch = std::max(a_batch, b_batch);
  const TensorOptions options = a.options();
  Tensor out = batched ? empty({batch, n, m}, options) : empty({n, m}, options);
  if (out.numel() > 0 && k == 0) {
    out.zero_();
  } else if (out.numel() > 0 && b_batch == 1 && batch > 1 && rows_fold_over_batch(a)) {
    // One GEMM for a batch times a shared matrix: [batch * n, k] @ [k, m].
    const Tensor a_rows =
        make_view(a, {1, batch * n, k}, {0, a.stride(1), a.stride(2)}, a.storage_offset());
    gemm(a_rows, as_batch(b, 1), out.view({1, batch * n, m}), 0);
  } else if (out.numel() > 0) {
    gemm(as_batch(a, batch), as_batch(b, batch), out.view({batch, n, m}), 0);
  }
  return out;
}

// The transpose of the last two dimensions (a view; BLAS reads it without a copy).
Tensor transpose_matrices(const Tensor& t) { return t.transpose(-2, -1); }

// The backward of product(a, b) for gradient `grad` of the product's shape. Each takes the
// other operand and only the shape of its own.
Tensor product_grad_a(const Tensor& grad, const Shape& a_sizes, const Tensor& b) {
  const Tensor grad_a = product(grad, transpose_matrices(b));
  if (grad_a.sizes() == a_sizes) return grad_a;
  // a was broadcast over the batch: its gradient sums the batch.
  return sum(grad_a, {0}).reshape(a_sizes);
}

// The same gradients as recorded matmuls, for a backward pass with create_graph: differentiable
// again. `grad_operand` is the product's gradient times the other operand; an operand that was
// broadcast over the batch (2-D, or a batch of one) sums it over the batch.
Tensor summed_to_operand(const Tensor& grad_operand, const Shape& sizes) {
  if (grad_operand.sizes() == sizes) return grad_operand;
  return sum(grad_operand, {0}).reshape(sizes);
}

Tensor product_grad_b(const Tensor& grad, const Tensor& a, const Shape& b_sizes) {
  const bool b_broadcast =
      grad.dim() == 3 && grad.size(0) > 1 && (b_sizes.size() == 2 || b_sizes[0] == 1);
  if (!b_broadcast) return product(transpose_matrices(a), grad);
  // b was shared by the batch: sum_i a[i]^T grad[i] is one GEMM over the stacked rows,
  // [batch * n, k]^T @ [batch * n, m].
  const Tensor a_rows = a.reshape({-1, a.size(-1)}), grad_rows = grad.reshape({-1, grad.size(-1)});
  return product(a_rows.t(), grad_rows).reshape(b_sizes);
}

// PyTorch's matrix products do not promote: mixed dtypes are an error naming the op (as torch.mm's
// "expected m1 and m2 to have the same dtype").
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  MINIDL_CHECK(a.dtype() == b.dtype(), op, ": expected operands of the same dtype, got ", a.dtype(),
               " and ", b.dtype(), " (shapes ", a.sizes(), " and ", b.sizes(),
               "); matrix products do not promote, convert one with to()");
}

void check_matmul_operands(const Tensor& a, const Tensor& b) {
  check_defined(a, "matmul", "input");
  check_defined(b, "matmul", "other");
  MINIDL_CHECK(a.dim() >= 1 && b.dim() >= 1,
               "matmul: expected operands with at least 1 dimension, got shapes ", a.sizes(),
               " and ", b.sizes());
  check_same_dtype(a, b, "matmul");
  MINIDL_CHECK(a.device() == b.device(), "matmul: expected operands on the same device, got ",
               a.device(), " and ", b.device(), " (shapes ", a.sizes(), " and ", b.sizes(), ")");
  MINIDL_CHECK(a.is_floating_point(), "matmul: expected floating-point operands (float32, ",
               "float64, float16 or bfloat16), got ", a.dtype(), " (shapes ", a.sizes(), " and ",
               b.sizes(), ")");
  const int64_t a_inner = a.size(-1), b_inner = b.dim() == 1 ? b.size(0) : b.size(-2);
  MINIDL_CHECK(a_inner == b_inner, "matmul: shapes ", a.sizes(), " and ", b.sizes(),
               " cannot be multiplied (", a_inner, " != ", b_inner, ")");
  // The batch dimensions (all but the last two) broadcast, aligned from the right.
  for (int64_t i = 3; i <= std::min(a.dim(), b.dim()); ++i)
    MINIDL_CHECK(a.size(-i) == b.size(-i) || a.size(-i) == 1 || b.size(-i) == 1,
                 "matmul: batch sizes ", a.size(-i), " and ", b.size(-i), " of shapes ", a.sizes(),
                 " and ", b.sizes(), " cannot be broadcast");
}

// matmul of operands with more than 3 dimensions, as torch.matmul: their batch dimensions
// broadcast, and the product runs on both folded to 3-D [batch, rows, cols]. The folding is
// views where the strides allow (reshape copies otherwise), and autograd flows through them.
Tensor matmul_folded(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  auto batch_of = [](const Tensor& t) {
    return t.dim() <= 2 ? Shape{} : Shape(t.sizes().begin(), t.sizes().end() - 2);
  };
  const Shape batch = broadcast_shapes(batch_of(a), batch_of(b), "matmul");
  const int64_t count = shape_numel(batch);
  Shape out_sizes = batch;
  out_sizes.insert(out_sizes.end(), {n, m});
  // A shared matrix stays 2-D, so that the product keeps its one-GEMM paths.
  auto folded = [&](const Tensor& t, int64_t rows, int64_t cols) {
    if (t.dim() == 2) return t;
    Shape full = batch;
    full.insert(full.end(), {rows, cols});
    return t.expand(full).reshape({count, rows, cols});
  };
  return matmul(folded(a, n, k), folded(b, k, m)).reshape(out_sizes);
}

void check_linear_operands(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined(x, "linear", "input");
  check_defined(weight, "linear", "weight");
  MINIDL_CHECK(weight.dim() == 2, "linear: expected a 2-D weight [out_features, in_features], ",
               "got shape ", weight.sizes());
  MINIDL_CHECK(x.dim() >= 1, "linear: expected an input [..., in_features], got a 0-d tensor");
  MINIDL_CHECK(x.size(-1) == weight.size(1), "linear: input of shape ", x.sizes(),
               " and weight of shape ", weight.sizes(), " are incompatible (in_features ",
               x.size(-1), " != ", weight.size(1), ")");
  MINIDL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
               "linear: expected a bias of shape [", weight.size(0), "] for weight of shape ",
               weight.sizes(), ", got shape ", bias.sizes());
  for (const Tensor* t : {&weight, &bias}) {
    if (!t->defined()) continue;
    MINIDL_CHECK(t->dtype() == x.dtype() && t->device() == x.device(),
                 "linear: expected input, weight and bias of one dtype and device, got input ",
                 x.dtype(), " on ", x.device(), " and ", t == &weight ? "weight " : "bias ",
                 t->dtype(), " on ", t->device());
  }
  MINIDL_CHECK(x.is_floating_point(), "linear: expected floating-point tensors (float32, ",
               "float64, float16 or bfloat16), got ", x.dtype());
}

// x2 [rows, in] @ weight^T + bias -> [rows, out] without autograd, in one GEMM: the bias is
// broadcast into the output first and the GEMM accumulates onto it (beta = 1).
Tensor linear_rows(const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  const int64_t rows = x2.size(0), in_features = x2.size(1), out_features = weight.size(0);
  Tensor out = empty({rows, out_features}, bias.defined() ? sums_options(x2) : x2.options());
  if (bias.defined()) out.copy_(bias);
  if (out.numel() > 0 && in_features == 0 && !bias.defined()) out.zero_();
  if (out.numel() > 0 && in_features > 0)
    gemm(as_batch(x2, 1), as_batch(weight.t(), 1), out.view({1, rows, out_features}),
         bias.defined() ? 1 : 0);
  return out.to(x2.dtype());
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (amp::AutocastCall cast{amp::AutocastOp::Matmul, {a, b}}) return matmul(cast[0], cast[1]);
  const ProfileScope profile("matmul", {a, b});  // the 1-D and folded cases call it again: one span
  check_matmul_operands(a, b);
  // Vectors as torch.matmul: a 1-D first operand is a row, a 1-D second operand a column, and
  // that dimension is removed from the result (the views carry the gradient).
  if (a.dim() == 1 && b.dim() == 1) return matmul(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  if (a.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (b.dim() == 1) return matmul(a, b.unsqueeze(1)).squeeze(-1);
  if (a.dim() > 3 || b.dim() > 3) return matmul_folded(a, b);

  Tensor out;
  {
    NoGradGuard no_grad;
    out = product(a, b);
  }
  count_flops(2 * out.numel() * a.size(-1));
  if (autograd::needs_grad({a, b})) {
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    // grad_a needs b and grad_b needs a: save each only when the other needs a gradient.
    autograd::SavedTensor saved_a(b_needs_grad ? a : Tensor(), "matmul");
    autograd::SavedTensor saved_b(a_needs_grad ? b : Tensor(), "matmul");
    const Shape& a_sizes = a.sizes();
    const Shape& b_sizes = b.sizes();
    autograd::record(
        out, "MatmulBackward", {a, b},
        [saved_a, saved_b, a_sizes, b_sizes, a_needs_grad, b_needs_grad](const Tensor& grad) {
          std::vector<Tensor> grads(2);
          if (GradMode::is_enabled()) {  // create_graph: see summed_to_operand
            if (a_needs_grad)
              grads[0] =
                  summed_to_operand(matmul(grad, transpose_matrices(saved_b.get())), a_sizes);
            if (b_needs_grad)
              grads[1] =
                  summed_to_operand(matmul(transpose_matrices(saved_a.get()), grad), b_sizes);
            return grads;
          }
          if (a_needs_grad) grads[0] = product_grad_a(grad, a_sizes, saved_b.get());
          if (b_needs_grad) grads[1] = product_grad_b(grad, saved_a.get(), b_sizes);
          return grads;
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  const ProfileScope profile("bmm", {a, b});
  check_defined(a, "bmm", "input");
  check_defined(b, "bmm", "mat2");
  MINIDL_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D operands, got shapes ", a.sizes(),
               " and ", b.sizes());
  MINIDL_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1),
               "bmm: expected [b, n, k] and [b, k, m] operands, got shapes ", a.sizes(), " and ",
               b.sizes());
  check_same_dtype(a, b, "bmm");
  return matmul(a, b);
}

namespace {

// beta * input + alpha * product, with PyTorch's shortcuts (beta 0 ignores input, NaN included).
// beta input + alpha product; input must broadcast to the product's shape, as PyTorch's.
Tensor scaled_sum(const Tensor& input, const Tensor& product, double beta, double alpha,
                  const char* op) {
  MINIDL_CHECK(broadcast_shapes(input.sizes(), product.sizes(), op) == product.sizes(), op,
               ": the input of shape ", input.sizes(),
               " does not broadcast to the product's shape ", product.sizes());
  const Tensor scaled_product = alpha == 1 ? product : product * alpha;
  if (beta == 0) return scaled_product;
  return (beta == 1 ? input : input * beta) + scaled_product;
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  const ProfileScope profile("addmm", {input, a, b});
  check_defined(input, "addmm", "input");
  check_defined(a, "addmm", "mat1");
  check_defined(b, "addmm", "mat2");
  MINIDL_CHECK(a.dim() == 2 && b.dim() == 2, "addmm: expected 2-D matrices, got shapes ", a.sizes(),
               " and ", b.sizes());
  check_same_dtype(a, b, "addmm");
  MINIDL_CHECK(a.size(1) == b.size(0), "addmm: shapes ", a.sizes(), " and ", b.sizes(),
               " cannot be multiplied (", a.size(1), " != ", b.size(0), ")");
  return scaled_sum(input, matmul(a, b), beta, alpha, "addmm");
}

Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  const ProfileScope profile("baddbmm", {input, a, b});
  check_defined(input, "baddbmm", "input");
  check_defined(a, "baddbmm", "batch1");
  check_defined(b, "baddbmm", "batch2");
  MINIDL_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0) && a.size(2) == b.size(1),
               "baddbmm: expected [b, n, k] and [b, k, m] batches, got shapes ", a.sizes(), " and ",
               b.sizes());
  return scaled_sum(input, bmm(a, b), beta, alpha, "baddbmm");
}

Tensor outer(const Tensor& a, const Tensor& b) {
  const ProfileScope profile("outer", {a, b});
  check_defined(a, "outer", "input");
  check_defined(b, "outer", "vec2");
  MINIDL_CHECK(a.dim() == 1 && b.dim() == 1, "outer: expected 1-D vectors, got shapes ", a.sizes(),
               " and ", b.sizes());
  return a.unsqueeze(1) * b.unsqueeze(0);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (amp::AutocastCall cast{amp::AutocastOp::Linear, {x, weight, bias}})
    return linear(cast[0], cast[1], cast[2]);
  const ProfileScope profile("linear", {x, weight, bias});
  check_linear_operands(x, weight, bias);
  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  Shape leading(x.sizes().begin(), x.sizes().end() - 1);
  const int64_t rows = shape_numel(leading);
  Shape out_sizes = leading;
  out_sizes.push_back(out_features);

  Tensor out;
  {
    NoGradGuard no_grad;
    out = linear_rows(x.reshape({rows, in_features}), weight, bias).view(out_sizes);
  }
  count_flops(2 * rows * out_features * in_features);
  if (autograd::needs_grad({x, weight, bias})) {
    const bool x_needs_grad = x.requires_grad(), weight_needs_grad = weight.requires_grad();
    const bool bias_needs_grad = bias.defined() && bias.requires_grad();
    // grad_x needs the weight and grad_weight needs x: save each only when needed.
    autograd::SavedTensor saved_x(weight_needs_grad ? x : Tensor(), "linear");
    autograd::SavedTensor saved_weight(x_needs_grad ? weight : Tensor(), "linear");
    const Shape& x_sizes = x.sizes();
    autograd::record(
        out, "LinearBackward", {x, weight, bias},
        [saved_x, saved_weight, x_needs_grad, weight_needs_grad, bias_needs_grad, x_sizes, rows,
         in_features, out_features](const Tensor& grad) {
          // Over the flattened leading dimensions: grad2 [rows, out], x2 [rows, in].
          const Tensor grad2 = grad.reshape({rows, out_features});
          std::vector<Tensor> grads(3);
          // Recorded matmuls under create_graph, differentiable again.
          const bool recorded = GradMode::is_enabled();
          const auto times = [recorded](const Tensor& a, const Tensor& b) {
            return recorded ? matmul(a, b) : product(a, b);
          };
          if (x_needs_grad) grads[0] = times(grad2, saved_weight.get()).reshape(x_sizes);
          if (weight_needs_grad)
            grads[1] = times(grad2.t(), saved_x.get().reshape({rows, in_features}));
          if (bias_needs_grad) grads[2] = sum(grad2, {0});
          return grads;
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

void set_allow_tf32(bool allow) { allow_tf32_flag.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return allow_tf32_flag.load(std::memory_order_relaxed); }

}  // namespace minidl
