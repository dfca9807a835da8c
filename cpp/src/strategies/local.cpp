// Greedy iterated local search.
//
// First improvement over the Hamming neighbourhood (adjacent-value neighbours
// first: on tuning landscapes a small step in one parameter is the move most
// likely to improve).  Neighbours already evaluated cost nothing: their
// recorded value is used directly.  At a local optimum the search kicks the
// best local optimum with a few random Hamming steps; after several kicks
// that do not lead to a better optimum it restarts from a random unvisited
// configuration.
#include <cmath>

#include "shared.hpp"

namespace aoe {
namespace {

struct LocalOptions {
  size_t kick_steps = 3;        // random Hamming steps of an ILS perturbation
  size_t kicks_per_restart = 4; // failed kicks before a random restart
  bool adjacent_first = true;   // try adjacent-value neighbours before the rest
};

class LocalSearch : public StrategyBase {
 public:
  explicit LocalSearch(const LocalOptions& o) : opt_(o) {}
  std::string name() const override { return "local"; }

  void ask(size_t, std::vector<ConfigId>& out) override {
    out.clear();
    // Bounded: each pass either proposes, moves (strictly better value) or
    // consumes a candidate.
    for (int guard = 0; guard < 100000; ++guard) {
      if (!has_cur_) {
        if (!start_random(out)) return;
        if (!out.empty()) return;
        continue;
      }
      if (pos_ < cand_.size()) {
        ConfigId n = cand_[pos_++];
        if (record_->contains(n)) {
          double v = record_->value(n);
          if (v < cur_v_) move(n, v);
          continue;
        }
        pending_ = Pending::Neighbour;
        out.push_back(n);
        return;
      }
      // Local optimum reached.
      local_optimum();
      if (!kick(out)) {
        if (!start_random(out)) return;
      }
      if (!out.empty()) return;
    }
    // Everything nearby is known: fall back to a random unvisited point.
    start_random(out);
  }

  void tell(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      if (pending_ == Pending::Start) {
        set_current(ids[i], values[i]);
      } else if (pending_ == Pending::Neighbour && values[i] < cur_v_) {
        move(ids[i], values[i]);
      }
    }
    pending_ = Pending::None;
  }

  // A better configuration found by another technique becomes the current
  // point (the search continues from there).
  void observe(const ConfigId* ids, const double* values, size_t n) override {
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(values[i]) && (!has_cur_ || values[i] < cur_v_)) set_current(ids[i], values[i]);
  }

 private:
  enum class Pending { None, Neighbour, Start };

  void start_run() override {
    has_cur_ = false;
    has_anchor_ = false;
    failed_kicks_ = 0;
    pending_ = Pending::None;
  }

  void set_current(ConfigId c, double v) {
    cur_ = c;
    cur_v_ = v;
    has_cur_ = true;
    build_candidates();
  }
  void move(ConfigId c, double v) { set_current(c, v); }

  void build_candidates() {
    cand_.clear();
    pos_ = 0;
    if (opt_.adjacent_first) {
      space_->neighbours(cur_, Neighbourhood::Adjacent, cand_);
      detail::shuffle(cand_, rng_);
      space_->neighbours(cur_, Neighbourhood::Hamming, tmp_);
      detail::shuffle(tmp_, rng_);
      // Hamming includes the adjacent ones; keep their first occurrence.
      size_t nadj = cand_.size();
      for (ConfigId c : tmp_) {
        bool dup = false;
        for (size_t k = 0; k < nadj && !dup; ++k) dup = cand_[k] == c;
        if (!dup) cand_.push_back(c);
      }
    } else {
      space_->neighbours(cur_, Neighbourhood::Hamming, cand_);
      detail::shuffle(cand_, rng_);
    }
  }

  void local_optimum() {
    if (!has_anchor_ || cur_v_ < anchor_v_) {
      anchor_ = cur_;
      anchor_v_ = cur_v_;
      has_anchor_ = true;
      failed_kicks_ = 0;
    } else {
      ++failed_kicks_;
    }
  }

  // Random walk from the anchor; proposes the endpoint when it is unvisited.
  bool kick(std::vector<ConfigId>& out) {
    if (!has_anchor_ || failed_kicks_ >= opt_.kicks_per_restart) {
      has_anchor_ = false;  // forget it: the next optimum starts afresh
      return false;
    }
    for (int attempt = 0; attempt < 8; ++attempt) {
      ConfigId c = anchor_;
      for (size_t s = 0; s < opt_.kick_steps; ++s) {
        space_->neighbours(c, Neighbourhood::Hamming, tmp_);
        if (tmp_.empty()) break;
        c = tmp_[rng_.below(tmp_.size())];
      }
      if (!record_->contains(c)) {
        pending_ = Pending::Start;
        out.push_back(c);
        return true;
      }
    }
    ++failed_kicks_;
    return false;
  }

  bool start_random(std::vector<ConfigId>& out) {
    ConfigId c;
    if (!draw_unvisited(c)) return false;
    pending_ = Pending::Start;
    out.push_back(c);
    return true;
  }

  LocalOptions opt_;
  bool has_cur_ = false;
  ConfigId cur_ = 0;
  double cur_v_ = kInf;
  std::vector<ConfigId> cand_, tmp_;
  size_t pos_ = 0;
  bool has_anchor_ = false;
  ConfigId anchor_ = 0;
  double anchor_v_ = kInf;
  size_t failed_kicks_ = 0;
  Pending pending_ = Pending::None;
};

std::unique_ptr<Strategy> make(OptionBinder& b) {
  LocalOptions o;
  b("kick_steps", o.kick_steps, 1, kMany);
  b("kicks_per_restart", o.kicks_per_restart, 0, kMany);
  b("adjacent_first", o.adjacent_first);
  return std::make_unique<LocalSearch>(o);
}

}  // namespace

StrategyEntry local_entry() {
  return {"local", "Greedy iterated local search over single-parameter changes, with kicks and restarts", &make};
}

}  // namespace aoe
