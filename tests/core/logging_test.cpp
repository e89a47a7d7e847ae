#include "minidl/core/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace minidl {
namespace {

// "[2026-11-21 10:22:02.123] " (no <regex>: it would triple this file's compile time).
bool starts_with_timestamp(const std::string& line) {
  const std::string shape = "[dddd-dd-dd dd:dd:dd.ddd] ";
  if (line.size() < shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const bool ok = shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(line[i])) != 0
                                    : line[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

// The line without its timestamp, or "" when it has none.
std::string after_timestamp(const std::string& line) {
  return starts_with_timestamp(line) ? line.substr(26) : "";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Captures what the minidl logger writes during a test, and restores level and rank after.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    saved_rank_ = log_rank();
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_st>(captured_);
    add_log_sink(sink_);
  }
  void TearDown() override {
    remove_log_sink(sink_);
    set_log_level(saved_level_);
    set_log_rank(saved_rank_);
  }
  std::vector<std::string> captured_lines() {
    logger().flush();
    return lines_of(captured_.str());
  }

  std::ostringstream captured_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
  LogLevel saved_level_ = LogLevel::Info;
  int saved_rank_ = -1;
};

TEST_F(LoggingTest, OneLoggerNamedMinidl) {
  EXPECT_EQ(logger().name(), "minidl");
  EXPECT_EQ(&logger(), &logger());
  EXPECT_EQ(spdlog::get("minidl").get(), &logger());
}

TEST_F(LoggingTest, LineHasTimeAndLevel) {
  set_log_rank(-1);
  set_log_level(LogLevel::Info);
  logger().info("step {} done", 7);
  const std::vector<std::string> lines = captured_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(starts_with_timestamp(lines[0])) << lines[0];
  EXPECT_EQ(after_timestamp(lines[0]), "[info] step 7 done");
}

TEST_F(LoggingTest, RankPrefixesEveryLineAndCanBeRemoved) {
  set_log_level(LogLevel::Info);
  set_log_rank(3);
  EXPECT_EQ(log_rank(), 3);
  logger().info("first");
  logger().warn("second");
  set_log_rank(-1);
  EXPECT_EQ(log_rank(), -1);
  logger().info("third");
  const std::vector<std::string> lines = captured_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(after_timestamp(lines[0]), "[rank 3] [info] first");
  EXPECT_EQ(after_timestamp(lines[1]), "[rank 3] [warning] second");
  EXPECT_EQ(after_timestamp(lines[2]), "[info] third");
}

TEST_F(LoggingTest, LevelFiltersLowerLevels) {
  set_log_level(LogLevel::Warn);
  EXPECT_EQ(log_level(), LogLevel::Warn);
  logger().debug("hidden debug");
  logger().info("hidden info");
  logger().warn("shown warning");
  logger().error("shown error");
  const std::vector<std::string> lines = captured_lines();
  ASSERT_EQ(lines.size(), 2u) << captured_.str();
  EXPECT_EQ(after_timestamp(lines[0]), "[warning] shown warning");
  EXPECT_EQ(after_timestamp(lines[1]), "[error] shown error");

  set_log_level(LogLevel::Off);
  logger().critical("hidden critical");
  EXPECT_EQ(captured_lines().size(), 2u);
}

TEST_F(LoggingTest, LevelFromString) {
  set_log_level("debug");
  EXPECT_EQ(log_level(), LogLevel::Debug);
  set_log_level("WARNING");
  EXPECT_EQ(log_level(), LogLevel::Warn);
  set_log_level("Error");
  EXPECT_EQ(log_level(), LogLevel::Error);
  EXPECT_EQ(parse_log_level("trace"), LogLevel::Trace);
  EXPECT_EQ(parse_log_level("critical"), LogLevel::Critical);
  EXPECT_EQ(parse_log_level("off"), LogLevel::Off);
  EXPECT_ERROR_CONTAINS(set_log_level("verbose"),
                        "log level must be one of trace, debug, info, warn, error, critical, off; "
                        "got \"verbose\"");
  EXPECT_EQ(log_level(), LogLevel::Error);  // unchanged by the bad name
}

TEST_F(LoggingTest, RemovedSinkGetsNothing) {
  remove_log_sink(sink_);
  logger().error("not captured");
  EXPECT_TRUE(captured_lines().empty());
  add_log_sink(sink_);  // TearDown removes it again
}

}  // namespace
}  // namespace minidl
