#include "minidl/train/run_settings.h"

#include <set>

namespace minidl::train {

std::vector<std::string> differing_settings(const RunSettings& checkpoint, const RunSettings& run) {
  std::vector<std::string> differences;
  if (checkpoint.empty()) return differences;
  std::set<std::string> names;
  for (const auto& [name, value] : checkpoint) names.insert(name);
  for (const auto& [name, value] : run) names.insert(name);
  const auto value_in = [](const RunSettings& settings, const std::string& name) {
    const auto found = settings.find(name);
    return found == settings.end() ? std::string("none") : found->second;
  };
  for (const std::string& name : names) {
    const std::string saved = value_in(checkpoint, name), given = value_in(run, name);
    if (saved != given)
      differences.push_back(name + ": the checkpoint's " + saved + ", this run's " + given);
  }
  return differences;
}

}  // namespace minidl::train
