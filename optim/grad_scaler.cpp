#include "minidl/optim/grad_scaler.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/ops/elementwise.h"
#include "minidl/optim/amp_kernels.h"
#include "minidl/optim/cpu/amp_kernel.h"
#include "minidl/optim/cuda/amp_kernel.h"

namespace minidl::amp {

namespace {

bool is_dense_layout(const Tensor& t) {
  return t.is_contiguous() || (t.dim() == 4 && t.is_contiguous(MemoryFormat::ChannelsLast));
}

// The mirror is written by kernels behind the host's back: read it as volatile.
int64_t read_mirror(const std::shared_ptr<int32_t>& mirror) {
  return *static_cast<volatile const int32_t*>(mirror.get());
}

// Note [Consecutive skips]: throws when `skips` exceeds `limit` (0: no limit).
void check_consecutive_skips_limit(int64_t skips, int64_t limit) {
  MINIDL_CHECK(limit == 0 || skips <= limit, "GradScaler: ", skips, " consecutive steps were ",
               "skipped because a gradient was inf or NaN (max_consecutive_skips = ", limit,
               "); a run that only produces inf is broken: check the loss for NaN, lower the ",
               "learning rate, or train in bfloat16");
}

// The graph capturing the current stream of the state's device, if any.
cuda::CudaGraph* capturing_graph_of(const Tensor& state) {
  if (!state.is_cuda()) return nullptr;
  return cuda::capturing_graph(cuda::current_stream(state.device().index));
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), host_scale_(options.init_scale()) {
  check_options();
  if (options_.enabled()) detail::note_grad_scaler_constructed();
}

GradScaler::~GradScaler() = default;

void GradScaler::check_options() const {
  const GradScalerOptions& o = options_;
  // Negated comparisons, so NaN fails them too.
  MINIDL_CHECK(o.init_scale() > 0 && std::isfinite(o.init_scale()), "GradScaler: expected a ",
               "finite init_scale > 0, got ", o.init_scale());
  MINIDL_CHECK(o.growth_factor() > 1 && std::isfinite(o.growth_factor()),
               "GradScaler: ", "expected a finite growth_factor > 1, got ", o.growth_factor());
  MINIDL_CHECK(o.backoff_factor() > 0 && o.backoff_factor() < 1, "GradScaler: expected ",
               "0 < backoff_factor < 1, got ", o.backoff_factor());
  MINIDL_CHECK(
      o.growth_interval() >= 1 && o.growth_interval() <= std::numeric_limits<int32_t>::max(),
      "GradScaler: expected 1 <= growth_interval <= 2^31 - 1, got ", o.growth_interval());
  MINIDL_CHECK(o.min_scale() > 0 && o.min_scale() <= o.init_scale(), "GradScaler: expected ",
               "0 < min_scale <= init_scale (", o.init_scale(), "), got ", o.min_scale());
  MINIDL_CHECK(o.max_consecutive_skips() >= 0 &&
                   o.max_consecutive_skips() <= std::numeric_limits<int32_t>::max(),
               "GradScaler: expected max_consecutive_skips >= 0 (0: no limit), got ",
               o.max_consecutive_skips());
}

optim::ScaleUpdateParameters GradScaler::update_parameters() const {
  optim::ScaleUpdateParameters parameters;
  parameters.growth_factor = static_cast<float>(options_.growth_factor());
  parameters.backoff_factor = static_cast<float>(options_.backoff_factor());
  parameters.min_scale = static_cast<float>(options_.min_scale());
  parameters.growth_interval = static_cast<int32_t>(options_.growth_interval());
  return parameters;
}

void GradScaler::ensure_state(Device device) {
  if (scale_.defined()) {
    MINIDL_CHECK(scale_.device() == device, "GradScaler: its state is on ", scale_.device(),
                 " (placed by the first scale()), got a tensor on ", device,
                 "; use one scaler per device");
    return;
  }
  // Made inside a captured step, the state would be filled with its initial values again at
  // every replay.
  MINIDL_CHECK(!device.is_cuda() || !cuda::is_capturing(cuda::current_stream(device.index)),
               "GradScaler scale: the scaler's state is made by its first scale(), and a CUDA ",
               "graph is being captured; run one step eagerly before capturing (Note [What a ",
               "captured step may do] in core/cuda/graph.h)");
  scale_ = full({}, host_scale_, TensorOptions(kFloat32).device(device));
  growth_tracker_ =
      full({}, static_cast<double>(host_growth_tracker_), TensorOptions(kInt32).device(device));
  consecutive_skips_ =
      full({}, static_cast<double>(host_consecutive_skips_), TensorOptions(kInt32).device(device));
  if constexpr (cuda::kBuilt) {
    if (device.is_cuda())
      skips_mirror_ = cuda::make_host_mirror_int32(static_cast<int32_t>(host_consecutive_skips_));
  }
}

GradScaler::OptimizerRecord& GradScaler::record_of(optim::Optimizer& optimizer) {
  return optimizers_[&optimizer];
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!options_.enabled()) return loss;
  MINIDL_CHECK(loss.defined() && loss.is_floating_point(), "GradScaler scale: expected a ",
               "floating-point loss, got ", loss.defined() ? dtype_name(loss.dtype()) : "none");
  const bool bfloat16 =
      loss.dtype() == kBFloat16 || (is_autocast_enabled() && autocast_dtype() == kBFloat16);
  if (bfloat16 && !warned_bfloat16_) {
    logger().warn(
        "GradScaler: scaling a bfloat16 loss, which needs no scaling: bfloat16 has "
        "float32's exponent range, so its gradients do not underflow (PyTorch uses no "
        "GradScaler with bfloat16). It still works; GradScalerOptions().enabled(false) "
        "turns it off");
    warned_bfloat16_ = true;
  }
  ensure_state(loss.device());
  const Tensor factor = loss.dtype() == kFloat32 ? scale_ : scale_.to(loss.dtype());
  return mul(loss, factor);
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled()) return;
  OptimizerRecord& record = record_of(optimizer);
  MINIDL_CHECK(record.stage != Stage::Unscaled, "GradScaler unscale_: unscale_() has already ",
               "been called on this optimizer since the last update(); expected one call per ",
               "iteration");
  MINIDL_CHECK(record.stage != Stage::Stepped, "GradScaler unscale_: called after step() on ",
               "this optimizer; call unscale_() before step(), and update() after");
  MINIDL_CHECK(scale_.defined(), "GradScaler unscale_: scale() has not been called yet; ",
               "expected scaler.scale(loss).backward() before unscale_() or step()");
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  std::vector<Tensor> params = optimizer.stepped_tensors();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor grad = params[i].grad();
    if (!grad.defined() || grad.numel() == 0) continue;
    MINIDL_CHECK(grad.device() == scale_.device(), "GradScaler unscale_: the gradient of ",
                 "parameter ", i, " (shape ", params[i].sizes(), ") is on ", grad.device(),
                 ", expected ", scale_.device(), " where the scaled loss was");
    MINIDL_CHECK(grad.is_floating_point(), "GradScaler unscale_: the gradient of parameter ", i,
                 " has dtype ", grad.dtype(), ", expected a floating-point gradient");
    if (!is_dense_layout(grad)) {
      // The kernels walk memory; a strided gradient is replaced by a dense copy first.
      params[i].set_grad(grad.contiguous());
      grad = params[i].grad();
    }
    grads.push_back(grad);
  }
  if (!record.found_inf.defined())
    record.found_inf = zeros({}, TensorOptions(kFloat32).device(scale_.device()));
  else
    record.found_inf.zero_();
  kernels_for<optim::AmpKernels>(scale_.device())
      .unscale_and_check(grads, scale_, record.found_inf);
  record.stage = Stage::Unscaled;
}

void GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled()) {
    optimizer.step();
    return;
  }
  OptimizerRecord& record = record_of(optimizer);
  MINIDL_CHECK(record.stage != Stage::Stepped, "GradScaler step: step() has already been ",
               "called on this optimizer since the last update(); expected update() between ",
               "two steps");
  if (record.stage == Stage::Ready) unscale_(optimizer);
  optimizer.step_unless_found_inf(record.found_inf);
  record.stage = Stage::Stepped;
}

void GradScaler::update() {
  if (!options_.enabled()) return;
  NoGradGuard no_grad;
  Tensor found_inf;
  for (auto& [optimizer, record] : optimizers_) {
    if (record.stage == Stage::Ready) continue;
    // Any optimizer's overflow counts: the iteration's scale was too large.
    found_inf = found_inf.defined() ? add(found_inf, record.found_inf) : record.found_inf;
    record.stage = Stage::Ready;
  }
  MINIDL_CHECK(found_inf.defined(), "GradScaler update: no inf/NaN check was recorded since ",
               "the last update(); expected step(optimizer) (or unscale_) before update()");
  const optim::ScaleUpdateParameters parameters = update_parameters();
  // Not a kernel table: the CUDA update also writes the host mirror of the skip counter, which
  // the host reads instead of the device tensor, and a captured update re-checks it at replays.
  if (scale_.is_cpu()) {
    cpu::amp_update_scale(scale_, growth_tracker_, consecutive_skips_, found_inf, parameters);
    check_consecutive_skips(*consecutive_skips_.data_ptr<int32_t>());
  } else if constexpr (cuda::kBuilt) {
    cuda::amp_update_scale(scale_, growth_tracker_, consecutive_skips_, found_inf, parameters,
                           skips_mirror_.get());
    check_consecutive_skips(read_mirror(skips_mirror_));
    // A captured update() does not run on the host at replays: a hook watches the mirror then.
    if (cuda::CudaGraph* graph = capturing_graph_of(scale_))
      graph->add_replay_hook([mirror = skips_mirror_, limit = options_.max_consecutive_skips()] {
        check_consecutive_skips_limit(read_mirror(mirror), limit);
      });
  }
}

