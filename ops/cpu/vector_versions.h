#pragma once
// Note [Loops compiled for AVX-512 and AVX2]: minidl is compiled for baseline x86-64 (SSE2, 4
// float lanes). A few hot loops are compiled a second and third time, for AVX-512 (16 lanes) and
// AVX2 (8 lanes), and chosen at run time by has_avx512() and has_avx2():
// - bfloat16 loops (batch norm's planes, ops/cpu/norm.cpp; the element-wise ops' flat loop,
//   ops/cpu/elementwise.cpp; conversions, ops/cpu/copy.cpp), for AVX-512 only: the rounding of
//   BFloat16(float) in core/half.h is integer arithmetic the baseline converts one element at a
//   time, AVX-512 16 at a time. Measured on a 2-core AMD EPYC with AVX-512 BF16 (2026-11-26),
//   ResNet-20 bf16 NCHW, batch 512: batch norm's input-gradient pass went from 12.2% of the step
//   to 1.6% (step 536 -> 454 ms).
// - the float functions of ops/cpu/vectorisable_math.h (exp, sigmoid, silu, gelu and their
//   derivatives in the element-wise flat loop; attention's score tiles; cross-entropy's rows),
//   for AVX-512 and AVX2: they are compute-bound. On a 2-core AMD EPYC with AVX2 (2026-11-29),
//   16M float32 elements on one thread, the AVX2 loop against the baseline's: exp 18.3 against
//   45.0 ms, gelu 31.7 against 85.5, sigmoid 22.6 against 52.8 (docs/benchmarks.md).
// The arithmetic is the same in every version, so are the bits. A file with such loops is compiled
// with -ffp-contract=off (CMakeLists.txt), so that no version contracts a * b + c into an FMA
// another does not have (MINIDL_AVX2 leaves FMA out too), and with -fno-trapping-math: GCC 12
// otherwise keeps two float comparisons in a row (exp's clamps to [-104, 88.8]) as branches in
// every version but AVX-512's masked one, and vectorises none of those loops.
#include <vector>

namespace minidl::cpu {

#if defined(__x86_64__)
// Whether this CPU runs the MINIDL_AVX512 versions.
inline bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
}
// Whether this CPU runs the MINIDL_AVX2 versions.
inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
// Compile a function for AVX-512 resp. AVX2 (what has_avx512() and has_avx2() check); the inline
// functions it calls are compiled into it with the same instructions.
#define MINIDL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define MINIDL_AVX2 __attribute__((target("avx2")))
#else
inline bool has_avx512() { return false; }
inline bool has_avx2() { return false; }
#define MINIDL_AVX512
#define MINIDL_AVX2
#endif

// Which compiled version of a file's loops runs: the best this CPU has, AVX2 (or the baseline
// where the CPU has no AVX2), or the baseline. Best is for the library; the others let the tests
// check that every version gives the same bits.
enum class LoopVersion { Best, Avx2, Baseline };
inline bool runs_avx512(LoopVersion version) {
  return version == LoopVersion::Best && has_avx512();
}
inline bool runs_avx2(LoopVersion version) {
  return version != LoopVersion::Baseline && has_avx2();
}

// The versions this CPU runs, the baseline first.
inline std::vector<LoopVersion> loop_versions_of_this_cpu() {
  std::vector<LoopVersion> versions{LoopVersion::Baseline};
  if (has_avx2()) versions.push_back(LoopVersion::Avx2);
  if (has_avx512()) versions.push_back(LoopVersion::Best);
  return versions;
}

}  // namespace minidl::cpu
