#include "minidl/optim/lr_scheduler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>
#include <string>
#include <string_view>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

std::string indexed(const char* prefix, size_t index) {
  return std::string(prefix) + "." + std::to_string(index);
}

// Schedulers set momentum through the options' generic scalar form, so they work with any
// optimizer whose options have a "momentum".
void set_momentum(OptimizerOptions& options, double momentum, const char* scheduler) {
  ScalarMap scalars = options.to_scalars();
  const auto found = scalars.find("momentum");
  MINIDL_CHECK(found != scalars.end(), scheduler, ": cycle_momentum needs an optimizer with a ",
               "'momentum' option");
  found->second = momentum;
  options.load_scalars(scalars, scheduler);
}

}  // namespace

// ---- LRScheduler ----

namespace {

std::atomic<uint64_t> schedulers_made{0};

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer)
    : optimizer_(&optimizer), made_at_(schedulers_made++) {
  for (const OptimizerParamGroup& group : optimizer.param_groups())
    base_lrs_.push_back(group.options().get_lr());
}

std::optional<double> LRScheduler::momentum_at(int64_t, size_t) const { return std::nullopt; }

double LRScheduler::chained_lr(double, int64_t epoch, size_t group) const {
  return lr_at(epoch, group);
}

double LRScheduler::next_lr(int64_t epoch, size_t group) const { return lr_at(epoch, group); }

void LRScheduler::set_base_lrs(const std::vector<double>& base_lrs) {
  MINIDL_INTERNAL_ASSERT(base_lrs.size() == base_lrs_.size(), name(), ": rebased to ",
                         base_lrs.size(), " lrs, made for ", base_lrs_.size(), " param groups");
  base_lrs_ = base_lrs;
}

void LRScheduler::rebase(LRScheduler& scheduler, const std::vector<double>& base_lrs) {
  scheduler.set_base_lrs(base_lrs);
}

void LRScheduler::adopt_base_lrs_of_first_made(const std::vector<const LRScheduler*>& held) {
  MINIDL_INTERNAL_ASSERT(!held.empty(), name(), " holds no scheduler");
  const LRScheduler* first = *std::min_element(
      held.begin(), held.end(),
      [](const LRScheduler* a, const LRScheduler* b) { return a->made_at_ < b->made_at_; });
  made_at_ = first->made_at_;
  set_base_lrs(std::vector<double>(first->base_lrs_));  // a copy: set_base_lrs may rebase `first`
}

void LRScheduler::initial_step() { apply(0); }

void LRScheduler::step() { apply(last_epoch_ + 1); }

void LRScheduler::apply(int64_t epoch) {
  std::vector<OptimizerParamGroup>& groups = optimizer_->param_groups();
  MINIDL_CHECK(groups.size() == base_lrs_.size(), name(), ": the optimizer has ", groups.size(),
               " param groups, but the scheduler was made for ", base_lrs_.size());
  // Everything is computed before anything is set, so an error (OneCycleLR past its end)
  // leaves the optimizer as it was.
  std::vector<double> lrs;
  std::vector<std::optional<double>> momenta;
  for (size_t g = 0; g < groups.size(); ++g) {
    lrs.push_back(next_lr(epoch, g));
    momenta.push_back(momentum_at(epoch, g));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].options().set_lr(lrs[g]);
    if (momenta[g]) set_momentum(groups[g].options(), *momenta[g], name());
  }
  last_epoch_ = epoch;
  last_lrs_ = std::move(lrs);
}

ScalarMap LRScheduler::state_dict() const {
  ScalarMap state{{"last_epoch", static_cast<double>(last_epoch_)}};
  for (size_t g = 0; g < base_lrs_.size(); ++g) state[indexed("base_lrs", g)] = base_lrs_[g];
  for (size_t g = 0; g < last_lrs_.size(); ++g) state[indexed("last_lrs", g)] = last_lrs_[g];
  save_settings(state);
  return state;
}

namespace {

// Whether `key` says where a scheduler stands rather than what it schedules: "last_epoch" and
// "last_lrs.<g>", its own or those of a scheduler it holds ("schedulers.1.last_lrs.0").
bool is_position_key(std::string_view key) {
  return key == "last_epoch" || key.ends_with(".last_epoch") || key.starts_with("last_lrs.") ||
         key.find(".last_lrs.") != std::string_view::npos;
}

}  // namespace

ScalarMap LRScheduler::schedule() const {
  ScalarMap schedule = state_dict();
  std::erase_if(schedule, [](const auto& entry) { return is_position_key(entry.first); });
  return schedule;
}

