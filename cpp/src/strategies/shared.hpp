// Factories and options of the adaptive strategies (genetic, annealing,
// local, bandit).  Internal: users go through make_strategy().
//
// Every one of them also learns from results it did not propose
// (Strategy::observe), so that inside the bandit each technique can exploit
// what the others found.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "aoe_native/strategy.hpp"
#include "forest_model.hpp"

namespace aoe {

struct GeneticOptions {
  size_t population = 30;
  size_t tournament = 6;
  double mutation_rate = 0.0;   // per-parameter; 0 = 1 / num_params
  size_t stagnation = 0;        // evaluations without a new best before a restart; 0 = 8 * population
  size_t elites = 2;            // kept across a restart
  size_t batch = 1;             // children per ask at most; 0 = population / 2
  double adjacent = 0.0;        // share of mutations to an adjacent value
};

struct AnnealingOptions {
  double t_start = 1.0;         // in units of the typical step size (scale-free)
  double t_end = 0.02;
  size_t cycle = 0;             // steps per cooling cycle; 0 = 3 * number of single-parameter moves
  double adjacent = 0.5;        // share of moves to an adjacent value
};

struct LocalOptions {
  size_t kick_steps = 3;        // random Hamming steps of an ILS perturbation
  size_t kicks_per_restart = 4; // failed kicks before a random restart
  bool adjacent_first = true;   // try adjacent-value neighbours before the rest
};

struct ForestSearchOptions {
  size_t initial = 0;           // space-filling configurations before the first model; 0 = max(10, P + 1)
  size_t spread = 100;          // random candidates per initial configuration (0/1: uniform sampling)
  double warm_local = 0.5;      // after a warm start, share of the design spent on the best given one's neighbours
  double explore = 0.1;         // share of uniform random proposals afterwards
  double greedy = 0.3;          // share of fits whose ranking is by predicted value, not expected improvement
  double local = 0.25;          // share of proposals among the best result's unvisited neighbours
  double crowding = 3;          // expected improvement / (1 + crowding * evaluated share of the lines through it)
  bool feasibility = true;      // learn where configurations fail (else failures count as the worst value)
  size_t full_limit = 8192;     // rank every unvisited configuration when there are at most this many
  size_t pool = 2048;           // else: random candidates,
  size_t walks = 8;             // and greedy walks from this many best results and best candidates
  size_t refit_ratio = 16;      // refit when the results have grown by 1/refit_ratio
  size_t max_train = 4096;      // results a model learns from at most
  size_t batch = 1;             // proposals per ask at most; 0 = as many as the objective takes
  ForestOptions forest;
};


struct BanditOptions {
  double c = 0.05;              // exploration weight (OpenTuner's default C)
  size_t window = 500;          // sliding window of results
  bool share = true;            // forward every result to every technique
};

std::unique_ptr<Strategy> make_genetic(const GeneticOptions& options = {});
std::unique_ptr<Strategy> make_annealing(const AnnealingOptions& options = {});
std::unique_ptr<Strategy> make_local(const LocalOptions& options = {});
std::unique_ptr<Strategy> make_forest(const ForestSearchOptions& options = {});
std::unique_ptr<Strategy> make_bandit(std::string name,
                                            std::vector<std::unique_ptr<Strategy>> arms,
                                            const BanditOptions& options = {});

// Helpers shared by the strategies.
namespace detail {

// A random configuration not yet evaluated: a few cheap rejection draws, then
// the exhaustive without-replacement sampler.  False when none is left.
bool draw_unvisited(const SearchSpace& space, const EvalRecord& record, Rng& rng,
                    UnvisitedSampler& sampler, ConfigId& out);

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
