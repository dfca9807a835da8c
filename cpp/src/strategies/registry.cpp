#include <cmath>
#include <stdexcept>
#include <utility>

#include "aoe_native/strategies.hpp"
#include "shared.hpp"

namespace aoe {

namespace {

// Binds option names to the fields of a strategy's options struct.  The same
// binding reads the user's options (checking names and ranges) and lists the
// defaults, so the two cannot disagree.
class OptionBinder {
 public:
  OptionBinder(std::string strategy, const StrategyOptions& given) : strategy_(std::move(strategy)), given_(given) {}

  void operator()(const char* key, double& field, double lo, double hi) {
    defaults_[key] = field;
    auto it = given_.find(key);
    if (it == given_.end()) return;
    if (!(it->second >= lo && it->second <= hi))
      throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " = " + format(it->second) +
                                  " is out of range [" + format(lo) + ", " + format(hi) + "]");
    field = it->second;
    ++used_;
  }
  void operator()(const char* key, size_t& field, double lo, double hi) {
    double v = double(field);
    (*this)(key, v, lo, hi);
    if (v != std::floor(v))
      throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " must be an integer, got " +
                                  format(v));
    field = size_t(v);
  }
  void operator()(const char* key, bool& field) {
    double v = field ? 1 : 0;
    (*this)(key, v, 0, 1);
    if (v != 0 && v != 1)
      throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " is a boolean (0 or 1)");
    field = v != 0;
  }

  // Unknown names are an error, not silently ignored (a typo would otherwise
  // change nothing).
  void finish() const {
    if (used_ == given_.size()) return;
    for (const auto& [key, value] : given_) {
      if (defaults_.count(key)) continue;
      std::string valid;
      for (const auto& [k, v] : defaults_) valid += (valid.empty() ? "" : ", ") + k;
      throw std::invalid_argument("strategy '" + strategy_ + "' has no option '" + key + "'" +
                                  (valid.empty() ? " (it takes none)" : " (options: " + valid + ")"));
    }
  }
  const StrategyOptions& defaults() const { return defaults_; }

 private:
  static std::string format(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  std::string strategy_;
  const StrategyOptions& given_;
  StrategyOptions defaults_;
  size_t used_ = 0;
};

constexpr double kMany = 1e9;

void bind(OptionBinder& b, GeneticOptions& o) {
  b("population", o.population, 2, kMany);
  b("tournament", o.tournament, 1, kMany);
  b("mutation_rate", o.mutation_rate, 0, 1);
  b("stagnation", o.stagnation, 0, kMany);
  b("elites", o.elites, 0, kMany);
  b("batch", o.batch, 0, kMany);
  b("adjacent", o.adjacent, 0, 1);
}
void bind(OptionBinder& b, AnnealingOptions& o) {
  b("t_start", o.t_start, 1e-9, kMany);
  b("t_end", o.t_end, 1e-9, kMany);
  b("cycle", o.cycle, 0, kMany);
  b("adjacent", o.adjacent, 0, 1);
}
void bind(OptionBinder& b, LocalOptions& o) {
  b("kick_steps", o.kick_steps, 1, kMany);
  b("kicks_per_restart", o.kicks_per_restart, 0, kMany);
  b("adjacent_first", o.adjacent_first);
}
void bind(OptionBinder& b, ForestSearchOptions& o) {
  b("initial", o.initial, 0, kMany);
  b("spread", o.spread, 0, kMany);
  b("warm_local", o.warm_local, 0, 1);
  b("explore", o.explore, 0, 1);
  b("greedy", o.greedy, 0, 1);
  b("local", o.local, 0, 1);
  b("crowding", o.crowding, 0, kMany);
  b("feasibility", o.feasibility);
  b("full_limit", o.full_limit, 0, kMany);
  b("pool", o.pool, 0, kMany);
  b("walks", o.walks, 0, kMany);
  b("refit_ratio", o.refit_ratio, 1, kMany);
  b("max_train", o.max_train, 2, kMany);
  b("batch", o.batch, 0, kMany);
  b("trees", o.forest.trees, 1, 4096);
  b("min_split", o.forest.min_split, 2, kMany);
  b("min_leaf", o.forest.min_leaf, 1, kMany);
  b("features", o.forest.features, 0, 1);
  b("max_depth", o.forest.max_depth, 1, 256);
}
void bind(OptionBinder& b, BanditOptions& o) {
  b("c", o.c, 0, kMany);
  b("window", o.window, 1, kMany);
  b("share", o.share);
}

template <class Options, class Make>
std::unique_ptr<Strategy> configured(OptionBinder& b, Make make) {
  Options o;
  bind(b, o);
  b.finish();
  return make(o);
}

std::unique_ptr<Strategy> exhaustive(OptionBinder& b) {
  b.finish();
  return make_exhaustive();
}
std::unique_ptr<Strategy> random_sampling(OptionBinder& b) {
  b.finish();
  return make_random();
}
std::unique_ptr<Strategy> genetic(OptionBinder& b) {
  return configured<GeneticOptions>(b, [](const GeneticOptions& o) { return make_genetic(o); });
}
std::unique_ptr<Strategy> annealing(OptionBinder& b) {
  return configured<AnnealingOptions>(b, [](const AnnealingOptions& o) { return make_annealing(o); });
}
std::unique_ptr<Strategy> local(OptionBinder& b) {
  return configured<LocalOptions>(b, [](const LocalOptions& o) { return make_local(o); });
}
std::unique_ptr<Strategy> forest(OptionBinder& b) {
  return configured<ForestSearchOptions>(b, [](const ForestSearchOptions& o) { return make_forest(o); });
}

// OpenTuner-style AUC bandit over our population and trajectory techniques.
// (Measured with bench/bench_strategies.py: adding "local" as a third arm
// lowered the score on spaces with deceptive local optima.)
std::unique_ptr<Strategy> bandit(OptionBinder& b) {
  return configured<BanditOptions>(b, [](const BanditOptions& o) {
    std::vector<std::unique_ptr<Strategy>> arms;
    arms.push_back(make_genetic());
    arms.push_back(make_annealing());
    return make_bandit("bandit", std::move(arms), o);
  });
}

// The default: surrogate-guided search.  Measured with
// bench/bench_strategies.py (Willemsen et al.'s score, seeds 0-29) and on
// held-out spaces (subspaces of the brute-forced ones, Ascend cost-model tiling
// spaces; other seeds): ahead of genetic and of the bandit on every space
// family but one within noise.  Its model costs ~0.1-0.3 ms per evaluation,
// worth it whenever an evaluation is a measurement.
std::unique_ptr<Strategy> automatic(OptionBinder& b) { return forest(b); }

using Factory = std::unique_ptr<Strategy> (*)(OptionBinder&);

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"auto", &automatic},   {"exhaustive", &exhaustive}, {"random", &random_sampling}, {"genetic", &genetic},
      {"annealing", &annealing}, {"local", &local},        {"forest", &forest}, {"bandit", &bandit},
  };
  return r;
}

Factory find(const std::string& name) {
  for (const auto& [n, factory] : registry())
    if (n == name) return factory;
  std::string valid;
  for (const auto& n : strategy_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy '" + name + "' (valid: " + valid + ")");
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& [name, f] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  OptionBinder b(name, options);
  return find(name)(b);
}

StrategyOptions strategy_defaults(const std::string& name) {
  const StrategyOptions none;
  OptionBinder b(name, none);
  find(name)(b);
  return b.defaults();
}

}  // namespace aoe
