#include "minidl/models/gpt.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"
#include "minidl/ops/attention.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/shape.h"

namespace minidl::models {

namespace {

nn::Linear make_linear(const GPTOptions& options, int64_t in, int64_t out) {
  return nn::Linear(nn::LinearOptions(in, out).bias(options.bias()));
}

nn::LayerNorm layer_norm(const GPTOptions& options) {
  return nn::LayerNorm(nn::LayerNormOptions({options.n_embd()}).bias(options.bias()));
}

void check_options(const GPTOptions& options) {
  MINIDL_CHECK(options.vocab_size() > 0 && options.block_size() > 0 && options.n_layer() > 0 &&
                   options.n_head() > 0 && options.n_embd() > 0,
               "GPT: expected positive vocab_size, block_size, n_layer, n_head and n_embd, got ",
               options.vocab_size(), ", ", options.block_size(), ", ", options.n_layer(), ", ",
               options.n_head(), " and ", options.n_embd());
  MINIDL_CHECK(options.n_embd() % options.n_head() == 0, "GPT: n_embd (", options.n_embd(),
               ") must be a multiple of n_head (", options.n_head(), ")");
  MINIDL_CHECK(options.dropout() >= 0 && options.dropout() < 1,
               "GPT: expected dropout in [0, 1), got ", options.dropout());
}

// The next token of each row of `logits` [B, vocab] (float32, on the CPU), drawn from
// softmax(logits) restricted to the top_k largest (all when top_k is empty), by the inverse
// of the cumulative distribution at one uniform draw per row.
std::vector<int64_t> sample_rows(const Tensor& logits, std::optional<int64_t> top_k) {
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  const std::vector<float> values = to_vector<float>(logits);
  const std::vector<double> uniforms = to_vector<double>(rand({rows}, kFloat64));
  std::vector<int64_t> tokens(static_cast<size_t>(rows));
  std::vector<float> sorted(static_cast<size_t>(vocab));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = values.data() + r * vocab;
    // nanoGPT keeps the logits >= the k-th largest (ties with it included).
    float threshold = -INFINITY;
    if (top_k && *top_k < vocab) {
      std::copy(row, row + vocab, sorted.begin());
      std::nth_element(sorted.begin(), sorted.begin() + (*top_k - 1), sorted.end(),
                       std::greater<float>());
      threshold = sorted[static_cast<size_t>(*top_k - 1)];
    }
    const float max = *std::max_element(row, row + vocab);
    std::vector<double> weights(static_cast<size_t>(vocab), 0.0);
    double total = 0;
    for (int64_t c = 0; c < vocab; ++c) {
      if (row[c] < threshold) continue;
      weights[static_cast<size_t>(c)] = std::exp(static_cast<double>(row[c]) - max);
      total += weights[static_cast<size_t>(c)];
    }
    const double target = uniforms[static_cast<size_t>(r)] * total;
    double cumulative = 0;
    int64_t chosen = 0;
    for (int64_t c = 0; c < vocab; ++c) {
      if (weights[static_cast<size_t>(c)] == 0) continue;
      chosen = c;  // the last token with weight, should rounding leave target unreached
      cumulative += weights[static_cast<size_t>(c)];
      if (cumulative > target) break;
    }
    tokens[static_cast<size_t>(r)] = chosen;
  }
  return tokens;
}

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPTOptions& options)
    : Module("CausalSelfAttention"), options(options) {
  check_options(options);
  c_attn = register_module("c_attn", make_linear(options, options.n_embd(), 3 * options.n_embd()));
  c_proj = register_module("c_proj", make_linear(options, options.n_embd(), options.n_embd()));
  attn_dropout = register_module("attn_dropout", nn::Dropout(options.dropout()));
  resid_dropout = register_module("resid_dropout", nn::Dropout(options.dropout()));
}

Tensor CausalSelfAttentionImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 3 && x.size(2) == options.n_embd(),
               "CausalSelfAttention: expected input [B, T, ", options.n_embd(), "], got shape ",
               x.sizes());
  const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
  const int64_t heads = options.n_head();
  const std::vector<Tensor> qkv = c_attn(x).split(width, 2);
  // [B, T, C] -> [B, heads, T, C / heads]
  auto as_heads = [&](const Tensor& t) {
    return t.view({batch, length, heads, width / heads}).transpose(1, 2);
  };
  // The attention dropout is scaled_dot_product_attention's (attn_dropout only names it, as in
  // nanoGPT's flash path).
  const double dropout = is_training() ? options.dropout() : 0.0;
  const Tensor y = scaled_dot_product_attention(as_heads(qkv[0]), as_heads(qkv[1]),
                                                as_heads(qkv[2]), {}, dropout, /*is_causal=*/true);
  return resid_dropout(c_proj(y.transpose(1, 2).contiguous().view({batch, length, width})));
}

MLPImpl::MLPImpl(const GPTOptions& options) : Module("MLP") {
  c_fc = register_module("c_fc", make_linear(options, options.n_embd(), 4 * options.n_embd()));
  gelu = register_module("gelu", nn::GELU());
  c_proj = register_module("c_proj", make_linear(options, 4 * options.n_embd(), options.n_embd()));
  dropout = register_module("dropout", nn::Dropout(options.dropout()));
}

Tensor MLPImpl::forward(const Tensor& x) { return dropout(c_proj(gelu(c_fc(x)))); }

BlockImpl::BlockImpl(const GPTOptions& options) : Module("Block") {
  ln_1 = register_module("ln_1", layer_norm(options));
  attn = register_module("attn", CausalSelfAttention(options));
  ln_2 = register_module("ln_2", layer_norm(options));
  mlp = register_module("mlp", MLP(options));
}

