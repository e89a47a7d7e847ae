// Element-wise ops on the CPU: values against std:: math and hand-worked results, broadcasting,
// strided and large inputs, dtypes (16-bit floats, integers, bool results), in-place methods,
// error messages, and f64 gradient checks (contiguous, transposed and broadcast inputs).
#include "minidl/ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct, sign-mixed values in (-3, 3), away from 0 (where abs and relu have no derivative).
std::vector<double> wiggly(int64_t n, double offset = 0) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v = 2.7 * std::sin(1.3 + offset + 0.9 * static_cast<double>(i));
    values[i] = std::abs(v) < 0.1 ? v + 0.25 : v;
  }
  return values;
}

Tensor wiggly_tensor(const Shape& sizes, DType dtype = kFloat64, double offset = 0) {
  std::vector<double> values = wiggly(shape_numel(sizes), offset);
  return from_host(values.data(), sizes, kFloat64).to(dtype);
}

// Values in [0.5, 2.5): a domain for log, sqrt, fractional powers and divisors.
Tensor positive_tensor(const Shape& sizes, DType dtype = kFloat64, double offset = 0) {
  std::vector<double> values = wiggly(shape_numel(sizes), offset);
  for (double& v : values) v = 1.5 + v / 2.75;
  return from_host(values.data(), sizes, kFloat64).to(dtype);
}

Tensor leaf(Tensor t) { return t.requires_grad_(true); }

// The reference for a unary op: each element of `x` mapped through `f` in double.
Tensor map_reference(const Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> values = to_vector<double>(x);
  for (double& v : values) v = f(v);
  return from_host(values.data(), x.sizes(), kFloat64);
}

// The reference for a binary op over row-major a (shape `sizes`) and b of the same shape.
Tensor zip_reference(const Tensor& a, const Tensor& b,
                     const std::function<double(double, double)>& f) {
  std::vector<double> x = to_vector<double>(a), y = to_vector<double>(b);
  for (size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
  return from_host(x.data(), a.sizes(), kFloat64);
}

double gelu_reference(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double sigmoid_reference(double x) { return 1 / (1 + std::exp(-x)); }

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> reference;
  bool positive_domain;  // log, sqrt and fractional powers need x > 0
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, false},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, false},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
       true},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::abs(x); }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; },
       false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_reference, false},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
       false},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_reference, false},
      {"pow(3)", [](const Tensor& x) { return pow(x, 3.0); }, [](double x) { return x * x * x; },
       false},
      {"pow(2)", [](const Tensor& x) { return pow(x, 2.0); }, [](double x) { return x * x; },
       false},
      {"pow(-1)", [](const Tensor& x) { return pow(x, -1.0); }, [](double x) { return 1 / x; },
       false},
      {"pow(0.5)", [](const Tensor& x) { return pow(x, 0.5); },
       [](double x) { return std::sqrt(x); }, true},
      {"pow(0)", [](const Tensor& x) { return pow(x, 0.0); }, [](double) { return 1.0; }, false},
  };
}

Tensor unary_input(const UnaryCase& c, const Shape& sizes, DType dtype) {
  return c.positive_domain ? positive_tensor(sizes, dtype) : wiggly_tensor(sizes, dtype);
}

void expect_gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs) {
  GradcheckResult result = gradcheck(fn, inputs);
  EXPECT_TRUE(result.ok) << result.message;
}

// ---- unary forward ----

TEST(Elementwise, UnaryOpsMatchStdMathInFloat32AndFloat64) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    Tensor x64 = unary_input(c, {3, 5}, kFloat64);
    Tensor y64 = c.op(x64);
    EXPECT_EQ(y64.dtype(), kFloat64);
    EXPECT_EQ(y64.sizes(), (Shape{3, 5}));
    EXPECT_TRUE(all_close(y64, map_reference(x64, c.reference), 1e-12, 1e-12));
    Tensor x32 = unary_input(c, {3, 5}, kFloat32);
    Tensor y32 = c.op(x32);
    EXPECT_EQ(y32.dtype(), kFloat32);
    EXPECT_TRUE(all_close(y32, map_reference(x32, c.reference), 1e-6, 1e-6));
  }
}

