// Loads a LeNet state_dict that the reference Python writer produced
// (tools/write_lenet_safetensors.py: PyPI safetensors, PyTorch's names and shapes) strictly
// into models::LeNet with nn::load, and checks every value against the JSON sidecar written
// with it, exactly; then that a strict load of the same file less one tensor fails naming it,
// and a non-strict one loads the rest (CTest e2e.safetensors_pytorch_lenet_load,
// tests/CMakeLists.txt).
//
//   safetensors_e2e_reader --lenet FILE.safetensors SIDECAR.json
//
// Exits with 77 (skipped) when FILE is missing: the writer skips, leaving no file, when Python
// cannot have its packages.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/core/safetensors.h"
#include "minidl/core/tensor.h"
#include "minidl/models/lenet.h"
#include "minidl/nn/serialize.h"

namespace {

using namespace minidl;

constexpr int kExitSkip = 77;

// Every tensor of model's state_dict equals the sidecar's values exactly, and the sidecar has
// no other tensors. Returns the problems found.
std::vector<std::string> compare_with_sidecar(const models::LeNet& model,
                                              const nlohmann::json& sidecar,
                                              int64_t& values_compared) {
  std::vector<std::string> problems;
  const nlohmann::json& expected_tensors = sidecar.at("tensors");
  size_t names_found = 0;
  for (const auto& item : model->state_dict()) {
    const std::string& name = item.key();
    const Tensor& actual = item.value();
    if (!expected_tensors.contains(name)) {
      problems.push_back(name + ": in the model, not in the sidecar");
      continue;
    }
    ++names_found;
    const nlohmann::json& expected = expected_tensors.at(name);
    if (actual.sizes() != expected.at("shape").get<Shape>()) {
      problems.push_back(name + ": shape " + shape_str(actual.sizes()) + ", expected " +
                         shape_str(expected.at("shape").get<Shape>()));
      continue;
    }
    if (actual.dtype() != kFloat32) {
      problems.push_back(name + ": dtype " + std::string(dtype_name(actual.dtype())));
      continue;
    }
    const std::vector<float> values = to_vector<float>(actual);
    const std::vector<double> wanted = expected.at("values").get<std::vector<double>>();
    if (values.size() != wanted.size()) {
      problems.push_back(name + ": " + std::to_string(values.size()) + " values, expected " +
                         std::to_string(wanted.size()));
      continue;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (static_cast<double>(values[i]) != wanted[i]) {
        problems.push_back(name + ": element " + std::to_string(i) + " is " +
                           std::to_string(values[i]) + ", expected " + std::to_string(wanted[i]));
        break;
      }
    }
    values_compared += static_cast<int64_t>(values.size());
  }
  if (names_found != expected_tensors.size()) {
    problems.push_back("the sidecar has " + std::to_string(expected_tensors.size()) +
                       " tensors, the model " + std::to_string(names_found) + " of them");
  }
  return problems;
}

// The file less `left_out`, written next to it: a strict load must fail naming the missing
// key; a non-strict one must succeed.
std::vector<std::string> check_strictness(const std::filesystem::path& file,
                                          const std::string& left_out) {
  std::vector<std::string> problems;
  serialize::SafetensorsContents contents = serialize::read_safetensors(file);
  serialize::NamedTensorList kept;
  for (auto& entry : contents.tensors)
    if (entry.first != left_out) kept.push_back(entry);
  std::filesystem::path partial = file;
  partial.replace_extension(".partial.safetensors");
  serialize::write_safetensors(partial, kept, contents.metadata);

  models::LeNet model;
  try {
    nn::load(model, partial, /*strict=*/true);
    problems.push_back("a strict load of a file without " + left_out + " succeeded");
  } catch (const Error& error) {
    if (std::string(error.what()).find(left_out) == std::string::npos)
      problems.push_back("the strict load's error does not name " + left_out + ": " + error.what());
  }
  nn::load(model, partial, /*strict=*/false);
  std::filesystem::remove(partial);
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::string(argv[1]) != "--lenet") {
    std::fprintf(stderr, "usage: %s --lenet FILE.safetensors SIDECAR.json\n", argv[0]);
    return 2;
  }
  const std::filesystem::path file = argv[2];
  const std::filesystem::path sidecar_path = argv[3];
  if (!std::filesystem::exists(file)) {
    std::printf(
        "SKIPPED: %s is missing (tools/write_lenet_safetensors.py did not write it, "
        "which it skips when Python cannot have safetensors and numpy)\n",
        file.c_str());
    return kExitSkip;
  }
  try {
    std::ifstream sidecar_file(sidecar_path);
    if (!sidecar_file) {
      std::fprintf(stderr, "safetensors_e2e_reader: cannot read %s\n", sidecar_path.c_str());
      return 1;
    }
    const nlohmann::json sidecar = nlohmann::json::parse(sidecar_file);

    models::LeNet model;
    nn::load(model, file, /*strict=*/true);  // every name present, no other, shapes equal
    int64_t values_compared = 0;
    std::vector<std::string> problems = compare_with_sidecar(model, sidecar, values_compared);
    for (const std::string& problem : check_strictness(file, "fc3.bias"))
      problems.push_back(problem);

    for (const std::string& problem : problems)
      std::fprintf(stderr, "safetensors_e2e_reader: %s: %s\n", file.c_str(), problem.c_str());
    if (!problems.empty()) return 1;
    std::printf(
        "loaded %s strictly into models::LeNet: %lld values, every one equal to the "
        "Python writer's; a strict load without fc3.bias fails naming it\n",
        file.c_str(), static_cast<long long>(values_compared));
  } catch (const std::exception& error) {  // minidl::Error, or the sidecar's JSON
    std::fprintf(stderr, "safetensors_e2e_reader: %s\n", error.what());
    return 1;
  }
  return 0;
}
