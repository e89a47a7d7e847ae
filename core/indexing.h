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
// Tensor indices (advanced indexing, which copies), alone or among the others:
//   x.index({mask})      // bool mask over x's leading dims: the selected elements (or rows
//                        // when the mask covers fewer dims than x has), as x[mask]
//   x.index({indices})   // int64: x's rows at `indices` (any shape; negative counts from the
//                        // end), as x[indices]
//   x.index({Slice(), indices})           // x[:, indices]
//   x.index({arange(n), targets})         // x[arange(n), targets]: one element per row
//   x.index_put_({mask}, 0.0), x.index_put_({indices}, values, /*accumulate=*/true),
//   x.index_put_({Slice(), indices}, values)
// with LibTorch's rules (Note [Tensor indices among others] in ops/advanced_indexing.cpp;
// index_put in ops/indexing.h is the differentiable copy). Boolean scalars (x[True]) are
// refused at compile time rather than read as the integers 0 and 1.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace minidl {
class Tensor;
}

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
  enum class Kind { None, Ellipsis, Integer, Slice, Tensor };

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
  // A bool mask or an int64 index (core/indexing.cpp, where Tensor is complete).
  TensorIndex(const Tensor& tensor);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return *tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  std::shared_ptr<const Tensor> tensor_;  // a pointer: Tensor is incomplete here
};

// "None", "...", "3", "1:None:2" or "Tensor[3, 4] bool".
std::string to_string(const TensorIndex& index);
// "{0, 1:None:1, Tensor[2] int64}".
std::string to_string(const std::vector<TensorIndex>& indices);

// Where a tensor index picks: the first of the dims it indexes, in the view of the basic
// indices and in the tensor indexed.
struct TensorIndexPlace {
  int64_t view_dim;
  int64_t source_dim;
};

// The view that the integers, slices, None and Ellipsis of `indices` give, in which each tensor
// index keeps the dims it indexes (one for an int64 index, its own for a bool mask), its place
// appended to `places` (when given): where advanced indexing then picks.
Tensor apply_basic_indices(const Tensor& x, const std::vector<TensorIndex>& indices,
                           std::vector<TensorIndexPlace>* places);

}  // namespace minidl::indexing
