// Printing as PyTorch prints (torch/_tensor_str.py with the default print options: precision 4,
// threshold 1000, edgeitems 3, linewidth 80), so that `std::cout << t` shows the same characters
// as Python's str(t):
// - One format for all shown elements: integer-valued floats as `1.`, otherwise 4 decimals, and
//   scientific notation (`1.0000e-05`) when the nonzero finite magnitudes span more than 1000x,
//   exceed 1e8, or (for non-integers) go below 1e-4.
// - Every element is right-aligned to the widest one; a row wraps before 80 columns.
// - Past 1000 elements only the first and last 3 of each dimension are shown, around `...`.
// - Suffixes: device when not the CPU, dtype when not float32/int64/bool, size=(...) for an
//   empty tensor that is not 1-D, then grad_fn or requires_grad.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "minidl/core/autograd/node.h"
#include "minidl/core/tensor.h"

namespace minidl {

namespace {

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kPrecision = 4;
constexpr size_t kLineWidth = 80;

// `value` with `decimals` digits after the point, in fixed ("1.5000") or scientific
// ("1.5000e+00") notation, as Python's format() writes them.
std::string fixed_string(double value, int decimals) {
  char buffer[400];  // the widest finite double in fixed notation fits
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string scientific_string(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*e", kPrecision, value);
  return buffer;
}

// nan and inf as Python writes them ("nan" whatever its sign bit, which printf shows as "-nan").
std::string non_finite_string(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// The tensor's elements in row-major order: integers as int64, so that none is rounded.
struct HostValues {
  std::vector<double> floats;
  std::vector<int64_t> integers;
};

// PyTorch's _Formatter: one way to write every element shown, chosen from all of them (given
// by their row-major indices).
class ElementFormat {
 public:
  ElementFormat(DType dtype, const HostValues& values, const std::vector<int64_t>& shown)
      : dtype_(dtype), values_(values) {
    if (!is_floating_point(dtype)) {
      for (int64_t i : shown) width_ = std::max(width_, integer_string(values.integers[i]).size());
      return;
    }
    std::vector<double> nonzero_finite;
    for (int64_t i : shown) {
      const double v = values.floats[i];
      if (std::isfinite(v) && v != 0) nonzero_finite.push_back(v);
    }
    if (nonzero_finite.empty()) return;
    double min_abs = std::fabs(nonzero_finite[0]), max_abs = min_abs;
    for (double v : nonzero_finite) {
      min_abs = std::min(min_abs, std::fabs(v));
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    const bool wide_range = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
    sci_mode_ = int_mode_ ? wide_range : wide_range || min_abs < 1.0e-4;
    for (double v : nonzero_finite) {
      // In integer mode the width counts the "." that format() appends.
      const size_t length = sci_mode_   ? scientific_string(v).size()
                            : int_mode_ ? fixed_string(v, 0).size() + 1
                                        : fixed_string(v, kPrecision).size();
      width_ = std::max(width_, length);
    }
  }

  size_t width() const { return width_; }

  // Element `index`'s text, right-aligned to width() (a longer one, such as "nan" among "1.",
  // is left as it is, as in PyTorch).
  std::string format(int64_t index) const {
    if (!is_floating_point(dtype_)) return pad(integer_string(values_.integers[index]));
    const double v = values_.floats[index];
    std::string text;
    if (!std::isfinite(v))
      text = non_finite_string(v);
    else if (sci_mode_)
      text = scientific_string(v);
    else if (int_mode_)
      text = fixed_string(v, 0) + ".";
    else
      text = fixed_string(v, kPrecision);
    return pad(std::move(text));
  }

 private:
  std::string pad(std::string text) const {
    if (text.size() < width_) text.insert(0, width_ - text.size(), ' ');
    return text;
  }

  std::string integer_string(int64_t v) const {
    if (dtype_ == kBool) return v != 0 ? "True" : "False";
    return std::to_string(v);
  }

  DType dtype_;
  const HostValues& values_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

// Walks the elements (by row-major index) in the order and shape PyTorch prints them.
class Printer {
 public:
  Printer(const Shape& sizes, bool summarize) : sizes_(sizes), summarize_(summarize) {}

  // The elements that will be shown (PyTorch's get_summarized_data), which choose the format.
  std::vector<int64_t> shown_elements() const {
    std::vector<int64_t> shown;
    collect(0, 0, shown);
    return shown;
  }

  std::string print(const ElementFormat& format, size_t indent) const {
    return block(format, 0, 0, indent);
  }

 private:
  bool elided(int64_t size) const { return summarize_ && size > 2 * kEdgeItems; }

  // The indices of dimension `d` that are shown, with -1 where "..." goes.
  std::vector<int64_t> shown_indices(size_t d) const {
    const int64_t n = sizes_[d];
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < n; ++i) {
      if (elided(n) && i == kEdgeItems) {
        indices.push_back(-1);
        i = n - kEdgeItems - 1;
        continue;
      }
      indices.push_back(i);
    }
    return indices;
  }

  int64_t inner_numel(size_t d) const {
    int64_t inner = 1;
    for (size_t k = d + 1; k < sizes_.size(); ++k) inner *= sizes_[k];
    return inner;
  }

  void collect(size_t d, int64_t base, std::vector<int64_t>& shown) const {
    if (d == sizes_.size()) return shown.push_back(base);
    for (int64_t i : shown_indices(d))
      if (i >= 0) collect(d + 1, base + i * inner_numel(d), shown);
  }

  // The block of dimension `d` starting at flat index `base`, whose "[" is at column `indent`.
  std::string block(const ElementFormat& format, size_t d, int64_t base, size_t indent) const {
    if (d == sizes_.size()) return format.format(base);
    const int64_t inner = inner_numel(d);
    std::vector<std::string> items;
    for (int64_t i : shown_indices(d)) {
      const bool last_dim = d + 1 == sizes_.size();
      if (i < 0)
        items.push_back(last_dim ? " ..." : "...");
      else
        items.push_back(block(format, d + 1, base + i * inner, indent + 1));
    }
    std::string text = "[";
    if (d + 1 == sizes_.size()) {
      // A row: as many elements per line as fit in the line width (at least one).
      const size_t per_line = std::max<size_t>(
          1, indent < kLineWidth ? (kLineWidth - indent) / (format.width() + 2) : 0);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0 && i % per_line == 0) {
          text += ",\n";
          text.append(indent + 1, ' ');
        } else if (i > 0) {
          text += ", ";
        }
        text += items[i];
      }
    } else {
      // Sub-blocks: one per line, with a blank line between blocks of 3-D and up.
      std::string separator = ",";
      separator.append(sizes_.size() - d - 1, '\n');
      separator.append(indent + 1, ' ');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) text += separator;
        text += items[i];
      }
    }
    return text + "]";
  }

