#pragma once
// Note [Peak memory by op]
// Which ops' allocations make up the peak of allocated device memory: the question a peak
// figure raises ("1564 MiB against PyTorch's 1345: what is in it?"), answered as
// torch.cuda.memory_snapshot() answers it, grouped by the op that allocated each block. While
// cuda::record_memory_by_op(true) is on (core/cuda/caching_allocator.h), each block the caching
// allocator hands out remembers the innermost ProfileScope open on the allocating thread (an op
// such as "conv2d", an autograd node's backward such as "Conv2dBackward"; "" outside every op;
// core/profiler.h's current_op_name), and each time the allocated bytes reach a new peak the
// bytes then in use are kept per op. Blocks that were in use when recording began count as
// kBeforeRecording. tools/bench reports it on a GPU ("peak_allocated_by_op").
//
// MemoryByOp is that ledger alone, in plain C++ (tests/core/memory_by_op_test.cpp); the
// allocator calls it under its mutex.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace minidl::cuda {

// What one op's blocks held at the peak.
struct OpMemory {
  std::string op;  // the ProfileScope's name; "" for allocations outside every op
  size_t bytes = 0;
  int64_t blocks = 0;
  bool operator==(const OpMemory&) const = default;
};

// The owner name of blocks already in use when recording began.
inline constexpr std::string_view kBeforeRecording = "(in use before recording began)";

class MemoryByOp {
 public:
  using Owner = uint32_t;

  // The owner id of `op`, the same for every call with the same name.
  Owner owner_of(std::string_view op);
  // A block of `bytes` owned by `owner` was handed out, or returned.
  void add(Owner owner, size_t bytes);
  void remove(Owner owner, size_t bytes);
  // Keeps the ledger as it stands as the peak's: call when the allocated total reaches a new
  // peak, or when the peak statistics are reset.
  void keep_as_peak();
  // The peak's ops that held memory, the most bytes first (ties by name).
  std::vector<OpMemory> at_peak() const;

 private:
  // Looked up by string_view without making a string (an allocation's cost stays a hash).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  std::vector<std::string> names_;  // by owner id
  std::unordered_map<std::string, Owner, NameHash, std::equal_to<>> owners_;
  std::vector<size_t> bytes_, peak_bytes_;
  std::vector<int64_t> blocks_, peak_blocks_;
};

}  // namespace minidl::cuda
