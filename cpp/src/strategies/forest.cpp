// Surrogate-guided search (the "forest" strategy; "auto" runs it first).  A model
// learnt from the results so far, a Gaussian process by default (gp_model.hpp;
// `gp: false` uses a random forest and the spread over its trees), predicts every
// candidate's value with an uncertainty, and the candidate with the lowest
// confidence bound (mean - kappa x standard deviation) is proposed next, beside a
// space-filling initial design, the incumbent's neighbours, a little uniform
// exploration, and a crowding discount that keeps a wrong model from holding the
// search on one line.  A second forest learns where configurations fail.
//
// Why each default is what it is: the comment beside it in ForestSearchOptions,
// and the measurements behind them in docs/search_quality.md.  Re-measure with
// `python bench/bench_strategies.py --held-out` (seeds other than the table's).
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "forest_model.hpp"
#include "gp_model.hpp"
#include "shared.hpp"

namespace aoe {
namespace {

struct ForestSearchOptions {
  size_t initial = 0;           // space-filling configurations before the first model; 0 = max(initial_min, P + 1)
  size_t initial_min = 20;      // the design's size at least, when `initial` is 0
  size_t warm_initial_min = 10;  // the same after a warm start
  double initial_share = 1.0 / 3;  // ... and at most this share of the run's budget (not `initial`)
  size_t spread = 100;          // random candidates per initial configuration (0/1: uniform sampling)
  double uniform_share = 0;     // share of design points drawn uniformly instead (extremes are slow on some spaces)
  bool spread_hamming = false;  // the design's distance counts differing parameters (no pull to extreme values)
  double center = 0;            // > 0: the design draws configurations near the parameters' middle values instead
  size_t center_points = 0;     // ... for this many design points (0: all), the rest spread
  bool center_far = false;      // ... as the farthest of `spread` draws, distance times centrality^center
  size_t arms = 0;              // > 0: the design alternates central and farthest points for 2 x arms points, then
                                // draws from the arm whose best result is better (a two-armed bandit over design styles)
  double arm_center = 2;        // ... the central arm's centrality power (as `center`)
  bool arm_far_first = false;   // ... the first point from the farthest arm (a uniform draw) instead
  double arm_share = 0;         // ... the trailing arm's least share of the design's points
  double arm_margin = 1;        // ... the central arm leads when its best is below this times the farthest's
  double region_bias = 0;       // > 0: design points (after the first 2) drawn from `spread` draws with weight
                                // exp(-region_bias x the summed per-parameter region scores; region_design())
  bool region_far = false;      // ... as the farthest of `spread` draws, distance times that weight
  double warm_local = 0.9;      // after a warm start, share of the design spent on the best given one's neighbours
  bool warm_repair = true;      // ... its repaired neighbours among them
  double cold_local = 0;        // without a warm start, share of the design spent on the best result's neighbours
                                // (off: lifts convolution and gemm at 25 evaluations, sinks pnpoly; operator_tuning.md)
  size_t cold_local_after = 2;  // ... once this many design points are known
  bool cold_adjacent = false;   // ... only to a neighbouring value of the parameter (its index +-1)
  double explore = 0.05;        // share of uniform random proposals afterwards
  double greedy = 0.3;          // share of fits whose ranking is by predicted value, not expected improvement
  double local = 0.25;          // share of proposals among the best result's unvisited neighbours
  double local_line = 1.0;      // share of those drawn along one parameter chosen at random
  bool repair = true;           // once the incumbent's neighbours are all tried, its repaired ones (see local_anchor)
  bool basins = true;           // once the incumbent's neighbours are all tried, go on from another basin's best
  double crowding = 3;          // penalty on candidates by the evaluated share of the lines through them
  bool crowding_excess = true;  // ... only beyond the samples the space's evaluated share gives a line
  bool lcb = true;              // rank by a lower confidence bound (else by expected improvement)
  double kappa = 1.0;           // the bound: predicted mean - kappa * the model's standard deviation
  bool feasibility = true;      // learn where configurations fail (else failures count as the worst value)
  size_t full_limit = 8192;     // rank every unvisited configuration when there are at most this many
  size_t pool = 2048;           // else: random candidates,
  size_t walks = 8;             // and greedy walks from this many best results and best candidates
  size_t screen_until = 0;      // while fewer results than this: rank only a small random pool (no walks),
  size_t screen_pool = 32;      // ... of this many candidates, so a weak model picks the best of a few draws
  size_t refit_ratio = 32;      // refit when the results have grown by 1/refit_ratio
  size_t max_train = 4096;      // results a model learns from at most
  size_t batch = 1;             // proposals per ask at most; 0 = as many as the objective takes
  ForestOptions forest;
  bool gp = true;  // model values with a Gaussian process instead of the forest (gp_model.hpp)
  GpOptions gp_model;
  // With a prior (Strategy::set_prior; "Learning the prior's error" below):
  size_t prior_initial = 4;   // the design: the prior's best, then spread over its best configurations
  double prior_top = 0.02;    // ... its best: this share of the space by the prior's rank (at least 64)
  double prior_weight = 4;    // pseudo-results at slope 1 in the prior's calibration (see fit_prior())
  size_t prior_pool = 256;    // the prior's best unvisited configurations among the candidates of a ranking
};

double expected_improvement(double best, double mean, double variance) {
  const double sigma = std::sqrt(variance);
  const double gap = best - mean;
  if (sigma < 1e-12) return std::max(gap, 0.0);
  const double z = gap / sigma;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) * 0.3989422804014327;  // 1 / sqrt(2 pi)
  return gap * cdf + sigma * pdf;
}

// Standard deviation of the values (1 when they do not vary).
double spread_of(const std::vector<double>& y) {
  if (y.size() < 2) return 1.0;
  double sum = 0, sum2 = 0;
  for (double v : y) sum += v;
  const double mean = sum / double(y.size());
  for (double v : y) sum2 += (v - mean) * (v - mean);
  const double sd = std::sqrt(sum2 / double(y.size()));
  return sd > 0 ? sd : 1.0;
}

class ForestSearch : public StrategyBase {
 public:
  explicit ForestSearch(const ForestSearchOptions& o) : opt_(o) {}
  std::string name() const override { return "forest"; }
  bool uses_prior() const override { return true; }