Tensor BlockImpl::forward(const Tensor& x) {
  // Under autocast each branch ends in a 16-bit Linear while the residual stream stays float32
  // (the embeddings' and LayerNorm's dtype). The add promotes the sum to float32, as PyTorch's
  // does; the cast of each branch to the stream's dtype says so where it happens (exact: 16-bit
  // values are float32 values), and is a no-op without autocast.
  const Tensor after_attention = x + attn->forward(ln_1(x)).to(x.dtype());
  return after_attention + mlp->forward(ln_2(after_attention)).to(after_attention.dtype());
}

TiedLinearImpl::TiedLinearImpl(const Tensor& weight) : Module("Linear") {
  this->weight = register_parameter("weight", weight);
}

Tensor TiedLinearImpl::forward(const Tensor& x) { return minidl::linear(x, weight); }

void TiedLinearImpl::pretty_print(std::ostream& out) const {
  out << "Linear(in_features=" << weight.size(1) << ", out_features=" << weight.size(0)
      << ", bias=false)";
}

GPTImpl::GPTImpl(const GPTOptions& options) : Module("GPT"), options(options) {
  check_options(options);
  wte = nn::Embedding(options.vocab_size(), options.n_embd());
  wpe = nn::Embedding(options.block_size(), options.n_embd());
  drop = nn::Dropout(options.dropout());
  h = nn::ModuleList();
  for (int64_t i = 0; i < options.n_layer(); ++i) h->push_back(Block(options).ptr());
  ln_f = layer_norm(options);
  transformer = register_module("transformer", nn::ModuleDict({{"wte", wte.ptr()},
                                                               {"wpe", wpe.ptr()},
                                                               {"drop", drop.ptr()},
                                                               {"h", h.ptr()},
                                                               {"ln_f", ln_f.ptr()}}));
  lm_head = register_module("lm_head", TiedLinear(wte->weight));

  // GPT-2's initialisation, as nanoGPT's _init_weights, then the residual projections scaled
  // down by sqrt(2 n_layer) (each block adds two of them to the residual stream).
  NoGradGuard no_grad;
  apply([](Module& module) {
    if (auto* layer = dynamic_cast<nn::LinearImpl*>(&module)) {
      nn::init::normal_(layer->weight, 0.0, 0.02);
      if (layer->bias.defined()) nn::init::zeros_(layer->bias);
    } else if (auto* table = dynamic_cast<nn::EmbeddingImpl*>(&module)) {
      nn::init::normal_(table->weight, 0.0, 0.02);
    }
  });
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(options.n_layer()));
  for (const auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.size() >= 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0)
      nn::init::normal_(item.value(), 0.0, residual_std);
  }
}

Tensor GPTImpl::forward(const Tensor& idx) {
  MINIDL_CHECK(idx.defined() && idx.dim() == 2, "GPT: expected token indices [B, T], got ",
               idx.defined() ? shape_str(idx.sizes()) : std::string("an undefined tensor"));
  const int64_t length = idx.size(1);
  MINIDL_CHECK(length <= options.block_size(), "GPT: cannot forward a sequence of length ", length,
               ", block_size is only ", options.block_size());
  // The position embeddings of 0..T-1 are the first T rows of wpe's table: a slice rather than
  // a lookup of arange(T), which would copy indices from the host at every step.
  const Tensor positions = wpe->weight.narrow(0, 0, length);
  Tensor x = drop(wte(idx) + positions);
  for (size_t i = 0; i < h->size(); ++i) x = h->at<BlockImpl>(i).forward(x);
  return lm_head(ln_f(x));
}

Tensor GPTImpl::loss(const Tensor& logits, const Tensor& targets) {
  MINIDL_CHECK(logits.dim() == 3 && targets.dim() == 2 && logits.size(0) == targets.size(0) &&
                   logits.size(1) == targets.size(1),
               "GPT::loss: expected logits [B, T, vocab_size] and targets [B, T], got shapes ",
               logits.sizes(), " and ", targets.sizes());
  return cross_entropy(logits.reshape({-1, logits.size(2)}), targets.reshape({-1}).to(kInt64),
                       Reduction::Mean, 0.0, /*ignore_index=*/-1);
}

Tensor GPTImpl::generate(const Tensor& idx, int64_t max_new_tokens, double temperature,
                         std::optional<int64_t> top_k) {
  MINIDL_CHECK(temperature > 0, "GPT::generate: expected temperature > 0, got ", temperature);
  MINIDL_CHECK(!top_k || *top_k > 0, "GPT::generate: expected top_k > 0, got ", top_k.value_or(0));
  MINIDL_CHECK(max_new_tokens >= 0, "GPT::generate: expected max_new_tokens >= 0, got ",
               max_new_tokens);
  InferenceMode inference;
  const bool was_training = is_training();
  eval();
  Tensor tokens = idx.to(kInt64);
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const int64_t length = tokens.size(1);
    const Tensor context =
        length <= options.block_size()
            ? tokens
            : tokens.narrow(1, length - options.block_size(), options.block_size());
    const Tensor last = forward(context).select(1, -1);  // [B, vocab]
    const Tensor scaled = (last.to(kFloat32) / temperature).cpu();
    const std::vector<int64_t> next = sample_rows(scaled, top_k);
    const Tensor column = from_host(next.data(), {static_cast<int64_t>(next.size()), 1}, kInt64);
    tokens = cat({tokens, column.to(tokens.device())}, 1);
  }
  train(was_training);
  return tokens;
}

int64_t GPTImpl::num_params(bool non_embedding) const {
  int64_t count = 0;
  for (const Tensor& parameter : parameters()) count += parameter.numel();
  return non_embedding ? count - wpe->weight.numel() : count;
}

}  // namespace minidl::models
