#pragma once
// Saving and loading a module's parameters and buffers as a safetensors file (see
// core/safetensors.h), named as PyTorch's state_dict keys ("layer1.0.conv1.weight"), so
//   torch_model.load_state_dict(safetensors.torch.load_file(path))
// reads a minidl file, and nn::load reads one written by safetensors.torch.save_file.
//
//   nn::save(model, "lenet.safetensors");
//   models::LeNet fresh;
//   nn::load(fresh, "lenet.safetensors");   // same outputs as `model`, bit for bit
#include <filesystem>

#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

// Writes module.state_dict() (atomically: a temporary file, flushed, then renamed).
void save(const Module& module, const std::filesystem::path& path);

// Reads `path` and copies each tensor into the module's tensor of the same name, in place: the
// module keeps its tensors' devices and dtypes (values are converted), and every alias of them
// (an optimizer's parameter list) sees the loaded values. Shapes must match the module's;
// missing and unexpected names are errors when `strict` and ignored otherwise. Everything is
// checked before anything is copied; the error names the file and lists every problem.
void load(Module& module, const std::filesystem::path& path, bool strict = true);

template <class ModuleType>
void save(const ModuleHolder<ModuleType>& module, const std::filesystem::path& path) {
  save(*module, path);
}
template <class ModuleType>
void load(const ModuleHolder<ModuleType>& module, const std::filesystem::path& path,
          bool strict = true) {
  load(*module, path, strict);
}

}  // namespace minidl::nn
