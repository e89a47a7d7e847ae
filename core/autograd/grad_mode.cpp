#include "minidl/core/autograd/grad_mode.h"

namespace minidl {

namespace {
thread_local bool grad_mode_enabled = true;
thread_local bool inference_mode_enabled = false;
}  // namespace

bool GradMode::is_enabled() { return grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { grad_mode_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : previous_grad_mode_(grad_mode_enabled), previous_inference_mode_(inference_mode_enabled) {
  // Entering inference mode switches recording off; leaving it (a nested guard(false))
  // switches it on, as c10::InferenceMode's AutogradState does.
  grad_mode_enabled = !enabled;
  inference_mode_enabled = enabled;
}

InferenceMode::~InferenceMode() {
  grad_mode_enabled = previous_grad_mode_;
  inference_mode_enabled = previous_inference_mode_;
}

bool InferenceMode::is_enabled() { return inference_mode_enabled; }

}  // namespace minidl
