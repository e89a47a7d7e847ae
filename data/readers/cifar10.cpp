#include "minidl/data/readers/cifar10.h"

#include <cstring>
#include <string>

#include "minidl/core/error.h"
#include "minidl/data/readers/data_root.h"
#include "minidl/data/readers/file_bytes.h"

namespace minidl::data {

namespace {

constexpr int kTrainFiles = 5;

std::vector<std::string> file_names(Split split) {
  if (split == Split::Test) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= kTrainFiles; ++i)
    names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::shared_ptr<InMemoryDataset> read_cifar10_files(
    const std::vector<std::filesystem::path>& files) {
  MINIDL_CHECK(!files.empty(), "read_cifar10_files: expected at least one file");
  std::vector<std::vector<uint8_t>> contents;
  int64_t total = 0;
  for (const std::filesystem::path& path : files) {
    contents.push_back(read_file_bytes(path));
    total += count_cifar10_records(contents.back(), path.string());
  }
  Tensor images = empty({total, kCifar10Channels, kCifar10Size, kCifar10Size}, kUInt8);
  Tensor labels = empty({total}, kInt64);
  auto* image_bytes = static_cast<uint8_t*>(images.data_ptr());
  int64_t* label_values = labels.data_ptr<int64_t>();
  int64_t sample = 0;
  for (const std::vector<uint8_t>& bytes : contents) {
    for (size_t offset = 0; offset < bytes.size(); offset += kCifar10RecordBytes, ++sample) {
      label_values[sample] = bytes[offset];
      std::memcpy(image_bytes + sample * kCifar10ImageBytes, bytes.data() + offset + 1,
                  kCifar10ImageBytes);
    }
  }
  return std::make_shared<InMemoryDataset>(std::move(images), std::move(labels),
                                           kCifar10NumClasses);
}

std::shared_ptr<InMemoryDataset> read_cifar10(Split split, const std::filesystem::path& directory) {
  const std::filesystem::path where = directory.empty() ? data_root() / kCifar10Folder : directory;
  const std::vector<std::string> names = file_names(split);
  MINIDL_CHECK(std::filesystem::is_directory(where), "read_cifar10: directory ", where.string(),
               " does not exist; it should hold ", joined(file_names(Split::Train)), ", ",
               joined(file_names(Split::Test)),
               ". Download the binary version, https://www.cs.toronto.edu/~kriz/",
               "cifar-10-binary.tar.gz, and unpack it in the directory named by the environment ",
               "variable ", kDataRootVariable, " (default ", kDefaultDataRoot, "), which creates ",
               kCifar10Folder, "/; or pass the directory to read_cifar10.");
  std::vector<std::filesystem::path> paths;
  for (const std::string& name : names) {
    const std::filesystem::path path = where / name;
    MINIDL_CHECK(std::filesystem::exists(path), "read_cifar10: ", where.string(), " has no ", name,
                 "; the ", split_name(split), " split needs ", joined(names));
    paths.push_back(path);
  }
  return read_cifar10_files(paths);
}

}  // namespace minidl::data
