// Deterministic random numbers for the examples: the same starting value gives the same weights and
// the same data on every machine, backend and worker count (no std::*_distribution, whose output
// differs between standard libraries).
#pragma once

#include <cmath>
#include <cstdint>

namespace nn {

/// SplitMix64: mixes a 64-bit value into a well-distributed one (also used to derive starting values).
inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// xoshiro256**, its state filled from the starting value through SplitMix64.
class Rng {
 public:
  explicit Rng(std::uint64_t start) noexcept {
    for (auto& s : s_) {
      start = mix64(start);
      s = start;
    }
  }

  /// 64 random bits.
  std::uint64_t next() noexcept {
    std::uint64_t const result = rotl(s_[1] * 5, 7) * 9;
    std::uint64_t const t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform integer in [0, n).
  std::uint32_t below(std::uint32_t n) noexcept {
    return static_cast<std::uint32_t>((next() >> 32) * n >> 32);
  }

  /// Standard normal (Box-Muller).
  double normal() noexcept {
    double const u1 = 1.0 - uniform();  // (0, 1]
    double const u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4]{};
};

}  // namespace nn
