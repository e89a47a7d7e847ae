// Times minidl's element-wise ops and a full sum on the CPU, on tensors of 16M float32 elements
// (issue 35's bandwidth target: within 1.2x of PyTorch's CPU time), and prints one JSON line
// per op: {"op": ..., "elements": ..., "threads": ..., "ms": [each timed call], "ms_median": ...}.
// tools/bench/bench_elementwise_compare.py runs it in turns with PyTorch's same calls.
//
//   bench_elementwise [--ops add,mul,exp,relu,gelu,sigmoid,sum] [--elements 16777216]
//                     [--threads 2] [--warmup 2] [--calls 10]
//
// Each call is out of place, as torch.add(a, b) is: it allocates its result (from minidl's
// caching allocator after the warm-up) and writes it once; 16M float32 elements are 64 MiB per
// tensor, far past any cache, so the ops read and write main memory.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/minidl.h"

namespace {

using namespace minidl;

struct Options {
  std::vector<std::string> ops = {"add", "mul", "exp", "relu", "gelu", "sigmoid", "sum"};
  int64_t elements = int64_t{1} << 24;
  int64_t threads = 2;
  int warmup = 2;
  int calls = 10;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const std::string& flag) -> const char* {
      if (arg.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      if (arg == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--ops")) {
      options.ops = split_commas(v);
    } else if (const char* v = value("--elements")) {
      options.elements = std::stoll(v);
    } else if (const char* v = value("--threads")) {
      options.threads = std::stoll(v);
    } else if (const char* v = value("--warmup")) {
      options.warmup = std::stoi(v);
    } else if (const char* v = value("--calls")) {
      options.calls = std::stoi(v);
    } else {
      std::fprintf(stderr,
                   "usage: bench_elementwise [--ops add,mul,exp,relu,gelu,sigmoid,sum] "
                   "[--elements N] [--threads N] [--warmup N] [--calls N]\n");
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  return options;
}

// The op called `name` on a and b (the unary ones use a only); an unknown name is an error.
std::function<Tensor()> op_called(const std::string& name, const Tensor& a, const Tensor& b) {
  if (name == "add") return [&] { return a + b; };
  if (name == "mul") return [&] { return a * b; };
  if (name == "exp") return [&] { return exp(a); };
  if (name == "relu") return [&] { return relu(a); };
  if (name == "gelu") return [&] { return gelu(a); };
  if (name == "sigmoid") return [&] { return sigmoid(a); };
  if (name == "sum") return [&] { return sum(a); };
  if (name == "tanh") return [&] { return tanh(a); };
  if (name == "sub") return [&] { return a - b; };
  MINIDL_CHECK(false, "bench_elementwise: unknown op '", name, "'");
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  set_num_threads(options.threads);
  manual_seed(0);
  const Tensor a = randn({options.elements});
  const Tensor b = randn({options.elements});
  for (const std::string& name : options.ops) {
    const std::function<Tensor()> op = op_called(name, a, b);
    for (int i = 0; i < options.warmup; ++i) op();
    std::vector<double> ms;
    for (int i = 0; i < options.calls; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const Tensor out = op();
      const auto stop = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 == 1
                              ? sorted[sorted.size() / 2]
                              : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    std::printf("{\"op\": \"%s\", \"elements\": %lld, \"threads\": %lld, \"ms\": [", name.c_str(),
                static_cast<long long>(options.elements), static_cast<long long>(options.threads));
    for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.4f", i ? ", " : "", ms[i]);
    std::printf("], \"ms_median\": %.4f}\n", median);
    std::fflush(stdout);
  }
  return 0;
}
