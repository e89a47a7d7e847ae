#pragma once
// The settings that define a training run, recorded in its checkpoints so that a resumed run can
// be refused when it would continue with other ones (Note [One run per checkpoint folder] in
// train/trainer.h). Each is a name and its value as text, as the caller words them: the example
// trainers record their command line's options ("--lr" -> "0.05", "--seed" -> "7", ...).
#include <map>
#include <string>
#include <vector>

namespace minidl::train {

using RunSettings = std::map<std::string, std::string>;

// One line per setting on which `checkpoint` and `run` differ, in name order:
// "--lr: the checkpoint's 0.05, this run's 0.1" ("none" for a side that lacks it). Empty when
// they agree, and when `checkpoint` is empty (written before settings were recorded, or by a
// caller that records none).
std::vector<std::string> differing_settings(const RunSettings& checkpoint, const RunSettings& run);

}  // namespace minidl::train
