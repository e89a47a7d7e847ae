// Every row of the operator tables (tests/ops/op_table_samples.h, tests/ops/op_table.h) shows in
// a profile: its forward, run under profiler::Profile, records an outermost span (depth 0 on the
// profiling thread) named after its op, once, as every aten op shows in torch.profiler's table.
// An op that opens no ProfileScope in its entry point fails here. Pure views copy nothing and
// open none: they are listed below, and must stay spanless.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "op_table.h"
#include "op_table_samples.h"

namespace minidl {
namespace {

using testing::BinaryRow;
using testing::SampleInputs;
using testing::SampleRow;
using testing::UnaryRow;

// Rows that are views of their input (no kernel, no loop over the data), as PyTorch's
// transpose, expand and split, which this profiler does not record.
const std::set<std::string> kViewRows = {
    "chunk",     "split", "split_sizes", "unbind",  // slices along a dim
    "expand_as",                                    // a zero stride per broadcast dim
    "mT",                                           // the last two dims transposed
};

// Rows whose name is not their op's, nor the op's name and a variant ("sum_dims" is sum).
const std::map<std::string, std::string> kOpOfRow = {
    {"interpolate_nearest", "upsample_nearest2d"},
    {"interpolate_bilinear", "upsample_bilinear2d"},
    {"interpolate_bilinear_align_corners", "upsample_bilinear2d"},
    // F.normalize is no aten op: PyTorch's profile shows the norm it divides by.
    {"normalize", "norm"},
};

// Whether a span called `span` is the op of the row called `row`.
bool names_row_op(const std::string& span, const std::string& row) {
  const auto renamed = kOpOfRow.find(row);
  if (renamed != kOpOfRow.end()) return span == renamed->second;
  return span == row || row.rfind(span + "_", 0) == 0;
}

// The names of the outermost spans on the profiling thread while `forward` runs.
template <typename Forward>
std::vector<std::string> outermost_spans(const Forward& forward) {
  profiler::Profile profile({.record_shapes = false, .record_device = false});
  forward();
  profile.stop();
  std::vector<std::string> names;
  for (const ProfileSpan& span : profile.spans())
    if (!span.event && span.thread == 0 && span.depth == 0) names.push_back(span.name);
  return names;
}

std::string listed(const std::vector<std::string>& names) {
  std::string text = "[";
  for (const std::string& name : names) text += (text.size() > 1 ? ", " : "") + name;
  return text + "]";
}

void expect_one_span_of_its_op(const std::string& row, const std::vector<std::string>& spans) {
  int64_t of_its_op = 0;
  for (const std::string& span : spans) of_its_op += names_row_op(span, row) ? 1 : 0;
  EXPECT_EQ(of_its_op, 1) << row << "'s forward recorded the outermost spans " << listed(spans)
                          << ": its op should open one ProfileScope, with PyTorch's op name, "
                          << "in its entry point";
}

class SampleRowProfile : public ::testing::TestWithParam<SampleRow> {};

TEST_P(SampleRowProfile, ItsForwardRecordsOneSpanOfItsOp) {
  const SampleRow& row = GetParam();
  const auto references = testing::sample_references(row.name);
  ASSERT_FALSE(references.empty()) << row.name << " has no sample";
  SampleInputs inputs;  // made before the profile, which then sees the op alone
  for (const testing::SampleTensor& t : references[0]->inputs)
    inputs.push_back(testing::sample_tensor(t, kFloat32));
  const std::vector<std::string> spans = outermost_spans([&] { row.op(inputs); });
  if (kViewRows.count(row.name) > 0)
    EXPECT_TRUE(spans.empty()) << row.name << " is listed as a view, but recorded "
                               << listed(spans);
  else
    expect_one_span_of_its_op(row.name, spans);
}

INSTANTIATE_TEST_SUITE_P(Rows, SampleRowProfile, ::testing::ValuesIn(testing::sample_rows()),
                         [](const auto& info) { return info.param.name; });

TEST(SampleRowProfile, EveryListedRowIsInTheTable) {
  std::set<std::string> rows;
  for (const SampleRow& row : testing::sample_rows()) rows.insert(row.name);
  for (const std::string& name : kViewRows) EXPECT_EQ(rows.count(name), 1u) << name;
  for (const auto& [name, op] : kOpOfRow) EXPECT_EQ(rows.count(name), 1u) << name;
}

class UnaryRowProfile : public ::testing::TestWithParam<UnaryRow> {};

TEST_P(UnaryRowProfile, ItsForwardRecordsOneSpanOfItsOp) {
  const UnaryRow& row = GetParam();
  const testing::UnaryReference* reference = testing::unary_reference(row.name);
  ASSERT_NE(reference, nullptr) << row.name << " has no reference";
  const Tensor x = testing::reference_tensor(reference->input, kFloat32);
  expect_one_span_of_its_op(row.name, outermost_spans([&] { row.op(x); }));
}

INSTANTIATE_TEST_SUITE_P(Rows, UnaryRowProfile, ::testing::ValuesIn(testing::unary_rows()),
                         [](const auto& info) { return info.param.name; });

class BinaryRowProfile : public ::testing::TestWithParam<BinaryRow> {};

TEST_P(BinaryRowProfile, ItsForwardRecordsOneSpanOfItsOp) {
  const BinaryRow& row = GetParam();
  const testing::BinaryReference* reference = testing::binary_reference(row.name);
  ASSERT_NE(reference, nullptr) << row.name << " has no reference";
  const Tensor a = testing::reference_tensor(reference->input, kFloat32);
  const Tensor b = testing::reference_tensor(reference->other, kFloat32);
  expect_one_span_of_its_op(row.name, outermost_spans([&] { row.op(a, b); }));
}

INSTANTIATE_TEST_SUITE_P(Rows, BinaryRowProfile, ::testing::ValuesIn(testing::binary_rows()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace minidl
