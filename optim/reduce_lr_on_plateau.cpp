#include "minidl/optim/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

std::string indexed(const char* prefix, size_t index) {
  return std::string(prefix) + "." + std::to_string(index);
}

void check_options(const ReduceLROnPlateauOptions& options, size_t num_groups, const char* where) {
  MINIDL_CHECK(options.mode() == PlateauMode::kMin || options.mode() == PlateauMode::kMax, where,
               ": expected mode PlateauMode::kMin or PlateauMode::kMax, got ",
               static_cast<int>(options.mode()));
  MINIDL_CHECK(options.threshold_mode() == ThresholdMode::kRelative ||
                   options.threshold_mode() == ThresholdMode::kAbsolute,
               where, ": expected threshold_mode ThresholdMode::kRelative or ",
               "ThresholdMode::kAbsolute, got ", static_cast<int>(options.threshold_mode()));
  MINIDL_CHECK(options.factor() >= 0 && options.factor() < 1, where,
               ": expected factor in [0, 1), got ", options.factor());
  MINIDL_CHECK(options.patience() >= 0, where, ": expected patience >= 0, got ",
               options.patience());
  MINIDL_CHECK(options.cooldown() >= 0, where, ": expected cooldown >= 0, got ",
               options.cooldown());
  MINIDL_CHECK(options.threshold() >= 0 && std::isfinite(options.threshold()), where,
               ": expected a finite threshold >= 0, got ", options.threshold());
  // best * (1 - threshold) would be <= 0: no positive metric could ever be better.
  MINIDL_CHECK(options.mode() == PlateauMode::kMax ||
                   options.threshold_mode() == ThresholdMode::kAbsolute || options.threshold() < 1,
               where, ": expected threshold < 1 for mode kMin with a relative threshold, got ",
               options.threshold());
  MINIDL_CHECK(options.eps() >= 0, where, ": expected eps >= 0, got ", options.eps());
  const std::vector<double>& min_lrs = options.min_lrs();
  if (options.min_lr_per_group())
    MINIDL_CHECK(min_lrs.size() == num_groups, where, ": expected one min_lr per param group (",
                 num_groups, "), got ", min_lrs.size());
  else
    MINIDL_CHECK(min_lrs.size() == 1, where, ": expected one min_lr, got ", min_lrs.size());
  for (const double min_lr : min_lrs)
    MINIDL_CHECK(min_lr >= 0 && std::isfinite(min_lr), where,
                 ": expected finite min_lrs >= 0, got ", min_lr);
}

// The worst metric of the mode, which any finite metric beats.
double worst_metric(PlateauMode mode) {
  const double infinity = std::numeric_limits<double>::infinity();
  return mode == PlateauMode::kMin ? infinity : -infinity;
}

}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options)
    : optimizer_(&optimizer), options_(options), best_(worst_metric(options.mode())) {
  check_options(options, optimizer.param_groups().size(), "ReduceLROnPlateau");
  last_lrs_ = current_lrs();
}

std::vector<double> ReduceLROnPlateau::current_lrs() const {
  std::vector<double> lrs;
  for (const OptimizerParamGroup& group : optimizer_->param_groups())
    lrs.push_back(group.options().get_lr());
  return lrs;
}

double ReduceLROnPlateau::min_lr(size_t group) const {
  return options_.min_lrs()[options_.min_lr_per_group() ? group : 0];
}

bool ReduceLROnPlateau::is_better(double metric) const {
  // PyTorch's _is_better, in its order of operations.
  const double threshold = options_.threshold();
  const bool relative = options_.threshold_mode() == ThresholdMode::kRelative;
  if (options_.mode() == PlateauMode::kMin)
    return relative ? metric < best_ * (1.0 - threshold) : metric < best_ - threshold;
  return relative ? metric > best_ * (threshold + 1.0) : metric > best_ + threshold;
}

