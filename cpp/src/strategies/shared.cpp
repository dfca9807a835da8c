#include "shared.hpp"

#include <algorithm>
#include <cmath>

namespace aoe {

bool StrategyBase::draw_unvisited(ConfigId& out) {
  if (space_->size() == 0) return false;
  // Rejection is O(1) while most of the space is unvisited; the sampler
  // guarantees termination once it is not.
  for (int i = 0; i < 8; ++i) {
    ConfigId c = space_->sample(rng_);
    if (!record_->contains(c)) {
      out = c;
      return true;
    }
  }
  return sampler_.next(rng_, *record_, out);
}

namespace detail {

bool random_move(const SearchSpace& space, ConfigId c, Rng& rng, double adjacent, ConfigId& out) {
  const size_t P = space.num_params();
  const auto& values = space.param_values();
  for (int attempt = 0; attempt < 32; ++attempt) {
    const size_t p = rng.below(P);
    const size_t n = values[p].size();
    if (n < 2) continue;
    const uint16_t cur = space.index(c, p);
    size_t v;
    if (rng.uniform() < adjacent) {
      if (cur == 0) v = 1;
      else if (size_t(cur) + 1 == n) v = cur - 1;
      else v = (rng.next() & 1) ? cur + 1 : cur - 1;
    } else {
      v = rng.below(n - 1);
      if (v >= cur) ++v;
    }
    if (auto found = space.find_changed(c, p, v)) {
      out = *found;
      return true;
    }
  }
  // Tightly constrained around c: pick among its actual neighbours.
  thread_local std::vector<ConfigId> nbrs;
  space.neighbours(c, Neighbourhood::Hamming, nbrs);
  if (nbrs.empty()) return false;
  out = nbrs[rng.below(nbrs.size())];
  return true;
}

}  // namespace detail
}  // namespace aoe