  void ask(size_t max_n, std::vector<ConfigId>& out) override {
    out.clear();
    asked_ = true;
    const size_t want = std::max<size_t>(1, std::min(max_n, opt_.batch ? opt_.batch : max_n));
    ConfigId c;
    while (out.size() < want && propose(out, c)) out.push_back(c);
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override { learn(ids, values, n); }
  void observe(const ConfigId* ids, const double* values, size_t n) override {
    if (!asked_) warm_ = true;
    learn(ids, values, n);
  }

 private:
  static constexpr size_t kNone = size_t(-1);

  void start_run() override {
    ids_.clear();
    values_.clear();
    known_.clear();
    best_ = kNone;
    repaired_for_ = kNone;
    by_value_.clear();
    spent_.clear();
    failures_ = 0;
    asked_ = warm_ = false;
    nvalues_.clear();
    inv_range_.clear();
    for (const auto& v : space_->param_values()) {
      nvalues_.push_back(v.size());
      inv_range_.push_back(v.size() > 1 ? 1.0 / double(v.size() - 1) : 0.0);
    }
    lines_.assign(opt_.crowding > 0 ? space_->num_params() : 0, {});
    zobrist_.clear();
    zobrist_offset_.clear();
    if (!lines_.empty()) {
      Rng z(0x6c696e6573ULL);  // fixed: keys only need to differ, not to vary with the seed
      for (size_t v : nvalues_) {
        zobrist_offset_.push_back(zobrist_.size());
        for (size_t k = 0; k < v; ++k) zobrist_.push_back(z.next());
      }
    }
    fitted_at_ = 0;
    line_expected_.assign(nvalues_.size(), 0.0);
    value_model_.clear();
    gp_.clear();
    fail_model_.clear();
    ranking_.clear();
    pos_ = 0;
    arm_of_.clear();
    start_prior();
  }

  // ---- Learning the prior's error --------------------------------------------
  // A prior (e.g. the cost model's estimate of each tiling, when the objective is a
  // measurement) is used three ways.  The design is its best configuration and a
  // spread over its best few percent; those stay among the candidates of every
  // ranking of a large space; and the model learns the prior's error rather than
  // the values: target = a * q + b + residual, q the prior (its log when the prior
  // and the values are all positive, as the targets are then logs), a and b a
  // least-squares fit that starts at slope 1 (`prior_weight` pseudo-results) and
  // follows the results, and the residual the GP's (or forest's).  A prior that
  // ranks well but is off in scale costs nothing; one that ranks badly gets a slope
  // near 0 or below, and the residual model takes over, so it cannot hold the search.
  void start_prior() {
    prior_order_.clear();
    prior_fitted_ = prior_led_ = false;
    if (!prior_) return;
    const std::vector<double>& prior = *prior_;
    prior_positive_ = std::all_of(prior.begin(), prior.end(), [](double v) { return v > 0; });
    // The spread of q over the space in both forms (the pseudo-results' weight).
    for (int logs = 0; logs < 2; ++logs) {
      double sum = 0, sum2 = 0;
      for (double v : prior) {
        const double q = logs && prior_positive_ ? std::log(v) : v;
        sum += q;
        sum2 += q * q;
      }
      const double mean = sum / double(prior.size());
      prior_variance_[logs] = std::max(sum2 / double(prior.size()) - mean * mean, 1e-12);
    }
    const size_t n = prior.size();
    const size_t k = std::min(n, std::max<size_t>(64, size_t(std::ceil(opt_.prior_top * double(n)))));
    prior_order_.resize(n);
    for (size_t i = 0; i < n; ++i) prior_order_[i] = ConfigId(i);
    auto better = [&](ConfigId a, ConfigId b) { return prior[a] < prior[b] || (prior[a] == prior[b] && a < b); };
    std::partial_sort(prior_order_.begin(), prior_order_.begin() + k, prior_order_.end(), better);
    prior_order_.resize(k);
  }

  double prior_q(ConfigId c) const { return prior_logs_ ? std::log((*prior_)[c]) : (*prior_)[c]; }
  // The part of a configuration's predicted target that comes from the prior.
  double prior_shift(ConfigId c) const { return prior_fitted_ ? prior_a_ * prior_q(c) + prior_b_ : 0.0; }

  // Fits target ~ a q + b over the training rows (rows_: their ids) and leaves the residuals in y_.
  void fit_prior(bool log_targets) {
    prior_fitted_ = false;
    if (!prior_ || y_.empty()) return;
    prior_logs_ = log_targets && prior_positive_;
    const size_t m = y_.size();
    double mq = 0, my = 0;
    for (size_t i = 0; i < m; ++i) {
      mq += prior_q(rows_[i]);
      my += y_[i];
    }
    mq /= double(m);
    my /= double(m);
    double sqq = 0, sqy = 0;
    for (size_t i = 0; i < m; ++i) {
      const double dq = prior_q(rows_[i]) - mq;
      sqq += dq * dq;
      sqy += dq * (y_[i] - my);
    }
    const double lambda = opt_.prior_weight * prior_variance_[prior_logs_ ? 1 : 0];
    prior_a_ = (sqy + lambda) / (sqq + lambda);
    prior_b_ = my - prior_a_ * mq;
    prior_fitted_ = true;
    for (size_t i = 0; i < m; ++i) y_[i] -= prior_shift(rows_[i]);
  }

  // A design point with a prior: its best unvisited configuration first (once), then the one of
  // `spread` draws from its best `prior_top` farthest from every known result.
  bool prior_design(const std::vector<ConfigId>& batch, ConfigId& out) {
    open_.clear();
    for (ConfigId c : prior_order_)
      if (fresh(batch, c)) open_.push_back(c);
    if (open_.empty()) return spread(batch, out);
    if (!prior_led_) {  // (also after a warm start: a given tiling is not the prior's pick)
      prior_led_ = true;
      out = open_.front();
      return true;
    }
    double farthest = -1;
    for (size_t k = 0; k < std::max<size_t>(1, opt_.spread); ++k) {
      const ConfigId c = open_[rng_.below(open_.size())];
      const double d = nearest_distance(c, batch);
      if (d > farthest) {
        farthest = d;
        out = c;
      }
    }
    return true;
  }

  bool fresh(const std::vector<ConfigId>& batch, ConfigId c) const {
    return !record_->contains(c) && !detail::contains(batch, c);
  }

  bool random_unvisited(const std::vector<ConfigId>& batch, ConfigId& out) {
    for (int attempt = 0; attempt < 4; ++attempt)
      if (draw_unvisited(out) && !detail::contains(batch, out)) return true;
    return false;
  }

  // One new configuration, not yet evaluated nor in `batch`.
  // Space-filling configurations before the first model.  A warm run (tune_op
  // always seeds the default tiling) keeps the smaller design: the wider one is
  // for runs that start blind.  On the 36 BERT tasks of bench_opat's warm-start
  // check (budget 192), a design of 20 took a median 24 (default seeded) and 12
  // (nearest-shape seeded) evaluations to come within 1% of the best, a design
  // of 10 took 15.5 and 10.
  //
  // A small budget caps the design at `initial_share` of it, so the model
  // picks at least the rest: Ascend910A BatchMatMul (budget 16) and 910B1 Conv
  // 8x64x112x112 (25) are otherwise design points only or almost.  Mean score
  // over seeds 0-99 / 600-699 / 700-799 with a design of 5, 6, 8, 12 and the
  // default 20: BatchMatMul 0.339 / - / 0.352, 0.380 / 0.418 / 0.437, 0.325 /
  // 0.424 / 0.354, 0.308 / 0.331 / 0.366, 0.253 / 0.272 / 0.302; Conv 0.635 /
  // - / 0.601, 0.657 / 0.670 / 0.611, 0.665 / 0.719 / 0.665, 0.628 / 0.638 /
  // 0.613, 0.533 / 0.592 / 0.543; a third rounded up gives 6 and 9 (Conv: 0.669
  // / 0.650 / 0.650).  Between 74 and 151 a design of 10 or 15
  // was better on one tiling space and worse on another (310P3 MatMul, budget
  // 74: 0.607 -> 0.638 / 0.637; 910B3 Conv 32x256x14x14, 129: 0.781 -> 0.841 /
  // 0.809; 910B3 MatMul 2048^3, 151: 0.689 -> 0.598 / 0.685; seeds 600-699 or
  // 600-659), so a third caps only budgets below 3 x 20.  tune_op from the
  // default tiling (a warm design of 19 there), the 5 tilings of the policy
  // check, seeds 100-239 (45: 140-239), mean gap to the optimum cut / full:
  // 15 evaluations 12.95% / 12.69%, 30 6.51% / 7.35%, 45 3.56% / 3.93%.
  size_t design_size() const {
    if (opt_.initial) return opt_.initial;
    const size_t n = prior_ ? opt_.prior_initial
                            : std::max<size_t>(warm_ ? opt_.warm_initial_min : opt_.initial_min, space_->num_params() + 1);
    if (!budget_) return n;
    // (less a hair: a share of 0.07 of 100 is 7.000000000000001 in doubles, which would round up to 8)
    return std::min(n, std::max<size_t>(1, size_t(std::ceil(opt_.initial_share * double(*budget_) - 1e-9))));
  }

  bool propose(const std::vector<ConfigId>& batch, ConfigId& out) {
    // (A batch larger than the design fills up with design points too: there
    // is no result to learn from before it comes back.)
    if (ids_.size() + batch.size() < design_size() || ids_.empty()) {
      if (prior_) return prior_design(batch, out);
      // After a warm start, part of the design goes to the best given
      // configuration's neighbours: the caller said where to look.
      if (warm_ && rng_.uniform() < opt_.warm_local && design_neighbour(batch, out)) return true;
      if (!warm_ && opt_.cold_local > 0 && ids_.size() >= opt_.cold_local_after && rng_.uniform() < opt_.cold_local &&
          cold_neighbour(batch, out))
        return true;
      if (opt_.arms > 0) return armed_design(batch, out);
      if (opt_.region_bias > 0 && ids_.size() >= 2) return region_design(batch, out);
      return spread(batch, out);
    }
    if (rng_.uniform() < opt_.explore) return random_unvisited(batch, out);
    const size_t n = ids_.size();
    if (fitted_at_ == 0 || n - fitted_at_ >= std::max<size_t>(1, n / opt_.refit_ratio)) refit();
    if (rng_.uniform() < opt_.local && best_neighbour(batch, out)) return true;
    for (int pass = 0; pass < 2; ++pass) {
      while (pos_ < ranking_.size()) {
        out = ranking_[pos_++].second;
        if (fresh(batch, out)) return true;
      }
      refit();  // the ranking is used up
    }
    return random_unvisited(batch, out);
  }

  // Space-filling design: of `spread` random unvisited candidates, the one
  // farthest (normalised index distance) from every known result.
  bool spread(const std::vector<ConfigId>& batch, ConfigId& out) {
    if (opt_.center > 0 && !opt_.center_far && (opt_.center_points == 0 || ids_.size() + batch.size() < opt_.center_points))
      return central(batch, out, opt_.center);
    if (opt_.spread <= 1 || (ids_.empty() && batch.empty())) return random_unvisited(batch, out);
    if (opt_.uniform_share > 0 && rng_.uniform() < opt_.uniform_share) return random_unvisited(batch, out);
    return farthest(batch, out);
  }

  // The farthest of `spread` random unvisited candidates from every known result
  // (`by_region`: distance times the region weight, region_design()).
  bool farthest(const std::vector<ConfigId>& batch, ConfigId& out, bool by_region = false) {
    double far_d = -1;
    bool any = false;
    for (size_t k = 0; k < opt_.spread; ++k) {
      ConfigId c;
      if (!random_unvisited(batch, c)) break;
      double nearest = nearest_distance(c, batch);
      if (opt_.center > 0 && opt_.center_far) nearest *= std::exp(opt_.center * log_centrality(c));
      if (by_region) nearest *= std::exp(log_region_weight(c));
      if (nearest > far_d) {
        far_d = nearest;
        out = c;
        any = true;
      }
    }
    return any;
  }

  // A design point drawn with probability proportional to its centrality^center
  // (sampling-importance-resampling from `spread` uniform draws): a parameter's
  // extreme values are where configurations fail or run slowest most often.
  double log_centrality(ConfigId c) const {
    const uint16_t* x = space_->indices(c);
    double logw = 0;
    for (size_t p = 0; p < nvalues_.size(); ++p)
      if (nvalues_[p] > 1) logw += std::log(1.1 - std::abs(2.0 * double(x[p]) * inv_range_[p] - 1.0));
    return logw;
  }
  bool central(const std::vector<ConfigId>& batch, ConfigId& out, double power) {
    return resample(batch, out, [&](ConfigId c) { return power * log_centrality(c); });
  }

  // One of `spread` random unvisited draws, drawn with probability proportional to
  // exp(log_weight(draw)) (sampling-importance-resampling).
  template <class LogWeight>
  bool resample(const std::vector<ConfigId>& batch, ConfigId& out, LogWeight log_weight) {
    cand_.clear();
    weight_.clear();
    double total = 0;
    for (size_t k = 0; k < std::max<size_t>(1, opt_.spread); ++k) {
      ConfigId c;
      if (!random_unvisited(batch, c)) break;
      cand_.push_back(c);
      weight_.push_back(std::exp(log_weight(c)));
      total += weight_.back();
    }
    if (cand_.empty()) return false;
    double u = rng_.uniform() * total;
    out = cand_.back();
    for (size_t k = 0; k < cand_.size(); ++k)
      if ((u -= weight_[k]) <= 0) {
        out = cand_[k];
        break;
      }
    return true;
  }

  // The design as a two-armed bandit (`arms`): whether a space's good configurations lie
  // inside its parameters' ranges (convolution, gemm: slow or failing at extreme values) or
  // at their ends (pnpoly: its ten best all take the last value of one parameter) is not
  // known before the run, so the first 2 x arms points alternate a central draw and the
  // farthest one, and every later design point comes from the arm whose best result so
  // far is better.  (It sinks pnpoly: operator_tuning.md, "Small budgets"; off.)
  bool armed_design(const std::vector<ConfigId>& batch, ConfigId& out) {
    const size_t k = ids_.size() + batch.size();
    const bool central_arm = k < 2 * opt_.arms ? k % 2 == size_t(opt_.arm_far_first) : central_arm_next();
    const bool found = central_arm ? central(batch, out, opt_.arm_center) : farthest(batch, out);
    if (found) arm_of_[out] = central_arm;
    return found;
  }
  // The arm whose best result is better (the central one by `arm_margin`), unless the other has had less than
  // `arm_share` of the arms' points (a greedy choice would never revisit an arm that lost early).
  bool central_arm_next() const {
    double best[2] = {kInf, kInf};  // [farthest, central]
    size_t count[2] = {0, 0};
    for (const auto& [id, central_arm] : arm_of_) ++count[central_arm];
    for (size_t i = 0; i < ids_.size(); ++i) {
      auto it = arm_of_.find(ids_[i]);
      if (it != arm_of_.end()) best[it->second] = std::min(best[it->second], values_[i]);
    }
    const bool leader = best[1] <= opt_.arm_margin * best[0];
    return double(count[!leader]) < opt_.arm_share * double(count[0] + count[1]) ? !leader : leader;
  }

  // Per parameter, each value falls in a region: its lowest value, its highest, or between.
  // region_design() scores each (parameter, region) by the mean rank (0 best, 1 worst) of
  // the successful results in it, shrunk to 0.5 by one pseudo-result, and draws design
  // points with weight exp(-region_bias x the sum over parameters of (score - 0.5)): a
  // coarse main-effects model, used to sample rather than to rank, for spaces whose good
  // configurations sit at one end of a parameter (pnpoly) or inside its range (convolution).
  // (Failures do not count: they are the failure model's; pnpoly's best value of one
  // parameter also fails most often.  Counting them as the worst was no better: operator_tuning.md.)
  size_t region_of(size_t p, size_t v) const { return v == 0 ? 0 : v + 1 == nvalues_[p] ? 2 : 1; }
  // Fills region_score_ (3 per parameter) from the results so far.
  void score_regions() {
    const size_t P = nvalues_.size(), n = ids_.size();
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), by_rank());
    region_score_.assign(3 * P, 0.5);
    std::vector<double> count(3 * P, 1.0);
    size_t ok = 0;
    for (double v : values_) ok += std::isfinite(v);
    for (size_t r = 0; r < ok; ++r) {  // (failures sort last; they say nothing about speed)
      const size_t i = order_[r];
      const double u = ok > 1 ? double(r) / double(ok - 1) : 0.5;
      const uint16_t* x = space_->indices(ids_[i]);
      for (size_t p = 0; p < P; ++p) {
        region_score_[3 * p + region_of(p, x[p])] += u;
        count[3 * p + region_of(p, x[p])] += 1;
      }
    }
    for (size_t k = 0; k < 3 * P; ++k) region_score_[k] /= count[k];
  }
  // Log of c's design weight from the region scores (0 at the prior 0.5 everywhere).
  double log_region_weight(ConfigId c) const {
    const uint16_t* x = space_->indices(c);
    double score = 0;
    for (size_t p = 0; p < nvalues_.size(); ++p)
      if (nvalues_[p] > 1) score += region_score_[3 * p + region_of(p, x[p])] - 0.5;
    return -opt_.region_bias * score;
  }
  bool region_design(const std::vector<ConfigId>& batch, ConfigId& out) {
    score_regions();
    if (opt_.region_far) return farthest(batch, out, true);
    return resample(batch, out, [&](ConfigId c) { return log_region_weight(c); });
  }

