// The two baselines: exhaustive enumeration and uniform random sampling
// without replacement.
#include "shared.hpp"

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

class Exhaustive : public StrategyBase {
 public:
  std::string name() const override { return "exhaustive"; }
  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    while (out.size() < max_n && next_ < space_->size()) {
      if (!record_->contains(ConfigId(next_))) out.push_back(ConfigId(next_));
      ++next_;
    }
  }
  void tell(const ConfigId*, const double*, size_t) override {}

 private:
  void start_run() override { next_ = 0; }
  size_t next_ = 0;
};

class RandomSampling : public StrategyBase {
 public:
  std::string name() const override { return "random"; }
  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    ConfigId c;
    while (out.size() < max_n && sampler_.next(rng_, *record_, c)) out.push_back(c);
  }
  void tell(const ConfigId*, const double*, size_t) override {}

 private:
  void start_run() override {}
};

template <class S>
std::unique_ptr<Strategy> make_plain(OptionBinder&) {
  return std::make_unique<S>();
}

}  // namespace

StrategyEntry exhaustive_entry() {
  return {"exhaustive", "Every valid configuration, in index order", &make_plain<Exhaustive>};
}
StrategyEntry random_entry() {
  return {"random", "Uniform random sampling without replacement", &make_plain<RandomSampling>};
}

}  // namespace aoe
