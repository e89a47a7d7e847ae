#pragma once
// Whether ops record the graph on this thread. NoGradGuard switches recording off for a scope,
// as torch::NoGradGuard does; InferenceMode does the same under LibTorch's other name.
namespace minidl {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// c10::InferenceMode: `InferenceMode guard;` switches recording off for its scope (and
// InferenceMode::is_enabled() on); `InferenceMode guard(false)` inside it switches recording
// back on for a nested scope, as in LibTorch. Guards nest: each restores both states on exit.
//
// Unlike PyTorch, minidl does not mark the tensors made inside as "inference tensors": they are
// ordinary tensors with no grad_fn, exactly as under NoGradGuard, so they may later be used in
// recorded ops or changed in place without the errors PyTorch raises for inference tensors.
// Nor is there a faster path: PyTorch skips version counting and view tracking for inference
// tensors; minidl's ops run the same code as under NoGradGuard.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

  // Whether inference mode is on for this thread: the innermost live guard enabled it.
  static bool is_enabled();

 private:
  bool previous_grad_mode_;
  bool previous_inference_mode_;
};

}  // namespace minidl
