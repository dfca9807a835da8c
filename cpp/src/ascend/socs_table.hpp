// The built-in SoC table, generated from socs.json at build time
// (cpp/cmake/embed_socs.py): each SoC's name and its field values.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "aoe_native/ascend/platform.hpp"

namespace aoe::ascend::detail {

const std::vector<std::pair<std::string, std::map<std::string, FieldInput>>>& builtin_soc_table();

}  // namespace aoe::ascend::detail