TEST(Elementwise, UnaryOpsByHand) {
  Tensor x = tensor({-2.0, -0.5, 0.0, 1.5});
  EXPECT_EQ(to_vector<float>(relu(x)), (std::vector<float>{0, 0, 0, 1.5f}));
  EXPECT_EQ(to_vector<float>(abs(x)), (std::vector<float>{2, 0.5f, 0, 1.5f}));
  EXPECT_EQ(to_vector<float>(neg(x)), (std::vector<float>{2, 0.5f, -0.0f, -1.5f}));
  EXPECT_EQ(to_vector<float>(-x), (std::vector<float>{2, 0.5f, -0.0f, -1.5f}));
  EXPECT_EQ(to_vector<float>(pow(x, 2)), (std::vector<float>{4, 0.25f, 0, 2.25f}));
  EXPECT_EQ(to_vector<float>(sigmoid(tensor({0.0}))), (std::vector<float>{0.5f}));
  EXPECT_EQ(to_vector<float>(gelu(tensor({0.0}))), (std::vector<float>{0.0f}));
  EXPECT_EQ(to_vector<float>(sqrt(tensor({4.0, 0.25}))), (std::vector<float>{2, 0.5f}));
  EXPECT_EQ(to_vector<float>(exp(tensor({0.0}))), (std::vector<float>{1.0f}));
  EXPECT_EQ(to_vector<float>(log(tensor({1.0}))), (std::vector<float>{0.0f}));
  // The methods forward to the free functions.
  EXPECT_TRUE(all_close(x.exp(), exp(x), 0, 0));
  EXPECT_TRUE(all_close(x.tanh(), tanh(x), 0, 0));
  EXPECT_TRUE(all_close(x.pow(3), pow(x, 3), 0, 0));
}

TEST(Elementwise, SpecialValuesFollowIeeeAndPyTorch) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(to_vector<float>(log(tensor({0.0})))[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(to_vector<float>(sqrt(tensor({-1.0})))[0]));
  EXPECT_TRUE(std::isnan(to_vector<float>(relu(tensor({nan})))[0]));
  EXPECT_EQ(to_vector<float>(sigmoid(tensor({-inf, inf}))), (std::vector<float>{0, 1}));
  EXPECT_EQ(to_vector<float>(sigmoid(tensor({-200.0, 200.0}))), (std::vector<float>{0, 1}));
  std::vector<float> with_nan = to_vector<float>(maximum(tensor({nan, 1.0}), tensor({1.0, nan})));
  EXPECT_TRUE(std::isnan(with_nan[0]) && std::isnan(with_nan[1]));
  EXPECT_TRUE(std::isnan(to_vector<float>(minimum(tensor({nan}), tensor({1.0})))[0]));
}

// ---- binary forward ----

