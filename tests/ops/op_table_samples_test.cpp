// The operator table's sample-input rows (tests/ops/op_table_samples.h) on the CPU: for every
// sample of every row, PyTorch's outputs in each dtype the script computed them in and its
// float64 gradients (tests/ops/op_sample_reference.h), a central-difference gradient check,
// the same values from strided (transposed) and channels-last inputs, and the row's error cases.
#include "op_table_samples.h"

#include <gtest/gtest.h>

#include <string>

#include "minidl/core/autograd/gradcheck.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::sample_tensor;
using testing::SampleInputs;
using testing::SampleOutputTensors;
using testing::SampleReference;
using testing::SampleRow;
using testing::SampleTensor;
using testing::weighted_loss;

DType dtype_called(const std::string& name) {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16})
    if (name == dtype_name(dtype)) return dtype;
  throw std::runtime_error("op_sample_reference.h names an unknown dtype " + name);
}

SampleInputs sample_inputs(const SampleReference& r, DType dtype) {
  SampleInputs inputs;
  for (const SampleTensor& t : r.inputs) inputs.push_back(sample_tensor(t, dtype));
  return inputs;
}

// The same values in a transposed layout (strides reversed), for inputs of two dims or more.
Tensor strided(const Tensor& x) {
  if (x.dim() < 2) return x;
  return x.transpose(0, -1).contiguous().transpose(0, -1);
}

// Tolerances against PyTorch, per dtype of the floating inputs: both round each op's result
// once from float32 (the 16-bit types) or the dtype itself, but in their own order of
// summation, so a few ulps of the result's dtype; rows with long sums scale them.
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType dtype, double scale) {
  switch (dtype) {
    case kFloat64: return {1e-13 * scale, 1e-12 * scale};
    case kFloat32: return {2e-6 * scale, 2e-6 * scale};
    case kFloat16: return {2e-3 * scale, 2e-3 * scale};  // two ulps: 2^-10
    default: return {1.6e-2 * scale, 1.6e-2 * scale};    // bfloat16, two ulps: 2^-7
  }
}

class SampleOpTable : public ::testing::TestWithParam<SampleRow> {
 protected:
  std::vector<const SampleReference*> references() const {
    auto found = testing::sample_references(GetParam().name);
    EXPECT_FALSE(found.empty()) << GetParam().name << " has no reference: add it to SAMPLE in "
                                << "tools/reference/make_op_reference.py and rerun the script";
    return found;
  }
  SampleOutputTensors op(const SampleInputs& inputs) const { return GetParam().op(inputs); }
};

TEST_P(SampleOpTable, MatchesPyTorchInEveryDtype) {
  int sample = 0;
  for (const SampleReference* r : references()) {
    for (const testing::SampleOutputs& expected : r->outputs) {
      const DType dtype = dtype_called(expected.dtype);
      SCOPED_TRACE("sample " + std::to_string(sample) + ", " + expected.dtype);
      const SampleOutputTensors outputs = op(sample_inputs(*r, dtype));
      ASSERT_EQ(outputs.size(), expected.outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k) {
        SCOPED_TRACE("output " + std::to_string(k));
        const SampleTensor& want = expected.outputs[k];
        EXPECT_EQ(outputs[k].sizes(), Shape(want.shape));
        const DType want_dtype = want.kind == 'i' ? kInt64 : want.kind == 'b' ? kBool : dtype;
        EXPECT_EQ(outputs[k].dtype(), want_dtype);
        if (outputs[k].sizes() != Shape(want.shape)) continue;
        const Tolerance t = tolerance(dtype, GetParam().tolerance_scale);
        EXPECT_TRUE(
            all_close(outputs[k].to(kFloat64), sample_tensor(want, kFloat64), t.atol, t.rtol));
      }
    }
    ++sample;
  }
}

TEST_P(SampleOpTable, GradientsMatchPyTorchAndCentralDifferences) {
  int sample = 0;
  for (const SampleReference* r : references()) {
    SCOPED_TRACE("sample " + std::to_string(sample++));
    SampleInputs inputs = sample_inputs(*r, kFloat64);
    std::vector<size_t> differentiable;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (r->inputs[j].kind != 'x') continue;
      inputs[j].requires_grad_();
      differentiable.push_back(j);
    }
    if (differentiable.empty()) continue;
    ASSERT_EQ(r->grads.size(), differentiable.size());
    const Tensor loss = weighted_loss(op(inputs));
    if (loss.defined() && loss.requires_grad()) loss.backward();
    for (size_t g = 0; g < differentiable.size(); ++g) {
      const SampleTensor& input = r->inputs[differentiable[g]];
      const Tensor want = sample_tensor({'x', input.shape, r->grads[g]}, kFloat64);
      const Tensor grad = inputs[differentiable[g]].grad();
      const Tensor got = grad.defined() ? grad : zeros(input.shape, kFloat64);
      EXPECT_TRUE(all_close(got, want, 1e-12, 1e-10)) << "input " << differentiable[g];
    }
    // Central differences of the outputs themselves (every piece, flattened and joined).
    const auto call = [&](const SampleInputs& in) {
      std::vector<Tensor> pieces;
      for (const Tensor& out : op(in))
        if (out.is_floating_point()) pieces.push_back(out.reshape({-1}));
      return cat(pieces, 0);
    };
    SampleInputs leaves = sample_inputs(*r, kFloat64);
    for (size_t j : differentiable) leaves[j].requires_grad_();
    const auto result = gradcheck(call, leaves);
    EXPECT_TRUE(result.ok) << result.message;
  }
}

// The same values in a channels-last layout, for 4-D inputs.
Tensor channels_last(const Tensor& x) {
  return x.dim() == 4 ? x.contiguous(MemoryFormat::ChannelsLast) : x;
}

TEST_P(SampleOpTable, StridedAndChannelsLastInputsGiveTheSameValues) {
  for (const SampleReference* r : references()) {
    for (DType dtype : {kFloat64, kFloat32}) {
      for (const auto layout : {&strided, &channels_last}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) +
                     (layout == &strided ? ", strided" : ", channels-last"));
        const SampleInputs inputs = sample_inputs(*r, dtype);
        SampleInputs views;
        for (const Tensor& x : inputs) views.push_back(layout(x));
        const SampleOutputTensors want = op(inputs), got = op(views);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_EQ(got[k].sizes(), want[k].sizes());
          const Tolerance t = tolerance(dtype, GetParam().tolerance_scale);
          EXPECT_TRUE(all_close(got[k].to(kFloat64), want[k].to(kFloat64), t.atol, t.rtol));
        }
      }
    }
  }
}

TEST_P(SampleOpTable, BadArgumentsAreErrorsNamingTheOp) {
  for (const testing::SampleErrorCase& bad : GetParam().errors)
    EXPECT_ERROR_CONTAINS(bad.call(), bad.message);
}

INSTANTIATE_TEST_SUITE_P(Rows, SampleOpTable, ::testing::ValuesIn(testing::sample_rows()),
                         [](const auto& info) { return info.param.name; });

TEST(SampleOpTable, EveryReferenceHasARowAndEveryRowAReference) {
  for (const SampleReference& reference : testing::sample_references()) {
    bool found = false;
    for (const SampleRow& row : testing::sample_rows()) found = found || row.name == reference.name;
    EXPECT_TRUE(found) << reference.name << " has a reference but no row";
  }
  for (const SampleRow& row : testing::sample_rows())
    EXPECT_FALSE(testing::sample_references(row.name).empty()) << row.name;
}

}  // namespace
}  // namespace minidl
