// profiler::Profile (core/profile.h): a LeNet training step and a small GPT's on the CPU recorded
// op by op, whose ops' spans cover the step's time within 10% (the target for the trace;
// the GPT's needs a span from each of its forward ops, attention's included), the summary
// table, the Chrome trace's JSON, RecordFunction, one profile at a time, NVTX's switch, and the
// ops' input shapes and dtypes (record_shapes).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace fs = std::filesystem;

// Three LeNet training steps on a batch of 64, each inside RecordFunction("step").
profiler::Profile profile_lenet_steps(profiler::ProfileOptions options = {}) {
  manual_seed(1);
  models::LeNet model;
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  const Tensor images = randn({64, 1, 28, 28});
  const Tensor labels = randint(0, 10, {64});
  auto step = [&] {
    optimizer.zero_grad();
    cross_entropy(model->forward(images), labels).backward();
    optimizer.step();
  };
  step();  // the first step allocates; not profiled
  profiler::Profile profile(options);
  for (int i = 0; i < 3; ++i) {
    profiler::RecordFunction scope("step");
    step();
  }
  profile.stop();
  return profile;
}

// A profile of steps, each inside RecordFunction("step"), on the profiling thread: the steps
// (depth 0), their own ops (depth 1), and the name of every span.
struct ProfiledSteps {
  std::vector<const ProfileSpan*> steps, ops;
  std::set<std::string> names;
};

ProfiledSteps profiled_steps(const profiler::Profile& profile) {
  ProfiledSteps found;
  for (const ProfileSpan& span : profile.spans()) {
    if (span.thread != 0 || span.event) continue;
    if (span.name == "step") {
      EXPECT_EQ(span.depth, 0);
      found.steps.push_back(&span);
    } else if (span.depth == 1) {
      found.ops.push_back(&span);
    }
    found.names.insert(span.name);
  }
  return found;
}

// The largest share of a step's time that its own ops cover; each step's ops are found by their
// start time. The best step is judged: on a loaded machine (CI runs two test programs at once)
// the scheduler can take the core between two ops of any one step, which shows as a gap that is
// not the profiler's (measured: one LeNet step's ops at 88.8% under load).
double best_step_coverage(const ProfiledSteps& profiled, const profiler::Profile& profile) {
  double best = 0.0;
  int64_t steps_ns = 0;
  for (const ProfileSpan* step : profiled.steps) {
    int64_t ops_ns = 0;
    for (const ProfileSpan* op : profiled.ops)
      if (op->start_ns >= step->start_ns && op->start_ns < step->start_ns + step->duration_ns)
        ops_ns += op->duration_ns;
    const double covered = static_cast<double>(ops_ns) / static_cast<double>(step->duration_ns);
    std::cout << "a step's ops cover " << covered * 100 << "% of its time\n";
    EXPECT_LE(covered, 1.0);
    best = std::max(best, covered);
    steps_ns += step->duration_ns;
  }
  EXPECT_LE(static_cast<double>(steps_ns) / 1e6, profile.wall_ms());
  return best;
}

TEST(Profile, ALeNetStepsOpsCoverItsTimeAndNestUnderTheStep) {
  const profiler::Profile profile = profile_lenet_steps();
  const ProfiledSteps profiled = profiled_steps(profile);
  ASSERT_EQ(profiled.steps.size(), 3u);
  // The convolution names its path: "conv2d forward (oneDNN)" or "(im2col)".
  for (const char* op : {"conv2d forward", "relu", "max_pool2d", "gemm", "cross_entropy",
                         "Conv2dBackward", "LinearBackward", "optimizer step"}) {
    const auto found = profiled.names.lower_bound(op);
    EXPECT_TRUE(found != profiled.names.end() && found->rfind(op, 0) == 0) << op << " missing";
  }
  const double best = best_step_coverage(profiled, profile);
  EXPECT_GT(best, 0.9) << "the ops of the best step cover " << best * 100 << "% of its time";
}

