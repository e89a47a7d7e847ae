#include "minidl/data/readers/mnist.h"

#include <cstring>
#include <string>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/data/readers/data_root.h"
#include "minidl/data/readers/file_bytes.h"
#include "minidl/data/readers/gzip.h"
#include "minidl/data/readers/idx_format.h"

namespace minidl::data {

namespace {

constexpr int kImagesRank = 3;  // [N, rows, columns]
constexpr int kLabelsRank = 1;  // [N]

struct SplitFileNames {
  std::string images;
  std::string labels;
};

SplitFileNames file_names(Split split) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  return {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
}

std::string expected_files_text() {
  std::string text;
  for (Split split : {Split::Train, Split::Test}) {
    const SplitFileNames names = file_names(split);
    text += (text.empty() ? "" : ", ") + names.images + "[.gz], " + names.labels + "[.gz]";
  }
  return text;
}

// `directory`/`name`, or `directory`/`name`.gz, whichever exists.
std::filesystem::path find_file(const std::filesystem::path& directory, const std::string& name,
                                const char* reader) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    const std::filesystem::path path = directory / candidate;
    if (std::filesystem::exists(path)) return path;
  }
  MINIDL_CHECK(false, reader, ": ", directory.string(), " has neither ", name, " nor ", name,
               ".gz; an MNIST-format directory holds ", expected_files_text());
  return {};
}

// A file's contents, decompressed when gzip, and the name its parse errors use.
struct IdxFileContents {
  std::vector<uint8_t> bytes;
  std::string source;
};

IdxFileContents read_idx_file(const std::filesystem::path& path) {
  std::vector<uint8_t> raw = read_file_bytes(path);
  if (!is_gzip(raw)) return {std::move(raw), path.string()};
  // Offsets in IDX errors then count bytes of the decompressed data, so the name says so.
  return {gunzip(raw, path.string()), path.string() + " (decompressed)"};
}

std::shared_ptr<InMemoryDataset> read_split(const std::filesystem::path& directory, Split split,
                                            const char* reader, const std::string& how_to_get) {
  MINIDL_CHECK(std::filesystem::is_directory(directory), reader, ": directory ", directory.string(),
               " does not exist; it should hold ", expected_files_text(), ". ", how_to_get);
  const SplitFileNames names = file_names(split);
  const std::filesystem::path images_path = find_file(directory, names.images, reader);
  const std::filesystem::path labels_path = find_file(directory, names.labels, reader);

  const IdxFileContents images_file = read_idx_file(images_path);
  const IdxArray images = parse_idx(images_file.bytes, kImagesRank, images_file.source);
  const IdxFileContents labels_file = read_idx_file(labels_path);
  const IdxArray labels = parse_idx(labels_file.bytes, kLabelsRank, labels_file.source);
  check_idx_labels(labels, kMnistNumClasses, labels_file.source);

  const int64_t count = images.dims[0], rows = images.dims[1], columns = images.dims[2];
  MINIDL_CHECK(count == labels.dims[0], reader, ": ", images_path.string(), " holds ", count,
               " images but ", labels_path.string(), " holds ", labels.dims[0],
               " labels; expected one label per image");
  MINIDL_CHECK(rows > 0 && columns > 0, "IDX file ", images_file.source, ": images are ", rows, "x",
               columns, " (bytes 8-15), expected positive sizes");

  Tensor image_tensor = empty({count, 1, rows, columns}, kUInt8);
  if (count > 0) std::memcpy(image_tensor.data_ptr(), images.data.data(), images.data.size());
  Tensor label_tensor = empty({count}, kInt64);
  int64_t* label_values = label_tensor.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) label_values[i] = labels.data[static_cast<size_t>(i)];
  return std::make_shared<InMemoryDataset>(std::move(image_tensor), std::move(label_tensor),
                                           kMnistNumClasses);
}

}  // namespace

std::shared_ptr<InMemoryDataset> read_mnist(const std::filesystem::path& directory, Split split) {
  return read_split(directory, split, "read_mnist", "Pass the directory that holds these files.");
}

std::filesystem::path fashion_mnist_directory() { return data_root() / kFashionMnistFolder; }

std::shared_ptr<InMemoryDataset> read_fashion_mnist(Split split,
                                                    const std::filesystem::path& directory) {
  const std::filesystem::path where = directory.empty() ? fashion_mnist_directory() : directory;
  return read_split(
      where, split, "read_fashion_mnist",
      std::string("Install the Debian package dataset-fashion-mnist (tools/bootstrap.sh does), "
                  "which puts them in ") +
          kDefaultDataRoot + "/" + kFashionMnistFolder +
          "; or download them from https://github.com/zalandoresearch/fashion-mnist into a "
          "fashion-mnist/ folder under the directory named by the environment variable " +
          kDataRootVariable + "; or pass their directory to read_fashion_mnist.");
}

}  // namespace minidl::data
