#pragma once
// A map that remembers insertion order, as LibTorch's torch::OrderedDict: a module's
// parameters, buffers and children, and the state_dict, are all kept in the order they were
// registered, which gives the optimizer, checkpoints and data parallelism one traversal.
// Iterating yields items with key() and value().
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "minidl/core/error.h"

namespace minidl::nn {

template <class Key, class Value>
class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : key_(std::move(key)), value_(std::move(value)) {}
    const Key& key() const { return key_; }
    Value& value() { return value_; }
    const Value& value() const { return value_; }

   private:
    Key key_;
    Value value_;
  };

  // `key_description` names the keys in errors ("Parameter 'weight' is already registered").
  explicit OrderedDict(std::string key_description = "Key")
      : key_description_(std::move(key_description)) {}

  // Appends a new entry; a key that is already present is an error. References returned by
  // insert or operator[] stay valid only until the next insert (as with std::vector).
  Value& insert(Key key, Value value) {
    MINIDL_CHECK(!contains(key), key_description_, " '", key, "' is already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().value();
  }

  // Null when absent.
  Value* find(const Key& key) {
    auto found = index_.find(key);
    return found == index_.end() ? nullptr : &items_[found->second].value();
  }
  const Value* find(const Key& key) const {
    auto found = index_.find(key);
    return found == index_.end() ? nullptr : &items_[found->second].value();
  }
  bool contains(const Key& key) const { return index_.count(key) != 0; }

  // The value under `key`; a missing key is an error.
  Value& operator[](const Key& key) { return items_[checked_index(key)].value(); }
  const Value& operator[](const Key& key) const { return items_[checked_index(key)].value(); }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }

  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }

  std::vector<Key> keys() const {
    std::vector<Key> keys;
    keys.reserve(items_.size());
    for (const Item& item : items_) keys.push_back(item.key());
    return keys;
  }
  std::vector<Value> values() const {
    std::vector<Value> values;
    values.reserve(items_.size());
    for (const Item& item : items_) values.push_back(item.value());
    return values;
  }

 private:
  size_t checked_index(const Key& key) const {
    auto found = index_.find(key);
    MINIDL_CHECK(found != index_.end(), key_description_, " '", key, "' is not defined");
    return found->second;
  }

  std::string key_description_;
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
};

}  // namespace minidl::nn
