#pragma once
// Errors. MINIDL_CHECK is for user mistakes (bad shapes, dtypes, files): it throws
// minidl::Error with file:line and a message that says what was expected and what was found.
// MINIDL_INTERNAL_ASSERT is for bugs in minidl itself. Message arguments are evaluated only on
// failure, so checks cost one branch on the hot path.
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace minidl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class T>
void append(std::ostringstream& out, const T& value) {
  out << value;
}
// Shapes print as [2, 3].
template <class T>
void append(std::ostringstream& out, const std::vector<T>& values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
}
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (append(out, args), ...);
  return out.str();
}
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
[[noreturn]] void throw_internal(const char* file, int line, const char* condition,
                                 const std::string& message);
}  // namespace detail

}  // namespace minidl

#define MINIDL_CHECK(cond, ...)                                                                 \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      ::minidl::detail::throw_error(__FILE__, __LINE__, ::minidl::detail::concat(__VA_ARGS__)); \
  } while (0)

#define MINIDL_INTERNAL_ASSERT(cond, ...)                                      \
  do {                                                                         \
    if (!(cond)) [[unlikely]]                                                  \
      ::minidl::detail::throw_internal(__FILE__, __LINE__, #cond,              \
                                       ::minidl::detail::concat(__VA_ARGS__)); \
  } while (0)
