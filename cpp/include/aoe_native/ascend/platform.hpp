// Per-SoC numbers of an Ascend NPU that the cost model reads.  The values are
// kept in python/aoe_native/data/socs.json with the source of each number.
//
// platform_fields() is the one description of those numbers (name, kind,
// required or default, unit): the checks of a socs.json entry, the Python
// properties, to_dict/from_dict and pickling are all generated from it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace aoe::ascend {

struct Platform {
  std::string name;
  bool split = false;      // AIC and AIV are separate cores (A2/A3/950) vs one coupled AI Core
  int cube_cores = 1;      // AI cores that own a Cube unit
  int vector_cores = 1;    // cores (AIV on split SoCs) that run vector kernels
  double freq_mhz = 1000;  // cube_freq
  double vec_freq_mhz = 1000;
  // Standalone Vector Cores beside the AI cores (310P: core_type_list=AICore,VectorCore).  A
  // vector kernel launched as KERNEL_TYPE_MIX_VECTOR_CORE runs on both; they clock at
  // vec_freq_mhz and read GM at their own rate.  0: none.
  int standalone_vector_cores = 0;
  double standalone_ddr_rate = 0;  // GM rate of one standalone Vector Core, bytes/cycle
  // Buffer sizes in bytes.
  double l0a = 65536, l0b = 65536, l0c = 131072, l1 = 524288, ub = 196608, l2 = 0, bt = 1024;
  double hbm_bytes = 0;    // device memory; 0 = unknown
  // Transfer rates in bytes per cycle per core ([AICoreMemoryRates]).
  double ddr_rate = 32, l2_rate = 110, l2_write_rate = 86, l1_to_l0a = 512, l1_to_l0b = 256,
         l0c_to_ub = 256, ub_to_ddr = 64;
  // Chip-level caps in GB/s (shared by all active cores).
  double hbm_gbps = 0, l2_gbps = 0;
  double gm_align = 512;   // GM alignment for full-rate access
  bool fixpipe = false;    // FixPipe can apply ReLU/bias on the way out of L0C
  std::vector<std::string> cube_dtypes{"float16", "int8"};
  std::vector<std::string> vector_dtypes{"float16", "float32", "int8"};
  double launch_overhead_us = 3.0;  // an assumption of this tool, not a measured figure
  // Fitted constants of the cube model (aoe_native.calibrate refits them to
  // measurements; the defaults are the hand fits documented in cube.cpp /
  // common.hpp, so an uncalibrated platform gives the results it always gave).
  double mte2_eff = 0.84;          // MTE2 rate on L2 hits, as a fraction of l2_rate
  int gm_sector = 256;             // bytes MTE2 moves per GM read sector
  double mte2_copy_cycles = 210;   // issue cost of one GM->L1 copy (ND2NZ), cycles
  // Terms the cube model lacked; 0 leaves it as it was (fitted values: aoe_native.calibrate).
  double mte2_miss_cycles = 0;     // MTE2 wait per GM->L1 copy that misses L2 (HBM latency), cycles
  double scalar_start_cycles = 0;  // scalar work before the first MTE2 (Matmul init, tiling), cycles
  double scalar_block_cycles = 0;  // scalar issue and loop control per base-block iteration, cycles
  double same_address = 1;         // MTE2 slow-down of cores missing L2 on the same lines at once (1: none)
  // Fitted constants of the vector model (aoe_native.calibrate on CANN's measured kernels);
  // the defaults give the model as it was.
  double vec_rate_share = 0;       // fraction of an AI core's ddr_rate one AIV moves (0: cube_cores / vector_cores)
  double l2_absorb = 0;            // fraction of L2 that takes a vector kernel's writes at L2 speed (0: all to HBM)
  double vec_launch_cycles = 0;    // start cost of a vector kernel beyond the GE heads (launch, first burst), cycles
  double vec_cost_scale = 1;       // vector instruction cycles relative to GE's per-API costs (dual issue: < 1)
  double vec_row_cycles = 0;       // wait per row (or reduce call) and reduction of a row-wise vector kernel, cycles
  double vec_reread_l2 = 0;        // share of a vector kernel's L2-resident re-reads MTE2 moves at the L2 hit rate
  // Per-operator factors on top of vec_cost_scale, "Kind=factor" and "Kind:dtype=factor" (both
  // apply): CANN's kernels run their own instruction sequences (e.g. 910B2's fp32 Exp), which
  // one chip-wide scale cannot express.  Empty: none.
  std::vector<std::string> vec_op_costs;

