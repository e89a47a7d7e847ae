#include "minidl/distributed/collective_watch.h"

#include <exception>
#include <optional>

#include "minidl/core/error.h"

namespace minidl::distributed {

namespace {

// Whether `collective` has finished; when its query throws, false, and the exception's message
// in `query_error`.
bool query_finished(const WatchedCollective& collective, std::optional<std::string>& query_error) {
  try {
    return collective.finished();
  } catch (const std::exception& error) {
    query_error = error.what();
  } catch (...) {
    query_error = "an exception that is not a std::exception";
  }
  return false;
}

}  // namespace

std::string collective_failed_on_device(int rank, const std::string& description,
                                        const std::string& cause) {
  return detail::concat("rank ", rank, ": ", description, " failed on the device: ", cause);
}

std::string check_watched_collectives(std::vector<WatchedCollective>& watched,
                                      std::chrono::steady_clock::time_point now, int rank,
                                      std::chrono::milliseconds timeout) {
  std::string failed_query, timed_out;
  std::erase_if(watched, [&](const WatchedCollective& collective) {
    std::optional<std::string> query_error;
    if (query_finished(collective, query_error)) return true;
    if (query_error) {
      if (failed_query.empty())
        failed_query = collective_failed_on_device(rank, collective.description, *query_error);
      return false;
    }
    if (timed_out.empty() && now > collective.deadline)
      timed_out = detail::concat("rank ", rank, ": ", collective.description, " timed out after ",
                                 std::chrono::duration<double>(timeout).count(),
                                 " s (MINIDL_COLLECTIVE_TIMEOUT_S); a peer did not arrive or ",
                                 "has failed");
    return false;
  });
  return !failed_query.empty() ? failed_query : timed_out;
}

}  // namespace minidl::distributed
