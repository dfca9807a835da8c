// What a tuning run minimises.  Lower is better; a NaN or infinite value, or
// an error message, marks the configuration as failed (the run goes on).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "aoe_native/search_space.hpp"

namespace aoe {

class Objective {
 public:
  virtual ~Objective() = default;

  // Evaluate configurations ids[0..n) of `space`, writing out[i].  For a
  // failure write a non-finite value and, optionally, errors[i] (errors has n
  // entries, all empty on entry).  A std::exception thrown from here fails
  // all n configurations with its message and the run goes on (report
  // failures per configuration where you can); StopTuning ends the run
  // normally, with the result so far; std::bad_alloc reaches tune()'s caller.
  virtual void evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                        std::string* errors) = 0;

  // Called once by tune() before any evaluation: throw std::invalid_argument
  // when `space` is not one this objective can evaluate (wrong parameters).
  virtual void check_space(const SearchSpace& /*space*/) const {}

  // Largest batch the objective wants at once (1 for one-at-a-time callables).
  virtual size_t max_batch() const { return 1024; }

  // True when evaluate() needs no Python interpreter: the tuner then runs
  // without the GIL.
  virtual bool native() const { return true; }
};

// A deterministic pseudo-random landscape for tests and engine-overhead
// benchmarks: value = smooth bowl over normalised value indices plus hashed
// noise, all in native code.
class SyntheticObjective : public Objective {
 public:
  explicit SyntheticObjective(uint64_t seed = 0, double noise = 0.1) : seed_(seed), noise_(noise) {}
  void evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                std::string* errors) override;

 private:
  uint64_t seed_;
  double noise_;
};

// A value per configuration id (replay of a recorded space).  NaN = failed.
class TableObjective : public Objective {
 public:
  explicit TableObjective(std::vector<double> values, std::vector<std::string> failure_reasons = {})
      : values_(std::move(values)), reasons_(std::move(failure_reasons)) {}
  void evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                std::string* errors) override;
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> values_;
  std::vector<std::string> reasons_;  // per id, may be empty
};

}  // namespace aoe
