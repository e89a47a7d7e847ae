#include "minidl/data/text/byte_tokenizer.h"

#include "minidl/core/error.h"

namespace minidl::data {

std::vector<uint16_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<uint16_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string ByteTokenizer::decode(std::span<const uint16_t> tokens) const {
  std::string text(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    MINIDL_CHECK(tokens[i] < kVocabularySize, "ByteTokenizer::decode: token ", i, " is ", tokens[i],
                 ", expected a byte value below ", kVocabularySize);
    text[i] = static_cast<char>(static_cast<unsigned char>(tokens[i]));
  }
  return text;
}

}  // namespace minidl::data
