#pragma once
// Checks, before a run trains, that the places it will write to can be written, so that a
// mistyped or read-only path is an error in the first second rather than after the first epoch.
// Nothing is left behind (a probe file is created and removed at once), so a run that fails
// later leaves no empty folders.
#include <filesystem>
#include <string_view>

namespace minidl::train {

// `directory` is a directory that can be written to, or does not exist yet and can be created
// (its nearest existing ancestor is a writable directory). Throws minidl::Error naming `option`
// ("--checkpoint-dir", "TrainerOptions::checkpoint_dir") and the path otherwise.
void check_writable_directory(const std::filesystem::path& directory, std::string_view option);

// `file` is a writable regular file, or does not exist and its directory can be written to or
// created. Throws minidl::Error naming `option` and the path otherwise.
void check_writable_file(const std::filesystem::path& file, std::string_view option);

}  // namespace minidl::train
