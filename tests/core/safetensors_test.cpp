// safetensors files: round trips of every dtype and of shapes with zero dimensions, metadata,
// the exact bytes of a small file; every kind of corrupt file refused with its own message;
// a file truncated at every offset refused, never crashing; and atomic writes (a failed write
// leaves no file under the final name, or the old file intact).
#include "minidl/core/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "scratch_directory.h"
#include "test_util.h"

namespace minidl::serialize {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  fs::path file(const std::string& name) const { return directory_.file(name); }
  std::vector<std::string> directory_listing() const { return directory_.listing(); }

  testing::ScratchDirectory directory_{"minidl_safetensors_"};
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The 8-byte little-endian length field, then the header, then the data section. The declared
// length defaults to the header's true length.
std::string safetensors_bytes(const std::string& header, const std::string& data,
                              std::optional<uint64_t> declared_length = std::nullopt) {
  const uint64_t length = declared_length.value_or(header.size());
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(length >> (8 * i));
  return bytes + header + data;
}

std::string float_bytes(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Tensors of every dtype, with values that each dtype holds exactly.
NamedTensorList every_dtype() {
  const std::vector<double> six = {-2.5, 0, 1, 3.75, -0.125, 100};
  NamedTensorList tensors;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    tensors.emplace_back(std::string("floats.") + std::string(dtype_name(dtype)),
                         from_host(six.data(), {2, 3}, kFloat64).to(dtype));
  }
  tensors.emplace_back("int32", tensor(std::vector<int32_t>{-7, 0, 2147483647}));
  tensors.emplace_back("int64", tensor(std::vector<int64_t>{-9000000000000000000LL, 1, 42}));
  tensors.emplace_back("uint8", tensor(std::vector<uint8_t>{0, 128, 255}, {3, 1}));
  tensors.emplace_back("bool", tensor(std::vector<bool>{true, false, true, true}, {2, 2}));
  return tensors;
}

void expect_same_tensors(const NamedTensorList& actual, const NamedTensorList& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(actual[i].first, expected[i].first);
    const Tensor& a = actual[i].second;
    const Tensor& e = expected[i].second;
    EXPECT_EQ(a.dtype(), e.dtype());
    EXPECT_EQ(a.sizes(), e.sizes());
    EXPECT_TRUE(a.is_cpu());
    EXPECT_TRUE(a.is_contiguous());
    EXPECT_EQ(to_vector<double>(a), to_vector<double>(e));
  }
}

// ---- round trips ----

TEST_F(SafetensorsTest, RoundTripsEveryDtypeInOrder) {
  const NamedTensorList tensors = every_dtype();
  write_safetensors(file("all.safetensors"), tensors);
  const SafetensorsContents read = read_safetensors(file("all.safetensors"));
  expect_same_tensors(read.tensors, tensors);
  EXPECT_TRUE(read.metadata.empty());
}

TEST_F(SafetensorsTest, RoundTripsScalarsEmptyAndNonContiguousTensors) {
  Tensor matrix = arange(0, 6, 1, kFloat32).reshape({2, 3});
  Tensor weight = full({2, 2}, 0.5).requires_grad_(true);  // written detached
  const NamedTensorList tensors = {{"scalar", scalar_tensor(3.25, kFloat64)},
                                   {"empty", zeros({0}, kFloat32)},
                                   {"empty_middle", zeros({2, 0, 3}, kInt64)},
                                   {"transposed", matrix.t()},
                                   {"weight", weight},
                                   {"after_empties", ones({1}, kUInt8)}};
  write_safetensors(file("shapes.safetensors"), tensors);
  const SafetensorsContents read = read_safetensors(file("shapes.safetensors"));
  expect_same_tensors(read.tensors, tensors);
  EXPECT_EQ(read.tensors[0].second.dim(), 0);
  EXPECT_FALSE(read.tensors[4].second.requires_grad());
}

TEST_F(SafetensorsTest, RoundTripsMetadata) {
  const SafetensorsMetadata metadata = {{"format", "pt"},
                                        {"epoch", "12"},
                                        {"empty", ""},
                                        {"unicode", "\xce\xb1\xce\xb2 \xe2\x9c\x93"},  // "αβ ✓"
                                        {"json", R"({"lr": 0.1, "quote": "\"x\""})"}};
  write_safetensors(file("meta.safetensors"), {{"w", ones({2})}}, metadata);
  const SafetensorsContents read = read_safetensors(file("meta.safetensors"));
  EXPECT_EQ(read.metadata, metadata);
  ASSERT_NE(read.find("w"), nullptr);
  EXPECT_EQ(read.find("missing"), nullptr);
  // No tensors at all is a valid file too.
  write_safetensors(file("only_meta.safetensors"), {}, metadata);
  EXPECT_EQ(read_safetensors(file("only_meta.safetensors")).metadata, metadata);
  EXPECT_TRUE(read_safetensors(file("only_meta.safetensors")).tensors.empty());
}

