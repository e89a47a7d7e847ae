#pragma once
// MultiTensorOptimizer: the step that SGD, Adam, AdamW and RMSprop share, written once. Each
// optimizer supplies its options, its per-group record (the hyper-parameters its element functor
// reads), its state tensors and which of them a group's parameters keep, and its kernels
// (optim/multi_tensor_kernels.h: one element functor run by both backends). The step then
//  1. checks every group's options and every parameter that has a gradient (floating point,
//     dense, float64 on the CPU only, on the found_inf flag's device) before anything changes;
//  2. lays each gradient out as its parameter, makes missing state in the parameter's layout
//     (see StateInit), and gathers the parameters per (device, dtype) into one multi-tensor
//     table each (Note [Multi-tensor apply] in ops/multi_tensor_table.h);
//  3. per table: increments the step counts (optimizers that keep one), then updates; on CUDA
//     one launch each per (device, dtype), on the CPU each tensor's loop split across threads;
//  4. bumps the version of every parameter and state tensor it wrote.
// It runs under NoGradGuard. step_unless_found_inf decides on the device: the CUDA kernels read
// the flag and return at once when it is set, so the host never waits, and a skipped step leaves
// the step counts alone too, so skipped steps and CUDA-graph replays count exactly as eager
// steps.
//
// A step captured into a CUDA graph (core/cuda/graph.h) launches the same kernels on a table of
// the graph's own, whose group records are rewritten from the param groups' options before
// every replay, so a scheduler's lr applies to replays as to eager steps (Note [Multi-tensor
// steps under CUDA graph capture] in multi_tensor_optimizer.cpp). The state must exist before
// the capture (one eager step), and the param groups and the state their options keep must not
// change after it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/core/tensor.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/optimizer.h"

namespace minidl {
class MultiTensorTable;
namespace cuda {
class CudaGraph;
}
}  // namespace minidl

namespace minidl::optim {

// How a state tensor is made, on a parameter's first step (or when its options first need it).
enum class StateInit {
  // Zeros in the parameter's layout (Adam's moments, RMSprop's averages).
  kZeros,
  // Uninitialised, in the parameter's layout: the first step writes it without reading it (SGD's
  // momentum buffer). Zeros when the step carries a device found_inf flag, since the step may
  // then be skipped and the next one would read it.
  kWrittenByFirstStep,
  // A 0-dim float32 zero on the parameter's device: the number of steps taken, as PyTorch's
  // "step", incremented on the device before each update.
  kStepCount,
  // Filled, in the parameter's layout, with the value state_fill_value() gives (Adagrad's sum:
  // initial_accumulator_value).
  kFilled,
};

// One state tensor per parameter: its state_dict key, the words for it in messages, and how it
// starts.
struct StateList {
  const char* key;          // "momentum_buffer"
  const char* description;  // "momentum buffer"
  StateInit init;
};

class MultiTensorOptimizer : public Optimizer {
 public:
  ~MultiTensorOptimizer() override;

  void step() override;
  // On CUDA the kernels read `found_inf` on the device and return at once when it is nonzero, so
  // the host never waits; on the CPU the flag is read directly.
  void step_unless_found_inf(const Tensor& found_inf) override;

  // Counters of the CUDA path, for tests and benchmarks: kernel launches (the step-count
  // increments included) and table uploads.
  struct FusedStats {
    uint64_t kernel_launches = 0;
    uint64_t table_uploads = 0;
  };
  FusedStats fused_stats() const;

 protected:
  explicit MultiTensorOptimizer(std::unique_ptr<OptimizerOptions> defaults);

  // For the derived constructor (check_options is virtual, so this constructor cannot): checks
  // the defaults and adds the groups; at least one parameter is required.
  void add_initial_groups(const std::vector<OptimizerParamGroup>& groups);

