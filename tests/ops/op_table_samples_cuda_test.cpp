// The operator table's sample-input rows (tests/ops/op_table_samples.h) on CUDA: for every sample
// of every row, the outputs and the gradients of the script's weighted loss equal the CPU's, in
// float32 and bfloat16 (where the row has bfloat16), within a few ulps of the computing type.
#include <gtest/gtest.h>

#include <string>

#include "op_table_samples.h"
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

bool has_dtype(const SampleReference& r, DType dtype) {
  for (const testing::SampleOutputs& outputs : r.outputs)
    if (std::string(outputs.dtype) == dtype_name(dtype)) return true;
  return false;
}

class SampleOpTableCuda : public ::testing::TestWithParam<SampleRow> {};

TEST_P(SampleOpTableCuda, ValuesAndGradientsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto references = testing::sample_references(GetParam().name);
  ASSERT_FALSE(references.empty());
  const double scale = GetParam().tolerance_scale;
  const std::pair<DType, std::pair<double, double>> cases[] = {
      {kFloat32, {4e-6 * scale, 4e-6 * scale}}, {kBFloat16, {1.6e-2 * scale, 1.6e-2 * scale}}};
  int sample = 0;
  for (const SampleReference* r : references) {
    for (const auto& [dtype, tolerance] : cases) {
      if (dtype != kFloat32 && !has_dtype(*r, dtype)) continue;
      SCOPED_TRACE("sample " + std::to_string(sample) + ", " + std::string(dtype_name(dtype)));
      SampleInputs cpu_inputs, cuda_inputs;
      for (const SampleTensor& t : r->inputs) {
        const Tensor x = sample_tensor(t, dtype);
        cpu_inputs.push_back(x.detach());
        cuda_inputs.push_back(x.cuda().detach());
        if (t.kind == 'x') {
          cpu_inputs.back().requires_grad_();
          cuda_inputs.back().requires_grad_();
        }
      }
      const SampleOutputTensors cpu_out = GetParam().op(cpu_inputs);
      const SampleOutputTensors cuda_out = GetParam().op(cuda_inputs);
      ASSERT_EQ(cuda_out.size(), cpu_out.size());
      for (size_t k = 0; k < cpu_out.size(); ++k) {
        EXPECT_TRUE(cuda_out[k].is_cuda());
        EXPECT_EQ(cuda_out[k].dtype(), cpu_out[k].dtype());
        EXPECT_TRUE(all_close(cuda_out[k].cpu().to(kFloat64), cpu_out[k].to(kFloat64),
                              tolerance.first, tolerance.second))
            << "output " << k;
      }
      const Tensor cpu_loss = weighted_loss(cpu_out), cuda_loss = weighted_loss(cuda_out);
      if (!cpu_loss.defined() || !cpu_loss.requires_grad()) continue;
      cpu_loss.backward();
      cuda_loss.backward();
      for (size_t j = 0; j < cpu_inputs.size(); ++j) {
        if (!cpu_inputs[j].requires_grad() || !cpu_inputs[j].grad().defined()) continue;
        ASSERT_TRUE(cuda_inputs[j].grad().defined()) << "input " << j;
        EXPECT_TRUE(all_close(cuda_inputs[j].grad().cpu().to(kFloat64),
                              cpu_inputs[j].grad().to(kFloat64), tolerance.first * 10,
                              tolerance.second))
            << "input " << j;
      }
    }
    ++sample;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, SampleOpTableCuda, ::testing::ValuesIn(testing::sample_rows()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace minidl