TEST(Elementwise, BinaryOpsBroadcastByHand) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3});
  Tensor row = tensor({10.0, 20.0, 30.0});
  Tensor column = tensor({2.0, 4.0}).view({2, 1});
  EXPECT_EQ(to_vector<float>(add(a, row)), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(to_vector<float>(a + column), (std::vector<float>{3, 4, 5, 8, 9, 10}));
  EXPECT_EQ(to_vector<float>(sub(row, a)), (std::vector<float>{9, 18, 27, 6, 15, 24}));
  EXPECT_EQ(to_vector<float>(add(a, row, 0.5)), (std::vector<float>{6, 12, 18, 9, 15, 21}));
  EXPECT_EQ(to_vector<float>(sub(a, row, 0.1)), (std::vector<float>{0, 0, 0, 3, 3, 3}));
  EXPECT_EQ(to_vector<float>(a * column), (std::vector<float>{2, 4, 6, 16, 20, 24}));
  EXPECT_EQ(to_vector<float>(a / column), (std::vector<float>{0.5f, 1, 1.5f, 1, 1.25f, 1.5f}));
  // [2, 1] with [3] broadcasts to an outer product.
  Tensor outer = mul(column, tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(outer.sizes(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<float>(outer), (std::vector<float>{2, 4, 6, 4, 8, 12}));
  // A 0-d tensor broadcasts against anything.
  EXPECT_EQ(to_vector<float>(a - scalar_tensor(1.0)), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor m = tensor({1.0, 5.0, 3.0}), n = tensor({2.0, 4.0, 3.0});
  EXPECT_EQ(to_vector<float>(maximum(m, n)), (std::vector<float>{2, 5, 3}));
  EXPECT_EQ(to_vector<float>(minimum(m, n)), (std::vector<float>{1, 4, 3}));
  // Method forms.
  EXPECT_EQ(to_vector<float>(a.add(row, 2)), (std::vector<float>{21, 42, 63, 24, 45, 66}));
  EXPECT_EQ(to_vector<float>(a.sub(row)), (std::vector<float>{-9, -18, -27, -6, -15, -24}));
  EXPECT_EQ(to_vector<float>(a.mul(a)), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(to_vector<float>(a.div(a)), (std::vector<float>(6, 1.0f)));
}

TEST(Elementwise, BinaryOpsMatchReferenceOnBroadcastShapes) {
  Tensor a = wiggly_tensor({4, 1, 5});
  Tensor b = positive_tensor({3, 1}, kFloat64, 0.4);
  const Shape out_sizes{4, 3, 5};
  Tensor a_full = a.expand(out_sizes).contiguous(), b_full = b.expand(out_sizes).contiguous();
  EXPECT_TRUE(all_close(
      add(a, b, -1.5),
      zip_reference(a_full, b_full, [](double x, double y) { return x - 1.5 * y; }), 1e-12, 1e-12));
  EXPECT_TRUE(
      all_close(mul(a, b), zip_reference(a_full, b_full, std::multiplies<>()), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(div(a, b), zip_reference(a_full, b_full, std::divides<>()), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(
      maximum(a, b),
      zip_reference(a_full, b_full, [](double x, double y) { return std::max(x, y); }), 0, 0));
  EXPECT_TRUE(all_close(
      minimum(b, a),
      zip_reference(b_full, a_full, [](double x, double y) { return std::min(x, y); }), 0, 0));
}

TEST(Elementwise, ScalarFormsAndOperators) {
  Tensor x = tensor({1.0, 2.0, 4.0});
  EXPECT_EQ(to_vector<float>(add(x, 1.5)), (std::vector<float>{2.5f, 3.5f, 5.5f}));
  EXPECT_EQ(to_vector<float>(sub(x, 1.0)), (std::vector<float>{0, 1, 3}));
  EXPECT_EQ(to_vector<float>(mul(x, -2.0)), (std::vector<float>{-2, -4, -8}));
  EXPECT_EQ(to_vector<float>(div(x, 4.0)), (std::vector<float>{0.25f, 0.5f, 1}));
  EXPECT_EQ(to_vector<float>(x + 1), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ(to_vector<float>(x - 1), (std::vector<float>{0, 1, 3}));
  EXPECT_EQ(to_vector<float>(x * 3), (std::vector<float>{3, 6, 12}));
  EXPECT_EQ(to_vector<float>(x / 2), (std::vector<float>{0.5f, 1, 2}));
  EXPECT_EQ(to_vector<float>(1 + x), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ(to_vector<float>(10 - x), (std::vector<float>{9, 8, 6}));
  EXPECT_EQ(to_vector<float>(3 * x), (std::vector<float>{3, 6, 12}));
  EXPECT_EQ(to_vector<float>(8 / x), (std::vector<float>{8, 4, 2}));
}

// ---- layouts ----

TEST(Elementwise, StridedInputsGiveRowMajorValuesAndKeepDenseLayouts) {
  Tensor base = wiggly_tensor({4, 6});
  Tensor transposed = base.t();  // dense, not contiguous
  Tensor y = exp(transposed);
  EXPECT_EQ(y.strides(), transposed.strides());  // the result keeps the input's layout
  EXPECT_TRUE(
      all_close(y, map_reference(transposed, [](double v) { return std::exp(v); }), 1e-12, 1e-12));
  Tensor stepped = base.slice(1, 0, 6, 2);  // not dense: the result is row-major
  Tensor z = tanh(stepped);
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_TRUE(
      all_close(z, map_reference(stepped, [](double v) { return std::tanh(v); }), 1e-12, 1e-12));
  // Mixed layouts in one binary op.
  Tensor other = wiggly_tensor({6, 4}, kFloat64, 0.3);
  EXPECT_TRUE(all_close(add(transposed, other),
                        zip_reference(transposed.contiguous(), other, std::plus<>()), 1e-12,
                        1e-12));
  EXPECT_TRUE(all_close(mul(other, transposed),
                        zip_reference(other, transposed.contiguous(), std::multiplies<>()), 1e-12,
                        1e-12));
}

TEST(Elementwise, LargeTensorsSplitAcrossThreadsGiveTheSameValues) {
  // Above the parallel grain, both the flat path and the strided path (a transposed operand).
  Tensor a = wiggly_tensor({300, 257});
  Tensor b = wiggly_tensor({257, 300}, kFloat64, 0.5).t();
  EXPECT_TRUE(all_close(add(a, b), zip_reference(a, b.contiguous(), std::plus<>()), 0, 0));
  EXPECT_TRUE(all_close(sigmoid(a), map_reference(a, sigmoid_reference), 1e-15, 1e-12));
  EXPECT_TRUE(all_close(gelu(b), map_reference(b.contiguous(), gelu_reference), 1e-15, 1e-12));
}

TEST(Elementwise, EmptyTensorsGiveEmptyResults) {
  Tensor empty_rows = zeros({0, 3});
  EXPECT_EQ(exp(empty_rows).sizes(), (Shape{0, 3}));
  EXPECT_EQ(add(empty_rows, tensor({1.0, 2.0, 3.0})).sizes(), (Shape{0, 3}));
  EXPECT_EQ(gt(empty_rows, 0.0).sizes(), (Shape{0, 3}));
}

// ---- dtypes ----

TEST(Elementwise, HalfAndBFloat16ComputeInFloatAndRound) {
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // bfloat16 keeps 8 significant bits, float16 11: one rounding of the result.
    const double rtol = dtype == kFloat16 ? 1e-3 : 8e-3;
    for (const UnaryCase& c : unary_cases()) {
      SCOPED_TRACE(c.name);
      Tensor x = unary_input(c, {2, 7}, dtype);
      Tensor y = c.op(x);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(all_close(y, map_reference(x, c.reference), 1e-3, rtol));
    }
    Tensor a = wiggly_tensor({2, 7}, dtype), b = positive_tensor({7}, dtype, 0.2);
    Tensor a_full = a.to(kFloat64), b_full = b.to(kFloat64).expand({2, 7}).contiguous();
    EXPECT_EQ(add(a, b).dtype(), dtype);
    EXPECT_TRUE(all_close(add(a, b), zip_reference(a_full, b_full, std::plus<>()), 1e-3, rtol));
    EXPECT_TRUE(all_close(div(a, b), zip_reference(a_full, b_full, std::divides<>()), 1e-3, rtol));
    EXPECT_TRUE(all_close(
        maximum(a, b),
        zip_reference(a_full, b_full, [](double x, double y) { return std::max(x, y); }), 0, 0));
    EXPECT_TRUE(all_close(mul(a, 0.5), map_reference(a, [](double v) { return v * 0.5; }), 0, 0));
    EXPECT_EQ(to_vector<bool>(lt(a, b)), to_vector<bool>(lt(a_full, b_full)));
  }
}

// Note [Loops compiled for AVX-512 and AVX2] (ops/cpu/vector_versions.h): a dense bfloat16
// operand takes the flat loop, compiled for AVX-512 where the CPU has it; a transposed one the
// strided loop, always the baseline's. The same arithmetic must give the same bits, NaN, infinities
// and rounding included.
TEST(Elementwise, BFloat16FlatAndStridedLoopsGiveTheSameBits) {
  const auto with_specials = [](Tensor t) {
    auto values = to_vector<float>(t.to(kFloat32).contiguous());
    values[0] = std::numeric_limits<float>::quiet_NaN();
    values[1] = std::numeric_limits<float>::infinity();
    values[2] = -std::numeric_limits<float>::infinity();
    values[3] = 0.0f;
    values[4] = -0.0f;
    return tensor(values).view(t.sizes()).to(kBFloat16);
  };
  // 64 x 130: above the parallel grain, and not a multiple of 16 elements per row.
  const Tensor a = with_specials(wiggly_tensor({64, 130}).mul(40.0));
  const Tensor b = with_specials(positive_tensor({64, 130}, kFloat64, 0.3).mul(3.0));
  const Tensor a_strided = a.t().contiguous().t(), b_strided = b.t().contiguous().t();
  ASSERT_FALSE(a_strided.is_contiguous());
  const auto same_bits = [](const Tensor& flat, const Tensor& strided) {
    return testing::bitwise_equal(flat, strided.contiguous());
  };
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(same_bits(c.op(a), c.op(a_strided)));
  }
  EXPECT_TRUE(same_bits(add(a, b), add(a_strided, b_strided)));
  EXPECT_TRUE(same_bits(sub(a, b, 0.5), sub(a_strided, b_strided, 0.5)));
  EXPECT_TRUE(same_bits(mul(a, b), mul(a_strided, b_strided)));
  EXPECT_TRUE(same_bits(div(a, b), div(a_strided, b_strided)));
  EXPECT_TRUE(same_bits(maximum(a, b), maximum(a_strided, b_strided)));
  EXPECT_TRUE(same_bits(mul(a, 0.3), mul(a_strided, 0.3)));
  Tensor x = a.detach().requires_grad_(), x_strided = a_strided.detach().requires_grad_();
  relu(x).backward(b);
  relu(x_strided).backward(b_strided);
  EXPECT_TRUE(same_bits(x.grad(), x_strided.grad()));
}

// The same for float32 and float16 through vectorisable_math.h's functions, whose flat loops are
// compiled for AVX2 and AVX-512 too: exp's clamps, underflow and overflow, NaN and the infinities,
// forward and backward.
TEST(Elementwise, VectorisableMathFlatAndStridedLoopsGiveTheSameBits) {
  for (const DType dtype : {kFloat32, kFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    auto values = to_vector<float>(wiggly_tensor({64, 130}).mul(60.0).sub(20.0).to(kFloat32));
    values[0] = std::numeric_limits<float>::quiet_NaN();
    values[1] = std::numeric_limits<float>::infinity();
    values[2] = -std::numeric_limits<float>::infinity();
    values[3] = -0.0f;
    values[4] = 88.5f;
    values[5] = -104.5f;
    const Tensor a = tensor(values).view({64, 130}).to(dtype);
    const Tensor a_strided = a.t().contiguous().t();
    ASSERT_FALSE(a_strided.is_contiguous());
    const Tensor grad = wiggly_tensor({64, 130}, dtype, 0.25);
    const Tensor grad_strided = grad.t().contiguous().t();
    const std::pair<std::string, std::function<Tensor(const Tensor&)>> ops[] = {
        {"exp", [](const Tensor& x) { return exp(x); }},
        {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
        {"silu", [](const Tensor& x) { return silu(x); }},
        {"gelu", [](const Tensor& x) { return gelu(x); }},
    };
    for (const auto& [name, op] : ops) {
      SCOPED_TRACE(name);
      EXPECT_TRUE(testing::bitwise_equal(op(a), op(a_strided).contiguous()));
      Tensor x = a.detach().requires_grad_(), x_strided = a_strided.detach().requires_grad_();
      op(x).backward(grad);
      op(x_strided).backward(grad_strided);
      EXPECT_TRUE(testing::bitwise_equal(x.grad(), x_strided.grad().contiguous()));
    }
  }
}

TEST(Elementwise, IntegerArithmetic) {
  Tensor a = tensor(std::vector<int32_t>{-3, 0, 7, 100});
  Tensor b = tensor(std::vector<int32_t>{2, -5, 7, 1});
  EXPECT_EQ(add(a, b).dtype(), kInt32);
  EXPECT_EQ(to_vector<int32_t>(add(a, b)), (std::vector<int32_t>{-1, -5, 14, 101}));
  EXPECT_EQ(to_vector<int32_t>(sub(a, b, 2)), (std::vector<int32_t>{-7, 10, -7, 98}));
  EXPECT_EQ(to_vector<int32_t>(mul(a, b)), (std::vector<int32_t>{-6, 0, 49, 100}));
  EXPECT_EQ(to_vector<int32_t>(neg(a)), (std::vector<int32_t>{3, 0, -7, -100}));
  EXPECT_EQ(to_vector<int32_t>(abs(a)), (std::vector<int32_t>{3, 0, 7, 100}));
  EXPECT_EQ(to_vector<int32_t>(maximum(a, b)), (std::vector<int32_t>{2, 0, 7, 100}));
  EXPECT_EQ(to_vector<int32_t>(minimum(a, b)), (std::vector<int32_t>{-3, -5, 7, 1}));
  EXPECT_EQ(to_vector<int32_t>(a * 3 + 1), (std::vector<int32_t>{-8, 1, 22, 301}));
  Tensor big = tensor(std::vector<int64_t>{int64_t{1} << 40, -(int64_t{1} << 40)});
  EXPECT_EQ(to_vector<int64_t>(add(big, big)),
            (std::vector<int64_t>{int64_t{1} << 41, -(int64_t{1} << 41)}));
  // uint8 wraps around with an integer scalar, as in PyTorch (a floating one gives float32).
  Tensor bytes = tensor(std::vector<uint8_t>{250, 3});
  EXPECT_EQ(to_vector<int32_t>(add(bytes, 10)), (std::vector<int32_t>{4, 13}));
  EXPECT_EQ(to_vector<int32_t>(sub(bytes, 4)), (std::vector<int32_t>{246, 255}));
  EXPECT_EQ(to_vector<float>(add(bytes, 10.0)), (std::vector<float>{260, 13}));
  EXPECT_EQ(to_vector<int32_t>(neg(bytes)), (std::vector<int32_t>{6, 253}));
  EXPECT_EQ(to_vector<int32_t>(abs(bytes)), (std::vector<int32_t>{250, 3}));
}

TEST(Elementwise, FloatOnlyOpsRefuseIntegersAndArithmeticRefusesBool) {
  Tensor ints = arange(4);  // int64
  EXPECT_ERROR_CONTAINS(
      exp(ints),
      "exp: expected a floating-point tensor (float32, float64, float16 or bfloat16), got int64");
  EXPECT_ERROR_CONTAINS(relu(ints), "relu: expected a floating-point tensor");
  EXPECT_ERROR_CONTAINS(pow(ints, -2), "pow: integers to negative integer powers are not allowed");
  // alpha is not promoted (PyTorch refuses a floating alpha for integer tensors too).
  EXPECT_ERROR_CONTAINS(
      add(ints, ints, 0.5),
      "add: the scalar 0.5 is not an integer and cannot be applied to a int64 tensor");
  Tensor mask = gt(ints, 1.0);
  // Two bools add to bool (logical or, as PyTorch's); subtracting them is an error there too.
  EXPECT_ERROR_CONTAINS(sub(mask, mask),
                        "sub: expected a numeric tensor (float32, float64, float16, bfloat16, "
                        "int32, int64 or uint8), got bool");
  EXPECT_ERROR_CONTAINS(neg(mask), "neg: expected a numeric tensor");
}

TEST(Elementwise, InPlaceOpsRefuseAResultTheirDtypeCannotHold) {
  Tensor f32 = ones({2}), i64 = ones({2}, kInt64);
  EXPECT_ERROR_CONTAINS(
      i64.add_(f32),
      "add_: the result type float32 cannot be written into this int64 tensor (in-place ops keep "
      "the target's dtype)");
  EXPECT_ERROR_CONTAINS(Tensor(ones({2}, kInt32)).mul_(ones({2}, kFloat16)),
                        "mul_: the result type float16 cannot be written into this int32 tensor");
}

TEST(Elementwise, ShapeMismatchIsAnErrorNamingTheOpAndBothShapes) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  EXPECT_ERROR_CONTAINS(add(a, b), "add: shapes [2, 3] and [4] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(mul(b, a), "mul: shapes [4] and [2, 3] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(maximum(a, zeros({3, 3})),
                        "maximum: shapes [2, 3] and [3, 3] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(lt(a, b), "lt: shapes [2, 3] and [4] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(where(gt(b, 0.0), a, a),
                        "where: shapes [4] and [2, 3] cannot be broadcast together");
}

// ---- comparisons and where ----

TEST(Elementwise, ComparisonsGiveBoolAndBroadcast) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3});
  Tensor b = tensor({2.0, 2.0, 7.0});
  using Bools = std::vector<bool>;
  EXPECT_EQ(eq(a, b).dtype(), kBool);
  EXPECT_EQ(eq(a, b).sizes(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<bool>(eq(a, b)), (Bools{false, true, false, false, false, false}));
  EXPECT_EQ(to_vector<bool>(ne(a, b)), (Bools{true, false, true, true, true, true}));
  EXPECT_EQ(to_vector<bool>(lt(a, b)), (Bools{true, false, true, false, false, true}));
  EXPECT_EQ(to_vector<bool>(le(a, b)), (Bools{true, true, true, false, false, true}));
  EXPECT_EQ(to_vector<bool>(gt(a, b)), (Bools{false, false, false, true, true, false}));
  EXPECT_EQ(to_vector<bool>(ge(a, b)), (Bools{false, true, false, true, true, false}));
  EXPECT_EQ(to_vector<bool>(a == b), to_vector<bool>(eq(a, b)));
  EXPECT_EQ(to_vector<bool>(a != b), to_vector<bool>(ne(a, b)));
  EXPECT_EQ(to_vector<bool>(a < b), to_vector<bool>(lt(a, b)));
  EXPECT_EQ(to_vector<bool>(a <= b), to_vector<bool>(le(a, b)));
  EXPECT_EQ(to_vector<bool>(a > b), to_vector<bool>(gt(a, b)));
  EXPECT_EQ(to_vector<bool>(a >= b), to_vector<bool>(ge(a, b)));
  // With a scalar.
  EXPECT_EQ(to_vector<bool>(eq(a, 3.0)), (Bools{false, false, true, false, false, false}));
  EXPECT_EQ(to_vector<bool>(ne(a, 3.0)), (Bools{true, true, false, true, true, true}));
  EXPECT_EQ(to_vector<bool>(lt(a, 3.0)), (Bools{true, true, false, false, false, false}));
  EXPECT_EQ(to_vector<bool>(le(a, 3.0)), (Bools{true, true, true, false, false, false}));
  EXPECT_EQ(to_vector<bool>(gt(a, 3.0)), (Bools{false, false, false, true, true, true}));
  EXPECT_EQ(to_vector<bool>(ge(a, 3.0)), (Bools{false, false, true, true, true, true}));
  // Integer tensors compare with a fractional scalar exactly; bool tensors compare too.
  Tensor ints = arange(4);
  EXPECT_EQ(to_vector<bool>(lt(ints, 2.5)), (Bools{true, true, true, false}));
  EXPECT_EQ(to_vector<bool>(eq(ints, 2.5)), (Bools{false, false, false, false}));
  Tensor mask = gt(ints, 1.0);
  EXPECT_EQ(to_vector<bool>(eq(mask, lt(ints, 3.0))), (Bools{false, false, true, false}));
}

TEST(Elementwise, ComparisonsAreNeverDifferentiable) {
  Tensor x = leaf(tensor({1.0, 2.0}, kFloat64));
  Tensor mask = gt(x, 1.5);
  EXPECT_FALSE(mask.requires_grad());
  EXPECT_EQ(mask.grad_fn(), nullptr);
  EXPECT_FALSE(lt(x, x * 2).requires_grad());
}

TEST(Elementwise, WhereBroadcastsAllThree) {
  Tensor condition = tensor(std::vector<bool>{true, false, true}, {3, 1});
  Tensor a = tensor({1.0, 2.0});  // [2]
  Tensor b = tensor({-1.0, -2.0, -3.0, -4.0, -5.0, -6.0}).view({3, 2});
  Tensor out = where(condition, a, b);
  EXPECT_EQ(out.sizes(), (Shape{3, 2}));
  EXPECT_EQ(to_vector<float>(out), (std::vector<float>{1, 2, -3, -4, 1, 2}));
  EXPECT_EQ(to_vector<float>(where(gt(a, 1.5), a, scalar_tensor(0.0))), (std::vector<float>{0, 2}));
  Tensor ints = arange(3);
  EXPECT_EQ(
      to_vector<int64_t>(where(tensor(std::vector<bool>{false, true, false}), ints, neg(ints))),
      (std::vector<int64_t>{0, 1, -2}));
  EXPECT_ERROR_CONTAINS(where(a, a, a),
                        "where: expected the condition to be a bool tensor, got float32");
}

// ---- in place ----

TEST(Elementwise, InPlaceMethodsBroadcastAndBumpTheVersion) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3});
  const uint64_t version = x.version();
  Tensor& same = x.add_(tensor({1.0, 1.0, 1.0}));
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  x.add_(tensor({1.0, 2.0}).view({2, 1}), 2);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{4, 5, 6, 9, 10, 11}));
  x.sub_(tensor({4.0, 5.0, 6.0}));
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{0, 0, 0, 5, 5, 5}));
  x.sub_(scalar_tensor(1.0), -1);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{1, 1, 1, 6, 6, 6}));
  x.mul_(tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{1, 2, 3, 6, 12, 18}));
  x.add_(1.0);
  x.mul_(2.0);
  x.div_(4.0);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{1, 1.5f, 2, 3.5f, 6.5f, 9.5f}));
  EXPECT_EQ(x.version(), version + 8);
}

