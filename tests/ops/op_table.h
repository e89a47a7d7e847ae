#pragma once
// The operator table: one row per op, with what the tests need to call it. Its PyTorch
// references are in tests/ops/op_reference.h (tools/reference/make_op_reference.py); the CPU tests
// are tests/ops/op_table_test.cpp, the CPU/CUDA parity tests tests/ops/op_table_cuda_test.cpp.
// Adding an op: a row here and a line in the script's table, then rerun the script.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "minidl/ops/elementwise.h"
#include "op_reference.h"

namespace minidl::testing {

struct UnaryRow {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  // Whether its gradient is worth a central difference: false where it is zero almost
  // everywhere (floor, sign, ...), which the reference gradient checks instead.
  bool smooth = true;
  // Whether an integer input is an error (abs and clamp take integers too, as PyTorch's).
  bool floating_only = true;
  // The op's name in its errors, where the row's differs (gelu_tanh is gelu's).
  std::string op_name = name;
};

inline void PrintTo(const UnaryRow& row, std::ostream* out) { *out << row.name; }

// clang-format off
#define MINIDL_UNARY_ROW(name, ...) {#name, [](const Tensor& x) { return minidl::name(x); }, ##__VA_ARGS__}
inline const std::vector<UnaryRow>& unary_rows() {
  static const std::vector<UnaryRow> rows = {
      MINIDL_UNARY_ROW(exp), MINIDL_UNARY_ROW(log), MINIDL_UNARY_ROW(sqrt),
      MINIDL_UNARY_ROW(abs, true, false),
      MINIDL_UNARY_ROW(relu), MINIDL_UNARY_ROW(sigmoid), MINIDL_UNARY_ROW(tanh),
      MINIDL_UNARY_ROW(gelu), MINIDL_UNARY_ROW(sin), MINIDL_UNARY_ROW(cos), MINIDL_UNARY_ROW(tan),
      MINIDL_UNARY_ROW(asin), MINIDL_UNARY_ROW(acos), MINIDL_UNARY_ROW(atan),
      MINIDL_UNARY_ROW(sinh), MINIDL_UNARY_ROW(cosh), MINIDL_UNARY_ROW(exp2),
      MINIDL_UNARY_ROW(expm1), MINIDL_UNARY_ROW(log1p), MINIDL_UNARY_ROW(log2),
      MINIDL_UNARY_ROW(log10), MINIDL_UNARY_ROW(erf), MINIDL_UNARY_ROW(erfc),
      MINIDL_UNARY_ROW(floor, false), MINIDL_UNARY_ROW(ceil, false),
      MINIDL_UNARY_ROW(trunc, false), MINIDL_UNARY_ROW(round, false), MINIDL_UNARY_ROW(frac),
      MINIDL_UNARY_ROW(sign, false), MINIDL_UNARY_ROW(rsqrt), MINIDL_UNARY_ROW(reciprocal),
      MINIDL_UNARY_ROW(square), MINIDL_UNARY_ROW(silu),
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, true, true, "gelu"},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return elu(x, 1.3); }},
      // Integer tensors too, which these floating bounds make float32, as PyTorch's.
      {"clamp", [](const Tensor& x) { return clamp(x, -0.7, 1.1); }, true, false},
      {"clamp_min", [](const Tensor& x) { return clamp_min(x, -0.7); }, true, false},
      {"clamp_max", [](const Tensor& x) { return clamp_max(x, 1.1); }, true, false},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"softplus_beta", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }, true, true,
       "softplus"},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x); }, true, true},
      {"hardtanh_bounds", [](const Tensor& x) { return hardtanh(x, -0.7, 1.1); }, true, true,
       "hardtanh"},
  };
  return rows;
}
#undef MINIDL_UNARY_ROW
// clang-format on

// The reference of the row called `name`; nullptr when the script has none.
inline const UnaryReference* unary_reference(const std::string& name) {
  for (const UnaryReference& reference : kUnaryReferences)
    if (name == reference.name) return &reference;
  return nullptr;
}

struct BinaryRow {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  // Whether integer operands compute in float32 (atan2, as PyTorch's); the others keep them.
  bool integers_to_float = false;
  // The op's name in its errors, where the row's differs.
  std::string op_name = name;
};

inline void PrintTo(const BinaryRow& row, std::ostream* out) { *out << row.name; }

inline const std::vector<BinaryRow>& binary_rows() {
  static const std::vector<BinaryRow> rows = {
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, true},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }},
      {"clamp_min_tensor",
       [](const Tensor& a, const Tensor& b) { return clamp(a, b, std::nullopt); }, false, "clamp"},
      {"clamp_max_tensor",
       [](const Tensor& a, const Tensor& b) { return clamp(a, std::nullopt, b); }, false, "clamp"},
  };
  return rows;
}

inline const BinaryReference* binary_reference(const std::string& name) {
  for (const BinaryReference& reference : kBinaryReferences)
    if (name == reference.name) return &reference;
  return nullptr;
}

// `values` as a [2, 3, 2, 2] tensor of `dtype` (rounded from float64), on the CPU.
inline Tensor reference_tensor(const double (&values)[kOpReferenceCount], DType dtype) {
  return from_host(values, {2, 3, 2, 2}, kFloat64).to(dtype);
}

}  // namespace minidl::testing
