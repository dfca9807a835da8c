// What the built-in strategies share: a base class holding the state every
// one of them keeps, the registry entry each strategy's file defines, and
// helpers.  Internal: users go through make_strategy().
//
// Every adaptive strategy also learns from results it did not propose
// (Strategy::observe), so that inside the bandit each technique can exploit
// what the others found.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aoe_native/strategy.hpp"

namespace aoe {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Base of the built-in strategies (embedders implement Strategy directly).
// reset() sets the shared state, then start_run() the strategy's own.
class StrategyBase : public Strategy {
 public:
  void reset(const SearchSpace& space, const EvalRecord& record, uint64_t seed) final {
    space_ = &space;
    record_ = &record;
    seed_ = seed;
    rng_.reseed(seed);
    sampler_.reset(space.size());
    start_run();
  }
  void set_budget(std::optional<size_t> evaluations) final { budget_ = evaluations; }
  void set_prior(const std::vector<double>* prior) final { prior_ = prior && !prior->empty() ? prior : nullptr; }

 protected:
  // Start a new run: everything but the members below is stale.
  virtual void start_run() = 0;

  // A random configuration not yet evaluated: a few cheap rejection draws,
  // then the exhaustive without-replacement sampler.  False when none is left.
  bool draw_unvisited(ConfigId& out);

  const SearchSpace* space_ = nullptr;
  const EvalRecord* record_ = nullptr;
  uint64_t seed_ = 0;  // for components seeded apart (the bandit's arms)
  std::optional<size_t> budget_;  // the run's evaluations at most (set_budget)
  const std::vector<double>* prior_ = nullptr;  // a prediction per configuration (set_prior), or null
  Rng rng_;
  UnvisitedSampler sampler_;
};

constexpr double kMany = 1e9;  // upper limit of options that have none

// Binds option names to the fields of a strategy's options struct.  The same
// binding reads the user's options (checking names and ranges) and lists the
// defaults, so the two cannot disagree.
class OptionBinder {
 public:
  OptionBinder(std::string strategy, const StrategyOptions& given) : strategy_(std::move(strategy)), given_(given) {}

  void operator()(const char* key, double& field, double lo, double hi);
  void operator()(const char* key, size_t& field, double lo, double hi);
  void operator()(const char* key, bool& field);

  // Unknown names are an error, not silently ignored (a typo would otherwise
  // change nothing).
  void finish() const;
  const StrategyOptions& defaults() const { return defaults_; }

 private:
  std::string strategy_;
  const StrategyOptions& given_;
  StrategyOptions defaults_;
  size_t used_ = 0;
};

// A built-in strategy as make_strategy() knows it; each strategy's file
// defines one (<name>_entry()) and registry.cpp lists them.  `make` binds the
// options (OptionBinder) and builds the strategy; the caller then checks for
// unknown option names.
struct StrategyEntry {
  const char* name;
  const char* description;  // one line
  std::unique_ptr<Strategy> (*make)(OptionBinder& options);
};

namespace detail {

// A random valid configuration differing from c in one parameter.  The
// parameter is drawn uniformly (not the neighbour: a parameter with many
// values would otherwise take most moves); the new value is the adjacent one
// with probability `adjacent`, else any other.  False when c has no
// neighbour at all.
bool random_move(const SearchSpace& space, ConfigId c, Rng& rng, double adjacent, ConfigId& out);

// Linear membership test, for the short batches of an ask().
inline bool contains(const std::vector<ConfigId>& v, ConfigId c) {
  return std::find(v.begin(), v.end(), c) != v.end();
}

// Fisher-Yates shuffle with our own generator (std::shuffle is not
// reproducible across standard libraries).
template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// Derive independent seeds for sub-components.
inline uint64_t derive_seed(uint64_t seed, uint64_t salt) {
  uint64_t x = seed ^ (salt * 0x9e3779b97f4a7c15ULL);
  return Rng::splitmix(x);
}

}  // namespace detail
}  // namespace aoe
