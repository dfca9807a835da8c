#include <chrono>
#include <cmath>
#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "aoe_native/tuner.hpp"

namespace aoe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// After this many consecutive asks without a new configuration, the tuner
// evaluates a random unvisited one itself, so every run makes progress.
constexpr int kMaxStalls = 4;

class Run {
 public:
  Run(const SearchSpace& space, Objective& objective, const TuneOptions& opt)
      : space_(space), objective_(objective), opt_(opt), fallback_rng_(opt.seed ^ 0x5eed5eed5eedULL) {
    if (space.size() == 0) throw std::invalid_argument("the search space has no valid configuration");
    if (opt.max_evals && *opt.max_evals == 0) throw std::invalid_argument("max_evals must be at least 1");
    if (opt.time_limit_s && !(*opt.time_limit_s > 0))
      throw std::invalid_argument("time_limit must be a positive number of seconds");
    limit_ = opt.max_evals ? std::min(*opt.max_evals, space.size()) : space.size();
    objective.check_space(space);
    batch_ = std::max<size_t>(1, objective.max_batch());
    record_.reset(space.size());
    fallback_.reset(space.size());
    strategy_ = make_strategy(opt.strategy, opt.strategy_options);
    check_prior();
    strategy_->set_budget(opt.max_evals ? std::optional<size_t>(limit_) : std::nullopt);
    strategy_->set_prior(&opt.prior);
    strategy_->reset(space, record_, opt.seed);
    res_.best_value = kInf;
  }

  TuneResult run() {
    start_ = std::chrono::steady_clock::now();
    learn_known();  // (every configuration known: warm_start and the loop find the budget exhausted)
    warm_start();
    std::vector<ConfigId> proposals;
    int stalls = 0;
    while (res_.stop_reason.empty()) {
      if (budget_exhausted()) break;
      proposals.clear();
      strategy_->ask(std::min(batch_, limit_ - res_.history.size()), proposals);
      size_t fresh = 0;
      for (ConfigId c : proposals) fresh += !record_.contains(c);
      if (fresh == 0 && (proposals.empty() || ++stalls >= kMaxStalls)) {
        stalls = 0;
        if (!fill_in()) break;
      } else if (fresh > 0) {
        stalls = 0;
      }
      if (!res_.stop_reason.empty()) break;
      if (!proposals.empty()) {
        evaluate(proposals);
        if (!res_.stop_reason.empty()) break;
        told_.resize(proposals.size());
        for (size_t i = 0; i < proposals.size(); ++i) told_[i] = record_.value(proposals[i]);
        strategy_->tell(proposals.data(), told_.data(), proposals.size());
      }
      if (opt_.progress) {
        try {
          if (!opt_.progress(res_.history.size(), res_.best_value)) res_.stop_reason = "stopped";
        } catch (const StopTuning&) {  // as from the objective: the run ends with what it found
          res_.stop_reason = "stopped";
        }
      }
    }
    res_.elapsed_s = seconds();
    return std::move(res_);
  }

 private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void check_prior() const {
    const auto& prior = opt_.prior;
    if (prior.empty()) return;
    if (!strategy_->uses_prior())
      throw std::invalid_argument("strategy '" + opt_.strategy + "' does not use a prior (use 'auto' or 'forest')");
    if (prior.size() != space_.size())
      throw std::invalid_argument("prior has " + std::to_string(prior.size()) + " values for a space of " +
                                  std::to_string(space_.size()) + " configurations (one per configuration id)");
    for (size_t i = 0; i < prior.size(); ++i)
      if (!std::isfinite(prior[i]))
        throw std::invalid_argument("prior value of configuration " + std::to_string(i) + " is " +
                                    std::to_string(prior[i]) + " (every value must be finite)");
  }

  bool budget_exhausted() {
    if (record_.count() >= space_.size()) res_.stop_reason = "exhausted";
    else if (res_.history.size() >= limit_) res_.stop_reason = "max_evals";
    else if (opt_.time_limit_s && seconds() >= *opt_.time_limit_s) res_.stop_reason = "time_limit";
    return !res_.stop_reason.empty();
  }