// Three training steps of a small GPT (nanoGPT's layers: embeddings, layer norms, causal
// attention, GELU MLPs, the tied head, cross-entropy; AdamW), each inside
// RecordFunction("step"), after one unprofiled step. Big enough that the ops' work outweighs
// what runs between them (the autograd engine's bookkeeping, the views' graph records): at 32
// wide, 16 tokens and batch 4 that was 10-11% of a 1 ms step (measured: 89-90% covered).
profiler::Profile profile_gpt_steps() {
  manual_seed(1);
  models::GPT model(
      models::GPTOptions().vocab_size(64).block_size(32).n_layer(2).n_head(2).n_embd(64));
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(1e-3));
  const Tensor tokens = randint(0, 64, {8, 33});
  const Tensor inputs = tokens.narrow(1, 0, 32).contiguous();
  const Tensor targets = tokens.narrow(1, 1, 32).contiguous();
  auto step = [&] {
    optimizer.zero_grad();
    models::GPTImpl::loss(model->forward(inputs), targets).backward();
    optimizer.step();
  };
  step();
  profiler::Profile profile;
  for (int i = 0; i < 3; ++i) {
    profiler::RecordFunction scope("step");
    step();
  }
  profile.stop();
  return profile;
}

// Every forward op of a GPT opens a span (attention's, the embeddings', softmax's, ...), so a
// step's ops cover it as a LeNet step's do.
TEST(Profile, AGPTStepsOpsCoverItsTime) {
  const profiler::Profile profile = profile_gpt_steps();
  const ProfiledSteps profiled = profiled_steps(profile);
  ASSERT_EQ(profiled.steps.size(), 3u);
  for (const char* op :
       {"scaled_dot_product_attention", "ScaledDotProductAttentionBackward", "embedding",
        "layer_norm", "cross_entropy", "linear", "gelu", "optimizer step"})
    EXPECT_EQ(profiled.names.count(op), 1u) << op << " missing";
  const double best = best_step_coverage(profiled, profile);
  EXPECT_GT(best, 0.9) << "the ops of the best step cover " << best * 100 << "% of its time";
}

TEST(Profile, TheTableAndTheChromeTrace) {
  const profiler::Profile profile = profile_lenet_steps();
  const std::string table = profile.table(100);
  EXPECT_NE(table.find("conv2d"), std::string::npos) << table;
  EXPECT_NE(table.find("self ms"), std::string::npos) << table;
  const auto averages = profile.key_averages();
  ASSERT_FALSE(averages.empty());
  for (size_t i = 1; i < averages.size(); ++i)
    EXPECT_GE(averages[i - 1].self_ms, averages[i].self_ms);
  for (const auto& op : averages) EXPECT_GE(op.total_ms + 1e-9, op.self_ms) << op.name;

  const fs::path path = fs::temp_directory_path() / "minidl-profile-test" / "trace.json";
  fs::create_directories(path.parent_path());
  profile.export_chrome_trace(path);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  const auto& events = trace.at("traceEvents");
  ASSERT_EQ(events.size(), profile.spans().size());
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& event = events[i];
    const ProfileSpan& span = profile.spans()[i];
    EXPECT_EQ(event.at("ph"), "X");
    EXPECT_EQ(event.at("name"), span.name);
    EXPECT_EQ(event.at("tid"), span.thread);
    EXPECT_DOUBLE_EQ(event.at("ts").get<double>(), static_cast<double>(span.start_ns) / 1e3);
    EXPECT_DOUBLE_EQ(event.at("dur").get<double>(), static_cast<double>(span.duration_ns) / 1e3);
  }
}

TEST(Profile, RecordShapesKeepsEachOpsInputsAsItNamedThem) {
  const Tensor x = randn({2, 3}), row = randn({3});
  const Tensor counts = arange(4);
  profiler::Profile profile({.record_shapes = true});
  (void)add(x, row);
  (void)sum(counts);
  (void)layer_norm(x, {3}, Tensor(), Tensor());  // no weight, no bias: undefined inputs
  profile.stop();
  std::map<std::string, const ProfileSpan*> first;
  for (const ProfileSpan& span : profile.spans()) first.emplace(span.name, &span);
  ASSERT_TRUE(first.count("add") && first.count("sum") && first.count("layer_norm"));
  const ProfileSpan& added = *first.at("add");
  EXPECT_EQ(added.input_dims, (std::vector<std::vector<int64_t>>{{2, 3}, {3}}));
  EXPECT_EQ(added.input_types, (std::vector<std::string>{"float32", "float32"}));
  EXPECT_EQ(first.at("sum")->input_dims, (std::vector<std::vector<int64_t>>{{4}}));
  EXPECT_EQ(first.at("sum")->input_types, (std::vector<std::string>{"int64"}));
  const ProfileSpan& normed = *first.at("layer_norm");
  EXPECT_EQ(normed.input_dims, (std::vector<std::vector<int64_t>>{{2, 3}, {}, {}}));
  EXPECT_EQ(normed.input_types, (std::vector<std::string>{"float32", "", ""}));
}

