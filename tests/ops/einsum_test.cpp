// einsum: PyTorch 2.15's values and gradients for the common contractions
// (tests/ops/shape_ops_reference.h), f64 gradient checks, the view it returns for a pure
// permutation, and the errors for bad equations and mismatched sizes.
#include "minidl/ops/einsum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/linalg.h"
#include "reference_entry.h"
#include "shape_ops_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::ReferenceEntry;

struct EinsumCase {
  const char* name;
  const char* equation;
  std::vector<Shape> shapes;
  const ReferenceEntry& output;
  std::vector<ReferenceEntry> grads;
};

// The cases of tools/reference/make_shape_ops_reference.py's EINSUM_CASES.
std::vector<EinsumCase> einsum_cases() {
  using namespace testing;
  return {
      {"Matmul",
       "ij,jk->ik",
       {{3, 4}, {4, 5}},
       kEinsumMatmulOutput,
       {kEinsumMatmulGrad0, kEinsumMatmulGrad1}},
      {"MatmulImplicit",
       "ij,jk",
       {{3, 4}, {4, 5}},
       kEinsumMatmulImplicitOutput,
       {kEinsumMatmulImplicitGrad0, kEinsumMatmulImplicitGrad1}},
      {"Bmm",
       "bij,bjk->bik",
       {{2, 3, 4}, {2, 4, 5}},
       kEinsumBmmOutput,
       {kEinsumBmmGrad0, kEinsumBmmGrad1}},
      {"Attention",
       "bhqd,bhkd->bhqk",
       {{2, 2, 3, 4}, {2, 2, 5, 4}},
       kEinsumAttentionOutput,
       {kEinsumAttentionGrad0, kEinsumAttentionGrad1}},
      {"Outer", "i,j->ij", {{3}, {4}}, kEinsumOuterOutput, {kEinsumOuterGrad0, kEinsumOuterGrad1}},
      {"Dot", "i,i->", {{5}, {5}}, kEinsumDotOutput, {kEinsumDotGrad0, kEinsumDotGrad1}},
      {"Hadamard",
       "ij,ij->ij",
       {{3, 4}, {3, 4}},
       kEinsumHadamardOutput,
       {kEinsumHadamardGrad0, kEinsumHadamardGrad1}},
      {"Trace", "ii->", {{4, 4}}, kEinsumTraceOutput, {kEinsumTraceGrad0}},
      {"TraceImplicit", "ii", {{4, 4}}, kEinsumTraceImplicitOutput, {kEinsumTraceImplicitGrad0}},
      {"Diagonal", "ii->i", {{4, 4}}, kEinsumDiagonalOutput, {kEinsumDiagonalGrad0}},
      {"BatchDiagonalSum",
       "bii->b",
       {{2, 3, 3}},
       kEinsumBatchDiagonalSumOutput,
       {kEinsumBatchDiagonalSumGrad0}},
      {"Transpose", "ij->ji", {{3, 4}}, kEinsumTransposeOutput, {kEinsumTransposeGrad0}},
      {"Permute", "ijk->kij", {{2, 3, 4}}, kEinsumPermuteOutput, {kEinsumPermuteGrad0}},
      {"SumAll", "ij->", {{3, 4}}, kEinsumSumAllOutput, {kEinsumSumAllGrad0}},
      {"SumRows", "ij->i", {{3, 4}}, kEinsumSumRowsOutput, {kEinsumSumRowsGrad0}},
      {"Bilinear",
       "bn,anm,bm->ba",
       {{2, 3}, {4, 3, 5}, {2, 5}},
       kEinsumBilinearOutput,
       {kEinsumBilinearGrad0, kEinsumBilinearGrad1, kEinsumBilinearGrad2}},
      {"EllipsisBroadcast",
       "...ij,...jk->...ik",
       {{2, 1, 3, 4}, {3, 4, 5}},
       kEinsumEllipsisBroadcastOutput,
       {kEinsumEllipsisBroadcastGrad0, kEinsumEllipsisBroadcastGrad1}},
      {"EllipsisSummed",
       "...ij->ij",
       {{2, 3, 4}},
       kEinsumEllipsisSummedOutput,
       {kEinsumEllipsisSummedGrad0}},
      {"ImplicitUpperFirst",
       "bA,Ac",
       {{2, 3}, {3, 4}},
       kEinsumImplicitUpperFirstOutput,
       {kEinsumImplicitUpperFirstGrad0, kEinsumImplicitUpperFirstGrad1}},
      {"SizeOneBroadcast",
       "ij,j->i",
       {{3, 4}, {1}},
       kEinsumSizeOneBroadcastOutput,
       {kEinsumSizeOneBroadcastGrad0, kEinsumSizeOneBroadcastGrad1}},
      {"ThreeWay",
       "ij,jk,kl->il",
       {{2, 3}, {3, 4}, {4, 2}},
       kEinsumThreeWayOutput,
       {kEinsumThreeWayGrad0, kEinsumThreeWayGrad1, kEinsumThreeWayGrad2}},
  };
}

