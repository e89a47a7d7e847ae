#include "minidl/distributed/distributed_data_parallel.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"
#include "minidl/distributed/init.h"

namespace minidl::distributed {

namespace {

// One line per parameter and buffer: what must be the same on every rank.
std::string describe_model(const nn::Module& module) {
  std::ostringstream out;
  for (const auto& item : module.named_parameters())
    out << "parameter " << item.key() << " " << item.value().dtype() << " "
        << shape_str(item.value().sizes()) << (item.value().requires_grad() ? "" : " frozen")
        << "\n";
  for (const auto& item : module.named_buffers())
    out << "buffer " << item.key() << " " << item.value().dtype() << " "
        << shape_str(item.value().sizes()) << "\n";
  return out.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Why `other` (rank `other_rank`'s description) differs from rank 0's `reference`.
std::string first_difference(const std::string& reference, const std::string& other,
                             int other_rank) {
  const std::vector<std::string> a = split_lines(reference), b = split_lines(other);
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i])
      return "rank " + std::to_string(other_rank) + " has \"" + b[i] + "\" where rank 0 has \"" +
             a[i] + "\"";
  if (a.size() != b.size())
    return "rank " + std::to_string(other_rank) + " has " + std::to_string(b.size()) +
           " parameters and buffers, rank 0 has " + std::to_string(a.size()) +
           (b.size() > a.size() ? ", the first extra one is \"" + b[a.size()] + "\""
                                : ", the first missing one is \"" + a[b.size()] + "\"");
  return "rank " + std::to_string(other_rank) + " differs";
}

Device parameters_device(const nn::Module& module) {
  for (const Tensor& parameter : module.parameters()) return parameter.device();
  return Device(kCPU);
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(nn::AnyModule module,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  device_ = parameters_device(*module_.ptr());
  group_ = options_.process_group() ? options_.process_group() : default_process_group(device_);
  MINIDL_CHECK(options_.bucket_cap_mb() > 0, "DistributedDataParallel: expected bucket_cap_mb ",
               "> 0, got ", options_.bucket_cap_mb());
  if (group_->size() == 1) return;
  check_same_model_on_every_rank();
  broadcast_parameters_and_buffers();
  GradientReducer::NamedParameters parameters;
  for (const auto& item : module_.ptr()->named_parameters())
    if (item.value().requires_grad()) parameters.emplace_back(item.key(), item.value());
  const auto bucket_bytes = static_cast<size_t>(options_.bucket_cap_mb() * 1024.0 * 1024.0);
  reducer_ = std::make_unique<GradientReducer>(std::move(parameters), group_, bucket_bytes,
                                               options_.find_unused_parameters());
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::check_same_model_on_every_rank() {
  const std::string mine = describe_model(*module_.ptr());
  const int size = group_->size();
  // Lengths first, then every description padded to the longest.
  Tensor length = tensor(std::vector<int64_t>{static_cast<int64_t>(mine.size())}).to(device_);
  Tensor lengths = zeros({size}, TensorOptions(kInt64).device(device_));
  group_->all_gather(lengths, length);
  const std::vector<int64_t> all_lengths = to_vector<int64_t>(lengths);
  const int64_t longest = *std::max_element(all_lengths.begin(), all_lengths.end());
  std::vector<uint8_t> padded(static_cast<size_t>(longest), 0);
  std::copy(mine.begin(), mine.end(), padded.begin());
  Tensor local = from_host(padded.data(), {longest}, kUInt8).to(device_);
  Tensor gathered = zeros({longest * size}, TensorOptions(kUInt8).device(device_));
  group_->all_gather(gathered, local);
  const std::vector<uint8_t> bytes = to_vector<uint8_t>(gathered);
  std::vector<std::string> descriptions;
  for (int r = 0; r < size; ++r)
    descriptions.emplace_back(bytes.begin() + r * longest,
                              bytes.begin() + r * longest + all_lengths[static_cast<size_t>(r)]);
  std::vector<std::string> differences;
  for (int r = 1; r < size; ++r)
    if (descriptions[static_cast<size_t>(r)] != descriptions[0])
      differences.push_back(
          first_difference(descriptions[0], descriptions[static_cast<size_t>(r)], r));
  if (differences.empty()) return;
  std::ostringstream message;
  for (size_t i = 0; i < differences.size(); ++i) message << (i ? "; " : "") << differences[i];
  MINIDL_CHECK(false, "DistributedDataParallel: the model differs between ranks: ", message.str());
}

void DistributedDataParallel::broadcast_parameters_and_buffers() {
  NoGradGuard no_grad;
  std::vector<std::shared_ptr<Work>> works;
  for (const Tensor& parameter : module_.ptr()->parameters())
    works.push_back(group_->broadcast_async(parameter, 0));
  for (const Tensor& buffer : module_.ptr()->buffers())
    works.push_back(group_->broadcast_async(buffer, 0));
  for (auto& work : works) work->wait();
  for (const Tensor& parameter : module_.ptr()->parameters()) parameter.bump_version();
}

void DistributedDataParallel::sync_buffers() {
  if (group_->size() == 1) return;
  std::vector<std::shared_ptr<Work>> works;
  for (const Tensor& buffer : module_.ptr()->buffers())
    works.push_back(group_->broadcast_async(buffer, 0));
  for (auto& work : works) work->wait();
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(GradientReducer* reducer) : reducer_(reducer) {
  if (reducer_ == nullptr) return;
  previous_ = reducer_->sync_enabled();
  reducer_->set_sync(false);
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() {
  if (reducer_ != nullptr) reducer_->set_sync(previous_);
}

DistributedDataParallel::NoSyncGuard DistributedDataParallel::no_sync() {
  return NoSyncGuard(reducer_.get());
}

void DistributedDataParallel::finish_gradient_synchronization() {
  if (reducer_) reducer_->finish();
}

const GradientReducer* DistributedDataParallel::reduce_scatter_gradients(
    const std::vector<std::vector<Tensor>>& parameter_groups) {
  if (!reducer_) return nullptr;
  std::unordered_map<const TensorImpl*, int> group_of;
  for (size_t g = 0; g < parameter_groups.size(); ++g)
    for (const Tensor& param : parameter_groups[g])
      MINIDL_CHECK(group_of.emplace(param.unsafe_impl(), static_cast<int>(g)).second,
                   "DistributedDataParallel reduce_scatter_gradients: a parameter of shape ",
                   param.sizes(), " is listed twice");
  std::vector<int> keys;
  for (const auto& item : module_.ptr()->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const auto found = group_of.find(item.value().unsafe_impl());
    MINIDL_CHECK(found != group_of.end(),
                 "DistributedDataParallel reduce_scatter_gradients: ", "the model's parameter '",
                 item.key(), "' is in none of the optimizer's param ",
                 "groups; expected the optimizer to hold every parameter that requires grad");
    keys.push_back(found->second);
    group_of.erase(found);
  }
  MINIDL_CHECK(group_of.empty(),
               "DistributedDataParallel reduce_scatter_gradients: ", group_of.size(),
               " of the optimizer's parameters are not parameters of the ",
               "model that require grad; expected exactly the model's trainable parameters");
  reducer_->reduce_scatter_into_shards(keys);
  return reducer_.get();
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  return reducer_ ? reducer_->bucket_parameter_names() : std::vector<std::vector<std::string>>{};
}

}  // namespace minidl::distributed
