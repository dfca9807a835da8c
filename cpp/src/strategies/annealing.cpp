// Simulated annealing over single-parameter moves (detail::random_move: the
// parameter drawn uniformly, so parameters with long value lists do not
// take most of the moves).
//
// Scale-free acceptance: an uphill step of size d is accepted with
// probability exp(-(d / s) / T), where s is a running average of the absolute
// value differences of the steps taken so far.  T is thus measured in
// "typical steps" and the schedule works whatever the objective's units or
// offset.  T cools geometrically from t_start to t_end over a cycle; at the
// end of a cycle the chain restarts from its best point (reheating), and
// after a cycle without a new best, from a random unvisited configuration.
// Neighbours already evaluated are judged on their recorded value at no cost.
#include <algorithm>
#include <cmath>

#include "shared.hpp"

namespace aoe {
namespace {

struct AnnealingOptions {
  double t_start = 1.0;         // in units of the typical step size (scale-free)
  double t_end = 0.02;
  size_t cycle = 0;             // steps per cooling cycle; 0 = 3 * number of single-parameter moves
  double adjacent = 0.5;        // share of moves to an adjacent value
};

class Annealing : public StrategyBase {
 public:
  explicit Annealing(const AnnealingOptions& o) : opt_(o) {}
  std::string name() const override { return "annealing"; }

  void ask(size_t, std::vector<ConfigId>& out) override {
    out.clear();
    for (int guard = 0; guard < 10000; ++guard) {
      if (!has_cur_) {
        start_random(out);
        return;
      }
      if (step_ >= cycle_) {
        end_cycle();
        continue;
      }
      ConfigId n;
      if (!detail::random_move(*space_, cur_, rng_, opt_.adjacent, n)) {  // isolated point
        has_cur_ = false;
        continue;
      }
      if (record_->contains(n)) {
        consider(n, record_->value(n));
        continue;
      }
      out.push_back(n);
      return;
    }
    start_random(out);
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      if (pending_start_) {
        pending_start_ = false;
        set_current(ids[i], values[i]);
        note_best(ids[i], values[i]);
      } else {
        consider(ids[i], values[i]);
      }
    }
  }

  // A better point found elsewhere replaces the chain's current point.
  void observe(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(values[i]) && (!has_cur_ || values[i] < cur_v_)) {
        set_current(ids[i], values[i]);
        note_best(ids[i], values[i]);
      }
    }
  }

 private:
  void start_run() override {
    has_cur_ = false;
    has_best_ = false;
    improved_in_cycle_ = false;
    scale_ = 0;
    scale_n_ = 0;
    step_ = 0;
    pending_start_ = false;
    cycle_ = opt_.cycle;
  }

  double temperature() const {
    double f = cycle_ > 1 ? double(step_) / double(cycle_ - 1) : 1.0;
    return opt_.t_start * std::pow(opt_.t_end / opt_.t_start, std::min(f, 1.0));
  }

  void consider(ConfigId n, double v) {
    ++step_;
    note_best(n, v);
    if (!std::isfinite(v)) return;
    if (!std::isfinite(cur_v_)) {
      set_current(n, v);
      return;
    }
    double d = v - cur_v_;
    // Running mean of |step| sizes: the unit of the temperature.
    scale_n_ += 1;
    scale_ += (std::fabs(d) - scale_) / scale_n_;
    if (d <= 0) {
      set_current(n, v);
      return;
    }
    double s = scale_ > 0 ? scale_ : std::fabs(d);
    if (rng_.uniform() < std::exp(-(d / s) / temperature())) set_current(n, v);
  }

  void note_best(ConfigId c, double v) {
    if (!has_best_ || v < best_v_) {
      if (has_best_ && v < best_v_) improved_in_cycle_ = true;
      best_ = c;
      best_v_ = v;
      has_best_ = true;
    }
  }

  void end_cycle() {
    step_ = 0;
    if (improved_in_cycle_ && has_best_ && std::isfinite(best_v_)) {
      set_current(best_, best_v_);  // reheat from the best point
    } else {
      has_cur_ = false;  // stuck: start elsewhere
      has_best_ = false;
    }
    improved_in_cycle_ = false;
  }

  void set_current(ConfigId c, double v) {
    cur_ = c;
    cur_v_ = v;
    has_cur_ = true;
    if (opt_.cycle == 0 && cycle_ == 0) {
      // About three tries of every single-parameter change per cycle.
      size_t moves = 0;
      for (const auto& vals : space_->param_values()) moves += vals.size() - 1;
      cycle_ = 3 * moves + 10;
    }
  }

  void start_random(std::vector<ConfigId>& out) {
    ConfigId c;
    if (!draw_unvisited(c)) return;
    pending_start_ = true;
    step_ = 0;
    out.push_back(c);
  }

  AnnealingOptions opt_;
  bool has_cur_ = false, has_best_ = false, improved_in_cycle_ = false, pending_start_ = false;
  ConfigId cur_ = 0, best_ = 0;
  double cur_v_ = kInf, best_v_ = kInf;
  double scale_ = 0, scale_n_ = 0;
  size_t step_ = 0, cycle_ = 0;
};

std::unique_ptr<Strategy> make(OptionBinder& b) {
  AnnealingOptions o;
  b("t_start", o.t_start, 1e-9, kMany);
  b("t_end", o.t_end, 1e-9, kMany);
  b("cycle", o.cycle, 0, kMany);
  b("adjacent", o.adjacent, 0, 1);
  return std::make_unique<Annealing>(o);
}

}  // namespace

StrategyEntry annealing_entry() {
  return {"annealing", "Simulated annealing over single-parameter moves, with reheating cycles", &make};
}

}  // namespace aoe
