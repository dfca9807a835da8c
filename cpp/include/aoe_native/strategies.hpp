// Factories of the built-in strategies (one per source file in
// cpp/src/strategies/); make_strategy() in strategy.hpp maps names to these.
#pragma once

#include <memory>

#include "aoe_native/strategy.hpp"

namespace aoe {

std::unique_ptr<Strategy> make_exhaustive();
std::unique_ptr<Strategy> make_random();

}  // namespace aoe
