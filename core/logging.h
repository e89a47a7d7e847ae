#pragma once
// minidl's one logger, an spdlog logger named "minidl" writing to stderr. Every line carries the
// time and the level, and under MPI the rank:
//
//   [2026-11-21 10:22:02.123] [info] epoch 1: loss 0.4123
//   [2026-11-21 10:22:02.123] [rank 1] [info] epoch 1: loss 0.4123     (after set_log_rank(1))
//
// To log, include <spdlog/spdlog.h> (kept out of this header so it stays light) and write
// `minidl::logger().info("loss {:.4f}", loss)`. The level starts at info, or at the value of the
// environment variable MINIDL_LOG_LEVEL when it names one (trace, debug, info, warn, error,
// critical, off).
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
namespace sinks {
class sink;
}
}  // namespace spdlog

namespace minidl {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Critical, Off };

// The "minidl" logger, created on first use (thread-safe).
spdlog::logger& logger();

void set_log_level(LogLevel level);
// Case-insensitive: trace, debug, info, warn (or warning), error, critical, off. Any other name
// throws minidl::Error listing these.
void set_log_level(std::string_view level);
LogLevel log_level();
LogLevel parse_log_level(std::string_view level);

// Puts "[rank N]" in every line from now on; a negative rank (the default) removes it.
// distributed::init() calls this with the MPI rank when the world has more than one process.
void set_log_rank(int rank);
int log_rank();

// Adds a sink (a log file, or a test's capture) with the current line pattern. Sinks added
// directly to logger().sinks() keep their own pattern until the next set_log_rank().
void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink);
void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink);

// Whether `stream` is shown on a person's terminal, so that colours and lines redrawn in place
// belong in it: a terminal, and not the output of a process that an MPI launcher started.
// mpirun hands its ranks a pseudo-terminal even when its own output goes to a file or a pipe,
// so isatty() alone would put escape codes into every log of a multi-process run.
bool is_interactive_terminal(std::FILE* stream);
// Whether an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started this process.
bool launched_by_mpi();

}  // namespace minidl