  const Shape& sizes_;
  bool summarize_;
};

// Python's str() of a tuple of sizes: (0, 3), (0,).
std::string size_tuple(const Shape& sizes) {
  std::string text = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(sizes[i]);
  }
  return text + (sizes.size() == 1 ? ",)" : ")");
}

// PyTorch's _add_suffixes: each suffix goes after ", " or, when it would pass the line width,
// on a new line under the first "[".
std::string with_suffixes(std::string text, const std::vector<std::string>& suffixes,
                          size_t indent) {
  const size_t newline = text.rfind('\n');
  // As PyTorch counts it: two more than the last line's length.
  size_t last_line = newline == std::string::npos ? text.size() + 2 : text.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line + suffix.size() + 2 > kLineWidth) {
      text += ",\n";
      text.append(indent, ' ');
      text += suffix;
      last_line = indent + suffix.size();
    } else {
      text += ", " + suffix;
      last_line += suffix.size() + 2;
    }
  }
  return text + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "[ undefined Tensor ]";
  const std::string prefix = "tensor(";
  std::vector<std::string> suffixes;
  if (is_cuda()) suffixes.push_back("device='" + device().str() + "'");
  const bool default_dtype = dtype() == kFloat32 || dtype() == kInt64 || dtype() == kBool;
  std::string contents;
  if (numel() == 0) {
    // No elements to tell an int64 tensor from a float32 one, so only float32 goes unnamed.
    if (dim() != 1) suffixes.push_back("size=" + size_tuple(sizes()));
    if (dtype() != kFloat32) suffixes.push_back("dtype=torch." + std::string(dtype_name(dtype())));
    contents = "[]";
  } else {
    if (!default_dtype) suffixes.push_back("dtype=torch." + std::string(dtype_name(dtype())));
    HostValues values;
    if (is_floating_point())
      values.floats = to_vector<double>(*this);
    else
      values.integers = to_vector<int64_t>(*this);
    const Printer printer(sizes(), numel() > kSummarizeThreshold);
    const ElementFormat format(dtype(), values, printer.shown_elements());
    contents = printer.print(format, prefix.size());
  }
  if (requires_grad())
    suffixes.push_back(is_leaf() ? "requires_grad=True" : "grad_fn=<" + grad_fn()->name() + ">");
  return with_suffixes(prefix + contents, suffixes, prefix.size());
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

}  // namespace minidl
