#include "minidl/nn/serialize.h"

#include "minidl/core/safetensors.h"

namespace minidl::nn {

void save(const Module& module, const std::filesystem::path& path) {
  serialize::NamedTensorList tensors;
  for (const auto& item : module.state_dict()) tensors.emplace_back(item.key(), item.value());
  serialize::write_safetensors(path, tensors);
}

void load(Module& module, const std::filesystem::path& path, bool strict) {
  serialize::SafetensorsContents contents = serialize::read_safetensors(path);
  Module::NamedTensors state("Tensor name");
  for (auto& [name, tensor] : contents.tensors) state.insert(name, std::move(tensor));
  try {
    module.load_state_dict(state, strict);
  } catch (const Error& error) {
    throw Error("nn::load: " + path.string() + ": " + error.what());
  }
}

}  // namespace minidl::nn