  // ---- what each optimizer supplies ----
  // Its state tensors, in table-list order (list kFirstStateList + k is state_lists()[k]).
  virtual const std::vector<StateList>& state_lists() const = 0;
  // Bit k set: a parameter of a group with these (checked) options keeps state_lists()[k].
  virtual uint32_t state_mask(const OptimizerOptions& options) const = 0;
  // Appends the group's record (what the element functor reads as Op::Group) to `records`.
  virtual void append_group_record(const OptimizerOptions& options,
                                   std::vector<std::byte>& records) const = 0;
  // The value a kFilled state tensor of a parameter in a group with these options starts with.
  virtual double state_fill_value(const OptimizerOptions& group_options) const;
  // Runs the update of one table of parameters on `device`: kernels_for<Kernels>(device).update
  // (optim/multi_tensor_kernels.h).
  virtual void update(Device device, const MultiTensorArgs& args) const = 0;
  // Before each replay of a captured step: throws, naming `where`, when `now` keeps other state
  // than `at_capture` did (the captured table's lists are fixed).
  virtual void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                             const OptimizerOptions& now,
                                             const std::string& where) const = 0;

  // Appends `record` to `records` byte for byte (for append_group_record).
  template <class Record>
  static void append_record(const Record& record, std::vector<std::byte>& records) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&record);
    records.insert(records.end(), bytes, bytes + sizeof(Record));
  }

 private:
  void check_state_entry(const Tensor& param, const std::string& key, const Tensor& value,
                         const std::string& where) const override;
  Tensor make_loaded_state(const Tensor& param, const std::string& key,
                           const Tensor& value) const override;
  const StateList* find_state_list(const std::string& key) const;
  int step_count_list() const;  // the table list of the step count, or -1
  // step() with an optional found_inf flag (undefined: always update).
  void run_step(const Tensor& found_inf);
  // The device table for a step being captured into `graph`, kept by one of its replay hooks.
  const void* captured_device_table(cuda::CudaGraph& graph, const MultiTensorTable& table,
                                    int device_index);
  // Every group's record now, checked against the options at the capture (for replay hooks).
  std::vector<std::byte> group_records_for_replay(
      const std::vector<std::unique_ptr<OptimizerOptions>>& options_at_capture) const;

  // One table per (CUDA device index or -1 for the CPU, dtype), kept between steps.
  std::map<std::pair<int, DType>, std::unique_ptr<MultiTensorTable>> tables_;
  uint64_t kernel_launches_ = 0;
  // Replay hooks hold it weakly: after the optimizer is gone, a graph keeps its last records.
  std::shared_ptr<MultiTensorOptimizer*> alive_;
};

// A MultiTensorOptimizer whose options are Options (options held in a record, optim/option_list.h)
// and whose update is the element functor Op, which reads that record as its Op::Group: the
// group records and the kernels follow from the two (Note [Optimizer updates] in
// optim/multi_tensor_kernels.h). The optimizer adds its checks, its state and its name.
template <class Options, template <class> class Op>
class ElementwiseOptimizer : public MultiTensorOptimizer {
 protected:
  explicit ElementwiseOptimizer(const Options& defaults) : MultiTensorOptimizer(defaults.clone()) {}

  // `options` as this optimizer's own, or an error naming `where`.
  static const Options& options_of(const OptimizerOptions& options, const std::string& where) {
    const auto* own = dynamic_cast<const Options*>(&options);
    MINIDL_CHECK(own != nullptr, where, ": expected ", Options::kName,
                 ", got the options of another optimizer");
    return *own;
  }

 private:
  void append_group_record(const OptimizerOptions& options,
                           std::vector<std::byte>& records) const override {
    static_assert(std::is_same_v<typename Op<float>::Group,
                                 std::decay_t<decltype(std::declval<Options>().record())>>,
                  "the element functor reads the options' record");
    append_record(options_of(options, name()).record(), records);
  }
  void update(Device device, const MultiTensorArgs& args) const override {
    kernels_for<UpdateKernels<Op>>(device).update(args);
  }
};

}  // namespace minidl::optim