TEST_F(SafetensorsTest, WritesTheSpecifiedBytes) {
  write_safetensors(file("exact.safetensors"), {{"a", tensor({1.0, -2.0})}}, {{"k", "v"}});
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  // Padded with spaces so that the data starts at a multiple of 8: 8 + 80 + 0 spaces = 88.
  const size_t padding = (8 - (8 + header.size()) % 8) % 8;
  EXPECT_EQ(read_bytes(file("exact.safetensors")),
            safetensors_bytes(header + std::string(padding, ' '), float_bytes({1.0f, -2.0f})));
}

// ---- corrupt files ----

// Writes `bytes` to a file, reads it, and expects an error naming the file and containing
// `expected`.
void expect_read_error(const fs::path& path, const std::string& bytes,
                       const std::string& expected) {
  write_bytes(path, bytes);
  SCOPED_TRACE(expected);
  EXPECT_ERROR_CONTAINS(read_safetensors(path), "read_safetensors: \"" + path.string() + "\": ");
  EXPECT_ERROR_CONTAINS(read_safetensors(path), expected);
}

// A valid header for tensors "a" (F32 [2], bytes [0, 8)) and "b" (F32 [1], bytes [8, 12)), with
// the offsets of "b" replaced.
std::string two_tensor_header(const std::string& b_offsets) {
  return R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
         R"("b":{"dtype":"F32","shape":[1],"data_offsets":)" +
         b_offsets + "}}";
}

TEST_F(SafetensorsTest, RejectsBadHeaderLengths) {
  const fs::path path = file("bad.safetensors");
  expect_read_error(path, "12345",
                    "the file is 5 bytes long, too short for the 8-byte header length");
  expect_read_error(path, safetensors_bytes("{}", "", UINT64_MAX),
                    "the header length is 18446744073709551615 bytes, expected at most 100000000");
  expect_read_error(path, safetensors_bytes("{}", "", 100000001),
                    "the header length is 100000001 bytes, expected at most 100000000");
  expect_read_error(path, safetensors_bytes("{}", "", 3),
                    "the header length is 3 bytes, but only 2 bytes follow the length field in "
                    "the 10-byte file");
  expect_read_error(path, safetensors_bytes("", ""),
                    "the header must be a JSON object starting with '{', found an empty header");
}

TEST_F(SafetensorsTest, RejectsHeadersThatAreNotTheExpectedJson) {
  const fs::path path = file("bad.safetensors");
  expect_read_error(path, safetensors_bytes("[1, 2]", ""),
                    "the header must be a JSON object starting with '{', found byte 91");
  expect_read_error(path, safetensors_bytes(R"({"a": )", ""), "the header is not valid JSON: ");
  expect_read_error(path, safetensors_bytes(R"({"a": {}} trailing)", ""),
                    "the header is not valid JSON: ");
  expect_read_error(path, safetensors_bytes(R"({"a": 1})", ""),
                    "tensor 'a': expected an object with \"dtype\", \"shape\" and "
                    "\"data_offsets\", found number");
  expect_read_error(path,
                    safetensors_bytes(R"({"a": {"dtype": "F32", "data_offsets": [0, 0]}})", ""),
                    "tensor 'a': missing field \"shape\"");
  expect_read_error(
      path,
      safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4], "x": 1}})",
                        "abcd"),
      "tensor 'a': unexpected field \"x\"; expected only \"dtype\", \"shape\" and "
      "\"data_offsets\"");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[8,12]") + R"({"x":1})", ""),
                    "the header is not valid JSON");
  const std::string duplicate = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_read_error(path, safetensors_bytes(duplicate, std::string(8, 'x')),
                    "the header names 'a' more than once; expected unique names");
  expect_read_error(path, safetensors_bytes(R"({"__metadata__": {"k": 1}})", ""),
                    "\"__metadata__\" entry 'k' must be a string, found number");
  expect_read_error(path, safetensors_bytes(R"({"__metadata__": ["k"]})", ""),
                    "\"__metadata__\" must be an object of strings, found array");
}