void ReduceLROnPlateau::step(double metric) {
  std::vector<OptimizerParamGroup>& groups = optimizer_->param_groups();
  // Checked before anything changes (PyTorch checks when it reduces).
  MINIDL_CHECK(!options_.min_lr_per_group() || options_.min_lrs().size() == groups.size(),
               "ReduceLROnPlateau: the optimizer has ", groups.size(), " param groups, but ",
               "min_lrs has ", options_.min_lrs().size(), " (one per group when the scheduler ",
               "was made); expected one min_lr per group, or one min_lr for all");
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > options_.patience()) {
    for (size_t g = 0; g < groups.size(); ++g) {
      OptimizerOptions& group_options = groups[g].options();
      const double old_lr = group_options.get_lr();
      const double new_lr = std::max(old_lr * options_.factor(), min_lr(g));
      if (old_lr - new_lr > options_.eps()) group_options.set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lrs_ = current_lrs();
}

void ReduceLROnPlateau::save_settings(ScalarMap& state) const {
  state["mode"] = options_.mode() == PlateauMode::kMin ? 0 : 1;
  state["factor"] = options_.factor();
  state["patience"] = static_cast<double>(options_.patience());
  state["threshold"] = options_.threshold();
  state["threshold_mode"] = options_.threshold_mode() == ThresholdMode::kRelative ? 0 : 1;
  state["cooldown"] = static_cast<double>(options_.cooldown());
  state["eps"] = options_.eps();
  if (options_.min_lr_per_group()) {
    for (size_t g = 0; g < options_.min_lrs().size(); ++g)
      state[indexed("min_lrs", g)] = options_.min_lrs()[g];
  } else {
    state["min_lr"] = options_.min_lrs().front();
  }
}

ReduceLROnPlateauOptions ReduceLROnPlateau::load_settings(ScalarMapReader& reader,
                                                          size_t num_groups) {
  const char* where = "ReduceLROnPlateau load_state_dict";
  const int64_t mode = reader.integer("mode");
  MINIDL_CHECK(mode == 0 || mode == 1, where, ": expected 'mode' 0 (min) or 1 (max), got ", mode);
  const int64_t threshold_mode = reader.integer("threshold_mode");
  MINIDL_CHECK(threshold_mode == 0 || threshold_mode == 1, where,
               ": expected 'threshold_mode' 0 (relative) or 1 (absolute), got ", threshold_mode);
  ReduceLROnPlateauOptions options;
  options.mode(mode == 0 ? PlateauMode::kMin : PlateauMode::kMax)
      .factor(reader.number("factor"))
      .patience(reader.integer("patience"))
      .threshold(reader.number("threshold"))
      .threshold_mode(threshold_mode == 0 ? ThresholdMode::kRelative : ThresholdMode::kAbsolute)
      .cooldown(reader.integer("cooldown"))
      .eps(reader.number("eps"));
  if (reader.contains("min_lr")) {
    options.min_lr(reader.number("min_lr"));
  } else {
    std::vector<double> min_lrs;
    for (size_t g = 0; g < num_groups; ++g) min_lrs.push_back(reader.number(indexed("min_lrs", g)));
    options.min_lrs(std::move(min_lrs));
  }
  check_options(options, num_groups, where);
  return options;
}

ScalarMap ReduceLROnPlateau::state_dict() const {
  ScalarMap state{{"last_epoch", static_cast<double>(last_epoch_)},
                  {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
                  {"cooldown_counter", static_cast<double>(cooldown_counter_)}};
  if (std::isfinite(best_))
    state["best"] = best_;
  else
    state["best_infinity"] = best_ > 0 ? 1 : -1;
  for (size_t g = 0; g < last_lrs_.size(); ++g) state[indexed("last_lrs", g)] = last_lrs_[g];
  save_settings(state);
  return state;
}

ScalarMap ReduceLROnPlateau::schedule() const {
  ScalarMap settings;
  save_settings(settings);
  return settings;
}

void ReduceLROnPlateau::load_state_dict(const ScalarMap& state) {
  // Everything is read and checked before anything is set, so an error changes nothing.
  const char* where = "ReduceLROnPlateau load_state_dict";
  ScalarMapReader reader(state, where);
  const size_t num_groups = optimizer_->param_groups().size();
  const int64_t last_epoch = reader.integer("last_epoch");
  const int64_t num_bad_epochs = reader.integer("num_bad_epochs");
  const int64_t cooldown_counter = reader.integer("cooldown_counter");
  MINIDL_CHECK(last_epoch >= 0 && num_bad_epochs >= 0 && cooldown_counter >= 0, where,
               ": expected last_epoch, num_bad_epochs and cooldown_counter >= 0, got ", last_epoch,
               ", ", num_bad_epochs, " and ", cooldown_counter);
  double best = 0;
  if (reader.contains("best")) {
    best = reader.number("best");
  } else {
    const int64_t sign = reader.integer("best_infinity");
    MINIDL_CHECK(sign == 1 || sign == -1, where, ": expected 'best_infinity' -1 or 1, got ", sign);
    best = static_cast<double>(sign) * std::numeric_limits<double>::infinity();
  }
  std::vector<double> last_lrs;
  for (size_t g = 0; g < num_groups; ++g) last_lrs.push_back(reader.number(indexed("last_lrs", g)));
  ReduceLROnPlateauOptions options = load_settings(reader, num_groups);
  reader.finish();

  options_ = std::move(options);
  last_epoch_ = last_epoch;
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  cooldown_counter_ = cooldown_counter;
  last_lrs_ = std::move(last_lrs);
}

}  // namespace minidl::optim
