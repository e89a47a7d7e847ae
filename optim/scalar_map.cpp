#include "minidl/optim/scalar_map.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "minidl/core/error.h"

namespace minidl::optim {

std::string to_json(const ScalarMap& scalars) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : scalars) {
    MINIDL_CHECK(std::isfinite(value), "to_json: scalar '", key, "' is ", value,
                 "; expected a finite number (JSON has no NaN or infinity)");
    object[key] = value;  // dumped in the shortest form that reads back to the same double
  }
  return object.dump();
}

ScalarMap scalar_map_from_json(std::string_view json, std::string_view what) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& error) {
    MINIDL_CHECK(false, what,
                 ": expected a JSON object of numbers, the text is not valid JSON: ", error.what());
  }
  MINIDL_CHECK(object.is_object(), what, ": expected a JSON object of numbers, found ",
               object.type_name());
  ScalarMap scalars;
  for (const auto& [key, value] : object.items()) {
    MINIDL_CHECK(value.is_number(), what, ": expected '", key, "' to be a number, found ",
                 value.dump());
    scalars.emplace(key, value.get<double>());
  }
  return scalars;
}

ScalarMapReader::ScalarMapReader(const ScalarMap& scalars, std::string what)
    : scalars_(scalars), what_(std::move(what)) {}

bool ScalarMapReader::contains(const std::string& key) const { return scalars_.count(key) != 0; }

double ScalarMapReader::number(const std::string& key) {
  const auto found = scalars_.find(key);
  MINIDL_CHECK(found != scalars_.end(), what_, ": missing '", key, "'");
  consumed_.insert(key);
  return found->second;
}

int64_t ScalarMapReader::integer(const std::string& key) {
  const double value = number(key);
  MINIDL_CHECK(std::trunc(value) == value && std::abs(value) < 0x1p62, what_, ": expected '", key,
               "' to be a whole number, found ", value);
  return static_cast<int64_t>(value);
}

bool ScalarMapReader::boolean(const std::string& key) {
  const double value = number(key);
  MINIDL_CHECK(value == 0 || value == 1, what_, ": expected '", key, "' to be 0 or 1, found ",
               value);
  return value == 1;
}

ScalarMap ScalarMapReader::take_prefixed(const std::string& prefix) {
  ScalarMap nested;
  for (auto it = scalars_.lower_bound(prefix);
       it != scalars_.end() && it->first.starts_with(prefix); ++it) {
    nested.emplace(it->first.substr(prefix.size()), it->second);
    consumed_.insert(it->first);
  }
  return nested;
}

void ScalarMapReader::finish() const {
  std::string unexpected;
  for (const auto& [key, value] : scalars_)
    if (consumed_.count(key) == 0) unexpected += (unexpected.empty() ? "'" : ", '") + key + "'";
  MINIDL_CHECK(unexpected.empty(), what_, ": unexpected ", unexpected);
}

}  // namespace minidl::optim
