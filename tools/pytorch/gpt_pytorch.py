"""The GPT of train_gpt's recipe (issue 28) in PyTorch, for tools/pytorch/train_gpt_pytorch.py,
tools/reference/make_gpt_reference.py and tools/bench/bench_pytorch.py --model gpt:

    from gpt_pytorch import GPT, GPTConfig, get_lr, read_token_file

nanoGPT's model (karpathy/nanoGPT model.py, 2023-2024), written from its description: token and
position embeddings (wte, wpe), dropout, n_layer pre-LayerNorm blocks
(x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))), ln_f, and lm_head (no bias) whose weight is
wte's. Attention is F.scaled_dot_product_attention with is_causal=True; the MLP's GELU is the
exact one. Parameter names are nanoGPT's state_dict names ("transformer.h.0.attn.c_attn.weight",
"lm_head.weight", ...), so its checkpoints and minidl's safetensors files name the same tensors.

Also nanoGPT's learning-rate schedule (get_lr: linear warm-up, cosine decay to min_lr) and a
strict reader of llm.c's token files (train.bin / val.bin of tools/fetch_shakespeare.sh), which
checks what data/readers/token_file_format.cpp checks.
"""
import dataclasses
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class GPTConfig:
    """The defaults are train_gpt's: a byte-level model of about 0.8M parameters."""
    vocab_size: int = 256
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False  # of the Linear layers and LayerNorms


class LayerNorm(nn.Module):
    """nn.LayerNorm with an optional bias (PyTorch's has no bias-free form with its own
    weight), epsilon 1e-5."""

    def __init__(self, features, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"CausalSelfAttention: n_embd ({config.n_embd}) must be a multiple "
                             f"of n_head ({config.n_head})")
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        batch, time, channels = x.shape  # [B, T, C]
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        head_size = channels // self.n_head
        # [B, T, C] -> [B, nh, T, hs]
        q, k, v = (t.view(batch, time, self.n_head, head_size).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(batch, time, channels)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()  # exact (erf), approximate="none", as nanoGPT
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        # The registration order fixes named_parameters()' order, which the exactness test's
        # weight formula enumerates: wte, wpe, the blocks, ln_f (lm_head's weight is wte's).
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Tied: one tensor, trained by both uses; state_dict() still lists both names.
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        # GPT-2's scaled init of the projections that write into the residual stream.
        for name, parameter in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self, non_embedding=False):
        """Every parameter once (the tied wte/lm_head weight counts once); without the position
        embeddings when non_embedding, as nanoGPT's get_num_params(True) counts."""
        count = sum(p.numel() for p in self.parameters())
        return count - self.transformer.wpe.weight.numel() if non_embedding else count

    def forward(self, idx, targets=None):
        """idx: [B, T] int64 tokens, T <= block_size. With targets ([B, T], -1 ignored):
        (logits [B, T, V], mean cross-entropy); without: (logits of the last position only,
        [B, 1, V], None), as nanoGPT does for generation."""
        batch, time = idx.shape
        if time > self.config.block_size:
            raise ValueError(f"GPT.forward: expected a sequence of at most block_size "
                             f"{self.config.block_size} tokens, got {time}")
        positions = torch.arange(0, time, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(positions))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, eps=1e-8):
        """nanoGPT's AdamW: weight decay on the matrices and embeddings (dim >= 2), none on the
        biases and LayerNorm weights; the decayed group first. PyTorch's default
        implementation (single-tensor on the CPU, foreach on CUDA: the same arithmetic)."""
        parameters = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in parameters if p.dim() >= 2]
        no_decay = [p for p in parameters if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, eps=eps)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """Appends max_new_tokens sampled tokens to idx ([B, T]) and returns it: each from the
        last block_size tokens' next-token distribution, logits divided by temperature, only
        the top_k most likely kept when top_k is given. Call model.eval() first."""
        for _ in range(max_new_tokens):
            context = idx if idx.size(1) <= self.config.block_size else \
                idx[:, -self.config.block_size:]
            logits, _ = self(context)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth_largest, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < kth_largest[:, [-1]]] = -float("inf")
            probabilities = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probabilities, num_samples=1)), dim=1)
        return idx


def get_lr(it, learning_rate, warmup_iters, lr_decay_iters, min_lr):
    """nanoGPT's schedule: the learning rate of the update of step `it` (0-based)."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


TOKEN_FILE_MAGIC = 20240520
TOKEN_FILE_VERSION = 1
TOKEN_FILE_HEADER_INTS = 256  # little-endian int32: magic, version, token count, zeros


def read_token_file(path, vocab_size):
    """The tokens of an llm.c token file as an int64 tensor: 1024-byte header, then `count`
    little-endian uint16 tokens and nothing after them. Raises ValueError naming the file,
    what was expected and what was found on a bad magic, version or count, a size that does
    not match the count, or a token not below vocab_size."""
    header_bytes = TOKEN_FILE_HEADER_INTS * 4
    size = os.path.getsize(path)
    if size < header_bytes:
        raise ValueError(f"token file {path}: {size} bytes, expected at least the "
                         f"{header_bytes}-byte header (truncated file?)")
    with open(path, "rb") as file:
        header = np.frombuffer(file.read(header_bytes), dtype="<i4")
        magic, version, count = (int(v) for v in header[:3])
        if magic != TOKEN_FILE_MAGIC:
            raise ValueError(f"token file {path}: bad magic number {magic}, expected "
                             f"{TOKEN_FILE_MAGIC} (is this an llm.c token file?)")
        if version != TOKEN_FILE_VERSION:
            raise ValueError(f"token file {path}: version {version}, expected "
                             f"{TOKEN_FILE_VERSION}")
        if count < 0:
            raise ValueError(f"token file {path}: token count {count}, expected a "
                             f"non-negative count")
        expected_size = header_bytes + 2 * count
        if size != expected_size:
            raise ValueError(f"token file {path}: {size} bytes, but its header promises {count} "
                             f"tokens, {expected_size} bytes in all (truncated or extra bytes?)")
        tokens = np.frombuffer(file.read(2 * count), dtype="<u2")
    if count > 0 and int(tokens.max()) >= vocab_size:
        first = int(np.argmax(tokens >= vocab_size))
        raise ValueError(f"token file {path}: token {first} is {int(tokens[first])}, expected "
                         f"a token below the vocabulary size {vocab_size}")
    return torch.from_numpy(tokens.astype(np.int64))
