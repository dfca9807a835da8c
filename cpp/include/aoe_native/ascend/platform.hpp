// Per-SoC numbers of an Ascend NPU that the cost model reads.  The values are
// kept in python/aoe_native/data/socs.json with the source of each number;
// this struct is only the in-memory form (filled field by field from Python).
#pragma once

#include <string>
#include <vector>

namespace aoe::ascend {

struct Platform {
  std::string name;
  bool split = false;      // AIC and AIV are separate cores (A2/A3/950) vs one coupled AI Core
  int cube_cores = 1;      // AI cores that own a Cube unit
  int vector_cores = 1;    // cores (AIV on split SoCs) that run vector kernels
  double freq_mhz = 1000;  // cube_freq
  double vec_freq_mhz = 1000;
  // Buffer sizes in bytes.
  double l0a = 65536, l0b = 65536, l0c = 131072, l1 = 524288, ub = 196608, l2 = 0, bt = 1024;
  // Transfer rates in bytes per cycle per core ([AICoreMemoryRates]).
  double ddr_rate = 32, l2_rate = 110, l2_write_rate = 86, l1_to_l0a = 512, l1_to_l0b = 256,
         l0c_to_ub = 256, ub_to_ddr = 64;
  // Chip-level caps in GB/s (shared by all active cores).
  double hbm_gbps = 0, l2_gbps = 0;
  double gm_align = 512;   // GM alignment for full-rate access
  bool fixpipe = false;    // FixPipe can apply ReLU/bias on the way out of L0C
  std::vector<std::string> cube_dtypes{"float16", "int8"};
  std::vector<std::string> vector_dtypes{"float16", "float32", "int8"};

  double cycles_per_us() const { return freq_mhz; }
};

}  // namespace aoe::ascend
