// Scaled dot-product attention: validation, the canonical [B, H, T, D] layout, the dropout
// counters, dispatch to the kernels of ops/attention_kernels.h, and backward (Note [Blocked
// attention] in ops/attention_math.h).
#include "minidl/ops/attention.h"

#include <cmath>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/flop_counter.h"

namespace minidl {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// The logsumexp's dtype: float32, or float64 for float64 inputs.
DType accumulation_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// [leading..., rows, columns] viewed as [B, H, rows, columns]: no leading dims is B = H = 1,
// one is B, two are (B, H), more are B = the product of all but the last, H = the last.
Shape canonical_sizes(const Tensor& t) {
  const int64_t leading = t.dim() - 2;
  int64_t batch = 1, heads = 1;
  for (int64_t d = 0; d < leading; ++d) {
    if (leading >= 2 && d == leading - 1)
      heads = t.size(d);
    else
      batch *= t.size(d);
  }
  return {batch, heads, t.size(-2), t.size(-1)};
}

void check_operands(const Tensor& query, const Tensor& key, const Tensor& value) {
  check_defined(query, kOp, "query");
  check_defined(key, kOp, "key");
  check_defined(value, kOp, "value");
  MINIDL_CHECK(query.is_floating_point(), kOp, ": expected a floating-point query (float32, ",
               "float64, float16 or bfloat16), got ", query.dtype());
  MINIDL_CHECK(key.dtype() == query.dtype() && value.dtype() == query.dtype(), kOp,
               ": expected query, key and value of one dtype, got ", query.dtype(), ", ",
               key.dtype(), " and ", value.dtype());
  MINIDL_CHECK(key.device() == query.device() && value.device() == query.device(), kOp,
               ": expected query, key and value on one device, got ", query.device(), ", ",
               key.device(), " and ", value.device());
  MINIDL_CHECK(
      query.dim() >= 2 && key.dim() == query.dim() && value.dim() == query.dim(), kOp,
      ": expected query [..., T, D], key [..., S, D] and value [..., S, Dv] with the same ",
      "number of dims (at least 2), got ", shape_str(query.sizes()), ", ", shape_str(key.sizes()),
      " and ", shape_str(value.sizes()));
  for (int64_t d = 0; d < query.dim() - 2; ++d)
    MINIDL_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), kOp,
                 ": expected query, key and value with the same leading (batch) dims, got ",
                 shape_str(query.sizes()), ", ", shape_str(key.sizes()), " and ",
                 shape_str(value.sizes()));
  MINIDL_CHECK(key.size(-1) == query.size(-1), kOp,
               ": expected key's last dim (D) to equal query's, got key ", shape_str(key.sizes()),
               " and query ", shape_str(query.sizes()));
  MINIDL_CHECK(value.size(-2) == key.size(-2), kOp,
               ": expected value's second-to-last dim (S) to equal key's, got value ",
               shape_str(value.sizes()), " and key ", shape_str(key.sizes()));
}