TEST(Elementwise, InPlaceWritesThroughViews) {
  Tensor base = zeros({3, 4});
  Tensor column = base.select(1, 2);  // stride 4
  column.add_(tensor({1.0, 2.0, 3.0}));
  base.t().mul_(tensor({1.0, 1.0, 10.0}));  // scales base's rows through a transposed view
  EXPECT_EQ(to_vector<float>(base), (std::vector<float>{0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 30, 0}));
  EXPECT_EQ(base.version(), column.version());  // one storage, one version counter
}

TEST(Elementwise, InPlaceErrors) {
  Tensor x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(x.add_(zeros({4, 2, 3})),
                        "add_: the other operand of shape [4, 2, 3] cannot be broadcast to this "
                        "tensor's shape [2, 3]");
  EXPECT_ERROR_CONTAINS(x.mul_(zeros({4})),
                        "mul_: shapes [2, 3] and [4] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(zeros({3}).expand({2, 3}).add_(1.0),
                        "add_: cannot write in place into a broadcast view of shape [2, 3]");
  EXPECT_ERROR_CONTAINS(arange(3).div_(2.0), "div_: expected a floating-point tensor");
  EXPECT_ERROR_CONTAINS(arange(3).add_(0.5),
                        "add_: the result type float32 (with the floating-point scalar 0.5) "
                        "cannot be written into this int64 tensor");
  Tensor w = leaf(zeros({2}));
  EXPECT_ERROR_CONTAINS(w.add_(1.0),
                        "add_: in-place operation on a tensor of shape [2] that requires grad");
  EXPECT_ERROR_CONTAINS(w.mul_(zeros({2})),
                        "mul_: in-place operation on a tensor of shape [2] that requires grad");
  {
    NoGradGuard no_grad;  // how optimizers update parameters
    w.add_(tensor({1.0, 2.0}), -0.5);
  }
  EXPECT_EQ(to_vector<float>(w), (std::vector<float>{-0.5f, -1.0f}));
}

