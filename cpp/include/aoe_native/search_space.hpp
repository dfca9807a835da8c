// A constraint-aware search space: named integer parameters with value lists
// and restriction expressions.  Construction enumerates only the valid
// configurations (depth-first over the parameters, checking each restriction
// as soon as the last parameter it uses is bound).
//
// Valid configurations are numbered 0..size()-1 in lexicographic order of their
// value indices; strategies work on these numbers.  Each configuration is
// stored as one row of value indices and as its mixed-radix rank in the
// Cartesian product; ranks are sorted, so membership is a binary search.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "aoe_native/expr.hpp"
#include "aoe_native/rng.hpp"

namespace aoe {

using ConfigId = uint32_t;

enum class Neighbourhood {
  Hamming,   // differ in exactly one parameter, any value
  Adjacent,  // differ in exactly one parameter, by one step in its value list
  Repaired,  // differ in a parameter whose change alone breaks a restriction, and in one other that mends it
};

// Thrown when the `stop` callback of a SearchSpace under construction asks
// to stop (a caller's Ctrl-C).
class BuildStopped : public std::runtime_error {
 public:
  BuildStopped() : std::runtime_error("search space construction stopped") {}
};

class SearchSpace {
 public:
  // At most this many bytes of stored configurations (value indices and
  // ranks): a larger space is a std::invalid_argument naming its size, before
  // the machine runs out of memory.
  static constexpr double kMaxBytes = 4.0 * (1ULL << 30);

  // `stop`, if given, is called every million or so enumeration steps; when it
  // returns true construction ends with BuildStopped (restrictions that keep few
  // configurations of a huge product can take minutes to enumerate).
  SearchSpace(std::vector<std::string> names, std::vector<std::vector<int64_t>> values,
              const std::vector<std::string>& restrictions = {}, const std::function<bool()>& stop = {});

  // Build from an explicit list of configurations (rows of values, one per
  // config, columns in `names` order).  Value lists are the sorted distinct
  // values of each column.  Used by replay of recorded spaces.
  static SearchSpace from_configs(std::vector<std::string> names,
                                  const std::vector<std::vector<int64_t>>& rows);

  size_t size() const { return ranks_.size(); }
  size_t num_params() const { return names_.size(); }
  // Number of points of the Cartesian product (before restrictions).
  double cartesian_size() const { return cartesian_; }
  const std::vector<std::string>& param_names() const { return names_; }
  const std::vector<std::vector<int64_t>>& param_values() const { return values_; }
  const std::vector<Expr>& restrictions() const { return restrictions_; }

  // Value index of parameter p in configuration c.
  uint16_t index(ConfigId c, size_t p) const { return idx_[size_t(c) * names_.size() + p]; }
  const uint16_t* indices(ConfigId c) const { return &idx_[size_t(c) * names_.size()]; }
  int64_t value(ConfigId c, size_t p) const { return values_[p][index(c, p)]; }
  void values(ConfigId c, int64_t* out) const;

  // Lookup by value indices / by values.  nullopt when not a valid config.
  std::optional<ConfigId> find_indices(const uint16_t* idx) const;
  std::optional<ConfigId> find_values(const int64_t* values) const;
  // c with parameter p at value index v, if that is a valid config (a search
  // near c: cheaper than find_indices in large spaces).
  std::optional<ConfigId> find_changed(ConfigId c, size_t p, size_t v) const;

  // Checks every restriction on arbitrary values (which need not be in the
  // value lists).  Returns the index of the first violated restriction, or -1.
  int first_violated(const int64_t* values) const;

  // Valid neighbours of c (appended to out, which is cleared first).
  void neighbours(ConfigId c, Neighbourhood kind, std::vector<ConfigId>& out) const;

  // A uniformly random valid configuration.
  ConfigId sample(Rng& rng) const { return ConfigId(rng.below(size())); }

 private:
  SearchSpace() = default;
  uint64_t rank_of(const uint16_t* idx) const;
  std::optional<ConfigId> find_rank_near(ConfigId c, uint64_t rank) const;
  void build(const std::vector<std::string>& restrictions, const std::function<bool()>& stop);

  std::vector<std::string> names_;
  std::vector<std::vector<int64_t>> values_;
  std::vector<Expr> restrictions_;
  std::vector<uint64_t> radix_;   // rank weight of each parameter
  std::vector<uint16_t> idx_;     // size() x num_params() value indices
  std::vector<uint64_t> ranks_;   // sorted mixed-radix ranks
  double cartesian_ = 0;
};

}  // namespace aoe
