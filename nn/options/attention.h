#pragma once
// Options of nn::MultiheadAttention. LibTorch keeps its MultiheadAttentionOptions in
// nn/options/activation.h; minidl keeps them beside the module's own files.
#include <cstdint>

#include "minidl/core/arg.h"

namespace minidl::nn {

// PyTorch's names and defaults. Not implemented (yet): add_bias_kv, add_zero_attn, and kdim /
// vdim other than embed_dim (key and value must have embed_dim features).
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads) {}
  MINIDL_ARG(int64_t, embed_dim);
  MINIDL_ARG(int64_t, num_heads);  // embed_dim must be a multiple of it
  // Dropout on the attention probabilities, in training.
  MINIDL_ARG(double, dropout) = 0.0;
  // Whether in_proj and out_proj learn biases.
  MINIDL_ARG(bool, bias) = true;
  // Inputs and outputs [N, L, E] (true) or [L, N, E] (false, PyTorch's default). LibTorch's
  // options lack it (its module is sequence-first); Python's nn.MultiheadAttention has it.
  MINIDL_ARG(bool, batch_first) = false;
};

}  // namespace minidl::nn