TEST_F(SafetensorsTest, RejectsUnknownDtypesAndBadShapes) {
  const fs::path path = file("bad.safetensors");
  const auto header = [](const std::string& dtype, const std::string& shape,
                         const std::string& offsets) {
    return R"({"t": {"dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "data_offsets": )" +
           offsets + "}}";
  };
  expect_read_error(path, safetensors_bytes(header("Q8", "[1]", "[0,1]"), "x"),
                    "tensor 't': unknown dtype 'Q8'; expected F32, F64, F16, BF16, I32, I64, U8 "
                    "or BOOL");
  expect_read_error(path, safetensors_bytes(header("U16", "[1]", "[0,2]"), "xy"),
                    "tensor 't': unsupported dtype 'U16'");
  expect_read_error(path, safetensors_bytes(header("F32", "[2, -1]", "[0,0]"), ""),
                    "tensor 't': shape[1] must be a non-negative integer, found -1");
  expect_read_error(path, safetensors_bytes(header("F32", "[2.5]", "[0,0]"), ""),
                    "shape[0] must be a non-negative integer, found 2.5");
  expect_read_error(path, safetensors_bytes(header("F32", "{}", "[0,0]"), ""),
                    "\"shape\" must be an array, found object");
  // 2^32 * 2^32 elements: the product overflows 64 bits and would wrap to 0.
  expect_read_error(path, safetensors_bytes(header("U8", "[4294967296, 4294967296]", "[0,0]"), ""),
                    "tensor 't': shape [4294967296,4294967296] has more elements than fit in "
                    "63 bits");
  // 2^61 elements of 8 bytes: fits as a count, not as bytes.
  expect_read_error(path, safetensors_bytes(header("F64", "[2305843009213693952]", "[0,0]"), ""),
                    "has more bytes than fit in 64 bits");
  expect_read_error(path, safetensors_bytes(header("F32", "[18446744073709551615]", "[0,0]"), ""),
                    "shape[0] is 18446744073709551615, expected at most 2^63 - 1");
}

TEST_F(SafetensorsTest, RejectsOffsetsThatDoNotTileTheDataSection) {
  const fs::path path = file("bad.safetensors");
  const std::string twelve_bytes = float_bytes({1, 2, 3});
  expect_read_error(path, safetensors_bytes(two_tensor_header("[8,400]"), twelve_bytes),
                    "tensor 'b': data_offsets [8, 400] run past the end of the data section, "
                    "which is 12 bytes long");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[12,8]"), twelve_bytes),
                    "tensor 'b': data_offsets [12, 8] end before they begin");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[8,10]"), twelve_bytes),
                    "tensor 'b': data_offsets [8, 10] span 2 bytes, expected 4 for shape [1] "
                    "of F32");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[4,8]"), float_bytes({1, 2})),
                    "tensor 'b' at [4, 8) overlaps tensor 'a' at [0, 8)");
  expect_read_error(path,
                    safetensors_bytes(two_tensor_header("[12,16]"), float_bytes({1, 2, 3, 4})),
                    "the data section has a gap: tensor 'b' begins at byte 12, expected 8 where "
                    "tensor 'a' ends");
  expect_read_error(
      path, safetensors_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", "xyz"),
      "tensor 'a' begins at byte 1, expected 0 (the start of the data section)");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[8,12]"), twelve_bytes + "xyz"),
                    "the data section is 15 bytes long but its tensors cover 12; the file has 3 "
                    "unexpected trailing bytes");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[\"8\",12]"), twelve_bytes),
                    "tensor 'b': data_offsets[0] must be a non-negative integer, found \"8\"");
  expect_read_error(path, safetensors_bytes(two_tensor_header("[8]"), twelve_bytes),
                    "\"data_offsets\" must be an array [begin, end], found [8]");
}

TEST_F(SafetensorsTest, RejectsBoolBytesOtherThanZeroAndOne) {
  const fs::path path = file("bool.safetensors");
  expect_read_error(path,
                    safetensors_bytes(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                      std::string("\x01\x02\x00", 3)),
                    "tensor 'm' (BOOL) holds byte 2 at element 1; expected 0 or 1");
}

TEST_F(SafetensorsTest, RejectsWhatIsNotAFile) {
  EXPECT_ERROR_CONTAINS(read_safetensors(file("missing.safetensors")),
                        "read_safetensors: cannot open \"" + file("missing.safetensors").string() +
                            "\": No such file or directory");
  EXPECT_ERROR_CONTAINS(read_safetensors(directory_.path()), "is not a regular file");
}

TEST_F(SafetensorsTest, ParsesBytesInMemoryAndNamesTheSource) {
  write_safetensors(file("m.safetensors"), every_dtype(), {{"k", "v"}});
  const std::string bytes = read_bytes(file("m.safetensors"));
  const SafetensorsContents parsed = parse_safetensors(bytes.data(), bytes.size(), "in memory");
  expect_same_tensors(parsed.tensors, every_dtype());
  EXPECT_EQ(parsed.metadata.at("k"), "v");
  EXPECT_ERROR_CONTAINS(parse_safetensors(bytes.data(), 3, "the upload"),
                        "read_safetensors: the upload: the file is 3 bytes long");
}

// ---- truncation and corruption never crash ----

