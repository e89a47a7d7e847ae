#include "minidl/optim/optimizer_state_dict.h"

#include <charconv>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

constexpr std::string_view kStatePrefix = "state.";
constexpr std::string_view kGroupPrefix = "param_groups.";
constexpr std::string_view kNumParams = "num_params";

// "<digits>.<rest>" -> (number, rest); false when `text` is not of that form.
bool split_index(std::string_view text, int64_t& index, std::string_view& rest) {
  const char* end = text.data() + text.size();
  const auto [after_digits, error] = std::from_chars(text.data(), end, index);
  if (error != std::errc() || index < 0 || after_digits == end || *after_digits != '.')
    return false;
  rest = std::string_view(after_digits + 1, static_cast<size_t>(end - after_digits - 1));
  return !rest.empty();
}

}  // namespace

NamedTensorList OptimizerStateDict::tensors(std::string_view prefix) const {
  NamedTensorList named;
  for (const auto& [position, param_state] : state)
    for (const auto& [key, tensor] : param_state)
      named.emplace_back(detail::concat(prefix, kStatePrefix, position, ".", key), tensor);
  return named;
}

ScalarMap OptimizerStateDict::scalars() const {
  ScalarMap scalars;
  int64_t next_position = 0;
  for (size_t g = 0; g < param_groups.size(); ++g) {
    const ParamGroup& group = param_groups[g];
    // The flat form stores only counts, so positions must run on from group to group, as
    // Optimizer::state_dict() numbers them.
    for (size_t i = 0; i < group.params.size(); ++i)
      MINIDL_CHECK(group.params[i] == next_position + static_cast<int64_t>(i),
                   "OptimizerStateDict::scalars: param group ", g, " lists positions ",
                   group.params, "; expected consecutive positions from ", next_position);
    next_position += static_cast<int64_t>(group.params.size());
    const std::string group_prefix = detail::concat(kGroupPrefix, g, ".");
    for (const auto& [option, value] : group.options) {
      MINIDL_CHECK(option != kNumParams, "OptimizerStateDict::scalars: param group ", g,
                   " has an option named '", kNumParams, "', which the flat form reserves");
      scalars.emplace(group_prefix + option, value);
    }
    scalars.emplace(group_prefix + std::string(kNumParams),
                    static_cast<double>(group.params.size()));
  }
  return scalars;
}

OptimizerStateDict OptimizerStateDict::from_flat(const NamedTensorList& tensors,
                                                 const ScalarMap& scalars,
                                                 std::string_view prefix) {
  OptimizerStateDict result;
  // Groups: "param_groups.<g>.<option>".
  std::map<int64_t, ScalarMap> group_options;
  for (const auto& [key, value] : scalars) {
    int64_t group = 0;
    std::string_view option;
    MINIDL_CHECK(std::string_view(key).starts_with(kGroupPrefix) &&
                     split_index(std::string_view(key).substr(kGroupPrefix.size()), group, option),
                 "OptimizerStateDict::from_flat: unexpected scalar '", key, "'; expected ",
                 "'param_groups.<group>.<option>'");
    group_options[group].emplace(std::string(option), value);
  }
  int64_t next_position = 0;
  for (auto& [group, options] : group_options) {
    MINIDL_CHECK(group == static_cast<int64_t>(result.param_groups.size()),
                 "OptimizerStateDict::from_flat: param group ", result.param_groups.size(),
                 " is missing (groups must be numbered 0, 1, ...), found group ", group);
    const auto count = options.find(std::string(kNumParams));
    MINIDL_CHECK(count != options.end(), "OptimizerStateDict::from_flat: param group ", group,
                 " has no 'param_groups.", group, ".", kNumParams, "'");
    const double num_params = count->second;
    MINIDL_CHECK(num_params >= 0 && num_params < 0x1p62 &&
                     num_params == static_cast<double>(static_cast<int64_t>(num_params)),
                 "OptimizerStateDict::from_flat: param group ", group, " has ", num_params,
                 " parameters; expected a non-negative whole number");
    options.erase(count);
    ParamGroup entry;
    entry.options = std::move(options);
    for (int64_t i = 0; i < static_cast<int64_t>(num_params); ++i)
      entry.params.push_back(next_position++);
    result.param_groups.push_back(std::move(entry));
  }
  // State: "<prefix>state.<position>.<key>".
  for (const auto& [name, tensor] : tensors) {
    std::string_view rest(name);
    if (!rest.starts_with(prefix)) continue;
    rest.remove_prefix(prefix.size());
    int64_t position = 0;
    std::string_view key;
    MINIDL_CHECK(rest.starts_with(kStatePrefix) &&
                     split_index(rest.substr(kStatePrefix.size()), position, key),
                 "OptimizerStateDict::from_flat: unexpected tensor '", name, "'; expected '",
                 prefix, "state.<position>.<key>'");
    MINIDL_CHECK(position < next_position, "OptimizerStateDict::from_flat: tensor '", name,
                 "' is state of parameter ", position, ", but the param groups hold only ",
                 next_position, " parameters");
    MINIDL_CHECK(result.state[position].emplace(std::string(key), tensor).second,
                 "OptimizerStateDict::from_flat: tensor '", name, "' is given twice");
  }
  return result;
}

}  // namespace minidl::optim
