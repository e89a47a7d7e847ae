#pragma once
// What Optimizer::state_dict() returns and load_state_dict() takes, shaped as PyTorch's
// optimizer state_dict: per-parameter state tensors (SGD: "momentum_buffer") keyed by the
// parameter's position counted over all groups in order, and each group's options with the
// positions of its parameters.
//
// For a checkpoint file it flattens into named tensors plus a ScalarMap (JSON-able):
//   tensors  "state.<position>.<key>"              e.g. "state.3.momentum_buffer"
//   scalars  "param_groups.<group>.<option>"       e.g. "param_groups.0.lr" = 0.1
//            "param_groups.<group>.num_params"     how many parameters the group holds
// and back, exactly. A training checkpoint writes them with serialize::write_safetensors:
//
//   optim::OptimizerStateDict state = optimizer.state_dict();
//   serialize::NamedTensorList tensors = ...model tensors...;
//   for (auto& entry : state.tensors("optimizer.")) tensors.push_back(entry);
//   serialize::write_safetensors(path, tensors,
//                                {{"optimizer", optim::to_json(state.scalars())}});
//
//   auto file = serialize::read_safetensors(path);
//   optimizer.load_state_dict(optim::OptimizerStateDict::from_flat(
//       file.tensors, optim::scalar_map_from_json(file.metadata.at("optimizer"), "optimizer"),
//       "optimizer."));
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "minidl/core/safetensors.h"
#include "minidl/core/tensor.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

// One parameter's state by name ("momentum_buffer" -> tensor).
using ParamState = std::map<std::string, Tensor>;
// Tensors with their names, in order: what a safetensors file holds.
using serialize::NamedTensorList;

struct OptimizerStateDict {
  struct ParamGroup {
    ScalarMap options;            // "lr", "momentum", ... (bools as 0 or 1)
    std::vector<int64_t> params;  // positions of the group's parameters
  };

  std::map<int64_t, ParamState> state;  // only parameters that have state
  std::vector<ParamGroup> param_groups;

  // The flat form (see above). Tensor names get `prefix` in front.
  NamedTensorList tensors(std::string_view prefix = "") const;
  ScalarMap scalars() const;
  // The inverse. Of `tensors`, only names starting with `prefix` are read (the rest, a model's
  // weights in the same file, are ignored); every one of those and every scalar must parse.
  static OptimizerStateDict from_flat(const NamedTensorList& tensors, const ScalarMap& scalars,
                                      std::string_view prefix = "");
};

}  // namespace minidl::optim
