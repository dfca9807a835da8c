#include "shared.hpp"

#include <algorithm>
#include <cmath>

namespace aoe::detail {

bool draw_unvisited(const SearchSpace& space, const EvalRecord& record, Rng& rng,
                    UnvisitedSampler& sampler, ConfigId& out) {
  if (space.size() == 0) return false;
  // Rejection is O(1) while most of the space is unvisited; the sampler
  // guarantees termination once it is not.
  for (int i = 0; i < 8; ++i) {
    ConfigId c = space.sample(rng);
    if (!record.contains(c)) {
      out = c;
      return true;
    }
  }
  return sampler.next(rng, record, out);
}

bool random_move(const SearchSpace& space, ConfigId c, Rng& rng, double adjacent, ConfigId& out) {
  const size_t P = space.num_params();
  const auto& values = space.param_values();
  thread_local std::vector<uint16_t> idx;
  idx.assign(space.indices(c), space.indices(c) + P);
  for (int attempt = 0; attempt < 32; ++attempt) {
    const size_t p = rng.below(P);
    const size_t n = values[p].size();
    if (n < 2) continue;
    const uint16_t cur = idx[p];
    size_t v;
    if (rng.uniform() < adjacent) {
      if (cur == 0) v = 1;
      else if (size_t(cur) + 1 == n) v = cur - 1;
      else v = (rng.next() & 1) ? cur + 1 : cur - 1;
    } else {
      v = rng.below(n - 1);
      if (v >= cur) ++v;
    }
    idx[p] = uint16_t(v);
    auto found = space.find_indices(idx.data());
    idx[p] = cur;
    if (found) {
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

}  // namespace aoe::detail

namespace aoe {

void NeighbourModel::reset(const SearchSpace& space, size_t capacity, size_t k) {
  space_ = &space;
  capacity_ = std::max<size_t>(1, capacity);
  k_ = std::max<size_t>(1, k);
  next_ = 0;
  ids_.clear();
  values_.clear();
  sorted_.clear();
  inv_range_.clear();
  for (const auto& vals : space.param_values())
    inv_range_.push_back(vals.size() > 1 ? 1.0 / double(vals.size() - 1) : 0.0);
}

void NeighbourModel::add(ConfigId c, double value) {
  if (ids_.size() < capacity_) {
    ids_.push_back(c);
    values_.push_back(value);
  } else {  // replace the oldest
    double old = values_[next_];
    if (std::isfinite(old)) sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), old));
    ids_[next_] = c;
    values_[next_] = value;
    next_ = (next_ + 1) % capacity_;
  }
  if (std::isfinite(value)) sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), value), value);
}

double NeighbourModel::rank(double value) const {
  if (!std::isfinite(value) || sorted_.empty()) return 1.0;
  auto lo = std::lower_bound(sorted_.begin(), sorted_.end(), value);
  auto hi = std::upper_bound(lo, sorted_.end(), value);
  double mid = 0.5 * double((lo - sorted_.begin()) + (hi - sorted_.begin()) - 1);
  return sorted_.size() > 1 ? mid / double(sorted_.size() - 1) : 0.5;
}

double NeighbourModel::predict(ConfigId c) const {
  if (ids_.empty()) return 0.5;
  const size_t P = space_->num_params();
  const uint16_t* x = space_->indices(c);
  // The k smallest distances, kept by insertion (k is tiny).
  double best_d[8];
  size_t best_i[8];
  const size_t k = std::min<size_t>({k_, 8, ids_.size()});
  size_t filled = 0;
  for (size_t i = 0; i < ids_.size(); ++i) {
    const uint16_t* y = space_->indices(ids_[i]);
    double d = 0;
    for (size_t p = 0; p < P; ++p)
      if (x[p] != y[p]) d += 0.5 + 0.5 * std::abs(int(x[p]) - int(y[p])) * inv_range_[p];
    if (filled < k || d < best_d[k - 1]) {  // insert into the sorted k nearest
      size_t j = filled < k ? filled++ : k - 1;
      while (j > 0 && best_d[j - 1] > d) {
        best_d[j] = best_d[j - 1];
        best_i[j] = best_i[j - 1];
        --j;
      }
      best_d[j] = d;
      best_i[j] = i;
    }
  }
  double num = 0, den = 0;
  for (size_t j = 0; j < filled; ++j) {
    double w = 1.0 / (best_d[j] + 0.25);
    num += w * rank(values_[best_i[j]]);
    den += w;
  }
  return num / den;
}

}  // namespace aoe