void LRScheduler::load_state_dict(const ScalarMap& state) {
  // All or nothing: on an error, the scheduler goes back to what it was.
  const ScalarMap previous = state_dict();
  try {
    ScalarMapReader reader(state, std::string(name()) + " load_state_dict");
    const int64_t epoch = reader.integer("last_epoch");
    std::vector<double> base_lrs, last_lrs;
    for (size_t g = 0; g < base_lrs_.size(); ++g) {
      base_lrs.push_back(reader.number(indexed("base_lrs", g)));
      last_lrs.push_back(reader.number(indexed("last_lrs", g)));
    }
    load_settings(reader);
    reader.finish();
    last_epoch_ = epoch;
    base_lrs_ = std::move(base_lrs);
    last_lrs_ = std::move(last_lrs);
  } catch (...) {
    ScalarMapReader restore(previous, name());
    load_settings(restore);
    throw;
  }
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  MINIDL_CHECK(step_size > 0, "StepLR: expected step_size > 0, got ", step_size);
  initial_step();
}

double StepLR::lr_at(int64_t epoch, size_t group) const {
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

double StepLR::chained_lr(double lr, int64_t epoch, size_t) const {
  return epoch == 0 || epoch % step_size_ != 0 ? lr : lr * gamma_;
}

void StepLR::save_settings(ScalarMap& state) const {
  state["step_size"] = static_cast<double>(step_size_);
  state["gamma"] = gamma_;
}

void StepLR::load_settings(ScalarMapReader& reader) {
  const int64_t step_size = reader.integer("step_size");
  MINIDL_CHECK(step_size > 0, "StepLR load_state_dict: expected step_size > 0, got ", step_size);
  step_size_ = step_size;
  gamma_ = reader.number("gamma");
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

double MultiStepLR::lr_at(int64_t epoch, size_t group) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(passed));
}

double MultiStepLR::chained_lr(double lr, int64_t epoch, size_t) const {
  const auto [first, last] = std::equal_range(milestones_.begin(), milestones_.end(), epoch);
  if (first == last) return lr;
  return lr * std::pow(gamma_, static_cast<double>(last - first));
}

void MultiStepLR::save_settings(ScalarMap& state) const {
  state["gamma"] = gamma_;
  state["num_milestones"] = static_cast<double>(milestones_.size());
  for (size_t i = 0; i < milestones_.size(); ++i)
    state[indexed("milestones", i)] = static_cast<double>(milestones_[i]);
}

void MultiStepLR::load_settings(ScalarMapReader& reader) {
  const double gamma = reader.number("gamma");
  const int64_t count = reader.integer("num_milestones");
  MINIDL_CHECK(count >= 0, "MultiStepLR load_state_dict: num_milestones is ", count);
  std::vector<int64_t> milestones;
  for (int64_t i = 0; i < count; ++i)
    milestones.push_back(reader.integer(indexed("milestones", static_cast<size_t>(i))));
  std::sort(milestones.begin(), milestones.end());
  gamma_ = gamma;
  milestones_ = std::move(milestones);
}

// ---- ExponentialLR ----

namespace {

void check_exponential(double gamma, const char* where) {
  MINIDL_CHECK(gamma > 0 && std::isfinite(gamma), where, ": expected a finite gamma > 0, got ",
               gamma);
}

void check_polynomial(int64_t total_iters, double power, const char* where) {
  MINIDL_CHECK(total_iters >= 1, where, ": expected total_iters >= 1, got ", total_iters);
  // A negative power makes the lr infinite at total_iters (PyTorch: ZeroDivisionError).
  MINIDL_CHECK(power >= 0 && std::isfinite(power), where, ": expected a finite power >= 0, got ",
               power);
}

}  // namespace

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  check_exponential(gamma, "ExponentialLR");
  initial_step();
}

double ExponentialLR::lr_at(int64_t epoch, size_t group) const {
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(epoch));
}

double ExponentialLR::chained_lr(double lr, int64_t epoch, size_t) const {
  return epoch == 0 ? lr : lr * gamma_;
}

void ExponentialLR::save_settings(ScalarMap& state) const { state["gamma"] = gamma_; }

void ExponentialLR::load_settings(ScalarMapReader& reader) {
  const double gamma = reader.number("gamma");
  check_exponential(gamma, "ExponentialLR load_state_dict");
  gamma_ = gamma;
}

