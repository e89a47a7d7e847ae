#pragma once
// The simplest tokenizer a character-level GPT needs: one token per byte, so the vocabulary is
// the 256 byte values and every text round-trips exactly, whatever its encoding (UTF-8 text
// becomes one token per byte of each character). nanoGPT's shakespeare_char uses one token per
// distinct character instead (65 for its Shakespeare); bytes need no vocabulary file, and the
// tokens of one text do not depend on which other texts were seen.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minidl::data {

class ByteTokenizer {
 public:
  static constexpr int64_t kVocabularySize = 256;

  int64_t vocab_size() const { return kVocabularySize; }
  // Token i is the value of byte i of `text` (0-255).
  std::vector<uint16_t> encode(std::string_view text) const;
  // The bytes back; a token >= 256 throws minidl::Error naming its position and value.
  std::string decode(std::span<const uint16_t> tokens) const;
};

}  // namespace minidl::data
