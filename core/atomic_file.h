#pragma once
// Writing a file atomically: the bytes go to a temporary file beside the target,
// "<target>.tmp-<pid>-<n>" (in the same directory, because rename is atomic only within one file
// system; unique per process and writer), which is flushed to disk (fsync) and then renamed over
// the target, and the rename is made durable by flushing the directory (best effort). A crash or
// a failed write never leaves a partial file under the target's name, and a file already there
// stays intact until the rename. A writer destroyed without commit() (after an error) removes its
// temporary file; a killed process leaves it behind, which parse_atomic_temporary_name
// recognises (train/training_checkpoint.h removes those of dead processes).
//
//   AtomicFileWriter file(path, "write_safetensors");
//   file.write(header.data(), header.size());
//   file.commit();  // now `path` holds the bytes
//
// Internal to minidl: no public header includes it.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace minidl {

class AtomicFileWriter {
 public:
  // Creates the temporary file (mode 0666 minus the umask, as any new file). Every error message
  // starts with `caller` ("write_safetensors") and the target's name.
  AtomicFileWriter(const std::filesystem::path& target, std::string_view caller);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `size` bytes to the temporary file.
  void write(const void* data, size_t size);
  // Flushes the temporary file to disk and renames it over the target.
  void commit();

 private:
  void sync_directory() const;

  std::filesystem::path target_;
  std::filesystem::path temporary_;
  std::string context_;  // "<caller>: \"<target>\"", the start of every error message
  int fd_ = -1;
  bool committed_ = false;
};

// What the name of an AtomicFileWriter's temporary file says.
struct AtomicTemporaryName {
  std::string target_name;   // the file name it was to be renamed to
  std::optional<pid_t> pid;  // the writing process; none when the digits exceed any pid
};

// `file_name` ("checkpoint.safetensors.tmp-1234-0") taken apart, or none when it is not the name
// of a temporary file.
std::optional<AtomicTemporaryName> parse_atomic_temporary_name(std::string_view file_name);

}  // namespace minidl