  // Squared normalised index distance from c to the nearest known result or batch member.
  double nearest_distance(ConfigId c, const std::vector<ConfigId>& batch) const {
    const size_t P = space_->num_params();
    const uint16_t* x = space_->indices(c);
    auto distance = [&](ConfigId e) {
      const uint16_t* y = space_->indices(e);
      double d = 0;
      for (size_t p = 0; p < P; ++p) {
        if (opt_.spread_hamming) {
          d += x[p] != y[p] && nvalues_[p] > 1;
          continue;
        }
        const double t = (double(x[p]) - double(y[p])) * inv_range_[p];
        d += t * t;
      }
      return d;
    };
    double nearest = kInf;
    for (ConfigId e : ids_) nearest = std::min(nearest, distance(e));
    for (ConfigId e : batch) nearest = std::min(nearest, distance(e));
    return nearest;
  }

  // The incumbent's repaired neighbours (computed once per incumbent).
  const std::vector<ConfigId>& repaired_of_best() {
    if (repaired_for_ != best_) {
      space_->neighbours(ids_[best_], Neighbourhood::Repaired, repaired_);
      repaired_for_ = best_;
    }
    return repaired_;
  }

  // A random untried neighbour of the best given configuration, for the warm
  // design (no model yet): one-parameter, or repaired with `warm_repair`.
  bool design_neighbour(const std::vector<ConfigId>& batch, ConfigId& out) {
    if (best_ == kNone) return false;
    space_->neighbours(ids_[best_], Neighbourhood::Hamming, nbrs_);
    if (opt_.warm_repair) nbrs_.insert(nbrs_.end(), repaired_of_best().begin(), repaired_of_best().end());
    detail::shuffle(nbrs_, rng_);
    for (ConfigId nb : nbrs_)
      if (fresh(batch, nb)) {
        out = nb;
        return true;
      }
    return false;
  }