TEST(Einsum, MatchesPyTorchValuesAndGradients) {
  for (const EinsumCase& c : einsum_cases()) {
    const std::string equation = c.equation;
    EXPECT_TRUE(testing::matches_reference(
        [&](const std::vector<Tensor>& in) { return einsum(equation, in); }, c.shapes, c.output,
        c.grads))
        << c.name << " " << c.equation;
  }
}

TEST(Einsum, PassesGradcheck) {
  for (const EinsumCase& c : einsum_cases()) {
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.shapes.size(); ++k)
      inputs.push_back(
          testing::wiggly(c.shapes[k], 0.3 * static_cast<double>(k), kFloat64).requires_grad_());
    const std::string equation = c.equation;
    auto result =
        gradcheck([&](const std::vector<Tensor>& in) { return einsum(equation, in); }, inputs);
    EXPECT_TRUE(result) << c.name << ": " << result.message;
  }
}

TEST(Einsum, Float32MatchesMatmulAndSpacesAreIgnored) {
  const Tensor a = testing::wiggly({2, 3, 4}), b = testing::wiggly({2, 4, 5}, 1.0);
  EXPECT_TRUE(testing::all_close(einsum("b i j , b j k -> b i k", {a, b}), matmul(a, b)));
  // A pure permutation is a view of its operand, as PyTorch's.
  const Tensor x = testing::wiggly({3, 4});
  const Tensor transposed = einsum("ij->ji", {x});
  EXPECT_EQ(transposed.sizes(), (Shape{4, 3}));
  EXPECT_EQ(transposed.data_ptr(), x.data_ptr());
}

TEST(Einsum, BadEquationsAndSizesAreErrors) {
  const Tensor m = zeros({2, 3}), n = zeros({4, 2});
  EXPECT_ERROR_CONTAINS(einsum("ij,jk", {m, n}),
                        "einsum: subscript j has size 4 in operand 1 of equation \"ij,jk\", which "
                        "does not broadcast with the size 3 seen before");
  EXPECT_ERROR_CONTAINS(einsum("ii", {m}),
                        "einsum: subscript i is repeated for operand 0 of equation \"ii\" but its "
                        "sizes differ: 2 and 3");
  EXPECT_ERROR_CONTAINS(einsum("ij->k", {m}),
                        "einsum: output subscript k of equation \"ij->k\" appears in no operand");
  EXPECT_ERROR_CONTAINS(einsum("ij->ii", {m}),
                        "einsum: output subscript i appears more than once in equation");
  EXPECT_ERROR_CONTAINS(einsum("i$", {m}), "einsum: invalid subscript '$' in operand 0");
  EXPECT_ERROR_CONTAINS(einsum("ijk", {m}),
                        "einsum: operand 0 has 2 dims (shape [2, 3]) but equation \"ijk\" gives "
                        "it 3 subscripts and no \"...\"");
  EXPECT_ERROR_CONTAINS(einsum("ij,jk", {m}),
                        "einsum: equation \"ij,jk\" has 2 operand terms but 1 operands were given");
  EXPECT_ERROR_CONTAINS(einsum("i.j", {m}), "einsum: equation \"i.j\" has a '.' in operand 0");
  EXPECT_ERROR_CONTAINS(einsum("ij", {}), "einsum: expected at least one operand");
  EXPECT_ERROR_CONTAINS(einsum("ij,jk", {m, zeros({3, 2}, kFloat64)}),
                        "einsum: expected every operand with operand 0's dtype float32");
}

}  // namespace
}  // namespace minidl
