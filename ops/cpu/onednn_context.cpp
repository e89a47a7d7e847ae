#include "minidl/ops/cpu/onednn_context.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <atomic>

#include "minidl/core/logging.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/onednn.h"

namespace minidl {

namespace {
std::atomic<int64_t> primitives_made{0};
}  // namespace

bool onednn_available() { return true; }

int64_t onednn_primitives_created() { return primitives_made.load(std::memory_order_relaxed); }

bool onednn_bfloat16_instructions() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
}

namespace cpu::onednn {

OneOpenMPThread::OneOpenMPThread() : saved_(omp_get_max_threads()) {
  if (saved_ != 1) omp_set_num_threads(1);
}

OneOpenMPThread::~OneOpenMPThread() {
  if (saved_ != 1) omp_set_num_threads(saved_);
}

const dnnl::engine& engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

void execute(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args) {
  const OneOpenMPThread one_thread;
  thread_local dnnl::stream stream(engine());
  primitive.execute(stream, args);
  stream.wait();
}

void execute_reorder(const dnnl::reorder& reorder, const dnnl::memory& from, const dnnl::memory& to,
                     const char* what) {
  const ProfileEvent event(what);
  execute(reorder, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attributes;
}

void count_primitive() { primitives_made.fetch_add(1, std::memory_order_relaxed); }

dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, engine(), const_cast<void*>(data));
}

dnnl::memory scratchpad_memory(void* data, size_t bytes) {
  const dnnl::memory::desc desc({static_cast<int64_t>(bytes)}, dnnl::memory::data_type::u8,
                                dnnl::memory::format_tag::x);
  return dnnl::memory(desc, engine(), data);
}

void log_refusal(const char* op, const char* why) {
  logger().debug("{}: oneDNN does not take this input ({}); using minidl's own kernels", op, why);
}

}  // namespace cpu::onednn

}  // namespace minidl
