// The two baselines: exhaustive enumeration and uniform random sampling
// without replacement.
#include "aoe_native/strategies.hpp"

namespace aoe {

bool UnvisitedSampler::next(Rng& rng, const EvalRecord& record, ConfigId& out) {
  constexpr size_t kDenseLimit = size_t(1) << 22;
  if (n_ <= kDenseLimit) {
    if (perm_.size() != n_) {
      perm_.resize(n_);
      for (size_t i = 0; i < n_; ++i) perm_[i] = ConfigId(i);
    }
    while (drawn_ < n_) {
      const size_t j = drawn_ + size_t(rng.below(n_ - drawn_));
      std::swap(perm_[drawn_], perm_[j]);
      const ConfigId c = perm_[drawn_++];
      if (!record.contains(c)) {
        out = c;
        return true;
      }
    }
    return false;
  }
  // Lazy Fisher-Yates: position i of the virtual permutation holds swaps_[i]
  // if present, else i.
  auto at = [&](uint64_t i) {
    auto it = swaps_.find(i);
    return it == swaps_.end() ? i : it->second;
  };
  while (drawn_ < n_) {
    const uint64_t j = drawn_ + rng.below(n_ - drawn_);
    const uint64_t vj = at(j), vi = at(drawn_);
    swaps_[j] = vi;
    swaps_.erase(drawn_);
    ++drawn_;
    if (!record.contains(ConfigId(vj))) {
      out = ConfigId(vj);
      return true;
    }
  }
  return false;
}

namespace {

class Exhaustive : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void reset(const SearchSpace& space, const EvalRecord& record, uint64_t) override {
    n_ = space.size();
    next_ = 0;
    record_ = &record;
  }
  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    while (out.size() < max_n && next_ < n_) {
      if (!record_->contains(ConfigId(next_))) out.push_back(ConfigId(next_));
      ++next_;
    }
  }
  void tell(const ConfigId*, const double*, size_t) override {}

 private:
  size_t n_ = 0, next_ = 0;
  const EvalRecord* record_ = nullptr;
};

class RandomSampling : public Strategy {
 public:
  std::string name() const override { return "random"; }
  void reset(const SearchSpace& space, const EvalRecord& record, uint64_t seed) override {
    rng_.reseed(seed);
    sampler_.reset(space.size());
    record_ = &record;
  }
  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    ConfigId c;
    while (out.size() < max_n && sampler_.next(rng_, *record_, c)) out.push_back(c);
  }
  void tell(const ConfigId*, const double*, size_t) override {}

 private:
  Rng rng_;
  UnvisitedSampler sampler_;
  const EvalRecord* record_ = nullptr;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive() { return std::make_unique<Exhaustive>(); }
std::unique_ptr<Strategy> make_random() { return std::make_unique<RandomSampling>(); }

}  // namespace aoe
