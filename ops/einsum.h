#pragma once
// einsum, as torch::einsum: sums of products over the subscripts an equation names.
//
//   einsum("ij,jk->ik", {a, b})          // matmul
//   einsum("bhqd,bhkd->bhqk", {q, k})    // attention scores
//   einsum("ii->i", {x}), einsum("ii", {x})  // diagonal, trace
//   einsum("...ij,...jk", {a, b})        // batched, the "..." dims broadcast
//
// Subscripts are letters (a-z, A-Z); "..." stands for the dims no letter names, right-aligned
// and broadcast across the operands. Without "->" the output is the "..." dims followed by the
// letters that appear exactly once, in alphabetical order (upper case first), as PyTorch's.
// A letter repeated in one operand takes its diagonal; one absent from the output is summed
// over; sizes equal or 1 (broadcast). One or more operands of one floating dtype and device.
//
// The operands are contracted pairwise from left to right (PyTorch's order without opt_einsum),
// each pair as permute + reshape + bmm, after summing the dims that no later operand nor the
// output needs; diagonals are index_select of the flattened pair of dims. The gradient and both
// backends come from those ops. A malformed equation is an error naming it and what is wrong.
#include <string_view>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

}  // namespace minidl