  double cycles_per_us() const { return freq_mhz; }
  // The vec_op_costs factor of operator `kind` on `dtype` (1 when none is listed).
  double vec_op_cost(const std::string& kind, const std::string& dtype) const;
  bool operator==(const Platform& o) const;  // every field of platform_fields()
  bool operator!=(const Platform& o) const { return !(*this == o); }
};

// ---- field schema ------------------------------------------------------------

enum class FieldKind { Int, Float, Bool, String, StringList };
const char* kind_name(FieldKind k);  // "int", "float", "bool", "string", "string_list"

// A field's value: Int fields hold int64_t, Float fields double, and so on.
using FieldValue = std::variant<int64_t, double, bool, std::string, std::vector<std::string>>;

// A value offered for a field by a caller (a JSON entry, a Python dict).
// `value` is empty for null/None: an optional field then takes its default.
// `unrepresentable` marks a value of no field kind (a dict, a list of
// numbers): it fails the field's check.  `repr` is how error messages show
// the value (Python passes repr(); empty: formatted here).
struct FieldInput {
  std::optional<FieldValue> value;
  bool unrepresentable = false;
  std::string repr;
};

struct PlatformField {
  std::string name;                         // key in socs.json and Python property name
  FieldKind kind;
  std::optional<FieldValue> default_value;  // empty: required
  std::string doc;                          // meaning and unit
  bool zero_ok = false;                     // numbers: >= 0 accepted, not only > 0; string lists: may be empty
  std::vector<std::string> choices;         // strings / string lists: accepted values (empty: any non-empty string)
  FieldValue (*get)(const Platform&);
  void (*set)(Platform&, const FieldValue&);  // takes a value check_field() returned

  bool required() const { return !default_value; }
};

// Every field of Platform, in socs.json order.
const std::vector<PlatformField>& platform_fields();
const PlatformField* find_platform_field(const std::string& name);  // null if unknown

// The value to store for `in` (the default for None on an optional field, ints
// widened for Float fields).  Throws std::invalid_argument
// "{where}: 'field' must be ..., got {repr}" when `in` breaks the field's rules.
FieldValue check_field(const PlatformField& f, const FieldInput& in, const std::string& where);

// A Platform from named values, e.g. one socs.json entry: every required field
// present ("{where}: missing field(s) a, b"), every value checked.  Names that
// are not fields (sources, arch, notes, base, ...) are ignored.
Platform platform_from_fields(const std::map<std::string, FieldInput>& fields, const std::string& where);

// Throws std::invalid_argument "{where}: 'field' must be ..." unless every field of
// `p` passes check_field (for Platforms filled in by hand; make_op_model calls it).
void check_platform(const Platform& p, const std::string& where);

// Every field's value, in platform_fields() order (platform_from_fields'
// inverse for a valid platform).
std::vector<std::pair<std::string, FieldValue>> platform_to_fields(const Platform& p);

// Python-like text of a value ("'split'", "['float16', 'int8']", "3.5").
std::string field_text(const FieldValue& v);

// ---- built-in SoCs -------------------------------------------------------------
// The SoCs of socs.json, compiled into the library (Python's soc_versions()
// lists the same ones, with each number's source in the JSON file).

// Their names, in socs.json order.
std::vector<std::string> builtin_soc_versions();

// The Platform of a built-in SoC; std::invalid_argument "unknown SoC 'x'; valid
// soc_version values: ..." for other names.  A platform of one's own starts
// from one of these: change its fields, then check_platform().
Platform builtin_platform(const std::string& name);

}  // namespace aoe::ascend
