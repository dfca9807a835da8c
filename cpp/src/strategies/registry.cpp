#include <cmath>
#include <stdexcept>
#include <utility>

#include "shared.hpp"

namespace aoe {

namespace {

std::string format(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

void OptionBinder::operator()(const char* key, double& field, double lo, double hi) {
  defaults_[key] = field;
  auto it = given_.find(key);
  if (it == given_.end()) return;
  if (!(it->second >= lo && it->second <= hi))
    throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " = " + format(it->second) +
                                " is out of range [" + format(lo) + ", " + format(hi) + "]");
  field = it->second;
  ++used_;
}

void OptionBinder::operator()(const char* key, size_t& field, double lo, double hi) {
  double v = double(field);
  (*this)(key, v, lo, hi);
  if (v != std::floor(v))
    throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " must be an integer, got " +
                                format(v));
  field = size_t(v);
}

void OptionBinder::operator()(const char* key, bool& field) {
  double v = field ? 1 : 0;
  (*this)(key, v, 0, 1);
  if (v != 0 && v != 1)
    throw std::invalid_argument("strategy '" + strategy_ + "': option " + key + " is a boolean (0 or 1)");
  field = v != 0;
}

void OptionBinder::finish() const {
  if (used_ == given_.size()) return;
  for (const auto& [key, value] : given_) {
    if (defaults_.count(key)) continue;
    std::string valid;
    for (const auto& [k, v] : defaults_) valid += (valid.empty() ? "" : ", ") + k;
    throw std::invalid_argument("strategy '" + strategy_ + "' has no option '" + key + "'" +
                                (valid.empty() ? " (it takes none)" : " (options: " + valid + ")"));
  }
}

// Defined in the strategies' own files.
StrategyEntry exhaustive_entry();
StrategyEntry random_entry();
StrategyEntry genetic_entry();
StrategyEntry annealing_entry();
StrategyEntry local_entry();
StrategyEntry forest_entry();
StrategyEntry bandit_entry();
StrategyEntry auto_entry();

namespace {

// Every strategy, in the order strategy_names() gives: one line each.  An
// explicit list, not registration by static initializers in the strategies'
// files: aoe_native_core is a static library, and a linker leaves out the
// object files nothing refers to, static initializers and all.
const std::vector<StrategyEntry>& entries() {
  static const std::vector<StrategyEntry> list = {
      auto_entry(),
      exhaustive_entry(),
      random_entry(),
      genetic_entry(),
      annealing_entry(),
      local_entry(),
      forest_entry(),
      bandit_entry(),
  };
  return list;
}

const StrategyEntry& find(const std::string& name) {
  for (const auto& e : entries())
    if (e.name == name) return e;
  std::string valid;
  for (const auto& n : strategy_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy '" + name + "' (valid: " + valid + ")");
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& e : entries()) names.push_back(e.name);
  return names;
}

std::string strategy_description(const std::string& name) { return find(name).description; }

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  OptionBinder b(name, options);
  auto strategy = find(name).make(b);
  b.finish();
  return strategy;
}

StrategyOptions strategy_defaults(const std::string& name) {
  const StrategyOptions none;
  OptionBinder b(name, none);
  find(name).make(b);
  return b.defaults();
}

}  // namespace aoe
