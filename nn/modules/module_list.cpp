#include "minidl/nn/modules/module_list.h"

#include <cstddef>
#include <string>

namespace minidl::nn {

std::shared_ptr<Module> ModuleListImpl::checked(std::shared_ptr<Module> module,
                                                const char* op) const {
  MINIDL_CHECK(module != nullptr, "ModuleList::", op, ": expected a module, got an empty holder ",
               "or a null pointer");
  MINIDL_CHECK(module.get() != this, "ModuleList::", op, ": a ModuleList cannot hold itself");
  return module;
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  module = checked(std::move(module), "push_back");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::insert(size_t index, std::shared_ptr<Module> module) {
  MINIDL_CHECK(index <= modules_.size(), "ModuleList::insert: index ", index,
               " is out of range for a list of ", modules_.size(), " module(s) (expected 0 to ",
               modules_.size(), ")");
  module = checked(std::move(module), "insert");
  // The children named index, index + 1, ... are registered again one name further, so that
  // names keep following positions, as PyTorch's ModuleList.insert renames them.
  for (size_t i = index; i < modules_.size(); ++i) unregister_module(std::to_string(i));
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), std::move(module));
  for (size_t i = index; i < modules_.size(); ++i) register_module(std::to_string(i), modules_[i]);
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  MINIDL_CHECK(index < modules_.size(), "ModuleList: index ", index, " is out of range for ",
               modules_.size(), " module(s)");
  return modules_[index];
}

}  // namespace minidl::nn