// ---- gradients (f64 central differences) ----

TEST(ElementwiseGrad, UnaryOpsContiguousAndTransposed) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    auto fn = [&](const std::vector<Tensor>& in) { return c.op(in[0]); };
    expect_gradcheck(fn, {leaf(unary_input(c, {2, 3}, kFloat64))});
    Tensor base = leaf(unary_input(c, {3, 2}, kFloat64));
    expect_gradcheck([&](const std::vector<Tensor>& in) { return c.op(in[0].t()); }, {base});
  }
}

TEST(ElementwiseGrad, UnaryOpsOnAStridedSlice) {
  Tensor base = leaf(positive_tensor({3, 6}));
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    expect_gradcheck([&](const std::vector<Tensor>& in) { return c.op(in[0].slice(1, 1, 6, 2)); },
                     {base});
  }
}

TEST(ElementwiseGrad, BinaryOpsSameShapeAndTransposed) {
  Tensor a = leaf(wiggly_tensor({2, 3})), b = leaf(positive_tensor({2, 3}, kFloat64, 0.7));
  Tensor bt = leaf(positive_tensor({3, 2}, kFloat64, 0.7));
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }},
      {"add alpha", [](const Tensor& x, const Tensor& y) { return add(x, y, 2.5); }},
      {"sub alpha", [](const Tensor& x, const Tensor& y) { return sub(x, y, 0.5); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
      {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
  };
  for (const auto& [name, binding] : ops) {
    SCOPED_TRACE(name);
    // A reference of its own: clang 14 (clang-tidy's) cannot capture a structured binding.
    const Fn& op = binding;
    expect_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], in[1].t()); }, {a, bt});
  }
}

