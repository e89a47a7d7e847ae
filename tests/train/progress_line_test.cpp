// ProgressLine: lines redrawn in place on a person's terminal only. A rank that mpirun started
// writes plain lines even when its stdout is a pseudo-terminal (mpirun gives it one whatever
// mpirun's own output is), so no escape codes reach the logs of a multi-process run.
#include "minidl/train/progress_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "minidl/core/logging.h"
#include "test_util.h"

namespace minidl::train {
namespace {

// The subordinate side of a new pseudo-terminal, as a FILE*: what isatty() calls a terminal.
class PseudoTerminal {
 public:
  PseudoTerminal() {
    main_fd_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (main_fd_ < 0 || ::grantpt(main_fd_) != 0 || ::unlockpt(main_fd_) != 0) return;
    const char* name = ::ptsname(main_fd_);
    if (name != nullptr) terminal_ = std::fopen(name, "w");
  }
  ~PseudoTerminal() {
    if (terminal_ != nullptr) std::fclose(terminal_);
    if (main_fd_ >= 0) ::close(main_fd_);
  }
  std::FILE* terminal() const { return terminal_; }

 private:
  int main_fd_ = -1;
  std::FILE* terminal_ = nullptr;
};

using minidl::testing::ScopedEnvironment;

TEST(ProgressLine, AutoIsLiveOnATerminalAndPlainUnderMpirun) {
  if (launched_by_mpi()) GTEST_SKIP() << "this test process itself runs under an MPI launcher";
  PseudoTerminal pty;
  if (pty.terminal() == nullptr) GTEST_SKIP() << "no pseudo-terminal can be opened here";
  EXPECT_EQ(ProgressLine(ProgressMode::kAuto, 10, pty.terminal()).mode(), ProgressMode::kLive);
  {
    ScopedEnvironment mpirun("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_EQ(ProgressLine(ProgressMode::kAuto, 10, pty.terminal()).mode(), ProgressMode::kPlain);
  }
  {
    ScopedEnvironment srun("PMIX_RANK", "0");
    EXPECT_EQ(ProgressLine(ProgressMode::kAuto, 10, pty.terminal()).mode(), ProgressMode::kPlain);
  }
}

TEST(ProgressLine, PlainLinesInAFileHaveNoEscapeCodes) {
  char path[] = "/tmp/minidl-progress-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::FILE* file = ::fdopen(fd, "w");
  ASSERT_NE(file, nullptr);
  {
    ProgressLine progress(ProgressMode::kAuto, 2, file);
    EXPECT_EQ(progress.mode(), ProgressMode::kPlain);
    progress.start_epoch(1, 3, 5, 0);
    for (int64_t done = 1; done <= 5; ++done)
      if (progress.due(done)) progress.show(done, 0.5, 100);
    progress.end_epoch();
  }
  std::fclose(file);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(path);
  EXPECT_EQ(text,
            "epoch 1/3 step 2/5 loss 0.5000 100 img/s eta 0s\n"
            "epoch 1/3 step 4/5 loss 0.5000 100 img/s eta 0s\n");
}

}  // namespace
}  // namespace minidl::train
