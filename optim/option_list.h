#pragma once
// An optimizer's options, declared once as a list from which the rest is generated: the
// per-group record its element functor reads on either backend, the chained setters and getters
// users write (LibTorch's spelling), and the state_dict scalars (PyTorch's param_groups keys).
// RMSprop's, in optim/rmsprop.h:
//
//   #define MINIDL_RMSPROP_OPTIONS(option)  (each line ends in a backslash)
//     option(double, lr, 1e-2)
//     option(double, alpha, 0.99)
//     ...
//     option(bool, maximize, false)
//
//   struct RmspropHyperparameters {          // the record: trivially copyable, read on a GPU
//     MINIDL_OPTION_RECORD(MINIDL_RMSPROP_OPTIONS)
//   };
//
//   class RMSpropOptions : public OptionsWithRecord<RMSpropOptions, RmspropHyperparameters> {
//    public:
//     static constexpr const char* kName = "RMSpropOptions";
//     explicit RMSpropOptions(double lr = RmspropHyperparameters().lr) { values_.lr = lr; }
//     MINIDL_OPTION_ACCESSORS(MINIDL_RMSPROP_OPTIONS)   // alpha(0.9), alpha(), ...
//   };
//
// An option is (type, name, default): double, bool or Betas (a pair, whose scalars are
// "name.0" and "name.1", as PyTorch's betas tuple flattened). Every record has an lr.
// (A list macro, because C++ has no reflection: it is the one place that names each field.)
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "minidl/optim/optimizer.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

// PyTorch's (beta1, beta2) tuple.
using Betas = std::pair<double, double>;

// Inside the record struct: the fields with their defaults, and for_each_option(record, fn),
// which calls fn("name", field) for each, in the list's order.
#define MINIDL_OPTION_RECORD(LIST)                       \
  LIST(MINIDL_OPTION_FIELD_)                             \
  template <class Record, class Fn>                      \
  static void for_each_option(Record& record, Fn&& fn) { \
    LIST(MINIDL_OPTION_VISIT_)                           \
  }
#define MINIDL_OPTION_FIELD_(type, name, default_value) type name = default_value;
#define MINIDL_OPTION_VISIT_(type, name, default_value) fn(#name, record.name);

// Inside the options class: `name(value)` (returns the class, for chaining) and `name()`.
#define MINIDL_OPTION_ACCESSORS(LIST) LIST(MINIDL_OPTION_ACCESSOR_)
#define MINIDL_OPTION_ACCESSOR_(type, name, default_value) \
  auto name(const type& new_value)->decltype(*this) {      \
    this->values_.name = new_value;                        \
    return *this;                                          \
  }                                                        \
  const type& name() const noexcept { return this->values_.name; }

// The OptimizerOptions interface for options held in a Record (above); Self is the concrete
// options class.
template <class Self, class Record>
class OptionsWithRecord : public OptimizerOptions {
 public:
  // What the element functor reads for a group with these options.
  const Record& record() const { return values_; }

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Self>(static_cast<const Self&>(*this));
  }
  double get_lr() const override { return values_.lr; }
  void set_lr(double lr) override { values_.lr = lr; }

  ScalarMap to_scalars() const override {
    ScalarMap scalars;
    Record::for_each_option(values_, [&](const char* name, const auto& value) {
      using Value = std::decay_t<decltype(value)>;
      if constexpr (std::is_same_v<Value, Betas>) {
        scalars[std::string(name) + ".0"] = value.first;
        scalars[std::string(name) + ".1"] = value.second;
      } else if constexpr (std::is_same_v<Value, bool>) {
        scalars[name] = value ? 1.0 : 0.0;
      } else {
        static_assert(std::is_same_v<Value, double>, "an option is a double, a bool or Betas");
        scalars[name] = value;
      }
    });
    return scalars;
  }

  // Every option must be there and nothing else; on an error nothing changes.
  void load_scalars(const ScalarMap& scalars, const std::string& what) override {
    ScalarMapReader reader(scalars, what);
    Record loaded = values_;
    Record::for_each_option(loaded, [&](const char* name, auto& value) {
      using Value = std::decay_t<decltype(value)>;
      if constexpr (std::is_same_v<Value, Betas>) {
        value.first = reader.number(std::string(name) + ".0");
        value.second = reader.number(std::string(name) + ".1");
      } else if constexpr (std::is_same_v<Value, bool>) {
        value = reader.boolean(name);
      } else {
        value = reader.number(name);
      }
    });
    reader.finish();
    values_ = loaded;
  }

 protected:
  OptionsWithRecord() = default;

  Record values_;
};

}  // namespace minidl::optim
