#pragma once
// Note [bfloat16 loops on AVX-512]: minidl is compiled for baseline x86-64, where a loop over
// bfloat16 converts one element at a time (the rounding of BFloat16(float) in core/half.h is
// integer arithmetic the baseline cannot vectorise well). The hot contiguous bfloat16 loops (batch
// norm's planes, ops/cpu/norm.cpp; the element-wise ops' flat loop, ops/cpu/elementwise.cpp) are
// compiled a second time for AVX-512, where the compiler converts 16 at a time, and chosen at run
// time by has_avx512(). The arithmetic is the same, so are the bits: a file with such loops is
// compiled with -ffp-contract=off (CMakeLists.txt), so that neither version contracts a * b + c
// into an FMA the other does not have.
//
// Measured on a 2-core AMD EPYC with AVX-512 BF16 (2026-11-26), ResNet-20 bf16 NCHW, batch 512:
// batch norm's input-gradient pass went from 12.2% of the step to 1.6% (step 536 -> 454 ms).

namespace minidl::cpu {

#if defined(__x86_64__)
// Whether this CPU runs the MINIDL_AVX512 versions.
inline bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
}
// Compiles a function for AVX-512 (what has_avx512() checks); the inline functions it calls are
// compiled into it with the same instructions.
#define MINIDL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
inline bool has_avx512() { return false; }
#define MINIDL_AVX512
#endif

}  // namespace minidl::cpu