// ---- PolynomialLR ----

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  check_polynomial(total_iters, power, "PolynomialLR");
  initial_step();
}

double PolynomialLR::lr_at(int64_t epoch, size_t group) const {
  // PyTorch's _get_closed_form_lr, in its order of operations.
  const double total = static_cast<double>(total_iters_);
  return base_lrs_[group] *
         std::pow(1.0 - static_cast<double>(std::min(total_iters_, epoch)) / total, power_);
}

double PolynomialLR::chained_lr(double lr, int64_t epoch, size_t) const {
  if (epoch == 0 || epoch > total_iters_) return lr;
  // PyTorch's get_lr: the ratio of this epoch's factor to the last one's (0 at total_iters).
  const double total = static_cast<double>(total_iters_);
  const double decay = std::pow(
      (1.0 - static_cast<double>(epoch) / total) / (1.0 - static_cast<double>(epoch - 1) / total),
      power_);
  return lr * decay;
}

void PolynomialLR::save_settings(ScalarMap& state) const {
  state["total_iters"] = static_cast<double>(total_iters_);
  state["power"] = power_;
}

void PolynomialLR::load_settings(ScalarMapReader& reader) {
  const int64_t total_iters = reader.integer("total_iters");
  const double power = reader.number("power");
  check_polynomial(total_iters, power, "PolynomialLR load_state_dict");
  total_iters_ = total_iters;
  power_ = power;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  MINIDL_CHECK(T_max > 0, "CosineAnnealingLR: expected T_max > 0, got ", T_max);
  initial_step();
}

double CosineAnnealingLR::lr_at(int64_t epoch, size_t group) const {
  // PyTorch's _get_closed_form_lr, in its order of operations.
  return eta_min_ + (base_lrs_[group] - eta_min_) *
                        (1 + std::cos(std::numbers::pi * static_cast<double>(epoch) /
                                      static_cast<double>(T_max_))) /
                        2;
}

double CosineAnnealingLR::chained_lr(double lr, int64_t epoch, size_t group) const {
  if (epoch == 0) return lr;
  // PyTorch's get_lr, in its order of operations. Where the closed form turns up again from
  // eta_min (one epoch after T_max, 3 T_max, ...), the ratio of cosines would divide by zero,
  // so it adds the closed form's first step instead.
  const double pi = std::numbers::pi, T_max = static_cast<double>(T_max_);
  if ((epoch - 1 - T_max_) % (2 * T_max_) == 0)
    return lr + (base_lrs_[group] - eta_min_) * (1 - std::cos(pi / T_max)) / 2;
  return (1 + std::cos(pi * static_cast<double>(epoch) / T_max)) /
             (1 + std::cos(pi * static_cast<double>(epoch - 1) / T_max)) * (lr - eta_min_) +
         eta_min_;
}

void CosineAnnealingLR::save_settings(ScalarMap& state) const {
  state["T_max"] = static_cast<double>(T_max_);
  state["eta_min"] = eta_min_;
}

void CosineAnnealingLR::load_settings(ScalarMapReader& reader) {
  const int64_t T_max = reader.integer("T_max");
  MINIDL_CHECK(T_max > 0, "CosineAnnealingLR load_state_dict: expected T_max > 0, got ", T_max);
  T_max_ = T_max;
  eta_min_ = reader.number("eta_min");
}

// ---- LinearWarmup ----

namespace {

Optimizer& optimizer_of(const std::unique_ptr<LRScheduler>& wrapped) {
  MINIDL_CHECK(wrapped != nullptr, "LinearWarmup: the scheduler to wrap is null");
  return wrapped->optimizer();
}

void check_warmup(int64_t warmup_steps, double start_factor, const char* where) {
  MINIDL_CHECK(warmup_steps > 0, where, ": expected warmup_steps > 0, got ", warmup_steps);
  MINIDL_CHECK(start_factor >= 0 && start_factor <= 1, where, ": expected start_factor in ",
               "[0, 1], got ", start_factor);
}

}  // namespace

LinearWarmup::LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor)
    : LRScheduler(optimizer), warmup_steps_(warmup_steps), start_factor_(start_factor) {
  check_warmup(warmup_steps, start_factor, "LinearWarmup");
  initial_step();
}