  // Where local proposals go from: the incumbent while it has untried
  // neighbours, then (`repair`) untried repaired ones; then (`basins`) the best
  // result that has untried neighbours
  // and no better evaluated neighbour, i.e. the floor of another basin as far
  // as is known.  Leaves the anchor's neighbours in nbrs_.  Results found
  // spent (a better neighbour, or every neighbour tried) stay spent, so a
  // run's scans cost O(results x neighbours) in all.
  bool local_anchor(const std::vector<ConfigId>& batch, size_t& anchor) {
    if (best_ == kNone) return false;
    auto open = [&]() {
      for (ConfigId nb : nbrs_)
        if (fresh(batch, nb)) return true;
      return false;
    };
    space_->neighbours(ids_[best_], Neighbourhood::Hamming, nbrs_);
    anchor = best_;
    if (open()) return true;
    if (opt_.repair) {
      nbrs_ = repaired_of_best();
      if (open()) return true;
    }
    if (!opt_.basins) return true;
    // Results since the last call go into the order one by one (a few per call).
    for (size_t i = by_value_.size(); i < ids_.size(); ++i)
      by_value_.insert(std::upper_bound(by_value_.begin(), by_value_.end(), i, by_rank()), i);
    spent_.resize(ids_.size(), false);
    spent_[best_] = true;
    for (size_t r : by_value_) {
      if (spent_[r]) continue;
      if (!std::isfinite(values_[r])) break;  // failures sort last
      space_->neighbours(ids_[r], Neighbourhood::Hamming, nbrs_);
      bool beaten = false, untried = false;
      for (ConfigId nb : nbrs_) {
        if (!record_->contains(nb)) untried = true;
        else beaten = beaten || record_->value(nb) < values_[r];
      }
      if (beaten || !untried) {
        spent_[r] = true;
        continue;
      }
      if (open()) {  // (else its untried neighbours are all in this batch)
        anchor = r;
        return true;
      }
    }
    return false;
  }