  void learn_known() {
    if (opt_.known.size() != opt_.known_values.size())
      throw std::invalid_argument("known configurations and known values differ in number");
    std::vector<ConfigId> ids;
    std::vector<double> values;
    for (size_t i = 0; i < opt_.known.size(); ++i) {
      const ConfigId c = opt_.known[i];
      if (c >= space_.size()) throw std::invalid_argument("known configuration id out of range");
      if (record_.contains(c)) continue;
      const double v = std::isfinite(opt_.known_values[i]) ? opt_.known_values[i] : kInf;
      record_.add(c, v);
      ids.push_back(c);
      values.push_back(v);
    }
    if (!ids.empty()) strategy_->observe(ids.data(), values.data(), ids.size());
  }

  void warm_start() {
    std::vector<ConfigId> batch;
    for (ConfigId c : opt_.initial) {
      if (c >= space_.size()) throw std::invalid_argument("initial configuration id out of range");
      if (record_.contains(c) || std::find(batch.begin(), batch.end(), c) != batch.end()) continue;
      if (res_.history.size() + batch.size() >= limit_) break;
      batch.push_back(c);
    }
    for (size_t i = 0; i < batch.size(); i += batch_) {
      std::vector<ConfigId> part(batch.begin() + i, batch.begin() + std::min(batch.size(), i + batch_));
      evaluate(part);
      if (!res_.stop_reason.empty()) return;
      observe(part);
      if (budget_exhausted()) return;
    }
  }

  // A random unvisited configuration, evaluated and shown to the strategy.
  bool fill_in() {
    ConfigId c;
    if (!fallback_.next(fallback_rng_, record_, c)) {
      res_.stop_reason = "exhausted";
      return false;
    }
    std::vector<ConfigId> one{c};
    evaluate(one);
    if (!res_.stop_reason.empty()) return false;
    observe(one);
    return true;
  }

  void observe(const std::vector<ConfigId>& ids) {
    told_.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) told_[i] = record_.value(ids[i]);
    strategy_->observe(ids.data(), told_.data(), ids.size());
  }

  // Evaluates the proposals not yet in the record (each once, even if proposed
  // twice in one batch) and appends them to the history.
  void evaluate(const std::vector<ConfigId>& proposals) {
    todo_.clear();
    pending_.clear();
    for (ConfigId c : proposals) {
      if (record_.contains(c) || !pending_.insert(c).second) continue;
      if (res_.history.size() + todo_.size() >= limit_) break;
      todo_.push_back(c);
    }
    if (todo_.empty()) return;
    values_.assign(todo_.size(), 0.0);
    errors_.assign(todo_.size(), std::string());
    try {
      objective_.evaluate(space_, todo_.data(), todo_.size(), values_.data(), errors_.data());
    } catch (const StopTuning&) {
      res_.stop_reason = "interrupted";
      return;
    } catch (const std::bad_alloc&) {
      throw;  // the process is out of memory: going on would only fail again
    } catch (const std::exception& e) {
      // An objective that throws (a device call, a compiler) fails the
      // configurations of this call, like a non-finite value; the run and
      // what it found so far are kept.
      const std::string why = std::string("objective raised: ") + e.what();
      for (size_t i = 0; i < todo_.size(); ++i) {
        values_[i] = kInf;
        errors_[i] = why;
      }
    }
    for (size_t i = 0; i < todo_.size(); ++i) {
      double v = values_[i];
      const bool failed = !std::isfinite(v) || !errors_[i].empty();
      if (failed) {
        v = kInf;
        ++res_.failed;
        res_.errors.emplace_back(res_.history.size(),
                                 errors_[i].empty() ? "objective returned " + std::to_string(values_[i]) : errors_[i]);
      }
      record_.add(todo_[i], v);
      res_.history.push_back(todo_[i]);
      res_.values.push_back(v);
      if (!failed && v < res_.best_value) {
        res_.best_value = v;
        res_.best = todo_[i];
      }
    }
  }

  const SearchSpace& space_;
  Objective& objective_;
  const TuneOptions& opt_;
  std::unique_ptr<Strategy> strategy_;
  EvalRecord record_;
  UnvisitedSampler fallback_;
  Rng fallback_rng_;
  size_t limit_ = 0, batch_ = 1;
  std::chrono::steady_clock::time_point start_;
  TuneResult res_;
  std::vector<ConfigId> todo_;
  std::unordered_set<ConfigId> pending_;
  std::vector<double> values_, told_;
  std::vector<std::string> errors_;
};

}  // namespace

TuneResult tune(const SearchSpace& space, Objective& objective, const TuneOptions& options) {
  return Run(space, objective, options).run();
}

}  // namespace aoe