LinearWarmup::LinearWarmup(std::unique_ptr<LRScheduler> wrapped, int64_t warmup_steps,
                           double start_factor)
    : LRScheduler(optimizer_of(wrapped)),
      wrapped_(std::move(wrapped)),
      warmup_steps_(warmup_steps),
      start_factor_(start_factor) {
  check_warmup(warmup_steps, start_factor, "LinearWarmup");
  MINIDL_CHECK(wrapped_->base_lrs().size() == base_lrs_.size(), "LinearWarmup: the wrapped ",
               wrapped_->name(), " was made for ", wrapped_->base_lrs().size(),
               " param groups, but the optimizer has ", base_lrs_.size());
  // The lrs found by the wrapped scheduler, before it set its own.
  adopt_base_lrs_of_first_made({wrapped_.get()});
  initial_step();
}

double LinearWarmup::factor_at(int64_t epoch) const {
  // PyTorch LinearLR's closed form with end_factor 1, in its order of operations.
  return start_factor_ + (1.0 - start_factor_) *
                             static_cast<double>(std::min(warmup_steps_, epoch)) /
                             static_cast<double>(warmup_steps_);
}

double LinearWarmup::lr_at(int64_t epoch, size_t group) const {
  const double scaled = wrapped_ ? wrapped_->lr_at(epoch, group) : base_lrs_[group];
  return scaled * factor_at(epoch);
}

double LinearWarmup::chained_lr(double lr, int64_t epoch, size_t group) const {
  MINIDL_CHECK(start_factor_ > 0, "LinearWarmup: cannot chain a warmup with start_factor 0 ",
               "(chaining divides by the factor of the epoch before); expected start_factor > 0");
  const double scaled = wrapped_ ? wrapped_->chained_lr(lr, epoch, group) : lr;
  // PyTorch LinearLR's get_lr with end_factor 1, in its order of operations.
  if (epoch == 0) return scaled * start_factor_;
  if (epoch > warmup_steps_) return scaled;
  const double rise = 1.0 - start_factor_;
  return scaled * (1.0 + rise / (static_cast<double>(warmup_steps_) * start_factor_ +
                                 static_cast<double>(epoch - 1) * rise));
}

void LinearWarmup::set_base_lrs(const std::vector<double>& base_lrs) {
  LRScheduler::set_base_lrs(base_lrs);
  if (wrapped_) rebase(*wrapped_, base_lrs);
}

std::optional<double> LinearWarmup::momentum_at(int64_t epoch, size_t group) const {
  return wrapped_ ? wrapped_->momentum_at(epoch, group) : std::nullopt;
}

void LinearWarmup::save_settings(ScalarMap& state) const {
  state["warmup_steps"] = static_cast<double>(warmup_steps_);
  state["start_factor"] = start_factor_;
  if (wrapped_)
    for (const auto& [key, value] : wrapped_->state_dict()) state["wrapped." + key] = value;
}

void LinearWarmup::load_settings(ScalarMapReader& reader) {
  const int64_t warmup_steps = reader.integer("warmup_steps");
  const double start_factor = reader.number("start_factor");
  check_warmup(warmup_steps, start_factor, "LinearWarmup load_state_dict");
  if (wrapped_) wrapped_->load_state_dict(reader.take_prefixed("wrapped."));
  warmup_steps_ = warmup_steps;
  start_factor_ = start_factor;
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  configure(options);
  initial_step();
}

void OneCycleLR::configure(const OneCycleLROptions& options) {
  const size_t num_groups = optimizer().param_groups().size();
  const std::vector<double>& max_lrs = options.max_lrs();
  MINIDL_CHECK(max_lrs.size() == 1 || max_lrs.size() == num_groups, "OneCycleLR: expected one ",
               "max_lr, or one per param group (", num_groups, "), got ", max_lrs.size());
  MINIDL_CHECK(options.total_steps() > 0, "OneCycleLR: expected total_steps > 0, got ",
               options.total_steps());
  MINIDL_CHECK(options.pct_start() >= 0 && options.pct_start() <= 1, "OneCycleLR: expected ",
               "pct_start in [0, 1], got ", options.pct_start());
  MINIDL_CHECK(options.div_factor() > 0 && options.final_div_factor() > 0,
               "OneCycleLR: ", "expected div_factor and final_div_factor > 0, got ",
               options.div_factor(), " and ", options.final_div_factor());
  if (options.cycle_momentum())
    for (const OptimizerParamGroup& group : optimizer().param_groups())
      MINIDL_CHECK(group.options().to_scalars().count("momentum") != 0,
                   "OneCycleLR: ", "cycle_momentum needs an optimizer with a 'momentum' option");

  options_ = options;
  max_lrs_.clear();
  initial_lrs_.clear();
  min_lrs_.clear();
  for (size_t g = 0; g < num_groups; ++g) {
    max_lrs_.push_back(max_lrs.size() == 1 ? max_lrs[0] : max_lrs[g]);
    initial_lrs_.push_back(max_lrs_.back() / options.div_factor());
    min_lrs_.push_back(initial_lrs_.back() / options.final_div_factor());
  }
  base_lrs_ = initial_lrs_;  // PyTorch's initial_lr

  const double steps = static_cast<double>(options.total_steps());
  const double warm_end = options.pct_start() * steps - 1;
  const double low = options.base_momentum(), high = options.max_momentum();
  if (options.three_phase()) {
    phases_ = {{warm_end, Point::kInitial, Point::kMax, high, low},
               {2 * options.pct_start() * steps - 2, Point::kMax, Point::kInitial, low, high},
               {steps - 1, Point::kInitial, Point::kMin, high, high}};
  } else {
    phases_ = {{warm_end, Point::kInitial, Point::kMax, high, low},
               {steps - 1, Point::kMax, Point::kMin, low, high}};
  }
}

