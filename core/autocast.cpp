// Autocast state, guards and the weight cache (Note [Autocast weight cache] in autocast.h).
#include "minidl/core/autocast.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <memory>
#include <tuple>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/logging.h"

namespace minidl::amp {

namespace {

struct CacheEntry {
  std::weak_ptr<TensorImpl> source;  // expired once the leaf is gone (its address may be reused)
  uint64_t version = 0;
  bool with_graph = false;  // whether `cast` was recorded for autograd
  Tensor cast;
};

using CacheKey = std::tuple<const TensorImpl*, DType, MemoryFormat>;

// Per thread, as in PyTorch: autocast is a property of the code a thread runs.
struct AutocastState {
  bool enabled = false;
  DType dtype = kBFloat16;
  int guard_depth = 0;  // AutocastGuards alive; the cache lives while this is > 0
  std::map<CacheKey, CacheEntry> cache;
};

thread_local AutocastState state;

std::atomic<bool> grad_scaler_constructed{false};
std::atomic<bool> fp16_warning_logged{false};

bool entry_is_valid(const CacheEntry& entry, const Tensor& leaf, bool with_graph) {
  if (entry.source.expired() || entry.version != leaf.version()) return false;
  if (entry.with_graph != with_graph) return false;
  // A backward without retain_graph released the cast's node: cast again so a second forward
  // in the same region (gradient accumulation) gets a graph it can walk.
  return !with_graph || (entry.cast.grad_fn() != nullptr && !entry.cast.grad_fn()->released());
}

Tensor cast_to(const Tensor& leaf, DType dtype, MemoryFormat format) {
  Tensor cast = leaf.to(dtype);
  return format == MemoryFormat::Contiguous ? cast : cast.contiguous(format);
}

// Drops entries whose leaf is gone, so a long region over changing leaves stays small.
void prune_expired(std::map<CacheKey, CacheEntry>& cache) {
  for (auto it = cache.begin(); it != cache.end();)
    it = it->second.source.expired() ? cache.erase(it) : std::next(it);
}

constexpr size_t kPruneThreshold = 1024;

}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled)
    : previous_enabled_(state.enabled), previous_dtype_(state.dtype) {
  MINIDL_CHECK(dtype == kFloat16 || dtype == kBFloat16, "AutocastGuard: expected kFloat16 or ",
               "kBFloat16, got ", dtype);
  if (enabled && dtype == kFloat16 && GradMode::is_enabled() &&
      !grad_scaler_constructed.load(std::memory_order_relaxed) &&
      !fp16_warning_logged.exchange(true)) {
    logger().warn(
        "autocast to float16 with gradients but no GradScaler: small float16 "
        "gradients underflow to zero without loss scaling; use amp::GradScaler, or "
        "bfloat16, which needs none");
  }
  state.enabled = enabled;
  if (enabled) state.dtype = dtype;
  ++state.guard_depth;
}

AutocastGuard::~AutocastGuard() {
  state.enabled = previous_enabled_;
  state.dtype = previous_dtype_;
  if (--state.guard_depth == 0) state.cache.clear();
}

NoAutocastGuard::NoAutocastGuard() : previous_enabled_(state.enabled) { state.enabled = false; }

NoAutocastGuard::~NoAutocastGuard() { state.enabled = previous_enabled_; }

bool is_autocast_enabled() { return state.enabled; }

DType autocast_dtype() { return state.dtype; }

Tensor cached_cast(const Tensor& leaf, DType dtype, MemoryFormat format) {
  MINIDL_CHECK(leaf.defined() && leaf.is_floating_point(), "autocast cached_cast: expected a ",
               "defined floating-point tensor");
  if (state.guard_depth == 0) return cast_to(leaf, dtype, format);
  const bool with_graph = autograd::needs_grad({leaf});
  const CacheKey key{leaf.unsafe_impl(), dtype, format};
  auto found = state.cache.find(key);
  if (found != state.cache.end() && entry_is_valid(found->second, leaf, with_graph))
    return found->second.cast;
  if (state.cache.size() >= kPruneThreshold) prune_expired(state.cache);
  Tensor cast = cast_to(leaf, dtype, format);
  state.cache[key] = CacheEntry{leaf.impl_ptr(), leaf.version(), with_graph, cast};
  return cast;
}

size_t cast_cache_size() { return state.cache.size(); }

namespace detail {
void note_grad_scaler_constructed() {
  grad_scaler_constructed.store(true, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace minidl::amp
