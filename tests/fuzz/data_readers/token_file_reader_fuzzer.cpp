// libFuzzer target for the llm.c token file reader (data/readers/token_file_format.cpp):
// arbitrary bytes must parse as a header and exactly its count of tokens, all below the
// vocabulary size, or be rejected with minidl::Error. An accepted input is checked against
// those invariants here, under two vocabularies (a byte-level one and GPT-2's).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/data/readers/token_file_format.h"

namespace {

void check_parsed(std::span<const uint8_t> bytes, int64_t vocab_size) {
  using namespace minidl::data;
  try {
    const std::vector<uint16_t> tokens = parse_token_file(bytes, vocab_size, "fuzz input");
    if (bytes.size() != kTokenFileHeaderBytes + kTokenBytes * tokens.size()) std::abort();
    // The tokens written back are the input's token bytes, and each is in the vocabulary.
    const std::vector<uint8_t> written = token_file_bytes(tokens);
    for (size_t i = kTokenFileHeaderBytes; i < bytes.size(); ++i)
      if (written[i] != bytes[i]) std::abort();
    for (uint16_t token : tokens)
      if (token >= vocab_size) std::abort();
  } catch (const minidl::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  check_parsed(bytes, 256);
  check_parsed(bytes, 50257);
  return 0;
}
