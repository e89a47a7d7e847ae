#include "minidl/train/tensorboard_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/train/tfrecord_writer.h"

namespace minidl::train {

namespace fs = std::filesystem;

namespace {

// ---- the protocol buffer wire format: a key (field number << 3 | wire type), then the value ----

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void put_fixed(std::string& out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xffu));
}

void put_double(std::string& out, uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed64);
  put_fixed(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed32);
  put_fixed(out, bits, 4);
}

void put_int64(std::string& out, uint32_t field, int64_t value) {
  put_key(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(value));
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

void put_packed_doubles(std::string& out, uint32_t field, const std::vector<double>& values) {
  std::string packed;
  for (const double value : values) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    put_fixed(packed, bits, 8);
  }
  put_bytes(out, field, packed);
}

// ---- TensorFlow's messages (event.proto, summary.proto, histogram.proto) ----

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5.
// Summary: repeated Value value = 1. Summary.Value: tag = 1, simple_value = 2 (float),
// histo = 5 (HistogramProto). A Summary of one Value: its tag, then the value with its key.
std::string summary_of(const std::string& tag, const std::string& keyed_value) {
  std::string value;
  put_bytes(value, 1, tag);
  value += keyed_value;
  std::string summary;
  put_bytes(summary, 1, value);
  return summary;
}

double seconds_since_epoch() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// PyTorch's file name, with a counter in place of its suffix so that two writers of one process
// in one second get two files.
fs::path new_event_file(const fs::path& log_dir) {
  static std::atomic<int64_t> made{0};
  const auto seconds = static_cast<int64_t>(seconds_since_epoch());
  return log_dir / ("events.out.tfevents." + std::to_string(seconds) + "." + host_name() + "." +
                    std::to_string(::getpid()) + "." + std::to_string(made.fetch_add(1)));
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const fs::path& log_dir) {
  std::error_code error;
  fs::create_directories(log_dir, error);
  MINIDL_CHECK(fs::is_directory(log_dir), "TensorBoard folder ", log_dir.string(),
               ": cannot create it (", error ? error.message() : "a file is in the way", ")");
  records_ = std::make_unique<TfRecordWriter>(new_event_file(log_dir));
  std::string event;
  put_double(event, 1, seconds_since_epoch());
  put_bytes(event, 3, "brain.Event:2");
  records_->append(event);
}

TensorBoardWriter::~TensorBoardWriter() = default;

const fs::path& TensorBoardWriter::file() const { return records_->path(); }

void TensorBoardWriter::write_event(int64_t step, const std::string& summary) {
  std::string event;
  put_double(event, 1, seconds_since_epoch());
  put_int64(event, 2, step);
  put_bytes(event, 5, summary);
  records_->append(event);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  std::string simple_value;
  put_float(simple_value, 2, static_cast<float>(value));
  write_event(step, summary_of(tag, simple_value));
}

void TensorBoardWriter::add_histogram(const std::string& tag, const Tensor& values, int64_t step,
                                      int64_t buckets) {
  MINIDL_CHECK(values.is_floating_point(), "TensorBoardWriter::add_histogram(\"", tag,
               "\"): expected a floating-point tensor, got ", values.dtype());
  MINIDL_CHECK(buckets >= 1, "TensorBoardWriter::add_histogram(\"", tag,
               "\"): expected at least 1 bucket, got ", buckets);
  const Tensor host = values.detach().to(Device(kCPU), kFloat64).contiguous();
  const double* data = host.data_ptr<double>();
  std::vector<double> finite;
  finite.reserve(static_cast<size_t>(host.numel()));
  for (int64_t i = 0; i < host.numel(); ++i)
    if (std::isfinite(data[i])) finite.push_back(data[i]);
  // HistogramProto: min = 1, max = 2, num = 3, sum = 4, sum_squares = 5, bucket_limit = 6
  // (each bucket's right edge), bucket = 7 (its count); both packed.
  double low = 0, high = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits, counts;
  if (!finite.empty()) {
    const auto [min_it, max_it] = std::minmax_element(finite.begin(), finite.end());
    low = *min_it;
    high = *max_it;
    const int64_t count = low == high ? 1 : buckets;
    const double width = (high - low) / static_cast<double>(count);
    counts.assign(static_cast<size_t>(count), 0.0);
    for (int64_t b = 0; b < count; ++b)
      limits.push_back(b + 1 == count ? high : low + width * static_cast<double>(b + 1));
    for (const double value : finite) {
      sum += value;
      sum_squares += value * value;
      const auto bucket = width > 0 ? static_cast<int64_t>((value - low) / width) : 0;
      counts[static_cast<size_t>(std::min(bucket, count - 1))] += 1;
    }
  }
  std::string histogram;
  put_double(histogram, 1, low);
  put_double(histogram, 2, high);
  put_double(histogram, 3, static_cast<double>(finite.size()));
  put_double(histogram, 4, sum);
  put_double(histogram, 5, sum_squares);
  put_packed_doubles(histogram, 6, limits);
  put_packed_doubles(histogram, 7, counts);
  std::string histo;
  put_bytes(histo, 5, histogram);
  write_event(step, summary_of(tag, histo));
}

}  // namespace minidl::train
