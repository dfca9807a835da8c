// A small, fast, seedable generator (SplitMix64 seeding + xoshiro256**), so
// results are identical across platforms and standard libraries (unlike
// std::uniform_int_distribution).
#pragma once

#include <cstdint>

namespace aoe {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) w = splitmix(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n) (Lemire's multiply-shift with rejection), n > 0.
  uint64_t below(uint64_t n) {
    __uint128_t m = __uint128_t(next()) * n;
    uint64_t low = uint64_t(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = __uint128_t(next()) * n;
        low = uint64_t(m);
      }
    }
    return uint64_t(m >> 64);
  }

  // Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace aoe
