#include "minidl/optim/scheduler_composition.h"

#include <algorithm>
#include <string>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

using Schedulers = std::vector<std::unique_ptr<LRScheduler>>;

// The first scheduler's optimizer, which a ChainedScheduler schedules.
Optimizer& first_optimizer(const Schedulers& schedulers, const char* composition) {
  MINIDL_CHECK(!schedulers.empty(), composition, ": expected at least one scheduler, got none");
  MINIDL_CHECK(schedulers.front() != nullptr, composition, ": scheduler 0 is null");
  return schedulers.front()->optimizer();
}

// Every scheduler is there, schedules `optimizer` and was made for its param groups.
void check_schedulers(const Schedulers& schedulers, const Optimizer& optimizer,
                      const char* composition) {
  MINIDL_CHECK(!schedulers.empty(), composition, ": expected at least one scheduler, got none");
  const size_t num_groups = optimizer.param_groups().size();
  for (size_t i = 0; i < schedulers.size(); ++i) {
    MINIDL_CHECK(schedulers[i] != nullptr, composition, ": scheduler ", i, " is null");
    const LRScheduler& scheduler = *schedulers[i];
    MINIDL_CHECK(&scheduler.optimizer() == &optimizer, composition, ": scheduler ", i, " (",
                 scheduler.name(), ") schedules another optimizer; expected every scheduler to ",
                 "schedule the ", composition, "'s optimizer");
    MINIDL_CHECK(scheduler.base_lrs().size() == num_groups, composition, ": scheduler ", i, " (",
                 scheduler.name(), ") was made for ", scheduler.base_lrs().size(),
                 " param groups, but the optimizer has ", num_groups);
  }
}

void check_milestones(const std::vector<int64_t>& milestones, size_t num_schedulers,
                      const char* where) {
  MINIDL_CHECK(milestones.size() + 1 == num_schedulers, where, ": expected one milestone fewer ",
               "than schedulers (", num_schedulers - 1, " for ", num_schedulers, "), got ",
               milestones.size());
  for (size_t i = 0; i < milestones.size(); ++i) {
    // At a milestone of 0 the first scheduler would never run.
    MINIDL_CHECK(milestones[i] > 0, where, ": expected milestones > 0, got ", milestones[i]);
    MINIDL_CHECK(i == 0 || milestones[i] > milestones[i - 1], where, ": expected strictly ",
                 "increasing milestones, got ", milestones[i], " after ", milestones[i - 1]);
  }
}

std::vector<const LRScheduler*> pointers(const Schedulers& schedulers) {
  std::vector<const LRScheduler*> raw;
  for (const std::unique_ptr<LRScheduler>& scheduler : schedulers) raw.push_back(scheduler.get());
  return raw;
}

std::string scheduler_prefix(size_t index) { return "schedulers." + std::to_string(index) + "."; }

std::string milestone_key(size_t index) { return "milestones." + std::to_string(index); }

void save_schedulers(const Schedulers& schedulers, ScalarMap& state) {
  for (size_t i = 0; i < schedulers.size(); ++i)
    for (const auto& [key, value] : schedulers[i]->state_dict())
      state[scheduler_prefix(i) + key] = value;
}

// Each scheduler's load_state_dict is all or nothing; LRScheduler::load_state_dict restores
// the ones loaded before a failing one.
void load_schedulers(const Schedulers& schedulers, ScalarMapReader& reader) {
  for (size_t i = 0; i < schedulers.size(); ++i)
    schedulers[i]->load_state_dict(reader.take_prefixed(scheduler_prefix(i)));
}

}  // namespace

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::unique_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  check_schedulers(schedulers_, optimizer, "SequentialLR");
  check_milestones(milestones_, schedulers_.size(), "SequentialLR");
  adopt_base_lrs_of_first_made(pointers(schedulers_));
  initial_step();
}

