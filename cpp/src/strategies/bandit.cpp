// AUC bandit meta-strategy (the scheme of OpenTuner's AUCBanditMetaTechnique,
// also pyATF's recommended default; autotuner_anchors.md §1.5, §1.9).
//
// Every result is logged in a sliding window as (technique, found a new global
// best?).  Each ask goes to the technique with the highest
//     AUC_t + C * sqrt(2 * log2|H| / n_t)
// where, over the window, n_t is how many results t produced and AUC_t
// weighs t's successes by their position among t's results (the area under
// its cumulative-success curve, normalised to [0, 1]), so recent successes
// count more.  A technique absent from the window is tried first.
//
// All arms share the tuner's EvalRecord; with `share` every result is also
// forwarded to the other arms (observe), so what one finds the others can
// build on.
#include <cmath>
#include <deque>
#include <stdexcept>

#include "shared.hpp"

namespace aoe {
namespace {

struct BanditOptions {
  double c = 0.05;              // exploration weight (OpenTuner's default C)
  size_t window = 500;          // sliding window of results
  bool share = true;            // forward every result to every technique
};

class Bandit : public StrategyBase {
 public:
  Bandit(std::vector<std::unique_ptr<Strategy>> arms, const BanditOptions& o) : arms_(std::move(arms)), opt_(o) {
    if (arms_.empty()) throw std::invalid_argument("bandit: needs at least one technique");
  }
  std::string name() const override { return "bandit"; }

  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    out.clear();
    for (size_t tries = 0; tries < arms_.size(); ++tries) {
      size_t a = choose();
      if (a == arms_.size()) return;  // all exhausted
      arms_[a]->ask(max_n, out);
      if (!out.empty()) {
        active_ = a;
        return;
      }
      exhausted_[a] = true;
    }
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override {
    arms_[active_]->tell(ids, values, n);
    if (opt_.share)
      for (size_t i = 0; i < arms_.size(); ++i)
        if (i != active_) arms_[i]->observe(ids, values, n);
    for (size_t k = 0; k < n; ++k) {
      bool better = values[k] < best_;
      if (better) best_ = values[k];
      push(active_, better);
    }
  }

  void observe(const ConfigId* ids, const double* values, size_t n) override {
    for (auto& arm : arms_) arm->observe(ids, values, n);
    for (size_t k = 0; k < n; ++k)
      if (values[k] < best_) best_ = values[k];
  }

 private:
  struct Entry {
    size_t arm;
    bool success;
  };

  void start_run() override {
    for (size_t i = 0; i < arms_.size(); ++i)
      arms_[i]->reset(*space_, *record_, detail::derive_seed(seed_, i + 1));
    history_.clear();
    uses_.assign(arms_.size(), 0);
    successes_.assign(arms_.size(), 0);
    weighted_.assign(arms_.size(), 0.0);
    exhausted_.assign(arms_.size(), false);
    best_ = kInf;
    active_ = 0;
  }

  // Window bookkeeping in O(1): per arm, its result count n, success count
  // s and position-weighted success sum w (successes at positions 1..n).
  void push(size_t arm, bool success) {
    history_.push_back({arm, success});
    ++uses_[arm];
    if (success) {
      ++successes_[arm];
      weighted_[arm] += double(uses_[arm]);
    }
    if (history_.size() > opt_.window) {
      const Entry old = history_.front();
      history_.pop_front();
      // Dropping the arm's first result shifts its other results down one
      // position: every success loses 1 (the dropped one, at position 1, all).
      weighted_[old.arm] -= double(successes_[old.arm]);
      if (old.success) --successes_[old.arm];
      --uses_[old.arm];
    }
  }

  double auc(size_t arm) const {
    double n = double(uses_[arm]);
    return n > 0 ? 2.0 * weighted_[arm] / (n * (n + 1)) : 0.0;
  }

  size_t choose() const {
    size_t best = arms_.size();
    double best_score = -1;
    const double log_h = history_.size() > 1 ? std::log2(double(history_.size())) : 0.0;
    for (size_t a = 0; a < arms_.size(); ++a) {
      if (exhausted_[a]) continue;
      if (uses_[a] == 0) return a;  // untried in the window: try it first
      double s = auc(a) + opt_.c * std::sqrt(2.0 * log_h / double(uses_[a]));
      if (s > best_score) {
        best_score = s;
        best = a;
      }
    }
    return best;
  }

  std::vector<std::unique_ptr<Strategy>> arms_;
  BanditOptions opt_;
  std::deque<Entry> history_;
  std::vector<size_t> uses_, successes_;
  std::vector<double> weighted_;
  std::vector<bool> exhausted_;
  double best_ = 0;
  size_t active_ = 0;
};

// Arms: our population and our trajectory technique.  (Measured with
// bench/bench_strategies.py: adding "local" as a third arm lowered the score
// on spaces with deceptive local optima.)
std::unique_ptr<Strategy> make(OptionBinder& b) {
  BanditOptions o;
  b("c", o.c, 0, kMany);
  b("window", o.window, 1, kMany);
  b("share", o.share);
  std::vector<std::unique_ptr<Strategy>> arms;
  arms.push_back(make_strategy("genetic"));
  arms.push_back(make_strategy("annealing"));
  return std::make_unique<Bandit>(std::move(arms), o);
}

}  // namespace

StrategyEntry bandit_entry() {
  return {"bandit", "OpenTuner's AUC bandit over genetic and annealing, sharing their results", &make};
}

}  // namespace aoe