// The mask expanded (a view, stride 0 where it broadcasts) to [B, H, T, S].
Tensor canonical_mask(const Tensor& mask, const Tensor& query, const Tensor& key) {
  MINIDL_CHECK(mask.dtype() == kBool || mask.dtype() == query.dtype() || mask.dtype() == kFloat32,
               kOp, ": expected a boolean attn_mask, a float32 one or one of the query's dtype (",
               query.dtype(), "), got ", mask.dtype());
  MINIDL_CHECK(mask.device() == query.device(), kOp, ": expected attn_mask on the query's device (",
               query.device(), "), got ", mask.device());
  Shape full(query.sizes().begin(), query.sizes().end() - 1);
  full.push_back(key.size(-2));
  bool broadcastable = mask.dim() <= static_cast<int64_t>(full.size());
  for (int64_t d = 1; broadcastable && d <= mask.dim(); ++d) {
    const int64_t size = mask.size(-d), target = full[full.size() - static_cast<size_t>(d)];
    broadcastable = size == target || size == 1;
  }
  MINIDL_CHECK(broadcastable, kOp, ": expected attn_mask broadcastable to ", shape_str(full),
               " ([..., T, S]), got ", shape_str(mask.sizes()));
  // A float32 mask on 16-bit operands (PyTorch accepts it) is rounded to their dtype before it
  // is broadcast, so the kernels read one dtype.
  const Tensor typed = mask.dtype() == kBool ? mask : mask.to(query.dtype());
  Tensor expanded = typed.expand(full);
  const Shape canonical = canonical_sizes(expanded);
  if (expanded.dim() == 4) return expanded;
  return expanded.reshape(canonical);  // a view but where > 2 leading dims do not merge
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  if (amp::AutocastCall cast{amp::AutocastOp::ScaledDotProductAttention,
                             {query, key, value, attn_mask}})
    return scaled_dot_product_attention(cast[0], cast[1], cast[2], cast[3], dropout_p, is_causal,
                                        scale);
  const ProfileScope profile(kOp, {query, key, value, attn_mask});
  check_operands(query, key, value);
  MINIDL_CHECK(!(is_causal && attn_mask.defined()), kOp,
               ": expected attn_mask or is_causal, not both (as PyTorch)");
  MINIDL_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, kOp, ": expected dropout_p in [0, 1], got ",
               dropout_p);
  MINIDL_CHECK(!(attn_mask.defined() && autograd::needs_grad({attn_mask})), kOp,
               ": no gradient flows to attn_mask; expected one that does not require grad");

  AttentionParams params;
  const Shape query_sizes = canonical_sizes(query);
  params.batch = query_sizes[0];
  params.heads = query_sizes[1];
  params.query_length = query.size(-2);
  params.key_length = key.size(-2);
  params.head_dim = query.size(-1);
  params.value_dim = value.size(-1);
  params.scale = scale.value_or(1.0 / std::sqrt(static_cast<double>(params.head_dim)));
  params.is_causal = is_causal;

  Tensor q, k, v, mask;
  {
    NoGradGuard no_grad;
    q = query.contiguous().view(query_sizes);
    k = key.contiguous().view(canonical_sizes(key));
    v = value.contiguous().view(canonical_sizes(value));
    if (attn_mask.defined()) {
      mask = canonical_mask(attn_mask, query, key);
      params.mask = mask.dtype() == kBool ? AttentionMask::Boolean : AttentionMask::Additive;
      for (int d = 0; d < 4; ++d) params.mask_strides[static_cast<size_t>(d)] = mask.stride(d);
    }
  }
  if (dropout_p > 0.0) {
    params.dropout_p = dropout_p;
    params.dropout_start = default_generator().reserve(static_cast<uint64_t>(
        params.batch * params.heads * params.query_length * params.key_length));
  }

  Shape out_sizes(query.sizes().begin(), query.sizes().end() - 1);
  out_sizes.push_back(params.value_dim);
  Tensor out =
      empty({params.batch, params.heads, params.query_length, params.value_dim}, query.options());
  Tensor logsumexp = empty({params.batch, params.heads, params.query_length},
                           query.options().dtype(accumulation_dtype(query.dtype())));
  const AttentionKernels& kernels = kernels_for<AttentionKernels>(query.device());
  // As PyTorch's flop counter: Q K^T and P V, 2 per multiply-add, the causal half included.
  count_flops(2 * params.batch * params.heads * params.query_length * params.key_length *
              (params.head_dim + params.value_dim));
  // Also for Dv = 0: backward reads the logsumexp.
  if (logsumexp.numel() > 0) kernels.forward(out, logsumexp, q, k, v, mask, params);
  Tensor result = out.view(out_sizes);

  if (autograd::needs_grad({query, key, value})) {
    autograd::SavedTensor saved_q(q, kOp), saved_k(k, kOp), saved_v(v, kOp), saved_out(out, kOp);
    autograd::SavedTensor saved_mask;  // kept with a version check too: backward rereads it
    if (mask.defined()) saved_mask = autograd::SavedTensor(mask, kOp);
    const Shape& key_sizes = key.sizes();
    const Shape& value_sizes = value.sizes();
    const Shape& query_shape = query.sizes();
    autograd::record(
        result, "ScaledDotProductAttentionBackward", {query, key, value}, [=](const Tensor& grad) {
          const Tensor &q4 = saved_q.get(), &k4 = saved_k.get(), &v4 = saved_v.get();
          Tensor grad_q = empty(q4.sizes(), q4.options());
          Tensor grad_k = empty(k4.sizes(), k4.options());
          Tensor grad_v = empty(v4.sizes(), v4.options());
          if (grad_q.numel() + grad_k.numel() + grad_v.numel() > 0)
            kernels_for<AttentionKernels>(q4.device())
                .backward(grad_q, grad_k, grad_v, grad.contiguous().view(saved_out.get().sizes()),
                          q4, k4, v4, saved_out.get(), logsumexp,
                          saved_mask.defined() ? saved_mask.get() : Tensor(), params);
          return std::vector<Tensor>{grad_q.view(query_shape), grad_k.view(key_sizes),
                                     grad_v.view(value_sizes)};
        });
  }
  return result;
}

}  // namespace minidl
