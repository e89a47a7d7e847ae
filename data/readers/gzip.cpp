#include "minidl/data/readers/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "minidl/core/error.h"

namespace minidl::data {

namespace {

constexpr uint8_t kGzipMagic0 = 0x1f, kGzipMagic1 = 0x8b;
constexpr size_t kMinOutputChunk = size_t{64} << 10;
// zlib counts in 32-bit uInt: input is fed and output offered in pieces no larger than this.
constexpr size_t kMaxZlibChunk = size_t{1} << 30;

// inflateEnd on every way out.
class InflateStream {
 public:
  explicit InflateStream(std::string_view source) {
    // 16 + MAX_WBITS: a gzip wrapper (not zlib's), with the largest window.
    const int status = inflateInit2(&stream_, 16 + MAX_WBITS);
    MINIDL_CHECK(status == Z_OK, "gunzip ", source, ": zlib could not start (inflateInit2 ",
                 "returned ", status, ")");
  }
  ~InflateStream() { inflateEnd(&stream_); }
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;
  z_stream& get() { return stream_; }

 private:
  z_stream stream_{};
};

}  // namespace

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == kGzipMagic0 && bytes[1] == kGzipMagic1;
}

std::vector<uint8_t> gunzip(std::span<const uint8_t> bytes, std::string_view source,
                            size_t max_bytes) {
  MINIDL_CHECK(is_gzip(bytes), "gunzip ", source, ": expected gzip data (bytes 1f 8b at offset ",
               "0), the data starts otherwise");
  InflateStream inflater(source);
  z_stream& stream = inflater.get();
  std::vector<uint8_t> out;
  size_t consumed = 0;  // input bytes handed to zlib and used
  size_t produced = 0;
  bool member_ended = false;
  for (;;) {
    if (member_ended) {
      if (consumed == bytes.size()) break;
      // Another member may follow; anything else after a member is an error.
      MINIDL_CHECK(is_gzip(bytes.subspan(consumed)), "gunzip ", source, ": ",
                   bytes.size() - consumed, " bytes after the end of the gzip stream at byte ",
                   consumed, " are not another gzip member");
      MINIDL_CHECK(inflateReset(&stream) == Z_OK, "gunzip ", source, ": inflateReset failed");
      member_ended = false;
    }
    // Offer more output space, growing geometrically, never past max_bytes + 1 (one byte
    // more than allowed is how an oversize stream is detected).
    if (produced == out.size()) {
      MINIDL_CHECK(produced <= max_bytes, "gunzip ", source, ": decompresses to more than ",
                   max_bytes, " bytes (the limit), at compressed byte ", consumed);
      const size_t grow = std::min(
          {std::max(kMinOutputChunk, out.size()), kMaxZlibChunk, max_bytes + 1 - produced});
      out.resize(produced + grow);
    }
    const size_t input_chunk = std::min(bytes.size() - consumed, kMaxZlibChunk);
    const size_t output_chunk = std::min(out.size() - produced, kMaxZlibChunk);
    stream.next_in = const_cast<Bytef*>(bytes.data() + consumed);  // zlib does not write input
    stream.avail_in = static_cast<uInt>(input_chunk);
    stream.next_out = out.data() + produced;
    stream.avail_out = static_cast<uInt>(output_chunk);
    const int status = inflate(&stream, Z_NO_FLUSH);
    consumed += input_chunk - stream.avail_in;
    produced += output_chunk - stream.avail_out;
    if (status == Z_STREAM_END) {
      member_ended = true;
      continue;
    }
    if (status == Z_OK) continue;
    if (status == Z_BUF_ERROR) {
      // No progress: zlib wants more output space, or more input.
      if (stream.avail_out == 0 || consumed < bytes.size()) continue;
      MINIDL_CHECK(false, "gunzip ", source, ": the gzip stream ends at byte ", bytes.size(),
                   " before its end marker (truncated file?)");
    }
    MINIDL_CHECK(false, "gunzip ", source, ": corrupt gzip data near compressed byte ", consumed,
                 ": ", stream.msg ? stream.msg : "zlib error", " (zlib status ", status, ")");
  }
  MINIDL_CHECK(produced <= max_bytes, "gunzip ", source, ": decompresses to more than ", max_bytes,
               " bytes (the limit)");
  out.resize(produced);
  return out;
}

std::vector<uint8_t> decompress_if_gzip(std::vector<uint8_t> bytes, std::string_view source,
                                        size_t max_bytes) {
  if (!is_gzip(bytes)) return bytes;
  return gunzip(bytes, source, max_bytes);
}

}  // namespace minidl::data