TEST(ElementwiseGrad, BinaryOpsWithBroadcastInputs) {
  // Gradients of broadcast inputs are summed back to their shapes.
  Tensor a = leaf(wiggly_tensor({2, 1, 4})), b = leaf(positive_tensor({3, 1}, kFloat64, 0.3));
  Tensor s = leaf(positive_tensor({}, kFloat64, 0.9));
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y, -1.5); }},
      {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
      {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
  };
  for (const auto& [name, binding] : ops) {
    SCOPED_TRACE(name);
    // A reference of its own: clang 14 (clang-tidy's) cannot capture a structured binding.
    const Fn& op = binding;
    expect_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return op(in[1], in[0]); }, {a, b});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, s});
  }
}

TEST(ElementwiseGrad, ScalarForms) {
  Tensor x = leaf(wiggly_tensor({2, 3}));
  expect_gradcheck([](const std::vector<Tensor>& in) { return add(in[0], 2.0); }, {x});
  expect_gradcheck([](const std::vector<Tensor>& in) { return sub(in[0], 2.0); }, {x});
  expect_gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], -3.0); }, {x});
  expect_gradcheck([](const std::vector<Tensor>& in) { return div(in[0], 4.0); }, {x});
  expect_gradcheck([](const std::vector<Tensor>& in) { return 1.0 - in[0]; }, {x});
  expect_gradcheck([](const std::vector<Tensor>& in) { return 2.0 / (in[0] * in[0] + 1.0); }, {x});
}

