// einsum, F::interpolate, F::pad's modes and indexing by a tensor on CUDA against the CPU,
// forward and backward (every one is a composition of ops with CUDA kernels).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "minidl/nn/functional.h"
#include "minidl/ops/einsum.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::wiggly;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// The output and every input's gradient of sum(fn(inputs) * w), on `device`, back on the CPU.
std::vector<Tensor> run_on(Device device, const std::vector<Tensor>& inputs_cpu, const Fn& fn) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_cpu) inputs.push_back(t.to(device).detach().requires_grad_());
  const Tensor out = fn(inputs);
  (out * wiggly(out.sizes(), 2.0, out.dtype()).to(device)).sum().backward();
  std::vector<Tensor> results = {out.detach().cpu()};
  for (const Tensor& t : inputs) results.push_back(t.grad().cpu());
  return results;
}

// CUDA's output and gradients against the CPU's: bitwise for pure copies, else within `tol`
// (the gradients within `grad_tol` where given: a copy's gradient may add several outputs'
// gradients into one element, in another order on the device).
void expect_parity(const char* name, const std::vector<Tensor>& inputs, const Fn& fn, double tol,
                   std::optional<double> grad_tol = std::nullopt) {
  const std::vector<Tensor> cpu = run_on(Device(kCPU), inputs, fn);
  const std::vector<Tensor> gpu = run_on(Device(kCUDA), inputs, fn);
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double tol_i = i > 0 && grad_tol ? *grad_tol : tol;
    if (tol_i == 0)
      EXPECT_TRUE(testing::bitwise_equal(gpu[i], cpu[i])) << name << " result " << i;
    else
      EXPECT_TRUE(testing::all_close(gpu[i].to(kFloat32), cpu[i].to(kFloat32), tol_i, tol_i))
          << name << " result " << i;
  }
}

TEST(ShapeOpsCuda, EinsumMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const std::vector<std::pair<const char*, std::vector<Shape>>> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 2, 3, 8}, {2, 2, 5, 8}}},
      {"i,j->ij", {{3}, {4}}},
      {"ii->", {{4, 4}}},
      {"ii->i", {{4, 4}}},
      {"ij->ji", {{3, 4}}},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
      {"...ij,...jk", {{2, 1, 3, 4}, {3, 4, 5}}},
  };
  for (const auto& [equation, shapes] : cases) {
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < shapes.size(); ++k)
      inputs.push_back(wiggly(shapes[k], static_cast<double>(k)));
    const std::string eq = equation;
    expect_parity(
        equation, inputs, [&](const std::vector<Tensor>& in) { return einsum(eq, in); }, 1e-5);
  }
}

