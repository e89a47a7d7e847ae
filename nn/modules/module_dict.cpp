#include "minidl/nn/modules/module_dict.h"

namespace minidl::nn {

namespace {

// "'conv', 'act'", or "none".
std::string quoted(const std::vector<std::string>& keys) {
  std::string list;
  for (const std::string& key : keys) list += (list.empty() ? "'" : ", '") + key + "'";
  return list.empty() ? "none" : list;
}

}  // namespace

ModuleDictImpl::ModuleDictImpl(
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules)
    : ModuleDictImpl() {
  update(modules);
}

ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules)
    : ModuleDictImpl() {
  for (const auto& item : modules) insert(item.key(), item.value());
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  MINIDL_CHECK(module != nullptr, "ModuleDict::insert: the module for '", key,
               "' is an empty holder or a null pointer");
  if (modules_.contains(key)) {
    replace_module(key, module);
    modules_[key] = std::move(module);
  } else {
    register_module(key, module);  // checks the key: non-empty, no '.'
    modules_.insert(key, std::move(module));
  }
}

void ModuleDictImpl::update(
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

void ModuleDictImpl::update(const ModuleDictImpl& other) {
  // Copied first: updating a dict from itself must not iterate what it changes.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const std::vector<Item> items = other.items();
  for (const Item& item : items) insert(item.key(), item.value());
}

void ModuleDictImpl::check_key(const std::string& key, const char* op) const {
  MINIDL_CHECK(modules_.contains(key), "ModuleDict::", op, ": no module under key '", key,
               "' (keys: ", quoted(modules_.keys()), ")");
}

std::shared_ptr<Module> ModuleDictImpl::at(const std::string& key) const {
  check_key(key, "at");
  return *modules_.find(key);
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  check_key(key, "pop");
  std::shared_ptr<Module> module = *modules_.find(key);
  unregister_module(key);
  // OrderedDict has no erase: rebuild it without the key, keeping the others' order.
  OrderedDict<std::string, std::shared_ptr<Module>> remaining("ModuleDict key");
  for (const Item& item : modules_)
    if (item.key() != key) remaining.insert(item.key(), item.value());
  modules_ = std::move(remaining);
  return module;
}

void ModuleDictImpl::clear() {
  for (const std::string& key : modules_.keys()) unregister_module(key);
  modules_.clear();
}

}  // namespace minidl::nn
