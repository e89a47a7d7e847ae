// InferenceMode: recording off for its scope, is_enabled(), nesting (with InferenceMode(false)
// switching recording back on), restoring on exit and on an exception, and per-thread state.
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

Tensor leaf() { return tensor({1.0, 2.0, 3.0}).requires_grad_(); }

TEST(InferenceMode, NothingIsRecordedInside) {
  Tensor x = leaf();
  EXPECT_FALSE(InferenceMode::is_enabled());
  Tensor inside;
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
    inside = (x * x).sum();
    EXPECT_FALSE(inside.requires_grad());
    EXPECT_EQ(inside.grad_fn(), nullptr);
    EXPECT_EQ(inside.item<float>(), 14.0f);  // computed all the same
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(GradMode::is_enabled());
  Tensor outside = (x * x).sum();
  EXPECT_NE(outside.grad_fn(), nullptr);
  outside.backward();
  EXPECT_EQ(to_vector<float>(x.grad()), (std::vector<float>{2, 4, 6}));
  // Unlike PyTorch's inference tensors, a result made inside is an ordinary tensor later.
  Tensor mixed = (inside * x).sum();
  EXPECT_NE(mixed.grad_fn(), nullptr);
}

TEST(InferenceMode, NestsAndRestoresEachLevel) {
  Tensor x = leaf();
  {
    InferenceMode outer;
    {
      InferenceMode inner;
      EXPECT_TRUE(InferenceMode::is_enabled());
      EXPECT_EQ((x * 2).grad_fn(), nullptr);
    }
    EXPECT_TRUE(InferenceMode::is_enabled());  // the inner guard put back the outer state
    EXPECT_FALSE(GradMode::is_enabled());
    {
      InferenceMode off(false);  // recording back on for this scope, as in LibTorch
      EXPECT_FALSE(InferenceMode::is_enabled());
      EXPECT_TRUE(GradMode::is_enabled());
      EXPECT_NE((x * 2).grad_fn(), nullptr);
    }
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_EQ((x * 2).grad_fn(), nullptr);
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_NE((x * 2).grad_fn(), nullptr);
}

TEST(InferenceMode, RestoresAGradModeThatWasAlreadyOff) {
  NoGradGuard no_grad;
  {
    InferenceMode guard;
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_FALSE(GradMode::is_enabled());  // not switched on by the inference guard's exit
  EXPECT_FALSE(InferenceMode::is_enabled());
}

TEST(InferenceMode, RestoresOnAnException) {
  try {
    InferenceMode guard;
    throw std::runtime_error("leaving the scope early");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(InferenceMode, IsPerThread) {
  InferenceMode guard;
  bool other_thread_inference = true, other_thread_grad = false;
  std::thread other([&] {
    other_thread_inference = InferenceMode::is_enabled();
    other_thread_grad = GradMode::is_enabled();
  });
  other.join();
  EXPECT_FALSE(other_thread_inference);
  EXPECT_TRUE(other_thread_grad);
  EXPECT_TRUE(InferenceMode::is_enabled());
}

}  // namespace
}  // namespace minidl
