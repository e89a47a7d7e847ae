#pragma once
// Checks shared by the kernel-table tests of each layer (Note [Kernel tables] in
// core/dispatch.h): every table of the build fills every entry. A designated initializer that
// forgets a member leaves it null, which only a call would reveal. Needs no GPU: the CUDA tables
// are only read.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "minidl/core/cuda/build.h"

namespace minidl::testing {

// The indices of the null entries of `table`, a struct of function pointers only.
template <class Kernels>
std::string null_entries(const Kernels& table) {
  static_assert(sizeof(Kernels) % sizeof(uintptr_t) == 0, "a table holds function pointers only");
  std::array<uintptr_t, sizeof(Kernels) / sizeof(uintptr_t)> entries;
  std::memcpy(entries.data(), &table, sizeof(Kernels));
  std::string nulls;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i] == 0) nulls += std::to_string(i) + " ";
  return nulls;
}

// Expects no null entry in family `Kernels`'s CPU table, and in its CUDA table in a CUDA build.
template <class Kernels>
void expect_complete_tables(const char* family) {
  EXPECT_EQ(null_entries(Kernels::kCpu), "") << family << "'s CPU table, null entries";
  if constexpr (cuda::kBuilt)
    EXPECT_EQ(null_entries(Kernels::kCuda), "") << family << "'s CUDA table, null entries";
}

}  // namespace minidl::testing
