// Constraint-aware steady-state genetic algorithm.
//
// Individuals are valid configuration ids.  A child comes from uniform
// crossover of two tournament-selected parents; when the crossed value
// indices are not a valid configuration, the child is repaired by reverting
// its genes to the first parent's values in random order until it is valid
// (the first parent itself is valid, so this terminates, and the result is
// the valid point nearest the child along that path).  Mutation changes one
// uniformly chosen parameter to another value (detail::random_move), keeping
// only valid results, so it too only produces valid configs.  A child already
// evaluated is mutated again (its recorded value still informs the
// population).
//
// Steady state: each evaluated child replaces the worst member when better,
// so the best members always survive (elitism).  After `stagnation`
// evaluations without a new best the population restarts: the `elites` best
// members stay, the rest are replaced by random unvisited configurations.
//
// Defaults (population 30, tournament 6, one child per ask, non-adjacent
// mutation) were chosen with bench/bench_strategies.py on held-out seeds and
// on synthetic landscapes, not per space.
#include <algorithm>
#include <cmath>

#include "shared.hpp"

namespace aoe {
namespace {

struct GeneticOptions {
  size_t population = 30;
  size_t tournament = 6;
  double mutation_rate = 0.0;   // per-parameter; 0 = 1 / num_params
  size_t stagnation = 0;        // evaluations without a new best before a restart; 0 = 8 * population
  size_t elites = 2;            // kept across a restart
  size_t batch = 1;             // children per ask at most; 0 = population / 2
  double adjacent = 0.0;        // share of mutations to an adjacent value
};

class Genetic : public StrategyBase {
 public:
  explicit Genetic(const GeneticOptions& o) : opt_(o) {}
  std::string name() const override { return "genetic"; }

  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    out.clear();
    // Children are bred from the population as it is now; keep batches
    // small so that later children profit from earlier results.
    size_t want = std::max<size_t>(1, std::min(max_n, opt_.batch ? opt_.batch : opt_.population / 2));
    // Observed results (warm start, other techniques) fill the population too.
    fill_ = std::min(fill_, opt_.population - std::min(pop_.size(), opt_.population));
    while (out.size() < want) {
      ConfigId c;
      bool ok;
      if (fill_ > 0) {
        ok = draw_unvisited(c) && !detail::contains(out, c);
        if (ok) --fill_;
      } else {
        ok = breed(out, c);
      }
      if (!ok) {
        // Nothing new from breeding: explore instead.
        if (!draw_unvisited(c) || detail::contains(out, c)) break;
      }
      out.push_back(c);
    }
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      ++since_best_;
      consider(ids[i], values[i]);
    }
    if (since_best_ >= stagnation_) restart();
  }

  // Good configurations found by other techniques join the population.
  void observe(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i) consider(ids[i], values[i]);
  }

 private:
  struct Member {
    ConfigId id;
    double value;
  };

  void start_run() override {
    pop_.clear();
    best_v_ = kInf;
    since_best_ = 0;
    fill_ = opt_.population;
    mutation_ = opt_.mutation_rate > 0 ? opt_.mutation_rate
                                       : 1.0 / double(std::max<size_t>(1, space_->num_params()));
    stagnation_ = opt_.stagnation > 0 ? opt_.stagnation : 8 * opt_.population;
    child_.assign(space_->num_params(), 0);
  }

  void consider(ConfigId c, double v) {
    if (v < best_v_) {
      best_v_ = v;
      since_best_ = 0;
    }
    for (const Member& m : pop_)
      if (m.id == c) return;
    if (pop_.size() < opt_.population) {
      pop_.push_back({c, v});
      return;
    }
    auto worst = std::max_element(pop_.begin(), pop_.end(),
                                  [](const Member& a, const Member& b) { return a.value < b.value; });
    if (v < worst->value) *worst = {c, v};
  }

  void restart() {
    std::sort(pop_.begin(), pop_.end(), [](const Member& a, const Member& b) { return a.value < b.value; });
    if (pop_.size() > opt_.elites) pop_.resize(opt_.elites);
    fill_ = opt_.population - pop_.size();
    since_best_ = 0;
  }

  const Member& select() {
    const Member* best = &pop_[rng_.below(pop_.size())];
    for (size_t k = 1; k < opt_.tournament; ++k) {
      const Member* m = &pop_[rng_.below(pop_.size())];
      if (m->value < best->value) best = m;
    }
    return *best;
  }

  // A new child, valid and not yet evaluated nor in `batch`.
  bool breed(const std::vector<ConfigId>& batch, ConfigId& out) {
    if (pop_.empty()) return false;
    const size_t P = space_->num_params();
    for (int attempt = 0; attempt < 16; ++attempt) {
      const Member& a = select();
      const Member& b = select();
      ConfigId c = a.id;
      if (a.id != b.id) {
        const uint16_t* ia = space_->indices(a.id);
        const uint16_t* ib = space_->indices(b.id);
        diff_.clear();
        for (size_t p = 0; p < P; ++p) {
          child_[p] = ia[p];
          if (ia[p] == ib[p]) continue;
          if (rng_.next() & 1) child_[p] = ib[p];
          if (child_[p] != ia[p]) diff_.push_back(uint16_t(p));
        }
        c = repair(ia);
      }
      // Mutation: each parameter mutates with probability mutation_; a child
      // identical to a known point always mutates.
      size_t steps = 0;
      for (size_t p = 0; p < P; ++p) steps += rng_.uniform() < mutation_;
      if (steps == 0 && (record_->contains(c) || detail::contains(batch, c))) steps = 1;
      for (size_t s = 0; s < steps; ++s)
        if (!detail::random_move(*space_, c, rng_, opt_.adjacent, c)) break;
      if (record_->contains(c)) {
        consider(c, record_->value(c));  // known already: free information
        continue;
      }
      if (detail::contains(batch, c)) continue;
      out = c;
      return true;
    }
    return false;
  }

  // Revert crossed genes (in random order) to parent a's values until valid.
  ConfigId repair(const uint16_t* ia) {
    auto found = space_->find_indices(child_.data());
    detail::shuffle(diff_, rng_);
    for (size_t k = 0; !found && k < diff_.size(); ++k) {
      child_[diff_[k]] = ia[diff_[k]];
      found = space_->find_indices(child_.data());
    }
    // With every gene reverted the child is parent a, which is valid.
    return *found;
  }

  GeneticOptions opt_;
  std::vector<Member> pop_;
  double best_v_ = kInf;
  size_t since_best_ = 0, fill_ = 0, stagnation_ = 0;
  double mutation_ = 0;
  std::vector<uint16_t> child_, diff_;
};

std::unique_ptr<Strategy> make(OptionBinder& b) {
  GeneticOptions o;
  b("population", o.population, 2, kMany);
  b("tournament", o.tournament, 1, kMany);
  b("mutation_rate", o.mutation_rate, 0, 1);
  b("stagnation", o.stagnation, 0, kMany);
  b("elites", o.elites, 0, kMany);
  b("batch", o.batch, 0, kMany);
  b("adjacent", o.adjacent, 0, 1);
  return std::make_unique<Genetic>(o);
}

}  // namespace

StrategyEntry genetic_entry() {
  return {"genetic", "Steady-state genetic algorithm (tournament selection, uniform crossover with repair)", &make};
}

}  // namespace aoe