TEST(ElementwiseGrad, WhereWithBroadcastOperands) {
  Tensor condition = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  Tensor a = leaf(wiggly_tensor({3})), b = leaf(wiggly_tensor({2, 1}, kFloat64, 0.4));
  expect_gradcheck([&](const std::vector<Tensor>& in) { return where(condition, in[0], in[1]); },
                   {a, b});
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return where(condition.t(), in[1].t(), in[0].view({3, 1}));
      },
      {a, b});
}

TEST(ElementwiseGrad, MaximumAndMinimumSplitTiesEvenly) {
  Tensor a = leaf(tensor({1.0, 2.0, 3.0}, kFloat64));
  Tensor b = leaf(tensor({1.0, 5.0, 0.0}, kFloat64));
  maximum(a, b).backward(ones({3}, kFloat64));
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(to_vector<double>(b.grad()), (std::vector<double>{0.5, 1, 0}));
  Tensor c = leaf(tensor({1.0, 2.0, 3.0}, kFloat64));
  Tensor d = leaf(tensor({1.0, 5.0, 0.0}, kFloat64));
  minimum(c, d).backward(full({3}, 2.0, kFloat64));
  EXPECT_EQ(to_vector<double>(c.grad()), (std::vector<double>{1, 2, 0}));
  EXPECT_EQ(to_vector<double>(d.grad()), (std::vector<double>{1, 0, 2}));
}

