#pragma once
// GPT, as nanoGPT (Karpathy) defines it: a decoder-only transformer of token and position
// embeddings, n_layer pre-LayerNorm blocks (causal self-attention, then a GELU MLP, each added
// to the residual stream), a final LayerNorm and a linear head tied to the token embedding.
//
//   wte  Embedding(vocab_size, n_embd)     idx [B, T] -> [B, T, n_embd]
//   wpe  Embedding(block_size, n_embd)     positions 0..T-1, added
//   drop Dropout(dropout)
//   h.i  Block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
//          attn  c_attn Linear(n_embd, 3 n_embd) -> q, k, v of n_head heads,
//                scaled_dot_product_attention(is_causal), c_proj Linear(n_embd, n_embd)
//          mlp   c_fc Linear(n_embd, 4 n_embd), GELU (exact, as nanoGPT's nn.GELU()),
//                c_proj Linear(4 n_embd, n_embd)
//   ln_f LayerNorm(n_embd)
//   lm_head Linear(n_embd, vocab_size, no bias), its weight the same tensor as wte's
//
// Parameter names are nanoGPT's state_dict keys (transformer.wte.weight,
// transformer.h.0.attn.c_attn.weight, ..., lm_head.weight: the tied weight appears under both
// names, as in PyTorch's state_dict, and once in parameters()), so that a nanoGPT model saved
// with safetensors loads strictly (nn/serialize.h), and back. Initialisation is GPT-2's, as
// nanoGPT's: every Linear and Embedding weight N(0, 0.02), biases zero, and the residual
// projections (c_proj.weight) N(0, 0.02 / sqrt(2 n_layer)).
#include <cstdint>
#include <iosfwd>
#include <optional>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/modules/activation.h"
#include "minidl/nn/modules/dropout.h"
#include "minidl/nn/modules/embedding.h"
#include "minidl/nn/modules/layer_norm.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/nn/modules/module_dict.h"
#include "minidl/nn/modules/module_list.h"

namespace minidl::models {

// nanoGPT's GPTConfig, with its defaults (GPT-2 small with the vocabulary padded to 50304).
struct GPTOptions {
  MINIDL_ARG(int64_t, vocab_size) = 50304;
  MINIDL_ARG(int64_t, block_size) = 1024;  // the longest sequence (position embeddings)
  MINIDL_ARG(int64_t, n_layer) = 12;
  MINIDL_ARG(int64_t, n_head) = 12;
  MINIDL_ARG(int64_t, n_embd) = 768;
  MINIDL_ARG(double, dropout) = 0.0;
  // Biases in the Linears and LayerNorms, as GPT-2; false is a little better and faster.
  MINIDL_ARG(bool, bias) = true;
};

class CausalSelfAttentionImpl : public nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GPTOptions& options);
  // x [B, T, n_embd] -> [B, T, n_embd]; position t attends to positions <= t.
  Tensor forward(const Tensor& x);

  GPTOptions options;
  nn::Linear c_attn{nullptr}, c_proj{nullptr};
  nn::Dropout attn_dropout{nullptr}, resid_dropout{nullptr};
};
MINIDL_MODULE(CausalSelfAttention);

class MLPImpl : public nn::Module {
 public:
  explicit MLPImpl(const GPTOptions& options);
  Tensor forward(const Tensor& x);

  nn::Linear c_fc{nullptr}, c_proj{nullptr};
  nn::GELU gelu{nullptr};
  nn::Dropout dropout{nullptr};
};
MINIDL_MODULE(MLP);

class BlockImpl : public nn::Module {
 public:
  explicit BlockImpl(const GPTOptions& options);
  Tensor forward(const Tensor& x);

  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  MLP mlp{nullptr};
};
MINIDL_MODULE(Block);

// The output head: logits = x W^T with W a weight owned elsewhere (the token embedding's), so
// that the two share one tensor as nanoGPT's `transformer.wte.weight = lm_head.weight` does.
class TiedLinearImpl : public nn::Module {
 public:
  explicit TiedLinearImpl(const Tensor& weight);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  Tensor weight;  // [out_features, in_features]
};
MINIDL_MODULE(TiedLinear);

class GPTImpl : public nn::Module {
 public:
  explicit GPTImpl(const GPTOptions& options = {});

  // idx int64 (or int32) [B, T] token indices, T <= block_size -> logits [B, T, vocab_size].
  Tensor forward(const Tensor& idx);
  // nanoGPT's training loss: cross-entropy of logits [B, T, vocab_size] against the next tokens
  // targets [B, T], averaged over the positions whose target is not -1.
  static Tensor loss(const Tensor& logits, const Tensor& targets);
  // Appends max_new_tokens tokens to idx [B, T0] (int64) and returns [B, T0 + max_new_tokens],
  // each drawn from softmax(logits / temperature) of the last position (cropped to block_size),
  // restricted to the top_k most likely tokens when top_k is given, as nanoGPT's generate.
  // Runs under inference mode, in evaluation mode for its duration; draws from minidl's
  // default generator (manual_seed makes it repeat).
  Tensor generate(const Tensor& idx, int64_t max_new_tokens, double temperature = 1.0,
                  std::optional<int64_t> top_k = std::nullopt);
  // The number of parameters, without the position embeddings when non_embedding (as nanoGPT's
  // get_num_params; the token embedding counts, being the head's weight too).
  int64_t num_params(bool non_embedding = true) const;

  GPTOptions options;
  nn::ModuleDict transformer{nullptr};
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::Dropout drop{nullptr};
  nn::ModuleList h{nullptr};
  nn::LayerNorm ln_f{nullptr};
  TiedLinear lm_head{nullptr};
};
MINIDL_MODULE(GPT);

}  // namespace minidl::models
