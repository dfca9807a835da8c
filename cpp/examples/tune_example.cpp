// Builds a constrained tiling space and tunes it with a native objective,
// entirely in C++: what a compiler embedding aoe-native does.
#include <cmath>
#include <cstdio>

#include "aoe_native/search_space.hpp"
#include "aoe_native/tuner.hpp"

namespace {

// A toy tile-size model: work per tile against a buffer that holds 64 KiB,
// with a penalty for tiles that leave the 8 cores unevenly loaded.
class TileModel : public aoe::Objective {
 public:
  void evaluate(const aoe::SearchSpace& s, const aoe::ConfigId* ids, size_t n, double* out,
                std::string* /*errors*/) override {
    for (size_t i = 0; i < n; ++i) {
      const double m = double(s.value(ids[i], 0)), k = double(s.value(ids[i], 1)), n_ = double(s.value(ids[i], 2));
      const double tiles = std::ceil(1024 / m) * std::ceil(1024 / n_);
      const double waves = std::ceil(tiles / 8);
      out[i] = waves * (m * n_ * k / 4096.0 + (m + n_) * k / 64.0 + 20.0) * std::ceil(1024 / k);
    }
  }
};

}  // namespace

int main() {
  aoe::SearchSpace space({"tile_m", "tile_k", "tile_n"},
                         {{16, 32, 64, 128, 256}, {16, 32, 64, 128, 256}, {16, 32, 64, 128, 256}},
                         {"(tile_m * tile_k + tile_k * tile_n) * 2 * 2 <= 65536", "tile_m * tile_n <= 128 * 256"});
  TileModel model;
  aoe::TuneOptions opt;
  opt.strategy = "auto";
  opt.strategy_options = {{"initial", 12}};  // options and defaults: aoe::strategy_defaults("auto")
  opt.max_evals = 60;
  opt.seed = 1;
  const aoe::TuneResult r = aoe::tune(space, model, opt);

  opt.strategy = "exhaustive";
  opt.strategy_options.clear();
  opt.max_evals.reset();
  const aoe::TuneResult all = aoe::tune(space, model, opt);

  std::printf("space: %zu valid of %.0f\n", space.size(), space.cartesian_size());
  std::printf("auto: %zu evaluations, best %.3f at tile_m=%lld tile_k=%lld tile_n=%lld\n", r.history.size(),
              r.best_value, (long long)space.value(*r.best, 0), (long long)space.value(*r.best, 1),
              (long long)space.value(*r.best, 2));
  std::printf("exhaustive optimum: %.3f\n", all.best_value);
  return r.best && all.best ? 0 : 1;
}
