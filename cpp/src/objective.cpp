#include "aoe_native/objective.hpp"

#include <cmath>

namespace aoe {

namespace {
uint64_t mix(uint64_t x) { return Rng::splitmix(x); }
double unit(uint64_t h) { return double(h >> 11) * 0x1.0p-53; }
}  // namespace

void SyntheticObjective::evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                                  std::string* /*errors*/) {
  const size_t np = space.num_params();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t* ix = space.indices(ids[i]);
    double bowl = 0;
    uint64_t h = seed_ * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t p = 0; p < np; ++p) {
      const double size = double(space.param_values()[p].size());
      const double x = size > 1 ? ix[p] / (size - 1) : 0.0;
      const double centre = unit(mix(seed_ + 7919 * (p + 1)));
      bowl += (x - centre) * (x - centre);
      h = mix(h ^ (uint64_t(ix[p]) + 0x100000 * p));
    }
    out[i] = 1.0 + bowl + noise_ * unit(h);
  }
}

void TableObjective::evaluate(const SearchSpace& /*space*/, const ConfigId* ids, size_t n, double* out,
                              std::string* errors) {
  for (size_t i = 0; i < n; ++i) {
    const ConfigId c = ids[i];
    out[i] = c < values_.size() ? values_[c] : NAN;
    if (!std::isfinite(out[i]) && errors) {
      errors[i] = c < reasons_.size() && !reasons_[c].empty() ? reasons_[c] : "recorded as failed";
    }
  }
}

}  // namespace aoe
