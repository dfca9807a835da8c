// The default strategy ("auto"): surrogate-guided search first, evolution
// once the run is long.
//
// The forest (forest.cpp) is the most sample-efficient strategy over the first
// hundreds of evaluations, but at budgets of thousands the genetic algorithm
// (genetic.cpp), which keeps recombining the best results, did better (issue
// 15: a 241,600-configuration GEMM space at 6,529 evaluations, genetic 0.94 to
// the forest's 0.81).  So after `handover` evaluations of its own, the search
// hands over to the genetic algorithm, whose population starts as the best
// results so far (it observed every one); a share `mix` of later proposals
// still comes from the forest, which keeps learning every result, so that its
// model can still point at a region the population never reached.
//
// The hand-over comes late, at 2,000 evaluations: bench/bench_strategies.py
// (20 seeds) shows the cost of handing over before the forest has converged:
// at 500, the held-out convolution space without tile_size_x=1 (budget 1,508)
// fell from the forest's 0.696 to 0.539 (one space of 21 gained, gemm without
// NDIMB=32, +0.019).  Every space of the benchmark has a budget of at most
// 2,219, so there auto scores as the forest.  bench/bench_long_runs.py runs
// 6,000 evaluations on the two largest Ascend tiling spaces (197,464 and
// 91,480 tilings) and a synthetic 7^7 space with a narrow second basin (3
// seeds): up to 2,000 evaluations the forest is the closest to the optimum
// (or level) on both tiling spaces (MatMul 2048^3: 0.22% / 0.13% at 500 /
// 1,000, genetic 17.9% / 0.14%, the bandit 8.4% / 8.4%), all reach the
// optimum or next to it by 4,000, and after the hand-over auto reaches
// MatMul's optimum where the forest alone stays 0.02% away.  Nothing there
// argues for another hand-over.
//
// The rule depends only on how many evaluations the run has made, not on the
// budget: a run of a few hundred evaluations is the forest alone; a longer one
// is identical to it up to the hand-over.
#include "shared.hpp"

namespace aoe {

StrategyEntry forest_entry();
StrategyEntry genetic_entry();

namespace {

struct AutoOptions {
  size_t handover = 2000;  // evaluations of the forest alone
  double mix = 0.2;        // afterwards, share of proposals still from the forest
};

class Auto : public StrategyBase {
 public:
  Auto(const AutoOptions& o, std::unique_ptr<Strategy> forest, std::unique_ptr<Strategy> genetic)
      : opt_(o), forest_(std::move(forest)), genetic_(std::move(genetic)) {}
  std::string name() const override { return "auto"; }
  bool uses_prior() const override { return true; }

  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    const bool evolve = evaluated_ >= opt_.handover && rng_.uniform() >= opt_.mix;
    active_ = evolve ? genetic_.get() : forest_.get();
    active_->ask(max_n, out);
    if (out.empty()) {  // one has nothing left to propose: the other may
      active_ = evolve ? forest_.get() : genetic_.get();
      active_->ask(max_n, out);
    }
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override {
    evaluated_ += n;
    active_->tell(ids, values, n);
    (active_ == forest_.get() ? genetic_ : forest_)->observe(ids, values, n);
  }

  void observe(const ConfigId* ids, const double* values, size_t n) override {
    forest_->observe(ids, values, n);
    genetic_->observe(ids, values, n);
  }

 private:
  void start_run() override {
    forest_->set_budget(budget_);  // (the whole run's: the forest's own runs up to the hand-over)
    forest_->set_prior(prior_);     // (the genetic phase has the forest's results, learnt with it)
    forest_->reset(*space_, *record_, seed_);
    genetic_->set_budget(budget_);
    genetic_->reset(*space_, *record_, detail::derive_seed(seed_, 1));
    evaluated_ = 0;
    active_ = forest_.get();
  }

  AutoOptions opt_;
  std::unique_ptr<Strategy> forest_, genetic_;
  Strategy* active_ = nullptr;
  size_t evaluated_ = 0;
};

std::unique_ptr<Strategy> make(OptionBinder& b) {
  AutoOptions o;
  b("handover", o.handover, 0, kMany);
  b("mix", o.mix, 0, 1);
  // The forest's options are auto's too ("auto" was the forest alone before).
  auto forest = forest_entry().make(b);
  // Its "batch" (proposals per ask) holds for the genetic phase as well.
  size_t batch = 1;
  b("batch", batch, 0, kMany);
  const StrategyOptions genetic_options = {{"batch", double(batch)}};
  OptionBinder gb("genetic", genetic_options);
  return std::make_unique<Auto>(o, std::move(forest), genetic_entry().make(gb));
}

}  // namespace

StrategyEntry auto_entry() {
  return {"auto", "The default: forest for 2,000 evaluations, then genetic seeded with the best results (a fifth still forest)",
          &make};
}

}  // namespace aoe
