// The ledger of Note [Peak memory by op] (core/cuda/memory_by_op.h).
#include "minidl/core/cuda/memory_by_op.h"

#include <algorithm>

#include "minidl/core/error.h"

namespace minidl::cuda {

MemoryByOp::Owner MemoryByOp::owner_of(std::string_view op) {
  if (const auto found = owners_.find(op); found != owners_.end()) return found->second;
  const auto owner = static_cast<Owner>(names_.size());
  owners_.emplace(std::string(op), owner);
  names_.emplace_back(op);
  bytes_.push_back(0);
  blocks_.push_back(0);
  return owner;
}

void MemoryByOp::add(Owner owner, size_t bytes) {
  MINIDL_INTERNAL_ASSERT(owner < bytes_.size(), "MemoryByOp: unknown owner ", owner);
  bytes_[owner] += bytes;
  ++blocks_[owner];
}

void MemoryByOp::remove(Owner owner, size_t bytes) {
  MINIDL_INTERNAL_ASSERT(owner < bytes_.size() && bytes_[owner] >= bytes && blocks_[owner] > 0,
                         "MemoryByOp: returning ", bytes, " bytes that owner ", owner,
                         " does not hold");
  bytes_[owner] -= bytes;
  --blocks_[owner];
}

void MemoryByOp::keep_as_peak() {
  peak_bytes_ = bytes_;
  peak_blocks_ = blocks_;
}

std::vector<OpMemory> MemoryByOp::at_peak() const {
  std::vector<OpMemory> ops;
  for (size_t owner = 0; owner < peak_bytes_.size(); ++owner)
    if (peak_blocks_[owner] > 0)
      ops.push_back({names_[owner], peak_bytes_[owner], peak_blocks_[owner]});
  std::sort(ops.begin(), ops.end(), [](const OpMemory& a, const OpMemory& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.op < b.op;
  });
  return ops;
}

}  // namespace minidl::cuda