  // The local anchor's unvisited neighbour (Hamming, or repaired: local_anchor)
  // with the highest acquisition.
  bool best_neighbour(const std::vector<ConfigId>& batch, ConfigId& out) {
    size_t anchor;
    if (!local_anchor(batch, anchor)) return false;
    if (!value_fitted()) return false;  // (the design phase uses design_neighbour)
    // Along one parameter, drawn uniformly among those with an untried value:
    // a parameter with few values (a method switch) is otherwise a small share of
    // the neighbours, and the model, having seen few of its values, rarely ranks them first.
    const uint16_t* x = space_->indices(ids_[anchor]);
    const size_t line = opt_.local_line > 0 && rng_.uniform() < opt_.local_line ? random_open_line(x, batch) : kNone;
    double best_a = -kInf;
    bool any = false;
    for (ConfigId nb : nbrs_) {
      if (!fresh(batch, nb)) continue;
      if (line != kNone && differing_param(x, space_->indices(nb)) != line) continue;
      const double a = acquisition(nb);
      if (!any || a > best_a) {
        best_a = a;
        out = nb;
        any = true;
      }
    }
    return any;
  }

  // A parameter drawn uniformly among those along which x has a fresh neighbour in nbrs_ (kNone: none).
  size_t random_open_line(const uint16_t* x, const std::vector<ConfigId>& batch) {
    line_open_.assign(space_->num_params(), false);
    for (ConfigId nb : nbrs_)
      if (fresh(batch, nb)) line_open_[differing_param(x, space_->indices(nb))] = true;
    size_t open = 0;
    for (bool o : line_open_) open += o;
    if (open == 0) return kNone;
    size_t k = rng_.below(open);
    for (size_t p = 0; p < line_open_.size(); ++p)
      if (line_open_[p] && k-- == 0) return p;
    return kNone;
  }

  // A blind design point next to the best result so far (`cold_local`): a fresh Hamming
  // neighbour along a parameter drawn uniformly, as the model phase's local proposals are
  // (a parameter with many values would otherwise take most draws).
  bool cold_neighbour(const std::vector<ConfigId>& batch, ConfigId& out) {
    if (best_ == kNone) return false;
    space_->neighbours(ids_[best_], Neighbourhood::Hamming, nbrs_);
    const uint16_t* x = space_->indices(ids_[best_]);
    if (opt_.cold_adjacent)
      nbrs_.erase(std::remove_if(nbrs_.begin(), nbrs_.end(), [&](ConfigId nb) {
                    const uint16_t* y = space_->indices(nb);
                    const size_t p = differing_param(x, y);
                    return std::abs(int(y[p]) - int(x[p])) > 1;
                  }), nbrs_.end());
    const size_t line = random_open_line(x, batch);
    if (line == kNone) return false;
    cand_.clear();
    for (ConfigId nb : nbrs_)
      if (fresh(batch, nb) && differing_param(x, space_->indices(nb)) == line) cand_.push_back(nb);
    out = cand_[rng_.below(cand_.size())];
    return true;
  }

  // Orders result positions best first (ties: earlier first), as a functor for
  // the standard algorithms.
  struct ByRank {
    const std::vector<double>& values;
    bool operator()(size_t a, size_t b) const { return values[a] < values[b] || (values[a] == values[b] && a < b); }
  };
  ByRank by_rank() const { return {values_}; }

  // The parameter in which Hamming neighbours x and y differ.
  size_t differing_param(const uint16_t* x, const uint16_t* y) const {
    size_t p = 0;
    while (p + 1 < space_->num_params() && y[p] == x[p]) ++p;
    return p;
  }

