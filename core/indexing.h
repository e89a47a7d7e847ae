#pragma once
// Basic indexing in LibTorch's form (torch::indexing):
//
//   using namespace minidl::indexing;
//   x.index({Slice(), 0})                       // x[:, 0]
//   x.index({Slice(1, None), Slice(None, None, 2)})  // x[1:, ::2]
//   x.index({"...", -1})                        // x[..., -1] (or Ellipsis)
//   x.index({None, Slice()})                    // x[None, :]  (None adds a dim of size 1)
//
// An index is an integer (negative counts from the end; out of range is an error naming the
// dim, the index and the size), a Slice(start, stop, step) with optional ends (out-of-range
// ends clamp, as in Python; the step must be positive, as in PyTorch's tensor indexing), None
// or an Ellipsis ("..." or Ellipsis, at most one, standing for as many `Slice()` as needed).
// The result is a view sharing x's storage, built from select, slice and unsqueeze, so it is
// differentiable. Tensor::index is defined in core/indexing.cpp.
//
// Unlike LibTorch, a TensorIndex holds no tensor: gather rows with index_select(x, dim, index)
// (ops/shape.h), which copies. Boolean scalars (x[True]) are refused at compile time rather
// than read as the integers 0 and 1.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace minidl::indexing {

// `None` is std::nullopt, as in LibTorch: an omitted Slice end, or a new axis in an index list.
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {
  explicit constexpr EllipsisIndexType() = default;
};
inline constexpr EllipsisIndexType Ellipsis{};

// Python's start:stop:step. Omitted ends are the whole dim; the step must be positive.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt);

  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }  // INT64_MAX when omitted (clamped when applied)
  int64_t step() const { return step_; }

 private:
  int64_t start_;
  int64_t stop_;
  int64_t step_;
};

std::string to_string(const Slice& slice);  // "1:None:2", as PyTorch prints a slice

class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Slice };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  // Only "..." (an Ellipsis); any other string is an error.
  TensorIndex(const char* ellipsis);
  // Any integer type but bool. A template, so that a literal 0 is an integer, not a null
  // const char*.
  template <class Integer>
  requires(std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>)
      TensorIndex(Integer integer)
      : kind_(Kind::Integer), integer_(static_cast<int64_t>(integer)) {}
  TensorIndex(bool) = delete;  // PyTorch reads x[True] as a new axis; minidl does not support it
  TensorIndex(Slice slice) : kind_(Kind::Slice), slice_(slice) {}

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
};

std::string to_string(const TensorIndex& index);  // "None", "...", "3" or "1:None:2"

}  // namespace minidl::indexing