TEST(ShapeOpsCuda, InterpolateMatchesTheCpuInEveryDtypeAndLayout) {
  SKIP_WITHOUT_CUDA();
  using Sizes = std::vector<int64_t>;
  const std::vector<std::pair<const char*, F::InterpolateFuncOptions>> cases = {
      {"nearest size", F::InterpolateFuncOptions().size(Sizes{7, 9})},
      {"nearest scale", F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7})},
      {"bilinear", F::InterpolateFuncOptions().size(Sizes{7, 9}).mode(kBilinear)},
      {"bilinear corners",
       F::InterpolateFuncOptions().size(Sizes{2, 3}).mode(kBilinear).align_corners(true)},
      {"bicubic", F::InterpolateFuncOptions().size(Sizes{7, 3}).mode(kBicubic)},
      {"nearest-exact", F::InterpolateFuncOptions().size(Sizes{7, 3}).mode(kNearestExact)},
      {"bilinear antialias",
       F::InterpolateFuncOptions().size(Sizes{2, 3}).mode(kBilinear).antialias(true)},
      {"bicubic antialias",
       F::InterpolateFuncOptions().size(Sizes{3, 2}).mode(kBicubic).antialias(true)},
  };
  for (const auto& [name, options] : cases) {
    for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
      for (bool channels_last : {false, true}) {
        Tensor x = wiggly({2, 3, 4, 5}, 0.0, dtype);
        if (channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
        // A copy of its own: clang 14 (clang-tidy's) cannot capture a structured binding.
        const auto fn = [resize = options](const std::vector<Tensor>& in) {
          return F::interpolate(in[0], resize);
        };
        // The same elementwise steps in the same order on both: equal results up to the
        // last bit of a float32 sum.
        expect_parity(name, {x}, fn, dtype == kFloat32 ? 1e-6 : 1e-2);
        EXPECT_EQ(F::interpolate(x.cuda(), options).is_contiguous(MemoryFormat::ChannelsLast),
                  channels_last);
      }
    }
  }
  // nearest over [N, C, W].
  expect_parity(
      "nearest 1-D", {wiggly({2, 3, 5})},
      [](const std::vector<Tensor>& in) {
        return F::interpolate(in[0], F::InterpolateFuncOptions().size(Sizes{12}));
      },
      0);
  // The modes of other ranks, and area (adaptive average pooling, its own kernels).
  const std::vector<std::tuple<const char*, Shape, F::InterpolateFuncOptions>> ranks = {
      {"linear", {2, 3, 5}, F::InterpolateFuncOptions().size(Sizes{12}).mode(kLinear)},
      {"trilinear",
       {1, 2, 3, 4, 5},
       F::InterpolateFuncOptions().size(Sizes{5, 3, 7}).mode(kTrilinear)},
      {"nearest 3-D", {1, 2, 3, 4, 5}, F::InterpolateFuncOptions().size(Sizes{5, 3, 7})},
      {"area 1-D", {2, 3, 7}, F::InterpolateFuncOptions().size(Sizes{3}).mode(kArea)},
      {"area 2-D", {2, 3, 7, 9}, F::InterpolateFuncOptions().size(Sizes{3, 4}).mode(kArea)},
      {"area 3-D", {1, 2, 5, 6, 7}, F::InterpolateFuncOptions().size(Sizes{2, 4, 3}).mode(kArea)},
  };
  for (const auto& [name, shape, options] : ranks) {
    const auto fn = [resize = options](const std::vector<Tensor>& in) {
      return F::interpolate(in[0], resize);
    };
    expect_parity(name, {wiggly(shape)}, fn, 1e-6);
  }
}

TEST(ShapeOpsCuda, PadModesMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (PadMode mode : {kReflect, kReplicate, kCircular}) {
    expect_parity(
        pad_mode_name(mode), {wiggly({2, 3, 4, 5})},
        [&](const std::vector<Tensor>& in) {
          return F::pad(in[0], F::PadFuncOptions({2, 1, 3, -1}).mode(mode));
        },
        0, /*grad_tol=*/1e-6);  // replicate adds 3 outputs' gradients into an edge element
  }
}

TEST(ShapeOpsCuda, IndexingByATensorMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor mask_cpu = wiggly({3, 4}, 0.7) > 0.0;
  const Tensor mask_gpu = mask_cpu.cuda();
  const std::vector<int64_t> rows = {2, 0, 2, -1};
  const Tensor index_cpu = from_host(rows.data(), {4}, kInt64);
  const Tensor index_gpu = index_cpu.cuda();
  const auto mask_on = [&](const Tensor& t) { return t.is_cuda() ? mask_gpu : mask_cpu; };
  const auto index_on = [&](const Tensor& t) { return t.is_cuda() ? index_gpu : index_cpu; };
  const Tensor x = wiggly({3, 4, 2});
  expect_parity(
      "x[mask]", {x}, [&](const std::vector<Tensor>& in) { return in[0].index({mask_on(in[0])}); },
      0);
  expect_parity(
      "x[index]", {x},
      [&](const std::vector<Tensor>& in) { return in[0].index({index_on(in[0])}); }, 0);
  expect_parity(
      "index_put mask", {x, wiggly({2}, 1.0)},
      [&](const std::vector<Tensor>& in) { return index_put(in[0], {mask_on(in[0])}, in[1]); }, 0);
  expect_parity(
      "index_put accumulate", {x, wiggly({4, 4, 2}, 1.0)},
      [&](const std::vector<Tensor>& in) {
        return index_put(in[0], {index_on(in[0])}, in[1], true);
      },
      0);
}

}  // namespace
}  // namespace minidl