  void learn(const ConfigId* ids, const double* values, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (!known_.insert(ids[i]).second) continue;
      if (!lines_.empty()) {
        const uint16_t* x = space_->indices(ids[i]);
        const uint64_t h = zobrist(x);
        for (size_t p = 0; p < lines_.size(); ++p) ++lines_[p][line_key(h, x, p)];
      }
      if (!std::isfinite(values[i])) ++failures_;
      else if (best_ == kNone || values[i] < values_[best_]) best_ = ids_.size();
      ids_.push_back(ids[i]);
      values_.push_back(std::isfinite(values[i]) ? values[i] : kInf);
    }
  }

  // The results the models learn from: all of them, or when there are more
  // than max_train, the best half of that and a random sample of the rest.
  void choose_training() {
    const size_t n = ids_.size();
    train_.resize(n);
    for (size_t i = 0; i < n; ++i) train_[i] = i;
    if (n <= opt_.max_train) return;
    const size_t keep_best = opt_.max_train / 2;
    std::nth_element(train_.begin(), train_.begin() + keep_best, train_.end(), by_rank());
    // nth_element's order is not portable; training order feeds the bootstrap.
    std::sort(train_.begin(), train_.begin() + keep_best);
    std::sort(train_.begin() + keep_best, train_.end());
    for (size_t k = keep_best; k < opt_.max_train; ++k) std::swap(train_[k], train_[k + rng_.below(n - k)]);
    train_.resize(opt_.max_train);
  }

  void refit() {
    greedy_now_ = rng_.uniform() < opt_.greedy;
    fitted_at_ = ids_.size();
    choose_training();
    const size_t P = space_->num_params();
    bool positive = true;
    for (double v : values_)
      if (std::isfinite(v)) positive = positive && v > 0;
    auto target = [&](double v) { return positive ? std::log(v) : v; };
    // Without successes and failures both, there is nothing to separate:
    // failures then count as the worst result (or 0 if nothing succeeded).
    const bool separate = opt_.feasibility && failures_ > 0 && failures_ < ids_.size();
    double worst = -kInf;
    for (double v : values_)
      if (std::isfinite(v)) worst = std::max(worst, target(v));
    X_.clear();
    y_.clear();
    rows_.clear();
    for (size_t i : train_) {
      const double v = values_[i];
      if (!std::isfinite(v) && separate) continue;
      y_.push_back(std::isfinite(v) ? target(v) : (std::isfinite(worst) ? worst : 0.0));
      rows_.push_back(ids_[i]);
      X_.insert(X_.end(), space_->indices(ids_[i]), space_->indices(ids_[i]) + P);
    }
    best_y_ = best_ == kNone ? (std::isfinite(worst) ? worst : 0.0) : target(values_[best_]);
    penalty_scale_ = positive ? 1.0 : spread_of(y_);
    fit_prior(positive);  // (after the penalty's scale: that is the targets', not the residuals')
    if (opt_.gp) gp_.fit(X_, y_, nvalues_, opt_.gp_model, rng_);
    else value_model_.fit(X_, y_, nvalues_, opt_.forest, rng_);
    fail_model_.clear();
    if (separate) {
      X_.clear();
      y_.clear();
      for (size_t i : train_) {
        X_.insert(X_.end(), space_->indices(ids_[i]), space_->indices(ids_[i]) + P);
        y_.push_back(std::isfinite(values_[i]) ? 0.0 : 1.0);
      }
      fail_model_.fit(X_, y_, nvalues_, opt_.forest, rng_);
    }
    rank_candidates();
  }

  double acquisition(ConfigId c) const {
    const uint16_t* x = space_->indices(c);
    double mean, variance, p_fail = 0, unused;
    predict_values(&x, 1, &mean, &variance);
    mean += prior_shift(c);
    if (fail_model_.fitted()) fail_model_.predict(x, p_fail, unused);
    return acquisition(x, mean, variance, 1.0 - p_fail);
  }

  // The models' predictions for configurations `ids`, for batch_acquisition().
  void predict_batch(const std::vector<ConfigId>& ids) {
    const size_t n = ids.size();
    batch_rows_.resize(n);
    for (size_t k = 0; k < n; ++k) batch_rows_[k] = space_->indices(ids[k]);
    batch_mean_.resize(n);
    batch_variance_.resize(n);
    batch_fail_.assign(n, 0.0);
    predict_values(batch_rows_.data(), n, batch_mean_.data(), batch_variance_.data());
    for (size_t k = 0; k < n; ++k) batch_mean_[k] += prior_shift(ids[k]);
    if (fail_model_.fitted()) {
      unused_.resize(n);
      fail_model_.predict_rows(batch_rows_.data(), n, batch_fail_.data(), unused_.data());
    }
  }
  // acquisition() of the k-th configuration of the last predict_batch().
  double batch_acquisition(size_t k) const {
    return acquisition(batch_rows_[k], batch_mean_[k], batch_variance_[k], 1.0 - batch_fail_[k]);
  }

  // The acquisition of configuration x from the models' predictions there
  // (larger is better).
  double acquisition(const uint16_t* x, double mean, double variance, double success) const {
    if (greedy_now_) return success >= 0.5 ? -mean : -kInf;
    const double crowd = lines_.empty() ? 0.0 : opt_.crowding * crowding(x);
    if (opt_.lcb) {
      // The crowding penalty divides the predicted time by 1 + crowd (a shift
      // of the log target; in target spreads when targets are not logs).
      if (success < 0.5) return -kInf;
      return -(mean - opt_.kappa * std::sqrt(variance)) - penalty_scale_ * std::log1p(crowd);
    }
    return success * expected_improvement(best_y_, mean, variance) / (1.0 + crowd);
  }

  // Zobrist hash of x; the key of the line through x along parameter p is
  // that hash without p's value, so all P keys cost O(P).
  uint64_t zobrist(const uint16_t* x) const {
    uint64_t h = 0;
    for (size_t p = 0; p < nvalues_.size(); ++p) h ^= zobrist_[zobrist_offset_[p] + x[p]];
    return h;
  }
  uint64_t line_key(uint64_t h, const uint16_t* x, size_t p) const { return h ^ zobrist_[zobrist_offset_[p] + x[p]]; }

  // Evaluated share of each line through x, summed over the parameters
  // (beyond line_expected_).
  double crowding(const uint16_t* x) const {
    const uint64_t h = zobrist(x);
    double d = 0;
    for (size_t p = 0; p < lines_.size(); ++p) {
      if (nvalues_[p] < 2) continue;
      auto it = lines_[p].find(line_key(h, x, p));
      if (it != lines_[p].end()) d += std::max(0.0, double(it->second) - line_expected_[p]) / double(nvalues_[p] - 1);
    }
    return d;
  }

  void rank_candidates() {
    if (opt_.crowding_excess) {
      const double share = double(record_->count()) / double(std::max<size_t>(1, space_->size()));
      for (size_t p = 0; p < nvalues_.size(); ++p)
        line_expected_[p] = nvalues_[p] < 2 ? 0.0 : std::floor(share * double(nvalues_[p] - 1));
    }
    ranking_.clear();
    pos_ = 0;
    const size_t unvisited = space_->size() - std::min(space_->size(), record_->count());
    samples_.clear();
    const bool screening = ids_.size() < opt_.screen_until;
    if (unvisited <= opt_.full_limit && !screening) {
      for (size_t c = 0; c < space_->size(); ++c)
        if (!record_->contains(ConfigId(c))) samples_.push_back(ConfigId(c));
      predict_batch(samples_);
      for (size_t k = 0; k < samples_.size(); ++k) ranking_.emplace_back(batch_acquisition(k), samples_[k]);
    } else {
      pool_.clear();
      // Drawn first so that their rows can be fetched ahead: in a space of 10^6
      // configurations the rows are megabytes, and each random one is a cache miss.
      for (size_t k = 0, n = screening ? opt_.screen_pool : opt_.pool; k < n; ++k) samples_.push_back(space_->sample(rng_));
      // With a prior, its best configurations too: a uniform pool rarely holds them.
      size_t added = 0;
      for (size_t k = 0; k < prior_order_.size() && added < opt_.prior_pool; ++k)
        if (!record_->contains(prior_order_[k])) {
          samples_.push_back(prior_order_[k]);
          ++added;
        }
      // Results would score -inf, and a configuration drawn twice scores once: predicting
      // them is wasted (2,048 draws from 10^4 configurations repeat about 200).  Sorted by
      // id, the rows are fetched in address order; the ranking is sorted below, so this
      // order does not change the run.
      samples_.erase(std::remove_if(samples_.begin(), samples_.end(), [&](ConfigId c) { return record_->contains(c); }),
                     samples_.end());
      std::sort(samples_.begin(), samples_.end());
      samples_.erase(std::unique(samples_.begin(), samples_.end()), samples_.end());
      prefetch_rows(samples_);
      predict_batch(samples_);
      for (size_t k = 0; k < samples_.size(); ++k) add_candidate(samples_[k], [&] { return batch_acquisition(k); });
      // Walks from the best results and from the best random candidates.
      starts_.clear();
      const size_t walks = screening ? 0 : opt_.walks;
      for (size_t i : best_results(walks)) starts_.push_back(ids_[i]);
      std::partial_sort(ranking_.begin(), ranking_.begin() + std::min(walks, ranking_.size()), ranking_.end(),
                        std::greater<>());
      for (size_t i = 0; i < std::min(walks, ranking_.size()); ++i) starts_.push_back(ranking_[i].second);
      for (ConfigId s : starts_) walk(s);
    }
    // Highest acquisition first; ties in id order (deterministic).
    std::sort(ranking_.begin(), ranking_.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
  }

  // Indices (into ids_) of the k best successful results.
  std::vector<size_t> best_results(size_t k) {
    order_.clear();
    for (size_t i = 0; i < ids_.size(); ++i)
      if (std::isfinite(values_[i])) order_.push_back(i);
    k = std::min(k, order_.size());
    std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), by_rank());
    order_.resize(k);
    return order_;
  }

  void prefetch_rows(const std::vector<ConfigId>& ids) const {
#if defined(__GNUC__) || defined(__clang__)
    for (ConfigId c : ids) __builtin_prefetch(space_->indices(c));
#endif
  }

  // Adds an unvisited configuration to the candidates once; its acquisition
  // (`score()`).  Scored once per ranking: walks cross each other, and each
  // step's neighbours include the line the walk just moved along.
  template <class Score>
  double add_candidate(ConfigId c, Score score) {
    if (record_->contains(c)) return -kInf;
    auto [it, added] = pool_.try_emplace(c, 0.0);
    if (added) {
      it->second = score();
      ranking_.emplace_back(it->second, c);
    }
    return it->second;
  }
  double add_candidate(ConfigId c) {
    return add_candidate(c, [&] { return acquisition(c); });
  }

  // Greedy ascent of the acquisition through Hamming neighbours; every
  // neighbour seen becomes a candidate.  The models predict a step's
  // neighbours a line (one parameter's values) at a time.
  void walk(ConfigId c) {
    double current = add_candidate(c);
    const size_t P = space_->num_params();
    line_mean_.resize(P);
    line_variance_.resize(P);
    line_fail_.resize(P);
    for (int step = 0; step < 32; ++step) {
      space_->neighbours(c, Neighbourhood::Hamming, nbrs_);
      prefetch_rows(nbrs_);
      const uint16_t* x = space_->indices(c);
      line_ready_.assign(P, false);
      ConfigId next = c;
      double next_a = current;
      for (ConfigId nb : nbrs_) {
        const uint16_t* y = space_->indices(nb);
        const size_t p = differing_param(x, y);
        const double a = add_candidate(nb, [&] {
          if (!line_ready_[p]) {
            predict_value_line(x, p, line_mean_[p], line_variance_[p]);
            if (fail_model_.fitted()) fail_model_.predict_line(x, p, line_fail_[p], unused_);
            line_ready_[p] = true;
          }
          const size_t v = y[p];
          return acquisition(y, line_mean_[p][v] + prior_shift(nb), line_variance_[p][v],
                             1.0 - (fail_model_.fitted() ? line_fail_[p][v] : 0.0));
        });
        if (a > next_a) {
          next_a = a;
          next = nb;
        }
      }
      if (next == c) return;
      c = next;
      current = next_a;
    }
  }

  ForestSearchOptions opt_;
  // Every result learnt (evaluated here or observed), failures as +inf.
  std::vector<ConfigId> ids_;
  std::vector<double> values_;
  std::unordered_set<ConfigId> known_;
  size_t best_ = kNone, failures_ = 0;
  size_t repaired_for_ = kNone;       // the result whose repaired neighbours repaired_ holds
  std::vector<ConfigId> repaired_;
  bool asked_ = false, warm_ = false;  // warm: results were given before the first ask
  std::vector<size_t> nvalues_, train_, order_;
  std::vector<double> inv_range_;
  // Per parameter: the whole samples a line along it holds at the space's
  // evaluated share, as of the last ranking (crowding_excess; else 0).
  std::vector<double> line_expected_;
  // Per parameter: how many results lie on each line along it (if crowding).
  std::vector<std::unordered_map<uint64_t, uint32_t>> lines_;
  std::vector<uint64_t> zobrist_;       // a random key per parameter value
  std::vector<size_t> zobrist_offset_;  // where each parameter's keys start
  size_t fitted_at_ = 0;
  // Models: the value of successes, and the probability of failure.
  RandomForest value_model_, fail_model_;
  GaussianProcess gp_;  // the value model instead of value_model_ with `gp`
  bool value_fitted() const { return opt_.gp ? gp_.fitted() : value_model_.fitted(); }
  void predict_values(const uint16_t* const* rows, size_t n, double* mean, double* variance) const {
    if (opt_.gp) gp_.predict_rows(rows, n, mean, variance);
    else value_model_.predict_rows(rows, n, mean, variance);
  }
  void predict_value_line(const uint16_t* x, size_t p, std::vector<double>& mean, std::vector<double>& variance) const {
    if (opt_.gp) gp_.predict_line(x, p, mean, variance);
    else value_model_.predict_line(x, p, mean, variance);
  }
  std::vector<uint16_t> X_;
  std::vector<double> y_;
  std::vector<ConfigId> rows_;  // the configuration of each training row (X_, y_)
  // The prior (prior_ set): its best configurations best first, whether it is all positive,
  // the variance of q over the space (raw, logs), whether q is its log, and the fit a q + b.
  std::vector<ConfigId> prior_order_, open_;
  bool prior_positive_ = false, prior_logs_ = false, prior_fitted_ = false;
  bool prior_led_ = false;  // the prior's best unvisited configuration has been proposed
  double prior_variance_[2] = {1, 1};
  double prior_a_ = 1, prior_b_ = 0;
  double best_y_ = 0;
  double penalty_scale_ = 1;  // the crowding penalty's unit in the LCB (see acquisition())
  bool greedy_now_ = false;
  // The last ranking of candidates by acquisition, and the next to propose.
  std::vector<std::pair<double, ConfigId>> ranking_;
  size_t pos_ = 0;
  std::unordered_map<ConfigId, double> pool_;  // candidates of this ranking and their acquisition
  std::vector<ConfigId> starts_, nbrs_, samples_, cand_;
  std::vector<double> weight_;  // resample()'s candidates' weights
  std::vector<double> region_score_;  // score_regions(): mean rank per (parameter, region)
  std::unordered_map<ConfigId, bool> arm_of_;  // armed_design()'s points: whether from the central arm
  // A walk step's predictions along each parameter's line (ready: computed).
  std::vector<std::vector<double>> line_mean_, line_variance_, line_fail_;
  std::vector<double> unused_;
  std::vector<const uint16_t*> batch_rows_;  // the last predict_batch()
  std::vector<double> batch_mean_, batch_variance_, batch_fail_;
  std::vector<bool> line_ready_, line_open_;
  std::vector<size_t> by_value_;  // result positions, best first (local anchors)
  std::vector<bool> spent_;       // results no longer worth a local anchor
};