TEST_F(SafetensorsTest, TruncatingAtEveryOffsetIsAnError) {
  write_safetensors(file("full.safetensors"), every_dtype(), {{"epoch", "3"}});
  const std::string bytes = read_bytes(file("full.safetensors"));
  ASSERT_GT(bytes.size(), 100u);
  const fs::path truncated = file("truncated.safetensors");
  for (size_t length = 0; length < bytes.size(); ++length) {
    write_bytes(truncated, bytes.substr(0, length));
    try {
      read_safetensors(truncated);
      ADD_FAILURE() << "a file truncated to " << length << " of " << bytes.size()
                    << " bytes was accepted";
    } catch (const Error&) {
      // expected: every prefix is refused with a minidl::Error
    }
  }
  expect_same_tensors(read_safetensors(file("full.safetensors")).tensors, every_dtype());
}

TEST_F(SafetensorsTest, CorruptingHeaderBytesNeverCrashes) {
  // Each byte of the length field and header replaced by values that upset parsers. A change
  // may still leave a valid file (a digit for a digit); anything else must be a minidl::Error.
  write_safetensors(file("full.safetensors"), every_dtype(), {{"epoch", "3"}});
  const std::string bytes = read_bytes(file("full.safetensors"));
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  size_t attempts = 0, refused = 0;
  for (size_t position = 0; position < 8 + header_length; ++position) {
    for (char replacement : {'\0', '\xff', '9', '"', '[', '}', '-', 'e'}) {
      std::string corrupt = bytes;
      if (corrupt[position] == replacement) continue;
      corrupt[position] = replacement;
      ++attempts;
      try {
        parse_safetensors(corrupt.data(), corrupt.size(), "corrupt");
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, attempts / 2);  // most corruptions are caught, the rest are valid files
}

// ---- atomic writes ----

TEST_F(SafetensorsTest, OverwritesAtomicallyAndLeavesNoTemporaryFiles) {
  write_safetensors(file("model.safetensors"), {{"w", zeros({3})}});
  write_safetensors(file("model.safetensors"), {{"w", ones({5})}});
  expect_same_tensors(read_safetensors(file("model.safetensors")).tensors, {{"w", ones({5})}});
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsTest, AFailedWriteLeavesTheOldFileIntact) {
  write_safetensors(file("model.safetensors"), {{"w", ones({4})}}, {{"version", "old"}});
  const std::string old_bytes = read_bytes(file("model.safetensors"));

  // The file system refuses to grow a file past 64 KiB (as a full disk would): the write of a
  // 4 MiB tensor fails part way through the temporary file.
  struct rlimit previous {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &previous), 0);
  struct rlimit limited = previous;
  limited.rlim_cur = 64 * 1024;
  auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG, not a fatal signal
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool threw = false;
  std::string message;
  try {
    write_safetensors(file("model.safetensors"), {{"w", ones({1 << 20})}}, {{"version", "new"}});
  } catch (const Error& error) {
    threw = true;
    message = error.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &previous);
  std::signal(SIGXFSZ, previous_handler);

  ASSERT_TRUE(threw) << "the write should have failed at the 64 KiB limit";
  EXPECT_NE(message.find("write_safetensors: \"" + file("model.safetensors").string() + "\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(read_bytes(file("model.safetensors")), old_bytes);
  EXPECT_EQ(read_safetensors(file("model.safetensors")).metadata.at("version"), "old");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsTest, AFailedWriteCreatesNoFile) {
  // Refused before any file is made.
  EXPECT_ERROR_CONTAINS(
      write_safetensors(file("new.safetensors"), {{"w", ones({1})}, {"w", ones({1})}}),
      "the name 'w' is given twice; expected unique names");
  EXPECT_ERROR_CONTAINS(write_safetensors(file("new.safetensors"), {{"__metadata__", ones({1})}}),
                        "a tensor cannot be named \"__metadata__\"");
  EXPECT_ERROR_CONTAINS(write_safetensors(file("new.safetensors"), {{"w", Tensor()}}),
                        "tensor 'w' is undefined");
  EXPECT_ERROR_CONTAINS(write_safetensors(file("new.safetensors"), {{"w", ones({1})}},
                                          {{"bad", std::string("\xff\xfe", 2)}}),
                        "names and metadata must be UTF-8 text");
  EXPECT_TRUE(directory_listing().empty());

  // Refused by the file system.
  EXPECT_ERROR_CONTAINS(write_safetensors(file("no_such_directory") / "x.safetensors", {}),
                        "cannot create the temporary file");
  fs::create_directory(file("a_directory"));
  EXPECT_ERROR_CONTAINS(write_safetensors(file("a_directory"), {{"w", ones({1})}}), "renaming");
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"a_directory"});
}

}  // namespace
}  // namespace minidl::serialize