TEST(ElementwiseGrad, OnlyInputsThatRequireGradReceiveOne) {
  Tensor a = leaf(tensor({1.0, 2.0}, kFloat64));
  Tensor constant = tensor({3.0, 4.0}, kFloat64);
  Tensor y = mul(a, constant);
  EXPECT_TRUE(y.requires_grad());
  y.backward(ones({2}, kFloat64));
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{3, 4}));
  EXPECT_FALSE(constant.grad().defined());
  // No input requires grad: nothing is recorded.
  EXPECT_EQ(exp(constant).grad_fn(), nullptr);
  EXPECT_EQ(add(constant, constant).grad_fn(), nullptr);
}

TEST(ElementwiseGrad, ActivationGradientsByHand) {
  Tensor x = leaf(tensor({-1.0, 2.0}, kFloat64));
  relu(x).backward(tensor({5.0, 7.0}, kFloat64));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 7}));
  Tensor z = leaf(tensor({0.0}, kFloat64));
  sigmoid(z).backward();
  EXPECT_EQ(z.grad().item<double>(), 0.25);  // s(0)(1 - s(0))
  Tensor g = leaf(tensor({0.0}, kFloat64));
  gelu(g).backward();
  EXPECT_EQ(g.grad().item<double>(), 0.5);  // Phi(0)
  Tensor p = leaf(tensor({0.0, 2.0}, kFloat64));
  pow(p, 0.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(to_vector<double>(p.grad()), (std::vector<double>{0, 0}));  // not NaN at 0
}

}  // namespace
}  // namespace minidl
