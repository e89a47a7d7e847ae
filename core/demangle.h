#pragma once
// Readable C++ names for the mangled ones the compiler and libraries hand out (type_info names,
// CUDA kernel names).
#include <string>

namespace minidl {

// The demangled form of `mangled`, or `mangled` itself when it is not a mangled C++ name.
std::string demangle(const char* mangled);

}  // namespace minidl
