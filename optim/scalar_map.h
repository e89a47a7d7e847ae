#pragma once
// ScalarMap: the small, JSON-able half of optimizer and scheduler state (learning rates,
// momentum, last_epoch, ...), keyed by name. The tensor half of optimizer state travels as named
// tensors (optim/optimizer_state_dict.h). A training checkpoint stores a ScalarMap as one JSON
// string in the safetensors metadata: to_json / scalar_map_from_json round-trip every finite
// double exactly.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace minidl::optim {

using ScalarMap = std::map<std::string, double>;

// {"lr": 0.1, "momentum": 0.9}. Values must be finite (JSON has no NaN or infinity).
std::string to_json(const ScalarMap& scalars);
// The inverse; `what` names the text in errors ("optimizer state in checkpoint.safetensors").
ScalarMap scalar_map_from_json(std::string_view json, std::string_view what);

// Reads a ScalarMap field by field and, in finish(), rejects the fields nobody asked for, so
// load_state_dict fails loudly on state from a different optimizer or scheduler.
class ScalarMapReader {
 public:
  // `what` names the map in errors ("SGD load_state_dict: param group 0").
  ScalarMapReader(const ScalarMap& scalars, std::string what);

  bool contains(const std::string& key) const;
  double number(const std::string& key);    // missing is an error
  int64_t integer(const std::string& key);  // also an error unless a whole number
  bool boolean(const std::string& key);     // 0 or 1
  // Every entry whose key starts with `prefix`, with the prefix removed (a nested map).
  ScalarMap take_prefixed(const std::string& prefix);
  // Throws naming every key that no call above asked for.
  void finish() const;

 private:
  const ScalarMap& scalars_;
  std::string what_;
  std::set<std::string> consumed_;
};

}  // namespace minidl::optim
