#include "minidl/train/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "minidl/core/error.h"

namespace minidl::train {

namespace fs = std::filesystem;

namespace {

// Why nothing can be created in `directory`, or empty. It tries: permissions alone do not tell
// (root writes anywhere, except on a read-only file system or into /proc).
std::string directory_write_problem(const fs::path& directory) {
  std::string probe = (directory / ".minidl-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

// Why `file` cannot be opened for writing, or empty. Opening to append changes nothing in it.
std::string file_write_problem(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  return {};
}

// The nearest ancestor of `path` (itself excluded) that exists; "." for a relative path none of
// whose ancestors exist.
fs::path nearest_existing_ancestor(const fs::path& path) {
  std::error_code error;
  fs::path ancestor = path.parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, error)) ancestor = ancestor.parent_path();
  return ancestor.empty() ? fs::path(".") : ancestor;
}

// Directories are created below `ancestor` when the run writes: it must be a writable
// directory.
void check_creatable_below(const fs::path& ancestor, const fs::path& path,
                           std::string_view option) {
  std::error_code error;
  MINIDL_CHECK(fs::is_directory(ancestor, error), option, " ", path.string(), ": cannot be ",
               "created, because ", ancestor.string(), " is not a directory");
  const std::string problem = directory_write_problem(ancestor);
  MINIDL_CHECK(problem.empty(), option, " ", path.string(), ": cannot be created in ",
               ancestor.string(), ": ", problem);
}

enum class Kind { kDirectory, kFile };

// Checks that `path`, when it exists, is of `kind` and can be written; or that it can be created.
void check_writable(const fs::path& path, std::string_view option, Kind kind) {
  const bool want_directory = kind == Kind::kDirectory;
  std::error_code error;
  if (!fs::exists(path, error)) {
    check_creatable_below(nearest_existing_ancestor(path), path, option);
    return;
  }
  if (want_directory)
    MINIDL_CHECK(fs::is_directory(path, error), option, " ", path.string(),
                 ": expected a directory, found a file");
  else
    MINIDL_CHECK(fs::is_regular_file(path, error), option, " ", path.string(),
                 ": expected a file, found a directory or another kind of entry");
  const std::string problem =
      want_directory ? directory_write_problem(path) : file_write_problem(path);
  MINIDL_CHECK(problem.empty(), option, " ", path.string(), ": cannot write to it: ", problem);
}

}  // namespace

void check_writable_directory(const fs::path& directory, std::string_view option) {
  check_writable(directory, option, Kind::kDirectory);
}

void check_writable_file(const fs::path& file, std::string_view option) {
  check_writable(file, option, Kind::kFile);
}

}  // namespace minidl::train
