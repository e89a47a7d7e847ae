#pragma once
// nn::MultiheadAttention, as torch.nn.MultiheadAttention (with embed_dim features for query,
// key and value): project query, key and value with in_proj, split into num_heads heads of
// embed_dim / num_heads, attend (scaled_dot_product_attention, ops/attention.h), concatenate
// the heads and project with out_proj.
//
// Parameters by PyTorch's state_dict names: in_proj_weight [3E, E] (xavier_uniform_),
// in_proj_bias [3E] (zeros), out_proj.weight [E, E] (nn::Linear's initialisation) and
// out_proj.bias [E] (zeros); the biases are absent with .bias(false).
#include <cstdint>
#include <iosfwd>
#include <tuple>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/nn/options/attention.h"

namespace minidl::nn {

class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);

  // query [L, N, E], key and value [S, N, E] ([N, L, E] and [N, S, E] with batch_first), or
  // unbatched [L, E] and [S, E]. Masks follow PyTorch's convention, the opposite of
  // scaled_dot_product_attention's for booleans: true = NOT attended.
  //   key_padding_mask [N, S] (or [S]): boolean (true ignores that key) or additive float.
  //   attn_mask [L, S] or [N * num_heads, L, S]: boolean (true = not allowed) or additive.
  //   is_causal: a hint that attn_mask is the causal mask, which must then be given (as in
  //   PyTorch); without key_padding_mask and need_weights the kernel's causal mode replaces it.
  // Returns (output like query, weights): weights [N, L, S] averaged over the heads when
  // need_weights (computed explicitly, a [L, S] matrix per head), else undefined.
  // need_weights defaults to false here (PyTorch's default is true): the fused kernel then
  // never forms the weights.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = false,
                                     const Tensor& attn_mask = {}, bool is_causal = false);
  // Draws the parameters again, as at construction.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;
  bool is_cuda_graph_safe() const override { return options.dropout() == 0; }

  MultiheadAttentionOptions options;
  Tensor in_proj_weight;  // [3 * embed_dim, embed_dim]
  Tensor in_proj_bias;    // [3 * embed_dim], undefined without bias
  Linear out_proj{nullptr};
};

MINIDL_MODULE(MultiheadAttention);

}  // namespace minidl::nn
