// prepare_text_tokens: text files to the train.bin and val.bin token files a GPT trains on
// (data/text/text_token_files.h): the files concatenated in the order given, one token per
// byte, the first 90% to train.bin and the rest to val.bin, in llm.c's format.
//
//   prepare_text_tokens --out ~/.cache/minidl/shakespeare a.txt b.txt
//
// Prints one line per file written, with its token count; exits 1 with the error otherwise.
#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "minidl/minidl.h"

int main(int argc, char** argv) {
  std::filesystem::path out_directory;
  std::vector<std::filesystem::path> text_files;
  double train_fraction = minidl::data::kDefaultTrainFraction;
  CLI::App app(
      "Encodes text files one token per byte into <out>/train.bin (the first part) and "
      "<out>/val.bin (the rest), llm.c's token file format.",
      "prepare_text_tokens");
  app.add_option("--out", out_directory, "Directory for train.bin and val.bin (created if missing)")
      ->required();
  app.add_option("--train-fraction", train_fraction, "Share of the tokens that go to train.bin")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("files", text_files, "Text files, concatenated in this order")->required();
  CLI11_PARSE(app, argc, argv);

  try {
    const minidl::data::TextTokenFiles files =
        minidl::data::prepare_text_token_files(text_files, out_directory, train_fraction);
    std::cout << files.train.string() << ": " << files.train_tokens << " tokens\n"
              << files.validation.string() << ": " << files.validation_tokens << " tokens\n";
  } catch (const std::exception& error) {
    std::cerr << "prepare_text_tokens: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
