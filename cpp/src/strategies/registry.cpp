#include <functional>
#include <stdexcept>
#include <utility>

#include "aoe_native/strategies.hpp"

namespace aoe {

namespace {

using Factory = std::unique_ptr<Strategy> (*)();

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"auto", &make_random},  // replaced by the measured best strategy
      {"exhaustive", &make_exhaustive},
      {"random", &make_random},
  };
  return r;
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& [name, f] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const auto& [n, factory] : registry())
    if (n == name) return factory();
  std::string valid;
  for (const auto& n : strategy_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy '" + name + "' (valid: " + valid + ")");
}

}  // namespace aoe
