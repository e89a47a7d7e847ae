#include "minidl/nn/modules/attention.h"

#include <cmath>
#include <limits>
#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/reduce.h"

namespace minidl::nn {

namespace {

// One of PyTorch's module masks (boolean, true = not attended, or additive) as an additive mask
// in `dtype`: -inf where a boolean mask is true.
Tensor as_additive(const Tensor& mask, const Tensor& like, const char* what) {
  if (mask.dtype() == kBool)
    return where(mask, -std::numeric_limits<double>::infinity(),
                 zeros(mask.sizes(), like.options()));
  MINIDL_CHECK(mask.is_floating_point(), "MultiheadAttention: expected a boolean or floating ",
               what, ", got ", mask.dtype());
  return mask.to(like.dtype());
}

// attn_mask and key_padding_mask merged into one additive mask broadcastable to
// [N, H, L, S], or undefined when neither is given.
Tensor merged_mask(const Tensor& attn_mask, const Tensor& key_padding_mask, const Tensor& like,
                   int64_t batch, int64_t heads, int64_t query_length, int64_t key_length) {
  Tensor merged;
  if (attn_mask.defined()) {
    const bool shared = attn_mask.dim() == 2 && attn_mask.size(0) == query_length &&
                        attn_mask.size(1) == key_length;
    const bool per_head = attn_mask.dim() == 3 && attn_mask.size(0) == batch * heads &&
                          attn_mask.size(1) == query_length && attn_mask.size(2) == key_length;
    MINIDL_CHECK(shared || per_head, "MultiheadAttention: expected attn_mask [", query_length, ", ",
                 key_length, "] or [", batch * heads, ", ", query_length, ", ", key_length,
                 "] (N * num_heads, L, S), got ", attn_mask.sizes());
    merged = as_additive(attn_mask, like, "attn_mask");
    if (per_head) merged = merged.view({batch, heads, query_length, key_length});
  }
  if (key_padding_mask.defined()) {
    MINIDL_CHECK(key_padding_mask.dim() <= 2 && key_padding_mask.size(-1) == key_length &&
                     (key_padding_mask.dim() == 1 ? batch == 1 : key_padding_mask.size(0) == batch),
                 "MultiheadAttention: expected key_padding_mask [", batch, ", ", key_length,
                 "] (N, S), got ", key_padding_mask.sizes());
    const Tensor padding =
        as_additive(key_padding_mask, like, "key_padding_mask").reshape({batch, 1, 1, key_length});
    merged = merged.defined() ? merged + padding : padding;
  }
  return merged;
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options)
    : Module("MultiheadAttention"), options(options) {
  MINIDL_CHECK(options.embed_dim() > 0 && options.num_heads() > 0 &&
                   options.embed_dim() % options.num_heads() == 0,
               "MultiheadAttention: expected a positive embed_dim divisible by a positive "
               "num_heads, got embed_dim ",
               options.embed_dim(), " and num_heads ", options.num_heads());
  MINIDL_CHECK(options.dropout() >= 0 && options.dropout() < 1,
               "MultiheadAttention: expected dropout in [0, 1), got ", options.dropout());
  const int64_t embed_dim = options.embed_dim();
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}));
  out_proj =
      register_module("out_proj", Linear(LinearOptions(embed_dim, embed_dim).bias(options.bias())));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // As PyTorch's _reset_parameters: out_proj.weight keeps Linear's initialisation.
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  out_proj->reset_parameters();
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
    bool need_weights, const Tensor& attn_mask, bool is_causal) {
  const int64_t embed_dim = options.embed_dim(), heads = options.num_heads();
  const int64_t head_dim = embed_dim / heads;
  check_defined(query, "MultiheadAttention", "query");
  check_defined(key, "MultiheadAttention", "key");
  check_defined(value, "MultiheadAttention", "value");
  const bool batched = query.dim() == 3;
  MINIDL_CHECK(
      (query.dim() == 2 || batched) && key.dim() == query.dim() && value.dim() == query.dim(),
      "MultiheadAttention: expected query, key and value all 3-D (batched) or all 2-D, "
      "got ",
      query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  MINIDL_CHECK(
      query.size(-1) == embed_dim && key.size(-1) == embed_dim && value.size(-1) == embed_dim,
      "MultiheadAttention: expected query, key and value with embed_dim (", embed_dim,
      ") features (kdim and vdim are not supported), got ", query.sizes(), ", ", key.sizes(),
      " and ", value.sizes());
  MINIDL_CHECK(!is_causal || attn_mask.defined(),
               "MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; "
               "expected attn_mask too (as PyTorch)");

  // [N, L, E] whatever the layout.
  auto batch_major = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options.batch_first() ? t : t.transpose(0, 1);
  };
  const Tensor q_in = batch_major(query), k_in = batch_major(key), v_in = batch_major(value);
  const int64_t batch = q_in.size(0), query_length = q_in.size(1), key_length = k_in.size(1);
  MINIDL_CHECK(k_in.size(0) == batch && v_in.size(0) == batch && v_in.size(1) == key_length,
               "MultiheadAttention: expected key and value of the query's batch size and of one "
               "length, got query ",
               query.sizes(), ", key ", key.sizes(), " and value ", value.sizes());

  // in_proj rows [0, E) project the query, [E, 2E) the key, [2E, 3E) the value; then
  // [N, len, E] -> [N, H, len, head_dim].
  auto project = [&](const Tensor& x, int64_t part) {
    const Tensor weight = in_proj_weight.narrow(0, part * embed_dim, embed_dim);
    const Tensor bias =
        in_proj_bias.defined() ? in_proj_bias.narrow(0, part * embed_dim, embed_dim) : Tensor();
    return functional::linear(x, weight, bias)
        .view({batch, x.size(1), heads, head_dim})
        .transpose(1, 2);
  };
  const Tensor q = project(q_in, 0), k = project(k_in, 1), v = project(v_in, 2);
  const Tensor mask =
      merged_mask(attn_mask, key_padding_mask, q, batch, heads, query_length, key_length);
  const double dropout_p = is_training() ? options.dropout() : 0.0;

  Tensor heads_out, weights;  // [N, H, L, head_dim], [N, L, S]
  if (!need_weights) {
    // The kernel's causal mode stands for attn_mask when nothing else masks (as PyTorch).
    const bool kernel_causal = is_causal && !key_padding_mask.defined();
    heads_out = functional::scaled_dot_product_attention(q, k, v, kernel_causal ? Tensor() : mask,
                                                         dropout_p, kernel_causal);
  } else {
    // softmax(q k^T / sqrt(head_dim) + mask), explicitly, as PyTorch's need_weights path.
    const Tensor scaled = (q * (1.0 / std::sqrt(static_cast<double>(head_dim))))
                              .reshape({batch * heads, query_length, head_dim});
    Tensor scores = matmul(scaled, k.reshape({batch * heads, key_length, head_dim}).transpose(1, 2))
                        .view({batch, heads, query_length, key_length});
    if (mask.defined()) scores = scores + mask;
    Tensor probabilities = softmax(scores, -1);
    if (dropout_p > 0) probabilities = minidl::dropout(probabilities, dropout_p, true);
    weights = mean(probabilities, {1});  // after dropout, as PyTorch returns them
    heads_out = matmul(probabilities.reshape({batch * heads, query_length, key_length}),
                       v.reshape({batch * heads, key_length, head_dim}))
                    .view({batch, heads, query_length, head_dim});
  }
  Tensor out =
      out_proj->forward(heads_out.transpose(1, 2).reshape({batch, query_length, embed_dim}));
  if (!batched) return {out.squeeze(0), weights.defined() ? weights.squeeze(0) : weights};
  return {options.batch_first() ? out : out.transpose(0, 1), weights};
}

void MultiheadAttentionImpl::pretty_print(std::ostream& out) const {
  out << "MultiheadAttention(embed_dim=" << options.embed_dim()
      << ", num_heads=" << options.num_heads() << ", dropout=" << options.dropout()
      << ", bias=" << (options.bias() ? "true" : "false")
      << ", batch_first=" << (options.batch_first() ? "true" : "false") << ")";
}

}  // namespace minidl::nn
