// The real Fashion-MNIST, from the Debian package dataset-fashion-mnist: its published counts
// are asserted. And the default directory, which MINIDL_DATA overrides.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <optional>
#include <string>

#include "dataset_files.h"
#include "minidl/data/readers/data_root.h"
#include "minidl/data/readers/mnist.h"
#include "test_util.h"

namespace minidl::data {
namespace {

constexpr int64_t kTrainImages = 60000, kTestImages = 10000;
constexpr int64_t kImageSize = 28;

using minidl::testing::ScopedEnvironment;

class FashionMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(fashion_mnist_directory()))
      GTEST_SKIP() << fashion_mnist_directory()
                   << " does not exist: install the Debian package dataset-fashion-mnist "
                      "(tools/bootstrap.sh does) to run the tests on the real data";
  }
};

void expect_fashion_mnist_split(const InMemoryDataset& dataset, int64_t count) {
  EXPECT_EQ(dataset.size(), count);
  EXPECT_EQ(dataset.images().sizes(), (Shape{count, 1, kImageSize, kImageSize}));
  EXPECT_EQ(dataset.images().dtype(), kUInt8);
  EXPECT_EQ(dataset.num_classes(), kMnistNumClasses);
  std::array<int64_t, kMnistNumClasses> per_class{};
  const int64_t* labels = dataset.labels().data_ptr<int64_t>();
  for (int64_t i = 0; i < dataset.size(); ++i) ++per_class[static_cast<size_t>(labels[i])];
  // Fashion-MNIST is balanced: a tenth of each split per class.
  for (size_t c = 0; c < per_class.size(); ++c)
    EXPECT_EQ(per_class[c], count / kMnistNumClasses)
        << "class " << c << " (" << kFashionMnistClassNames[c] << ")";
}

TEST_F(FashionMnist, TrainingSplitHas60000ImagesOf28x28And6000PerClass) {
  expect_fashion_mnist_split(*read_fashion_mnist(Split::Train), kTrainImages);
}

TEST_F(FashionMnist, TestSplitHas10000ImagesOf28x28And1000PerClass) {
  const auto test = read_fashion_mnist(Split::Test);
  expect_fashion_mnist_split(*test, kTestImages);
  // Real images, not zeros: a typical Fashion-MNIST image has a few hundred lit pixels.
  const Example first = test->get(0);
  const std::vector<int64_t> pixels = to_vector<int64_t>(first.image);
  int64_t lit = 0;
  for (int64_t p : pixels) lit += p > 0;
  EXPECT_GT(lit, 50);
}

TEST(DataRoot, DefaultsToUsrShareDatasetsAndMinidlDataOverridesIt) {
  {
    ScopedEnvironment unset(kDataRootVariable, "");
    EXPECT_EQ(data_root(), std::filesystem::path("/usr/share/datasets"));
    EXPECT_EQ(fashion_mnist_directory(),
              std::filesystem::path("/usr/share/datasets/fashion-mnist"));
  }
  testing::TemporaryDirectory root;
  ScopedEnvironment set(kDataRootVariable, root.path().string());
  EXPECT_EQ(fashion_mnist_directory(), root.path() / "fashion-mnist");
  // With no directory argument, read_fashion_mnist now reads from there.
  std::filesystem::create_directories(root.path() / "fashion-mnist");
  const std::vector<uint8_t> pixels = testing::pattern_bytes(2 * 28 * 28, 11);
  testing::write_file(root.path() / "fashion-mnist" / "t10k-images-idx3-ubyte.gz",
                      testing::gzip_bytes(testing::idx_bytes(0x08, {2, 28, 28}, pixels)));
  testing::write_file(root.path() / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz",
                      testing::gzip_bytes(testing::idx_bytes(0x08, {2}, {3, 9})));
  const auto dataset = read_fashion_mnist(Split::Test);
  EXPECT_EQ(to_vector<int64_t>(dataset->labels()), (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(to_vector<uint8_t>(dataset->images()), pixels);
  EXPECT_ERROR_CONTAINS(read_fashion_mnist(Split::Train),
                        "has neither train-images-idx3-ubyte nor train-images-idx3-ubyte.gz");
}

}  // namespace
}  // namespace minidl::data
