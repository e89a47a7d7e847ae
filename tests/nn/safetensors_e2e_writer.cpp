// Writes a safetensors file with minidl, and beside it a JSON sidecar describing what it holds
// (names, dtypes, shapes, values, metadata), for tools/read_safetensors_check.py to verify with
// the reference Python reader (CTest e2e.safetensors_python_*, tests/CMakeLists.txt).
//
//   safetensors_e2e_writer FILE.safetensors SIDECAR.json           every dtype and layout
//   safetensors_e2e_writer --lenet FILE.safetensors SIDECAR.json   a LeNet saved by nn::save
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "minidl/core/safetensors.h"
#include "minidl/core/tensor.h"
#include "minidl/models/lenet.h"
#include "minidl/nn/serialize.h"

namespace {

using namespace minidl;

// Every dtype, a 0-d and empty tensors, and a transposed (non-contiguous) one; values exact in
// each dtype.
serialize::NamedTensorList tensors_to_write() {
  const std::vector<double> values = {-2.5, 0, 1, 3.75, -0.125, 100};
  serialize::NamedTensorList tensors;
  tensors.emplace_back("layer.weight", from_host(values.data(), {2, 3}, kFloat64).to(kFloat32));
  tensors.emplace_back("double", from_host(values.data(), {6}, kFloat64));
  tensors.emplace_back("half", from_host(values.data(), {3, 2}, kFloat64).to(kFloat16));
  tensors.emplace_back("bfloat", from_host(values.data(), {6}, kFloat64).to(kBFloat16));
  tensors.emplace_back("int32", tensor(std::vector<int32_t>{-7, 0, 2147483647}));
  tensors.emplace_back("int64", tensor(std::vector<int64_t>{-4000000000LL, 1, 42}));
  tensors.emplace_back("uint8", tensor(std::vector<uint8_t>{0, 128, 255, 7}, {2, 2}));
  tensors.emplace_back("mask", tensor(std::vector<bool>{true, false, true}));
  tensors.emplace_back("bn.num_batches_tracked", scalar_tensor(12, kInt64));
  tensors.emplace_back("empty", zeros({0}, kFloat32));
  tensors.emplace_back("empty_rows", zeros({2, 0}, kInt64));
  tensors.emplace_back("transposed", from_host(values.data(), {2, 3}, kFloat64).to(kFloat32).t());
  return tensors;
}

// A freshly initialised LeNet, written by nn::save under its state_dict names.
serialize::NamedTensorList save_lenet(const std::filesystem::path& file) {
  models::LeNet model;
  nn::save(model, file);
  serialize::NamedTensorList tensors;
  for (const auto& item : model->state_dict()) tensors.emplace_back(item.key(), item.value());
  return tensors;
}

}  // namespace

int main(int argc, char** argv) {
  const bool lenet = argc == 4 && std::string(argv[1]) == "--lenet";
  if (argc != 3 && !lenet) {
    std::fprintf(stderr, "usage: %s [--lenet] FILE.safetensors SIDECAR.json\n", argv[0]);
    return 2;
  }
  const char* file_arg = argv[lenet ? 2 : 1];
  const char* sidecar_arg = argv[lenet ? 3 : 2];
  try {
    const std::filesystem::path file = file_arg;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    serialize::NamedTensorList tensors;
    serialize::SafetensorsMetadata metadata;
    if (lenet) {
      tensors = save_lenet(file);
    } else {
      tensors = tensors_to_write();
      metadata = {{"format", "pt"}, {"writer", "minidl"}};
      serialize::write_safetensors(file, tensors, metadata);
    }

    nlohmann::json sidecar = {{"tensors", nlohmann::json::object()}, {"metadata", metadata}};
    for (const auto& [name, tensor] : tensors) {
      sidecar["tensors"][name] = {{"dtype", serialize::safetensors_dtype_name(tensor.dtype())},
                                  {"shape", tensor.sizes()},
                                  {"values", to_vector<double>(tensor)}};
    }
    std::ofstream out(sidecar_arg);
    out << sidecar.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "safetensors_e2e_writer: cannot write %s\n", sidecar_arg);
      return 1;
    }
    std::printf("wrote %s and %s\n", file_arg, sidecar_arg);
  } catch (const std::exception& error) {  // minidl::Error, or a filesystem error
    std::fprintf(stderr, "safetensors_e2e_writer: %s\n", error.what());
    return 1;
  }
  return 0;
}