void GradScaler::check_consecutive_skips(int64_t skips) const {
  check_consecutive_skips_limit(skips, options_.max_consecutive_skips());
}

void GradScaler::read_back_from_device() {
  if (!scale_.defined()) return;
  host_scale_ = scale_.item<float>();
  host_growth_tracker_ = growth_tracker_.item<int32_t>();
  host_consecutive_skips_ = consecutive_skips_.item<int32_t>();
}

double GradScaler::get_scale() {
  if (!options_.enabled()) return 1.0;
  read_back_from_device();
  check_consecutive_skips(host_consecutive_skips_);
  return host_scale_;
}

optim::ScalarMap GradScaler::state_dict() {
  read_back_from_device();
  check_consecutive_skips(host_consecutive_skips_);
  return {{"scale", host_scale_},
          {"growth_tracker", static_cast<double>(host_growth_tracker_)},
          {"consecutive_skips", static_cast<double>(host_consecutive_skips_)},
          {"init_scale", options_.init_scale()},
          {"growth_factor", options_.growth_factor()},
          {"backoff_factor", options_.backoff_factor()},
          {"growth_interval", static_cast<double>(options_.growth_interval())},
          {"min_scale", options_.min_scale()},
          {"max_consecutive_skips", static_cast<double>(options_.max_consecutive_skips())},
          {"enabled", options_.enabled() ? 1.0 : 0.0}};
}

void GradScaler::load_state_dict(const optim::ScalarMap& state) {
  optim::ScalarMapReader reader(state, "GradScaler load_state_dict");
  const double scale = reader.number("scale");
  const int64_t growth_tracker = reader.integer("growth_tracker");
  const int64_t consecutive_skips = reader.integer("consecutive_skips");
  GradScalerOptions loaded;
  loaded.init_scale(reader.number("init_scale"))
      .growth_factor(reader.number("growth_factor"))
      .backoff_factor(reader.number("backoff_factor"))
      .growth_interval(reader.integer("growth_interval"))
      .min_scale(reader.number("min_scale"))
      .max_consecutive_skips(reader.integer("max_consecutive_skips"))
      .enabled(reader.boolean("enabled"));
  reader.finish();
  MINIDL_CHECK(scale > 0 && std::isfinite(scale), "GradScaler load_state_dict: expected a ",
               "finite scale > 0, got ", scale);
  MINIDL_CHECK(growth_tracker >= 0 && consecutive_skips >= 0, "GradScaler load_state_dict: ",
               "expected growth_tracker >= 0 and consecutive_skips >= 0, got ", growth_tracker,
               " and ", consecutive_skips);
  const GradScalerOptions previous = options_;
  options_ = loaded;
  try {
    check_options();
  } catch (...) {
    options_ = previous;
    throw;
  }
  if (options_.enabled()) detail::note_grad_scaler_constructed();
  host_scale_ = scale;
  host_growth_tracker_ = growth_tracker;
  host_consecutive_skips_ = consecutive_skips;
  if (scale_.defined()) {
    scale_.fill_(host_scale_);
    growth_tracker_.fill_(static_cast<double>(host_growth_tracker_));
    consecutive_skips_.fill_(static_cast<double>(host_consecutive_skips_));
    if (skips_mirror_) *skips_mirror_ = static_cast<int32_t>(host_consecutive_skips_);
  }
  for (auto& [optimizer, record] : optimizers_) record.stage = Stage::Ready;
}

}  // namespace minidl::amp