TEST(Profile, ALeNetStepGroupedByInputShapeAndItsTraceArgs) {
  const profiler::Profile profile = profile_lenet_steps({.record_shapes = true});
  // Each convolution's forward once per step, with its own shapes: conv1's and conv2's.
  const std::vector<profiler::OpAverage> grouped = profile.key_averages(true);
  std::map<std::string, int64_t> conv_calls;
  for (const auto& op : grouped)
    if (op.name.rfind("conv2d forward", 0) == 0) conv_calls[op.input_shapes] += op.calls;
  EXPECT_EQ(conv_calls["[[64, 1, 28, 28], [6, 1, 5, 5], [6]]"], 3) << profile.table(100, true);
  EXPECT_EQ(conv_calls["[[64, 6, 14, 14], [16, 6, 5, 5], [16]]"], 3) << profile.table(100, true);
  EXPECT_EQ(conv_calls.size(), 2u) << profile.table(100, true);
  // Grouping splits rows, never calls or time.
  std::map<std::string, int64_t> calls_by_name;
  std::map<std::string, double> self_by_name;
  for (const auto& op : grouped) {
    calls_by_name[op.name] += op.calls;
    self_by_name[op.name] += op.self_ms;
  }
  for (const auto& op : profile.key_averages()) {
    EXPECT_TRUE(op.input_shapes.empty()) << op.name;
    EXPECT_EQ(calls_by_name[op.name], op.calls) << op.name;
    EXPECT_NEAR(self_by_name[op.name], op.self_ms, 1e-9 + 1e-12 * op.self_ms) << op.name;
  }
  EXPECT_NE(profile.table(100, true).find("[[64, 1, 28, 28], [6, 1, 5, 5], [6]]"),
            std::string::npos);

  const fs::path path = fs::temp_directory_path() / "minidl-profile-test" / "shapes.json";
  profile.export_chrome_trace(path);
  std::ifstream in(path);
  const nlohmann::json events = nlohmann::json::parse(in).at("traceEvents");
  ASSERT_EQ(events.size(), profile.spans().size());
  int64_t with_args = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const ProfileSpan& span = profile.spans()[i];
    if (span.event) {
      EXPECT_FALSE(events[i].contains("args"));
      continue;
    }
    EXPECT_EQ(events[i].at("args").at("Input Dims").get<std::vector<std::vector<int64_t>>>(),
              span.input_dims);
    EXPECT_EQ(events[i].at("args").at("Input type").get<std::vector<std::string>>(),
              span.input_types);
    if (!span.input_dims.empty()) ++with_args;
  }
  EXPECT_GT(with_args, 0);
}

TEST(Profile, WithoutRecordShapesNoInputsAndNoGroupingByThem) {
  const profiler::Profile profile = profile_lenet_steps();
  for (const ProfileSpan& span : profile.spans()) {
    EXPECT_TRUE(span.input_dims.empty()) << span.name;
    EXPECT_TRUE(span.input_types.empty()) << span.name;
  }
  EXPECT_ERROR_CONTAINS((void)profile.key_averages(true), "record_shapes");
  EXPECT_THROW(OpProfiler(/*keep_timeline=*/false, /*record_shapes=*/true), Error);
}