std::unique_ptr<Strategy> make(OptionBinder& b) {
  ForestSearchOptions o;
  b("initial", o.initial, 0, kMany);
  b("initial_min", o.initial_min, 1, kMany);
  b("warm_initial_min", o.warm_initial_min, 1, kMany);
  b("initial_share", o.initial_share, 0, 1);
  b("spread", o.spread, 0, kMany);
  b("uniform_share", o.uniform_share, 0, 1);
  b("spread_hamming", o.spread_hamming);
  b("center", o.center, 0, kMany);
  b("center_points", o.center_points, 0, kMany);
  b("center_far", o.center_far);
  b("arms", o.arms, 0, kMany);
  b("arm_center", o.arm_center, 0, kMany);
  b("arm_far_first", o.arm_far_first);
  b("arm_share", o.arm_share, 0, 0.5);
  b("arm_margin", o.arm_margin, 0, 1);
  b("region_bias", o.region_bias, 0, kMany);
  b("region_far", o.region_far);
  b("warm_local", o.warm_local, 0, 1);
  b("cold_local", o.cold_local, 0, 1);
  b("cold_local_after", o.cold_local_after, 0, kMany);
  b("cold_adjacent", o.cold_adjacent);
  b("warm_repair", o.warm_repair);
  b("explore", o.explore, 0, 1);
  b("greedy", o.greedy, 0, 1);
  b("local", o.local, 0, 1);
  b("local_line", o.local_line, 0, 1);
  b("repair", o.repair);
  b("basins", o.basins);
  b("crowding", o.crowding, 0, kMany);
  b("crowding_excess", o.crowding_excess);
  b("lcb", o.lcb);
  b("kappa", o.kappa, 0, kMany);
  b("feasibility", o.feasibility);
  b("full_limit", o.full_limit, 0, kMany);
  b("pool", o.pool, 0, kMany);
  b("walks", o.walks, 0, kMany);
  b("screen_until", o.screen_until, 0, kMany);
  b("screen_pool", o.screen_pool, 1, kMany);
  b("refit_ratio", o.refit_ratio, 1, kMany);
  b("max_train", o.max_train, 2, kMany);
  b("batch", o.batch, 0, kMany);
  b("trees", o.forest.trees, 1, 4096);
  b("min_split", o.forest.min_split, 2, kMany);
  b("min_leaf", o.forest.min_leaf, 1, kMany);
  b("features", o.forest.features, 0, 1);
  b("max_depth", o.forest.max_depth, 1, 256);
  b("gp", o.gp);
  b("gp_train", o.gp_model.max_train, 2, kMany);
  b("gp_hyper", o.gp_model.max_hyper, 2, kMany);
  b("prior_initial", o.prior_initial, 1, kMany);
  b("prior_top", o.prior_top, 0, 1);
  b("prior_weight", o.prior_weight, 0, kMany);
  b("prior_pool", o.prior_pool, 0, kMany);
  return std::make_unique<ForestSearch>(o);
}

}  // namespace

StrategyEntry forest_entry() {
  return {"forest", "Bayesian optimisation with random forests (SMAC-style, lower confidence bound)", &make};
}

}  // namespace aoe