std::pair<const LRScheduler*, int64_t> SequentialLR::running_at(int64_t epoch) const {
  // PyTorch's bisect_right: a scheduler starts at its milestone.
  const size_t index = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
  return {schedulers_[index].get(), index == 0 ? 0 : milestones_[index - 1]};
}

double SequentialLR::lr_at(int64_t epoch, size_t group) const {
  const auto [scheduler, start] = running_at(epoch);
  return scheduler->lr_at(epoch - start, group);
}

double SequentialLR::chained_lr(double lr, int64_t epoch, size_t group) const {
  if (epoch == 0) return schedulers_.front()->chained_lr(base_lrs_[group], 0, group);
  const auto [scheduler, start] = running_at(epoch);
  if (epoch == start) return scheduler->lr_at(0, group);
  return scheduler->chained_lr(lr, epoch - start, group);
}

std::optional<double> SequentialLR::momentum_at(int64_t epoch, size_t group) const {
  const auto [scheduler, start] = running_at(epoch);
  return scheduler->momentum_at(epoch - start, group);
}

void SequentialLR::set_base_lrs(const std::vector<double>& base_lrs) {
  LRScheduler::set_base_lrs(base_lrs);
  for (const std::unique_ptr<LRScheduler>& scheduler : schedulers_) rebase(*scheduler, base_lrs);
}

void SequentialLR::save_settings(ScalarMap& state) const {
  for (size_t i = 0; i < milestones_.size(); ++i)
    state[milestone_key(i)] = static_cast<double>(milestones_[i]);
  save_schedulers(schedulers_, state);
}

void SequentialLR::load_settings(ScalarMapReader& reader) {
  std::vector<int64_t> milestones;
  for (size_t i = 0; i + 1 < schedulers_.size(); ++i)
    milestones.push_back(reader.integer(milestone_key(i)));
  check_milestones(milestones, schedulers_.size(), "SequentialLR load_state_dict");
  load_schedulers(schedulers_, reader);
  milestones_ = std::move(milestones);
}

// ---- ChainedScheduler ----

ChainedScheduler::ChainedScheduler(std::vector<std::unique_ptr<LRScheduler>> schedulers)
    : LRScheduler(first_optimizer(schedulers, "ChainedScheduler")),
      schedulers_(std::move(schedulers)) {
  check_schedulers(schedulers_, optimizer(), "ChainedScheduler");
  adopt_base_lrs_of_first_made(pointers(schedulers_));
  initial_step();
}

double ChainedScheduler::lr_at(int64_t epoch, size_t group) const {
  double lr = chained_lr(base_lrs_[group], 0, group);
  for (int64_t e = 1; e <= epoch; ++e) lr = chained_lr(lr, e, group);
  return lr;
}

double ChainedScheduler::next_lr(int64_t epoch, size_t group) const {
  return chained_lr(epoch == 0 ? base_lrs_[group] : get_last_lr()[group], epoch, group);
}

double ChainedScheduler::chained_lr(double lr, int64_t epoch, size_t group) const {
  for (const std::unique_ptr<LRScheduler>& scheduler : schedulers_)
    lr = scheduler->chained_lr(lr, epoch, group);
  return lr;
}

std::optional<double> ChainedScheduler::momentum_at(int64_t epoch, size_t group) const {
  std::optional<double> momentum;
  for (const std::unique_ptr<LRScheduler>& scheduler : schedulers_)
    if (const std::optional<double> set = scheduler->momentum_at(epoch, group)) momentum = set;
  return momentum;
}

void ChainedScheduler::set_base_lrs(const std::vector<double>& base_lrs) {
  LRScheduler::set_base_lrs(base_lrs);
  for (const std::unique_ptr<LRScheduler>& scheduler : schedulers_) rebase(*scheduler, base_lrs);
}

void ChainedScheduler::save_settings(ScalarMap& state) const {
  save_schedulers(schedulers_, state);
}

void ChainedScheduler::load_settings(ScalarMapReader& reader) {
  load_schedulers(schedulers_, reader);
}

}  // namespace minidl::optim
