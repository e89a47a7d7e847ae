#include "minidl/nn/module.h"

#include <optional>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/demangle.h"

namespace minidl::nn {

namespace {

std::string child_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// "minidl::nn::LinearImpl" -> "Linear", "NetImpl" -> "Net": the class name without the
// namespaces around it (template arguments keep theirs) and without a trailing "Impl".
std::string readable_class_name(const std::type_info& type) {
  std::string name = demangle(type.name());
  size_t start = 0;
  int template_depth = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] == '<') ++template_depth;
    if (name[i] == '>') --template_depth;
    if (template_depth == 0 && name[i] == ':' && name[i + 1] == ':') start = i + 2;
  }
  name = name.substr(start);
  constexpr std::string_view kImplSuffix = "Impl";
  if (name.size() > kImplSuffix.size() && name.ends_with(kImplSuffix))
    name.resize(name.size() - kImplSuffix.size());
  return name;
}

// Visits `module` and its descendants pre-order with their dotted paths, each module once
// (a module registered under two names is visited under the first).
template <class ModuleType, class Visit>
void walk_modules(ModuleType& module, const std::string& path,
                  std::unordered_set<const Module*>& seen, const Visit& visit) {
  if (!seen.insert(&module).second) return;
  visit(path, module);
  for (const auto& child : module.named_children())
    walk_modules<ModuleType>(*child.value(), child_path(path, child.key()), seen, visit);
}

// "'fc1', 'fc2'", or "none".
std::string quoted_keys(const Module::NamedModules& modules) {
  std::string keys;
  for (const auto& item : modules) keys += (keys.empty() ? "'" : ", '") + item.key() + "'";
  return keys.empty() ? "none" : keys;
}

void write_shapes(std::ostream& out, const Module::NamedTensors& tensors) {
  bool first = true;
  for (const auto& item : tensors) {
    out << (first ? "" : ", ") << item.key() << ' ' << shape_str(item.value().sizes());
    first = false;
  }
}

// "Linear(in_features=84, out_features=10, bias=true)  # 850 parameters: weight [10, 84],
// bias [10]". The count covers the whole subtree; the shapes are the module's own tensors.
void write_module_line(std::ostream& out, const Module& module) {
  module.pretty_print(out);
  int64_t count = 0;
  for (const Tensor& parameter : module.parameters()) count += parameter.numel();
  const Module::NamedTensors own_parameters = module.named_parameters(/*recurse=*/false);
  const Module::NamedTensors own_buffers = module.named_buffers(/*recurse=*/false);
  if (count == 0 && own_buffers.is_empty()) return;
  out << "  # ";
  if (count > 0) out << format_count(count) << (count == 1 ? " parameter" : " parameters");
  if (!own_parameters.is_empty()) {
    out << ": ";
    write_shapes(out, own_parameters);
  }
  if (!own_buffers.is_empty()) {
    out << (count > 0 ? "; " : "") << "buffers: ";
    write_shapes(out, own_buffers);
  }
}

void write_module_tree(std::ostream& out, const Module& module, int indent) {
  write_module_line(out, module);
  for (const auto& child : module.named_children()) {
    out << '\n' << std::string(static_cast<size_t>(indent + 2), ' ') << '(' << child.key() << "): ";
    write_module_tree(out, *child.value(), indent + 2);
  }
}

// Points `target`'s TensorImpl at `replacement`'s data (storage, layout, dtype), keeping its
// autograd state, as LibTorch's set_data: every alias of `target` (a layer's member, the
// optimizer's parameter list, a gradient hook) sees the new data without being told.
void replace_data(const Tensor& target, const Tensor& replacement) {
  TensorImpl& impl = *target.unsafe_impl();
  impl.storage = replacement.storage();
  impl.sizes = replacement.sizes();
  impl.strides = replacement.strides();
  impl.offset = replacement.storage_offset();
  impl.dtype = replacement.dtype();
}

