#include "minidl/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

#include "minidl/core/error.h"

namespace minidl {

namespace {

constexpr const char* kLoggerName = "minidl";
// %^...%$ is the part a colour terminal colours.
constexpr const char* kTimeAndLevel = "[%Y-%m-%d %H:%M:%S.%e] ";
constexpr const char* kLevelAndMessage = "[%^%l%$] %v";

std::atomic<int> current_rank{-1};

std::string line_pattern(int rank) {
  std::string pattern = kTimeAndLevel;
  if (rank >= 0) pattern += "[rank " + std::to_string(rank) + "] ";
  return pattern + kLevelAndMessage;
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    case LogLevel::Critical: return spdlog::level::critical;
    case LogLevel::Off: return spdlog::level::off;
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown LogLevel ", static_cast<int>(level));
  return spdlog::level::info;
}

LogLevel from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return LogLevel::Trace;
    case spdlog::level::debug: return LogLevel::Debug;
    case spdlog::level::info: return LogLevel::Info;
    case spdlog::level::warn: return LogLevel::Warn;
    case spdlog::level::err: return LogLevel::Error;
    case spdlog::level::critical: return LogLevel::Critical;
    default: return LogLevel::Off;
  }
}

std::shared_ptr<spdlog::logger> make_logger() {
  // A program may have set up its own "minidl" logger before first use; then that one is used.
  if (auto existing = spdlog::get(kLoggerName)) return existing;
  const spdlog::color_mode colors =
      is_interactive_terminal(stderr) ? spdlog::color_mode::automatic : spdlog::color_mode::never;
  auto created = std::make_shared<spdlog::logger>(
      kLoggerName, std::make_shared<spdlog::sinks::stderr_color_sink_mt>(colors));
  created->set_pattern(line_pattern(current_rank.load()));
  created->set_level(spdlog::level::info);
  spdlog::register_logger(created);
  if (const char* env = std::getenv("MINIDL_LOG_LEVEL"); env != nullptr && *env != '\0') {
    try {
      created->set_level(to_spdlog(parse_log_level(env)));
    } catch (const Error& error) {
      created->warn("MINIDL_LOG_LEVEL: {}", error.what());
    }
  }
  return created;
}

}  // namespace

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

LogLevel parse_log_level(std::string_view level) {
  std::string name(level);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "trace") return LogLevel::Trace;
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warn" || name == "warning") return LogLevel::Warn;
  if (name == "error") return LogLevel::Error;
  if (name == "critical") return LogLevel::Critical;
  if (name == "off") return LogLevel::Off;
  MINIDL_CHECK(false,
               "log level must be one of trace, debug, info, warn, error, critical, off; got \"",
               level, "\"");
  return LogLevel::Info;
}

void set_log_level(LogLevel level) { logger().set_level(to_spdlog(level)); }

void set_log_level(std::string_view level) { set_log_level(parse_log_level(level)); }

LogLevel log_level() { return from_spdlog(logger().level()); }

void set_log_rank(int rank) {
  current_rank.store(rank < 0 ? -1 : rank);
  logger().set_pattern(line_pattern(current_rank.load()));
}

int log_rank() { return current_rank.load(); }

void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  MINIDL_CHECK(sink != nullptr, "add_log_sink: the sink is null");
  sink->set_pattern(line_pattern(current_rank.load()));
  logger().sinks().push_back(std::move(sink));
}

void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink) {
  auto& sinks = logger().sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
}

bool launched_by_mpi() {
  // Open MPI's mpirun, then the PMI and PMIx process managers (MPICH's mpiexec, Slurm's srun).
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

bool is_interactive_terminal(std::FILE* stream) {
  return stream != nullptr && isatty(fileno(stream)) == 1 && !launched_by_mpi();
}

}  // namespace minidl
