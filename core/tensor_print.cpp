// PyTorch-style printing: tensor([[1.0000, 2.0000], [3.0000, 4.0000]]), with the dtype and
// device after the values when they are not the defaults, and "..." past 1000 elements.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "minidl/core/autograd/node.h"
#include "minidl/core/tensor.h"

namespace minidl {

namespace {

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

struct Printer {
  const std::vector<double>& values;
  const Shape& sizes;
  bool floating;
  bool boolean;
  bool summarize;
  std::ostream& out;

  void element(double v) const {
    if (boolean)
      out << (v != 0 ? "True" : "False");
    else if (!floating)
      out << static_cast<int64_t>(v);
    else if (std::isnan(v))
      out << "nan";
    else if (std::isinf(v))
      out << (v > 0 ? "inf" : "-inf");
    else
      out << std::fixed << std::setprecision(4) << v;
  }

  // Prints the block of dimension `d` starting at flat index `base`.
  void block(size_t d, int64_t base, int indent) const {
    if (d == sizes.size()) return element(values[base]);
    int64_t inner = 1;
    for (size_t k = d + 1; k < sizes.size(); ++k) inner *= sizes[k];
    out << '[';
    const int64_t n = sizes[d];
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out << "...";
        i = n - kEdgeItems - 1;
        separator(d, indent);
        continue;
      }
      block(d + 1, base + i * inner, indent + 1);
      if (i + 1 < n) separator(d, indent);
    }
    out << ']';
  }

  void separator(size_t d, int indent) const {
    if (d + 1 == sizes.size()) {
      out << ", ";
    } else {
      out << ',' << std::string(sizes.size() - d - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "[ undefined Tensor ]";
  std::ostringstream out;
  out << "tensor(";
  std::vector<double> values = to_vector<double>(*this);
  Printer printer{
      values, sizes(), is_floating_point(), dtype() == kBool, numel() > kSummarizeThreshold, out};
  printer.block(0, 0, 7);
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool) out << ", dtype=" << dtype();
  if (is_cuda()) out << ", device='" << device() << "'";
  if (requires_grad())
    out << (is_leaf() ? ", requires_grad=True" : ", grad_fn=<" + grad_fn()->name() + ">");
  out << ')';
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

}  // namespace minidl
