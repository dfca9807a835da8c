// The tuning loop: ask the strategy, evaluate what is new, tell the results,
// keep the history, stop on budget.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aoe_native/objective.hpp"
#include "aoe_native/search_space.hpp"
#include "aoe_native/strategy.hpp"

namespace aoe {

// Thrown by an objective to end the run at once (e.g. the user pressed
// Ctrl-C): the batch being evaluated is dropped, everything evaluated before
// is kept and the result says stop_reason "interrupted".
struct StopTuning : std::exception {
  const char* what() const noexcept override { return "tuning stopped by the objective"; }
};

struct TuneOptions {
  std::string strategy = "auto";
  StrategyOptions strategy_options;    // see make_strategy()
  std::optional<size_t> max_evals;     // none: no limit by count
  std::optional<double> time_limit_s;  // none: no limit by time
  uint64_t seed = 0;
  // Evaluated first, in order (warm start); duplicates are skipped.
  std::vector<ConfigId> initial;
  // Results of earlier runs on the same space (an earlier round of the same
  // task, a measurement session resumed): recorded and shown to the strategy
  // (observe) before anything else, never evaluated again, and outside this
  // run's history, budget and best.  A non-finite value counts as failed.
  std::vector<ConfigId> known;
  std::vector<double> known_values;
  // A cheap prediction of each configuration's value (one finite number per
  // configuration id, lower is better; e.g. a cost model's estimate), or empty.
  // Only strategies that use one take it (Strategy::uses_prior: "forest",
  // "auto"): they rank their first proposals by it and learn its error.
  std::vector<double> prior;
  // Called after every batch with (evaluations so far, best value so far);
  // returning false or throwing StopTuning stops the run (stop_reason
  // "stopped"); other exceptions reach tune()'s caller.
  std::function<bool(size_t, double)> progress;
};

struct TuneResult {
  std::vector<ConfigId> history;  // evaluation order
  std::vector<double> values;     // +inf for failed
  std::vector<std::pair<size_t, std::string>> errors;  // (history position, message)
  std::optional<ConfigId> best;
  double best_value = 0;          // +inf when every evaluation failed
  size_t failed = 0;
  double elapsed_s = 0;
  std::string stop_reason;        // "max_evals", "time_limit", "exhausted", "stopped", "interrupted"
};

// Runs the search.  Throws std::invalid_argument before evaluating anything for
// an empty space, max_evals 0, a non-positive time limit, an unknown strategy or
// option, initial/known ids out of range, or a prior of the wrong length, with a
// non-finite value, or given to a strategy that does not use one; std::bad_alloc and exceptions from
// `progress` (other than StopTuning) reach the caller.  Failures of the objective
// are the result's (failed, errors), never exceptions.
TuneResult tune(const SearchSpace& space, Objective& objective, const TuneOptions& options);

}  // namespace aoe