// What CUPTI hands a profile on a GPU, made up here: the kernel launched inside add, the copy
// inside mul, and a memset launched outside any op; the ops' ids are their spans'.
TEST(Profile, DeviceActivitiesGoUnderTheOpThatLaunchedThem) {
  const Tensor x = randn({4, 3});
  profiler::Profile profile({.record_shapes = true});
  (void)add(x, x);
  (void)mul(x, x);
  profile.stop();
  uint64_t add_id = 0, mul_id = 0;
  for (const ProfileSpan& span : profile.spans()) {
    if (span.name == "add") add_id = span.id;
    if (span.name == "mul") mul_id = span.id;
  }
  ASSERT_NE(add_id, 0u);
  ASSERT_NE(mul_id, 0u);
  ASSERT_NE(add_id, mul_id);
  const int64_t offset = -1'000'000'000;  // the profile's clock less the device's
  const std::vector<DeviceActivity> activities = {
      {"memcpy HtoD", 1'000'030'000, 1'000'032'000, DeviceActivityKind::kMemcpy, 7, 12},
      {"vectorized_add", 1'000'010'000, 1'000'013'000, DeviceActivityKind::kKernel, 7, 11},
      {"memset", 1'000'040'000, 1'000'041'000, DeviceActivityKind::kMemset, 9, 13}};
  profile.add_device_activities(activities, {{11, add_id}, {12, mul_id}}, offset);

  const std::vector<profiler::DeviceSpan>& device = profile.device_spans();
  ASSERT_EQ(device.size(), 3u);
  EXPECT_EQ(device[0].name, "vectorized_add");  // by start time
  EXPECT_EQ(device[0].start_ns, 10'000);
  EXPECT_EQ(device[0].duration_ns, 3'000);
  EXPECT_EQ(device[0].stream, 7u);
  EXPECT_EQ(device[0].op_id, add_id);
  EXPECT_EQ(device[1].op_id, mul_id);
  EXPECT_EQ(device[2].op_id, 0u);  // launched under no op

  std::map<std::string, double> device_ms;
  for (const auto& op : profile.key_averages()) device_ms[op.name] = op.device_ms;
  EXPECT_DOUBLE_EQ(device_ms["add"], 0.003);
  EXPECT_DOUBLE_EQ(device_ms["mul"], 0.002);
  const std::string table = profile.table();
  EXPECT_NE(table.find("device ms"), std::string::npos) << table;
  EXPECT_NE(table.find("3 device activities, 0.006 ms of device time (0.001 ms launched outside "
                       "any op)"),
            std::string::npos)
      << table;

  const fs::path path = fs::temp_directory_path() / "minidl-profile-test" / "device.json";
  profile.export_chrome_trace(path);
  std::ifstream in(path);
  const nlohmann::json events = nlohmann::json::parse(in).at("traceEvents");
  std::vector<nlohmann::json> on_device, flows_out, flows_in;
  for (const auto& event : events) {
    if (event.at("ph") == "s") flows_out.push_back(event);
    if (event.at("ph") == "f") flows_in.push_back(event);
    if (event.at("ph") == "X" && event.at("pid") == 1) on_device.push_back(event);
    if (event.at("ph") == "X" && event.at("pid") == 0 && event.at("name") == "add")
      EXPECT_EQ(event.at("args").at("External id"), add_id);
  }
  ASSERT_EQ(on_device.size(), 3u);
  EXPECT_EQ(on_device[0].at("name"), "vectorized_add");
  EXPECT_EQ(on_device[0].at("cat"), "kernel");
  EXPECT_EQ(on_device[0].at("tid"), 7);
  EXPECT_DOUBLE_EQ(on_device[0].at("ts").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(on_device[0].at("dur").get<double>(), 3.0);
  EXPECT_EQ(on_device[0].at("args").at("op"), "add");
  EXPECT_EQ(on_device[1].at("cat"), "gpu_memcpy");
  EXPECT_EQ(on_device[1].at("args").at("External id"), mul_id);
  EXPECT_EQ(on_device[2].at("cat"), "gpu_memset");
  EXPECT_FALSE(on_device[2].contains("args"));
  // One arrow per activity launched under an op: from the op's start to the activity's.
  ASSERT_EQ(flows_out.size(), 2u);
  ASSERT_EQ(flows_in.size(), 2u);
  EXPECT_EQ(flows_out[0].at("id"), flows_in[0].at("id"));
  EXPECT_EQ(flows_in[0].at("pid"), 1);
  EXPECT_DOUBLE_EQ(flows_in[0].at("ts").get<double>(), 10.0);
}

TEST(Profile, OneAtATimeAndNothingRecordedWithoutOne) {
  {
    profiler::RecordFunction unrecorded("outside");  // no profile: nothing, no error
  }
  profiler::Profile first;
  EXPECT_THROW(profiler::Profile second, Error);
  first.stop();
  first.stop();  // a second stop changes nothing
  EXPECT_TRUE(first.spans().empty());
  profiler::Profile after;  // the first has stopped: a new one may start
}

TEST(Profile, NvtxRangesWhereCudaIsBuiltAndAClearErrorElsewhere) {
  if (!nvtx_available()) {
    EXPECT_THROW(set_nvtx_enabled(true), Error);
    EXPECT_FALSE(nvtx_enabled());
    set_nvtx_enabled(false);  // switching off is always fine
    return;
  }
  // Without Nsight attached the ranges go nowhere; ops and profiles work as before, and the
  // setting reads back.
  set_nvtx_enabled(true);
  EXPECT_TRUE(nvtx_enabled());
  const profiler::Profile profile = profile_lenet_steps();
  set_nvtx_enabled(false);
  EXPECT_FALSE(nvtx_enabled());
  EXPECT_FALSE(profile.spans().empty());
}

}  // namespace
}  // namespace minidl