double OneCycleLR::lr_of(Point point, size_t group) const {
  switch (point) {
    case Point::kInitial: return initial_lrs_[group];
    case Point::kMax: return max_lrs_[group];
    case Point::kMin: return min_lrs_[group];
  }
  return 0;
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::locate(int64_t epoch) const {
  MINIDL_CHECK(epoch <= options_.total_steps(), "OneCycleLR: tried to step ", epoch,
               " times; the specified number of total steps is ", options_.total_steps());
  const double step = static_cast<double>(epoch);
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (step <= phase.end_step || i + 1 == phases_.size()) {
      // PyTorch fails here too (ZeroDivisionError), e.g. for pct_start * total_steps == 1.
      MINIDL_CHECK(phase.end_step != start, "OneCycleLR: step ", epoch, " falls in phase ", i + 1,
                   ", which starts and ends at step ", start, "; expected phases of non-zero ",
                   "length (change total_steps or pct_start)");
      // Epoch T (after the last batch) holds the end of the last phase; see the header.
      return {&phase, std::min((step - start) / (phase.end_step - start), 1.0)};
    }
    start = phase.end_step;
  }
  MINIDL_INTERNAL_ASSERT(false, "OneCycleLR has no phases");
  return {nullptr, 0};
}

double OneCycleLR::lr_at(int64_t epoch, size_t group) const {
  const auto [phase, fraction] = locate(epoch);
  const double start = lr_of(phase->start_lr, group), end = lr_of(phase->end_lr, group);
  return (end - start) * fraction + start;
}

std::optional<double> OneCycleLR::momentum_at(int64_t epoch, size_t) const {
  if (!options_.cycle_momentum()) return std::nullopt;
  const auto [phase, fraction] = locate(epoch);
  return (phase->end_momentum - phase->start_momentum) * fraction + phase->start_momentum;
}

void OneCycleLR::save_settings(ScalarMap& state) const {
  state["total_steps"] = static_cast<double>(options_.total_steps());
  state["pct_start"] = options_.pct_start();
  state["div_factor"] = options_.div_factor();
  state["final_div_factor"] = options_.final_div_factor();
  state["three_phase"] = options_.three_phase() ? 1 : 0;
  state["cycle_momentum"] = options_.cycle_momentum() ? 1 : 0;
  state["base_momentum"] = options_.base_momentum();
  state["max_momentum"] = options_.max_momentum();
  for (size_t g = 0; g < max_lrs_.size(); ++g) state[indexed("max_lrs", g)] = max_lrs_[g];
}

void OneCycleLR::load_settings(ScalarMapReader& reader) {
  std::vector<double> max_lrs;
  for (size_t g = 0; g < max_lrs_.size(); ++g)
    max_lrs.push_back(reader.number(indexed("max_lrs", g)));
  OneCycleLROptions options(std::move(max_lrs), reader.integer("total_steps"));
  options.pct_start(reader.number("pct_start"))
      .div_factor(reader.number("div_factor"))
      .final_div_factor(reader.number("final_div_factor"))
      .three_phase(reader.boolean("three_phase"))
      .cycle_momentum(reader.boolean("cycle_momentum"))
      .base_momentum(reader.number("base_momentum"))
      .max_momentum(reader.number("max_momentum"));
  const std::vector<double> base_lrs = base_lrs_;
  configure(options);
  base_lrs_ = base_lrs;  // LRScheduler::load_state_dict sets them from the state
}

}  // namespace minidl::optim
