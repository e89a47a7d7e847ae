#pragma once
// The global random generator: a Philox-4x32-10 seed and a counter offset (see
// Note [Philox counters in minidl] in core/philox.h). Each random op reserves the counters it
// needs with reserve(); the state is two integers, so checkpoints save and restore it exactly.
#include <cstdint>
#include <mutex>

namespace minidl {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // the next unused counter; always a multiple of 4
  friend bool operator==(const GeneratorState&, const GeneratorState&) = default;
};

class PhiloxGenerator {
 public:
  // PyTorch's default seed, so an unseeded program is still reproducible run to run.
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;
  // Reservations are rounded up to this many counters, as PyTorch's Philox offsets are, so an
  // offset always starts a group of four.
  static constexpr uint64_t kCounterAlignment = 4;

  explicit PhiloxGenerator(uint64_t seed = kDefaultSeed) : state_{seed, 0} {}

  // Sets the seed and restarts the counters at 0.
  void manual_seed(uint64_t seed);
  // Returns {seed, first counter} for a call drawing `count` elements and advances the offset
  // past them (count rounded up to kCounterAlignment). Safe to call from several threads.
  GeneratorState reserve(uint64_t count);
  GeneratorState state() const;
  void set_state(const GeneratorState& state);

 private:
  mutable std::mutex mutex_;
  GeneratorState state_;
};

// The generator rand, randn, uniform_ and normal_ draw from, on every device.
PhiloxGenerator& default_generator();

}  // namespace minidl
