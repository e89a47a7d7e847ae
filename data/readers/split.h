#pragma once
// Which part of a dataset a reader returns.
#include <string_view>

namespace minidl::data {

enum class Split { Train, Test };

constexpr std::string_view split_name(Split split) {
  return split == Split::Train ? "train" : "test";
}

}  // namespace minidl::data
