// Writes the fuzzer's seed corpus: small valid safetensors files covering every dtype, 0-d and
// empty tensors, metadata, and no tensors at all, so mutations start from well-formed headers.
//
//   safetensors_fuzz_seeds DIRECTORY
#include <cstdio>
#include <filesystem>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/core/safetensors.h"
#include "minidl/core/tensor.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
    return 2;
  }
  using namespace minidl;
  using serialize::write_safetensors;
  const std::filesystem::path directory = argv[1];
  try {
    std::filesystem::create_directories(directory);
    // Non-negative, so the conversion to uint8 is defined (UBSan checks it).
    const std::vector<double> values = {1.5, 0, 2, 0.25};
    serialize::NamedTensorList every_dtype;
    for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
      every_dtype.emplace_back(std::string(dtype_name(dtype)),
                               from_host(values.data(), {2, 2}, kFloat64).to(dtype));
    write_safetensors(directory / "every_dtype.safetensors", every_dtype);
    write_safetensors(directory / "shapes.safetensors",
                      {{"scalar", scalar_tensor(1.0)},
                       {"empty", zeros({0})},
                       {"empty_middle", zeros({2, 0, 3}, kInt64)},
                       {"row", ones({1, 3})}},
                      {{"format", "pt"}});
    write_safetensors(directory / "metadata_only.safetensors", {}, {{"epoch", "3"}, {"k", "v"}});
    write_safetensors(directory / "nothing.safetensors", {});
    write_safetensors(directory / "model.safetensors",
                      {{"conv.weight", ones({2, 1, 3, 3})},
                       {"conv.bias", zeros({2})},
                       {"bn.num_batches_tracked", zeros({}, kInt64)}},
                      {{"optimizer", R"({"param_groups.0.lr":0.1})"}});
  } catch (const Error& error) {
    std::fprintf(stderr, "safetensors_fuzz_seeds: %s\n", error.what());
    return 1;
  }
  return 0;
}
