// Atomic file writes: commit() puts the bytes under the target's name, a writer dropped before
// commit() leaves the target as it was and no temporary file; and the names of temporary files
// taken apart. (Failures of the file system itself: tests/core/safetensors_test.cpp.)
#include "minidl/core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "scratch_directory.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  testing::ScratchDirectory directory_{"minidl_atomic_file_"};
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(AtomicFileTest, CommitReplacesTheTargetAndLeavesNoTemporaryFile) {
  const fs::path target = directory_.file("file.bin");
  std::ofstream(target) << "old";
  {
    AtomicFileWriter file(target, "test");
    file.write("new ", 4);
    EXPECT_EQ(read_text(target), "old");  // untouched until the rename
    EXPECT_EQ(directory_.listing().size(), 2u);
    file.write("bytes", 5);
    file.commit();
  }
  EXPECT_EQ(read_text(target), "new bytes");
  EXPECT_EQ(directory_.listing(), std::vector<std::string>{"file.bin"});
}

TEST_F(AtomicFileTest, AWriterDroppedBeforeCommitLeavesTheTargetAsItWas) {
  const fs::path target = directory_.file("file.bin");
  std::ofstream(target) << "old";
  {
    AtomicFileWriter file(target, "test");
    file.write("partial", 7);
  }
  EXPECT_EQ(read_text(target), "old");
  EXPECT_EQ(directory_.listing(), std::vector<std::string>{"file.bin"});
}

TEST_F(AtomicFileTest, ErrorsStartWithTheCallerAndTheTarget) {
  const fs::path target = directory_.file("missing") / "file.bin";
  EXPECT_ERROR_CONTAINS(
      AtomicFileWriter(target, "save_thing"),
      "save_thing: \"" + target.string() + "\": cannot create the temporary file");
}

TEST(AtomicTemporaryName, TakesTheNameOfATemporaryFileApart) {
  const auto name = parse_atomic_temporary_name("checkpoint-000000008.safetensors.tmp-1234-7");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->target_name, "checkpoint-000000008.safetensors");
  EXPECT_EQ(name->pid, 1234);

  // More digits than any pid: a temporary file, of no process.
  const auto huge = parse_atomic_temporary_name("a.tmp-99999999999999999999-0");
  ASSERT_TRUE(huge.has_value());
  EXPECT_EQ(huge->target_name, "a");
  EXPECT_FALSE(huge->pid.has_value());

  for (const char* other : {"checkpoint.safetensors", "a.tmp-12", "a.tmp-12-", "a.tmp--3",
                            "a.tmp-1x-3", ".tmp-1-2", "a.tmp-1-2b"})
    EXPECT_FALSE(parse_atomic_temporary_name(other).has_value()) << other;
}

}  // namespace
}  // namespace minidl
