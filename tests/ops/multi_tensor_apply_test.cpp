// The CPU multi-tensor apply (ops/cpu/multi_tensor_apply.h): a functor built once per tensor
// reaches every element of every tensor once, reads its own group's record, and runs in each
// floating dtype; a set skip flag changes nothing.
#include "minidl/ops/cpu/multi_tensor_apply.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "test_util.h"

namespace minidl {
namespace {

struct AxpyGroup {
  double alpha = 0;
};

// y[i] += alpha * x[i], with y in list 0 and x in list 1.
template <class T>
class AxpyOp {
 public:
  using Group = AxpyGroup;
  MINIDL_HOST_DEVICE AxpyOp(const Group& group, const TensorListEntry& entry)
      : alpha_(static_cast<float>(group.alpha)),
        y_(static_cast<T*>(entry.data[0])),
        x_(static_cast<const T*>(entry.data[1])) {}
  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    y_[i] = T(static_cast<float>(y_[i]) + alpha_ * static_cast<float>(x_[i]));
  }

 private:
  float alpha_;
  T* y_;
  const T* x_;
};

struct Apply {
  std::vector<Tensor> ys, xs;
  MultiTensorTable table;

  // Tensors of the given sizes, y = 1 and x = 2 everywhere, alternating between two groups.
  Apply(const std::vector<int64_t>& numels, DType dtype, const std::vector<AxpyGroup>& groups) {
    std::vector<TensorListEntry> entries;
    for (size_t t = 0; t < numels.size(); ++t) {
      ys.push_back(full({numels[t]}, 1.0, TensorOptions(dtype)));
      xs.push_back(full({numels[t]}, 2.0, TensorOptions(dtype)));
      TensorListEntry entry;
      entry.data[0] = ys.back().data_ptr();
      entry.data[1] = xs.back().data_ptr();
      entry.numel = numels[t];
      entry.group = static_cast<int32_t>(t % groups.size());
      entries.push_back(entry);
    }
    table.build(groups, entries);
  }

  void run(DType dtype, const float* skip_flag = nullptr) {
    MultiTensorArgs args;
    args.table = table.image().data();
    args.layout = table.layout();
    args.dtype = dtype;
    args.skip_flag = skip_flag;
    cpu::multi_tensor_apply<AxpyOp>(args, "axpy test");
  }
};

TEST(MultiTensorApplyCpu, EveryElementOfEveryTensorOnceWithItsGroupsRecord) {
  // Sizes below and above the parallel grain (32768), on two threads.
  testing::ScopedThreadCount threads(2);
  const std::vector<int64_t> numels = {1, 7, kDefaultGrain + 3, 3 * kDefaultGrain};
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Apply apply(numels, dtype, {AxpyGroup{0.5}, AxpyGroup{-1.0}});
    apply.run(dtype);
    for (size_t t = 0; t < numels.size(); ++t) {
      // group 0: 1 + 0.5 * 2 = 2; group 1: 1 - 2 = -1 (exact in every dtype)
      const double expected = t % 2 == 0 ? 2.0 : -1.0;
      EXPECT_TRUE(
          testing::all_close(apply.ys[t], full({numels[t]}, expected, TensorOptions(dtype)), 0, 0))
          << "tensor " << t;
    }
  }
}

TEST(MultiTensorApplyCpu, ASetSkipFlagChangesNothing) {
  Apply apply({10, 20}, kFloat32, {AxpyGroup{0.5}});
  const float found_inf = 1.0f;
  apply.run(kFloat32, &found_inf);
  for (const Tensor& y : apply.ys)
    EXPECT_TRUE(testing::all_close(y, full({y.numel()}, 1.0, TensorOptions(kFloat32)), 0, 0));
  const float clear = 0.0f;
  apply.run(kFloat32, &clear);
  for (const Tensor& y : apply.ys)
    EXPECT_TRUE(testing::all_close(y, full({y.numel()}, 2.0, TensorOptions(kFloat32)), 0, 0));
}

TEST(MultiTensorApplyCpu, AnIntegerTableIsAnErrorNamingTheOp) {
  Apply apply({4}, kFloat32, {AxpyGroup{0.5}});
  EXPECT_ERROR_CONTAINS(apply.run(kInt64), "axpy test");
}

}  // namespace
}  // namespace minidl