// Converts `tensor` (and its gradient) in place; floating-point tensors only when
// `dtype` is given.
void convert_in_place(Tensor tensor, Device device, std::optional<DType> dtype) {
  const DType target_dtype = dtype && tensor.is_floating_point() ? *dtype : tensor.dtype();
  if (tensor.device() == device && tensor.dtype() == target_dtype) return;
  NoGradGuard no_grad;
  const Tensor grad = tensor.grad();
  replace_data(tensor, tensor.detach().to(device, target_dtype));
  if (grad.defined()) tensor.set_grad(grad.to(device, target_dtype));
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

const std::string& Module::name() const {
  // typeid(*this) names the most derived class only after construction, hence lazily.
  std::call_once(name_once_, [this] {
    if (name_.empty()) name_ = readable_class_name(typeid(*this));
  });
  return name_;
}

void Module::check_new_name(const std::string& entry_name, const char* what) const {
  MINIDL_CHECK(!entry_name.empty(), name(), ".", what, ": expected a non-empty name");
  MINIDL_CHECK(entry_name.find('.') == std::string::npos, name(), ".", what, ": name '", entry_name,
               "' must not contain '.' (dots separate the levels of dotted names)");
  const char* existing = parameters_.contains(entry_name) ? "a parameter"
                         : buffers_.contains(entry_name)  ? "a buffer"
                         : children_.contains(entry_name) ? "a submodule"
                                                          : nullptr;
  MINIDL_CHECK(existing == nullptr, name(), ".", what, ": '", entry_name,
               "' is already registered as ", existing);
}

Tensor Module::register_parameter(std::string entry_name, Tensor tensor, bool requires_grad) {
  check_new_name(entry_name, "register_parameter");
  MINIDL_CHECK(tensor.defined(), name(), ".register_parameter: the tensor for '", entry_name,
               "' is undefined");
  MINIDL_CHECK(tensor.is_leaf(), name(), ".register_parameter: the tensor for '", entry_name,
               "' is not a leaf (it was computed from tensors that require grad); register ",
               "tensor.detach() instead");
  MINIDL_CHECK(!requires_grad || tensor.is_floating_point(), name(),
               ".register_parameter: only floating-point tensors can require grad, but '",
               entry_name, "' has dtype ", tensor.dtype());
  tensor.requires_grad_(requires_grad);
  parameters_.insert(entry_name, tensor);
  return tensor;
}

Tensor Module::register_buffer(std::string entry_name, Tensor tensor) {
  check_new_name(entry_name, "register_buffer");
  MINIDL_CHECK(tensor.defined(), name(), ".register_buffer: the tensor for '", entry_name,
               "' is undefined");
  buffers_.insert(entry_name, tensor);
  return tensor;
}

void Module::register_child(std::string entry_name, std::shared_ptr<Module> module) {
  check_new_name(entry_name, "register_module");
  MINIDL_CHECK(module != nullptr, name(), ".register_module: submodule '", entry_name,
               "' is null (an empty holder?)");
  MINIDL_CHECK(module.get() != this, name(), ".register_module: a module cannot be its own ",
               "submodule ('", entry_name, "')");
  children_.insert(std::move(entry_name), std::move(module));
}

void Module::replace_child(const std::string& entry_name, std::shared_ptr<Module> module) {
  MINIDL_CHECK(children_.contains(entry_name), name(), ".replace_module: no submodule named '",
               entry_name, "' (submodules: ", quoted_keys(children_), ")");
  MINIDL_CHECK(module != nullptr, name(), ".replace_module: the module for '", entry_name,
               "' is null (an empty holder?)");
  MINIDL_CHECK(module.get() != this, name(), ".replace_module: a module cannot be its own ",
               "submodule ('", entry_name, "')");
  children_[entry_name] = std::move(module);
}

void Module::unregister_module(const std::string& entry_name) {
  MINIDL_CHECK(children_.contains(entry_name), name(), ".unregister_module: no submodule named '",
               entry_name, "' (submodules: ", quoted_keys(children_), ")");
  // OrderedDict has no erase: rebuild it without the entry, keeping the others' order.
  NamedModules remaining("Submodule");
  for (const auto& child : children_)
    if (child.key() != entry_name) remaining.insert(child.key(), child.value());
  children_ = std::move(remaining);
}

Module::NamedTensors Module::collect_named(bool recurse, bool want_parameters) const {
  NamedTensors result(want_parameters ? "Parameter" : "Buffer");
  std::unordered_set<const TensorImpl*> seen_tensors;
  auto add_own = [&](const std::string& path, const Module& module) {
    for (const auto& item : want_parameters ? module.parameters_ : module.buffers_)
      if (seen_tensors.insert(item.value().unsafe_impl()).second)
        result.insert(child_path(path, item.key()), item.value());
  };
  if (!recurse) {
    add_own("", *this);
    return result;
  }
  std::unordered_set<const Module*> seen_modules;
  walk_modules<const Module>(*this, "", seen_modules, add_own);
  return result;
}

Module::NamedTensors Module::named_parameters(bool recurse) const {
  return collect_named(recurse, /*want_parameters=*/true);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

Module::NamedTensors Module::named_buffers(bool recurse) const {
  return collect_named(recurse, /*want_parameters=*/false);
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

Module::NamedModules Module::named_children() const { return children_; }

Module::NamedModules Module::named_modules(const std::string& prefix, bool include_self) const {
  NamedModules result("Module");
  std::unordered_set<const Module*> seen;
  walk_modules<const Module>(
      *this, prefix, seen, [&](const std::string& path, const Module& module) {
        if (&module == this) {
          if (!include_self) return;
          MINIDL_CHECK(!weak_from_this().expired(), name(), ".named_modules: to include itself, ",
                       "the module must be held by a std::shared_ptr (an nn holder or ",
                       "std::make_shared); pass include_self = false otherwise");
        }
        // The module is owned by a shared_ptr (the root was checked, children always are); the
        // traversal is read-only but hands out the same non-const pointers children() does.
        result.insert(path, std::const_pointer_cast<Module>(module.shared_from_this()));
      });
  return result;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules({}, include_self).values();
}

Module::NamedTensors Module::state_dict() const {
  NamedTensors state("State dict key");
  // Not deduplicated, as PyTorch's state_dict: a tensor shared by two modules is saved under
  // both names, so a file matches what PyTorch writes for the same model.
  std::function<void(const Module&, const std::string&)> add = [&](const Module& module,
                                                                   const std::string& prefix) {
    for (const auto& item : module.parameters_)
      state.insert(child_path(prefix, item.key()), item.value());
    for (const auto& item : module.buffers_)
      state.insert(child_path(prefix, item.key()), item.value());
    for (const auto& child : module.children_) add(*child.value(), child_path(prefix, child.key()));
  };
  add(*this, "");
  return state;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  const NamedTensors own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& item : own) {
    const Tensor* source = state.find(item.key());
    if (source == nullptr) {
      missing.push_back(item.key());
    } else if (source->sizes() != item.value().sizes()) {
      mismatched.push_back("size mismatch for " + item.key() + ": the checkpoint has shape " +
                           shape_str(source->sizes()) + ", the module has shape " +
                           shape_str(item.value().sizes()));
    }
  }
  for (const auto& item : state)
    if (!own.contains(item.key())) unexpected.push_back(item.key());

  const bool key_errors = strict && (!missing.empty() || !unexpected.empty());
  if (key_errors || !mismatched.empty()) {
    std::ostringstream message;
    message << "load_state_dict: error(s) in loading the state dict of " << name() << ":";
    auto list_keys = [&](const char* title, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      message << "\n  " << title << ":";
      for (size_t i = 0; i < keys.size(); ++i) message << (i ? ", " : " ") << '"' << keys[i] << '"';
      message << '.';
    };
    if (strict) {
      list_keys("Missing key(s)", missing);
      list_keys("Unexpected key(s)", unexpected);
    }
    for (const std::string& line : mismatched) message << "\n  " << line << '.';
    MINIDL_CHECK(false, message.str());
  }

  NoGradGuard no_grad;  // parameters require grad; copying into them is not part of any graph
  for (const auto& item : own) {
    const Tensor* source = state.find(item.key());
    if (source != nullptr) Tensor(item.value()).copy_(*source);
  }
}

void Module::train(bool on) {
  is_training_ = on;
  for (const auto& child : children_) child.value()->train(on);
}

void Module::to(Device device) {
  for (const Tensor& tensor : parameters()) convert_in_place(tensor, device, std::nullopt);
  for (const Tensor& tensor : buffers()) convert_in_place(tensor, device, std::nullopt);
}

void Module::to(DType dtype) {
  MINIDL_CHECK(minidl::is_floating_point(dtype), name(), ".to: expected a floating-point ",
               "dtype (float32, float64, float16 or bfloat16), got ", dtype);
  for (const Tensor& tensor : parameters()) convert_in_place(tensor, tensor.device(), dtype);
  for (const Tensor& tensor : buffers()) convert_in_place(tensor, tensor.device(), dtype);
}

void Module::to(Device device, DType dtype) {
  MINIDL_CHECK(minidl::is_floating_point(dtype), name(), ".to: expected a floating-point ",
               "dtype (float32, float64, float16 or bfloat16), got ", dtype);
  for (const Tensor& tensor : parameters()) convert_in_place(tensor, device, dtype);
  for (const Tensor& tensor : buffers()) convert_in_place(tensor, device, dtype);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& parameter : parameters()) {
    Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      parameter.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      grad.zero_();
    }
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  std::unordered_set<const Module*> seen;
  walk_modules<Module>(*this, "", seen, [&](const std::string&, Module& module) { fn(module); });
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn) {
  std::unordered_set<const Module*> seen;
  walk_modules<Module>(*this, "", seen, fn);
}

RemovableHandle Module::add_forward_pre_hook(ForwardPreHook hook) {
  MINIDL_CHECK(hook != nullptr, name(), ".register_forward_pre_hook: expected a hook, got an ",
               "empty std::function");
  if (!forward_hooks_) forward_hooks_ = std::make_shared<ForwardHookLists>();
  const int id = forward_hooks_->next_id++;
  forward_hooks_->pre_hooks.emplace_back(id, std::move(hook));
  return RemovableHandle(forward_hooks_, id);
}

RemovableHandle Module::add_forward_hook(ForwardHook hook) {
  MINIDL_CHECK(hook != nullptr, name(), ".register_forward_hook: expected a hook, got an empty ",
               "std::function");
  if (!forward_hooks_) forward_hooks_ = std::make_shared<ForwardHookLists>();
  const int id = forward_hooks_->next_id++;
  forward_hooks_->hooks.emplace_back(id, std::move(hook));
  return RemovableHandle(forward_hooks_, id);
}

// Both run over a copy of their list, as PyTorch's do over a snapshot: a hook may remove itself
// or register another without invalidating the loop.
Tensor Module::run_forward_pre_hooks(const Tensor& input) {
  const std::vector<std::pair<int, ForwardPreHook>> hooks = forward_hooks_->pre_hooks;
  Tensor current = input;
  for (const auto& [id, hook] : hooks) {
    std::optional<Tensor> replaced = hook(*this, current);
    if (replaced && replaced->defined()) current = std::move(*replaced);
  }
  return current;
}

Tensor Module::run_forward_hooks(const Tensor& input, Tensor output) {
  const std::vector<std::pair<int, ForwardHook>> hooks = forward_hooks_->hooks;
  for (const auto& [id, hook] : hooks) {
    std::optional<Tensor> replaced = hook(*this, input, output);
    if (replaced && replaced->defined()) output = std::move(*replaced);
  }
  return output;
}

void Module::check_no_forward_hooks() const {
  MINIDL_CHECK(!has_forward_hooks(), name(), ": has ", forward_hooks_->pre_hooks.size(),
               " forward pre-hook(s) and ", forward_hooks_->hooks.size(),
               " forward hook(s), which run only around a forward that takes one Tensor and ",
               "returns a Tensor, but it was called with another signature; remove the hooks ",
               "(RemovableHandle::remove) or call forward() directly to run it without them");
}

void Module::pretty_print(std::ostream& out) const { out << name(); }

std::ostream& operator<<(std::ostream& out, const Module& module) {
  write_module_tree(out, module, 0);
  return out;
}

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return count < 0 ? "-" + grouped : grouped;
}

}  // namespace minidl::nn
