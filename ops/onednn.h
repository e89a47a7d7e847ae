#pragma once
// Whether minidl's CPU convolutions, and its batch norm in training on float32 channels-last
// input, run on oneDNN (Intel's Deep Neural Network Library, Debian's libdnnl-dev), as
// torch.backends.mkldnn.enabled says for PyTorch's. oneDNN is used where it takes the
// convolution (float32, and bfloat16 on CPUs with AVX-512); the rest, float64 among them, runs
// on minidl's own im2col + OpenBLAS kernels (ops/cpu/conv.cpp) and batch-norm kernels
// (ops/cpu/norm.cpp), which are also what everything runs on when oneDNN is switched off, at
// build time (-DMINIDL_ONEDNN=OFF) or here.
#include <cstdint>

namespace minidl {

// Whether this build of minidl has oneDNN.
bool onednn_available();

// On by default when available; the environment variable MINIDL_ONEDNN=0 starts a process with
// it off (to compare both paths in one program, as tools/bench/bench_compare.py does). Call between
// ops. Switching it on in a build without oneDNN changes nothing.
void set_onednn_enabled(bool enabled);
bool onednn_enabled();  // available and switched on

// Whether the CPU has the AVX-512 BF16 instructions that oneDNN's bfloat16 kernels use
// (`avx512_bf16` in /proc/cpuinfo); false without oneDNN. bfloat16 convolutions' weight gradients
// go to oneDNN only then (ops/cpu/onednn_conv.h).
bool onednn_bfloat16_instructions();

// How many oneDNN primitives (convolutions, batch norms and reorders) this process has created. A
// training loop creates its primitives in the first step and reuses them afterwards
// (ops/cpu/onednn_*).
int64_t onednn_primitives_created();

}  // namespace minidl
