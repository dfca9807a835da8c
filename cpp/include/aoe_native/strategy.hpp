// Search strategies propose configurations (ask) and learn their values
// (tell).  They work on configuration ids of a SearchSpace, so every proposal
// is valid by construction.
//
// The tuner owns the evaluation record: a proposal already evaluated is not
// evaluated again but told back at once with its recorded value, and strategies
// can consult the record (EvalRecord) to avoid such proposals.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "aoe_native/rng.hpp"
#include "aoe_native/search_space.hpp"

namespace aoe {

// Which configurations have been evaluated in this run, and their values
// (failed = +inf).  Values are kept densely for spaces up to 4M
// configurations (fast lookups in the hot loop), else in a hash map.
class EvalRecord {
 public:
  void reset(size_t space_size) {
    seen_.assign((space_size + 63) / 64, 0);
    dense_.assign(space_size <= kDenseLimit ? space_size : 0, 0.0);
    sparse_.clear();
    count_ = 0;
  }
  bool contains(ConfigId c) const { return (seen_[c >> 6] >> (c & 63)) & 1; }
  double value(ConfigId c) const {
    if (!dense_.empty()) return dense_[c];
    auto it = sparse_.find(c);
    return it == sparse_.end() ? 0.0 : it->second;
  }
  void add(ConfigId c, double v) {
    seen_[c >> 6] |= uint64_t(1) << (c & 63);
    if (!dense_.empty()) dense_[c] = v;
    else sparse_.emplace(c, v);
    ++count_;
  }
  size_t count() const { return count_; }

 private:
  static constexpr size_t kDenseLimit = size_t(1) << 22;
  std::vector<uint64_t> seen_;
  std::vector<double> dense_;
  std::unordered_map<ConfigId, double> sparse_;
  size_t count_ = 0;
};

// Draws configurations uniformly without replacement, skipping ones already
// in the record.  Lazy Fisher-Yates: over a dense permutation for spaces up
// to 4M configurations (fast), else over a sparse swap map (O(1) memory per
// draw, so it works on spaces of any size).
class UnvisitedSampler {
 public:
  void reset(size_t n) {
    n_ = n;
    drawn_ = 0;
    swaps_.clear();
    perm_.clear();
  }
  // Returns false when the space is exhausted.
  bool next(Rng& rng, const EvalRecord& record, ConfigId& out);

 private:
  size_t n_ = 0, drawn_ = 0;
  std::unordered_map<uint64_t, uint64_t> swaps_;
  std::vector<ConfigId> perm_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;

  // Called once before a run.  `record` stays valid and up to date for the
  // whole run.
  virtual void reset(const SearchSpace& space, const EvalRecord& record, uint64_t seed) = 0;

  // The run's budget in evaluations (none: no limit by count), given before
  // reset().  A strategy may plan by it (the forest keeps its space-filling
  // design to a share of a small budget); the default ignores it.
  virtual void set_budget(std::optional<size_t> evaluations) { (void)evaluations; }

  // A cheap prediction of every configuration's value (indexed by id; lower is
  // better), or null: given before reset() and valid for the whole run.  A
  // strategy that uses it (uses_prior()) ranks its first proposals by it and
  // learns only the prior's error from the results; the default ignores it.
  virtual void set_prior(const std::vector<double>* prior) { (void)prior; }
  virtual bool uses_prior() const { return false; }

  // Propose up to max_n configurations (at least one).  Return none only when
  // the strategy has nothing left to propose.
  virtual void ask(size_t max_n, std::vector<ConfigId>& out) = 0;

  // Values of the proposals of the last ask(), in the same order; failed
  // configurations have value +inf.
  virtual void tell(const ConfigId* ids, const double* values, size_t n) = 0;

  // Results the strategy did not ask for: warm-start configurations evaluated
  // before the search, and random fill-ins when the strategy stalls.
  virtual void observe(const ConfigId* /*ids*/, const double* /*values*/, size_t /*n*/) {}
};

// Numeric options of a strategy by name (e.g. {"population", 50} for
// "genetic"); booleans are 0/1.  Unset options keep their defaults.
using StrategyOptions = std::map<std::string, double>;

// Names: see strategy_names().  Throws std::invalid_argument for an unknown
// name (listing the valid ones), or for an unknown or out-of-range option
// (listing the strategy's options).
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options = {});
std::vector<std::string> strategy_names();
// A one-line description of a strategy; throws like make_strategy() for an
// unknown name.
std::string strategy_description(const std::string& name);
// The options make_strategy() accepts for a strategy, with their defaults.
StrategyOptions strategy_defaults(const std::string& name);

}  // namespace aoe
