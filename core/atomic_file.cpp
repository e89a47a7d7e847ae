// Writing a file atomically: a temporary file beside the target, fsync, rename. Guarantees in
// atomic_file.h.
#include "minidl/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "minidl/core/error.h"

namespace minidl {

namespace {

// A temporary file's name is "<target name><kTemporaryInfix><pid>-<n>".
constexpr std::string_view kTemporaryInfix = ".tmp-";

std::string quoted(const std::filesystem::path& path) { return '"' + path.string() + '"'; }

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::filesystem::path& target, std::string_view caller)
    : target_(target), context_(std::string(caller) + ": " + quoted(target)) {
  static std::atomic<uint64_t> counter{0};
  // O_EXCL refuses a name that exists.
  temporary_ = target_;
  temporary_ +=
      std::string(kTemporaryInfix) + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  MINIDL_CHECK(fd_ >= 0, context_, ": cannot create the temporary file ", quoted(temporary_), ": ",
               std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temporary_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    MINIDL_CHECK(written > 0, context_, ": writing ", size, " bytes to ", quoted(temporary_),
                 " failed: ", std::strerror(errno));
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void AtomicFileWriter::commit() {
  // The data must be on disk before the rename makes it visible under the final name.
  MINIDL_CHECK(::fsync(fd_) == 0, context_, ": flushing ", quoted(temporary_),
               " to disk failed: ", std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  MINIDL_CHECK(::close(fd) == 0, context_, ": closing ", quoted(temporary_),
               " failed: ", std::strerror(errno));
  MINIDL_CHECK(::rename(temporary_.c_str(), target_.c_str()) == 0, context_, ": renaming ",
               quoted(temporary_), " to it failed: ", std::strerror(errno));
  committed_ = true;
  sync_directory();
}

// Makes the rename itself durable. Best effort: the file is complete under its final name
// already, and some file systems refuse to fsync a directory.
void AtomicFileWriter::sync_directory() const {
  const std::filesystem::path directory =
      target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

std::optional<AtomicTemporaryName> parse_atomic_temporary_name(std::string_view file_name) {
  const size_t infix = file_name.rfind(kTemporaryInfix);
  if (infix == std::string_view::npos || infix == 0) return std::nullopt;
  const std::string_view suffix = file_name.substr(infix + kTemporaryInfix.size());
  const size_t dash = suffix.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view pid_digits = suffix.substr(0, dash);
  if (!all_digits(pid_digits) || !all_digits(suffix.substr(dash + 1))) return std::nullopt;

  AtomicTemporaryName name{std::string(file_name.substr(0, infix)), std::nullopt};
  pid_t pid = 0;
  const auto [end, error] =
      std::from_chars(pid_digits.data(), pid_digits.data() + pid_digits.size(), pid);
  if (error == std::errc()) name.pid = pid;
  return name;
}

}  // namespace minidl
