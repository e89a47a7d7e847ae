// The unary math ops and activations, table-driven: one row per op says what the op accepts,
// which kernel computes it (a UnaryOp naming a functor of ops/elementwise_math.h), which tensor
// its backward keeps and which kernel computes its derivative (a BinaryOp of (grad, kept)).
// Every row then runs the same body (unary_op). neg keeps nothing for its backward and is
// written out.
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_op.h"

namespace minidl {

namespace {

using elementwise::BinaryOp;
using elementwise::UnaryOp;

enum class Accepts { Floating, Numeric };  // Numeric: floating or integer, not bool
enum class Keeps { Input, Output };        // the tensor backward reads

constexpr Accepts kFloating = Accepts::Floating, kNumeric = Accepts::Numeric;
constexpr Keeps kInput = Keeps::Input, kOutput = Keeps::Output;

struct UnaryOpSpec {
  const char* name;       // in errors: "exp: expected a floating-point tensor ..."
  const char* node_name;  // the autograd node
  UnaryOp kernel;         // out = kernel(x; scalar)
  Accepts accepts;
  Keeps keeps;
  BinaryOp derivative;  // grad_input = derivative(grad, kept; scalar)
};

// clang-format off
constexpr UnaryOpSpec kUnaryOps[] = {
  // name       autograd node      kernel            accepts    keeps    derivative
    {"exp",     "ExpBackward",     UnaryOp::Exp,     kFloating, kOutput, BinaryOp::Mul},
    {"log",     "LogBackward",     UnaryOp::Log,     kFloating, kInput,  BinaryOp::Div},
    {"sqrt",    "SqrtBackward",    UnaryOp::Sqrt,    kFloating, kOutput, BinaryOp::SqrtBackward},
    {"abs",     "AbsBackward",     UnaryOp::Abs,     kNumeric,  kInput,  BinaryOp::AbsBackward},
    {"relu",    "ReluBackward",    UnaryOp::Relu,    kFloating, kOutput, BinaryOp::ReluBackward},
    {"sigmoid", "SigmoidBackward", UnaryOp::Sigmoid, kFloating, kOutput, BinaryOp::SigmoidBackward},
    {"tanh",    "TanhBackward",    UnaryOp::Tanh,    kFloating, kOutput, BinaryOp::TanhBackward},
    {"gelu",    "GeluBackward",    UnaryOp::Gelu,    kFloating, kInput,  BinaryOp::GeluBackward},
    {"pow",     "PowBackward",     UnaryOp::Pow,     kFloating, kInput,  BinaryOp::PowBackward},
};
// clang-format on

const UnaryOpSpec& spec_of(UnaryOp kernel) {
  for (const UnaryOpSpec& spec : kUnaryOps)
    if (spec.kernel == kernel) return spec;
  MINIDL_INTERNAL_ASSERT(false, "unary op ", static_cast<int>(kernel), " has no table row");
  return kUnaryOps[0];
}

// The op of `kernel`'s row applied to x; `scalar` is pow's exponent (0 for the others).
Tensor unary_op(UnaryOp kernel, const Tensor& x, double scalar = 0) {
  const UnaryOpSpec& spec = spec_of(kernel);
  if (spec.accepts == kFloating)
    elementwise::check_floating(x, spec.name);
  else
    elementwise::check_numeric(x, spec.name);
  Tensor out = elementwise::unary_forward(kernel, x, spec.name, scalar);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor kept(spec.keeps == kOutput ? out : x, spec.name);
    autograd::record(out, spec.node_name, {x}, [&spec, kept, scalar](const Tensor& grad) {
      return std::vector<Tensor>{
          elementwise::binary_forward(spec.derivative, grad, kept.get(), spec.node_name, scalar)};
    });
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  elementwise::check_numeric(x, "neg");
  Tensor out = elementwise::unary_forward(UnaryOp::Neg, x, "neg");
  if (autograd::needs_grad({x}))
    autograd::record(out, "NegBackward", {x},
                     [](const Tensor& grad) { return std::vector<Tensor>{neg(grad)}; });
  return out;
}

Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::Gelu, x); }
Tensor pow(const Tensor& x, double exponent) { return unary_op(UnaryOp::Pow, x, exponent); }

}  // namespace minidl
