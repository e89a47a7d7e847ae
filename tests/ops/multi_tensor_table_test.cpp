// The host side of multi-tensor apply (Note [Multi-tensor apply] in ops/multi_tensor_table.h):
// the table's layout, its chunks covering every element exactly once, and the chunk cache. Runs
// without a GPU.
#include "minidl/ops/multi_tensor_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace minidl {
namespace {

// A group record as SGD's: the table copies any trivially copyable record.
struct GroupRecord {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  int32_t nesterov = 0;
  int32_t unused_padding = 0;
};

std::vector<TensorListEntry> entries_with_sizes(const std::vector<int64_t>& numels) {
  std::vector<TensorListEntry> entries;
  for (size_t t = 0; t < numels.size(); ++t) {
    TensorListEntry entry;
    // Fake, distinct pointers: the table only stores them.
    entry.data[0] = reinterpret_cast<void*>(0x1000 * (t + 1));
    entry.data[1] = reinterpret_cast<void*>(0x1000 * (t + 1) + 0x100);
    entry.numel = numels[t];
    entry.group = static_cast<int32_t>(t % 2);
    entry.flags = 2;
    entries.push_back(entry);
  }
  return entries;
}

template <class Entry>
std::vector<Entry> read_section(const std::vector<std::byte>& image, uint64_t offset,
                                size_t count) {
  std::vector<Entry> entries(count);
  std::memcpy(entries.data(), image.data() + offset, count * sizeof(Entry));
  return entries;
}

TEST(MultiTensorTable, ChunksCoverEveryElementOnce) {
  // Sizes around the chunk size, and a large one.
  const std::vector<int64_t> numels = {1, kMultiTensorChunkElements - 1, kMultiTensorChunkElements,
                                       kMultiTensorChunkElements + 1,
                                       5 * kMultiTensorChunkElements + 123};
  MultiTensorTable table;
  table.build(std::vector<GroupRecord>(2), entries_with_sizes(numels));

  std::vector<std::vector<int>> visits(numels.size());
  for (size_t t = 0; t < numels.size(); ++t) visits[t].assign(static_cast<size_t>(numels[t]), 0);
  for (const MultiTensorChunk& chunk : table.chunks()) {
    ASSERT_GE(chunk.tensor, 0);
    ASSERT_LT(chunk.tensor, static_cast<int64_t>(numels.size()));
    const int64_t numel = numels[static_cast<size_t>(chunk.tensor)];
    ASSERT_LT(chunk.begin, numel);
    for (int64_t i = chunk.begin; i < std::min(chunk.begin + kMultiTensorChunkElements, numel); ++i)
      ++visits[static_cast<size_t>(chunk.tensor)][static_cast<size_t>(i)];
  }
  for (size_t t = 0; t < numels.size(); ++t)
    for (size_t i = 0; i < visits[t].size(); ++i)
      ASSERT_EQ(visits[t][i], 1) << "tensor " << t << " element " << i;
  // ceil(numel / chunk) chunks per tensor: 1 + 1 + 1 + 2 + 6
  EXPECT_EQ(table.layout().num_chunks, 11);
}

TEST(MultiTensorTable, ImageHoldsEverySectionAtItsAlignedOffset) {
  GroupRecord first;
  first.lr = 0.1;
  first.momentum = 0.9;
  first.nesterov = 1;
  GroupRecord second;
  second.lr = 0.01;
  second.weight_decay = 5e-4;
  const std::vector<GroupRecord> groups = {first, second};
  const std::vector<TensorListEntry> tensors = entries_with_sizes({10, 20000, 3});
  MultiTensorTable table;
  table.build(groups, tensors);
  const MultiTensorLayout& layout = table.layout();

  EXPECT_EQ(layout.tensors_offset % 16, 0u);
  EXPECT_EQ(layout.chunks_offset % 16, 0u);
  EXPECT_GE(layout.tensors_offset, groups.size() * sizeof(GroupRecord));
  EXPECT_GE(layout.chunks_offset, layout.tensors_offset + tensors.size() * sizeof(TensorListEntry));
  EXPECT_EQ(layout.bytes, layout.chunks_offset + table.chunks().size() * sizeof(MultiTensorChunk));
  ASSERT_EQ(table.image().size(), layout.bytes);

  const auto stored_groups = read_section<GroupRecord>(table.image(), layout.groups_offset, 2);
  EXPECT_EQ(stored_groups[0].lr, 0.1);
  EXPECT_EQ(stored_groups[0].nesterov, 1);
  EXPECT_EQ(stored_groups[1].weight_decay, 5e-4);
  const auto stored_tensors =
      read_section<TensorListEntry>(table.image(), layout.tensors_offset, 3);
  for (size_t t = 0; t < tensors.size(); ++t) {
    EXPECT_EQ(stored_tensors[t].data[0], tensors[t].data[0]);
    EXPECT_EQ(stored_tensors[t].data[1], tensors[t].data[1]);
    EXPECT_EQ(stored_tensors[t].data[2], nullptr);
    EXPECT_EQ(stored_tensors[t].numel, tensors[t].numel);
    EXPECT_EQ(stored_tensors[t].group, tensors[t].group);
    EXPECT_EQ(stored_tensors[t].flags, tensors[t].flags);
  }
  EXPECT_EQ(layout.num_tensors, 3);
  const auto stored_chunks =
      read_section<MultiTensorChunk>(table.image(), layout.chunks_offset, table.chunks().size());
  EXPECT_EQ(stored_chunks.back().tensor, 2);
}

TEST(MultiTensorTable, ImageChangesOnlyWithItsInputs) {
  MultiTensorTable table;
  std::vector<GroupRecord> groups(1);
  groups[0].lr = 0.1;
  std::vector<TensorListEntry> tensors = entries_with_sizes({100, 200});
  table.build(groups, tensors);
  const std::vector<std::byte> first = table.image();

  table.build(groups, tensors);  // same inputs: same bytes (so no upload would follow)
  EXPECT_EQ(table.image(), first);

  groups[0].lr = 0.05;  // a scheduler changed the lr
  table.build(groups, tensors);
  EXPECT_NE(table.image(), first);
  const std::vector<std::byte> second = table.image();

  tensors[1].flags = 0;  // an op-defined flag (SGD: a buffer made by this step) changed
  table.build(groups, tensors);
  EXPECT_NE(table.image(), second);

  // New sizes re-make the chunk list.
  table.build(groups, entries_with_sizes({3 * kMultiTensorChunkElements}));
  EXPECT_EQ(table.layout().num_chunks, 3);
  ASSERT_EQ(table.chunks().size(), 3u);
  EXPECT_EQ(table.chunks()[2].begin, 2 * kMultiTensorChunkElements);
}

}  // namespace
}  // namespace minidl
