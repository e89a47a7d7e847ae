#pragma once
// OpenBLAS runs on the calling thread; the CPU kernels spread their work over minidl's CPU threads
// themselves (convolution: chunks of samples per thread, ops/cpu/conv.cpp; matmul: matrices and
// blocks of rows per thread, ops/cpu/linalg.cpp).
//
// Why: OpenBLAS keeps a thread pool of its own beside the one that runs minidl's kernels. Each
// threaded call hands work to its workers and back, and the idle workers spin (sched_yield) for a
// while after every call, taking cores that the kernel threads are waiting for. On a 2-core machine
// a LeNet training step (batch 128) took 12.9 ms with OpenBLAS's 2 threads and 8.1 ms with
// OPENBLAS_NUM_THREADS=1, measured back to back (perf showed a fifth of the time in the scheduler
// and sched_yield).
namespace minidl::cpu {

// Sets OpenBLAS to one thread, once per process; cheap afterwards. Call before any BLAS call.
void use_calling_thread_blas();

}  // namespace minidl::cpu
