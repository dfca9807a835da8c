// The Platform field table and the checks of a SoC description.
#include "aoe_native/ascend/platform.hpp"
#include "socs_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace aoe::ascend {

namespace {

template <auto M>
FieldValue get_member(const Platform& p) {
  using T = std::decay_t<decltype(p.*M)>;
  if constexpr (std::is_same_v<T, int>) return int64_t(p.*M);
  else return FieldValue(std::in_place_type<T>, p.*M);
}

template <auto M>
void set_member(Platform& p, const FieldValue& v) {
  using T = std::decay_t<decltype(p.*M)>;
  if constexpr (std::is_same_v<T, int>) p.*M = int(std::get<int64_t>(v));
  else p.*M = std::get<T>(v);
}

// Builds one table row; optional() takes the default from Platform's member
// initialiser, so the struct stays the only place defaults are written.
struct Row {
  PlatformField f;
  Row& optional() { f.default_value = f.get(Platform()); return *this; }
  Row& zero_ok() { f.zero_ok = true; return *this; }
  Row& choices(std::vector<std::string> c) { f.choices = std::move(c); return *this; }
  operator PlatformField() const { return f; }
};

template <auto M>
Row field(const char* name, FieldKind kind, const char* doc) {
  return Row{{name, kind, std::nullopt, doc, false, {}, &get_member<M>, &set_member<M>}};
}

// socs.json says "mode": "split" | "coupled"; the model reads the bool `split`.
Row mode_field() {
  return Row{{"mode", FieldKind::String, std::nullopt,
              "'split': separate AIC (cube) and AIV (vector) cores (A2/A3/950); 'coupled': one AI Core with both",
              false, {},
              [](const Platform& p) { return FieldValue(std::string(p.split ? "split" : "coupled")); },
              [](Platform& p, const FieldValue& v) { p.split = std::get<std::string>(v) == "split"; }}}
      .choices({"split", "coupled"});
}

const std::vector<std::string> kDtypes = {"float16", "bfloat16", "float32", "int8",
                                          "uint8",   "bool",     "int16",   "int32", "int64"};

std::string alternatives(const std::vector<std::string>& c) {  // 'a', 'b' or 'c'
  std::string s;
  for (size_t i = 0; i < c.size(); ++i)
    s += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + field_text(c[i]);
  return s;
}

// platform_fields() in groups, concatenated in socs.json order.
using P = Platform;
constexpr auto Int = FieldKind::Int, Float = FieldKind::Float;

// The SoC, its cores and clocks.
std::vector<PlatformField> core_fields() {
  return {
      field<&P::name>("name", FieldKind::String, "SoC name, as given to soc_version (e.g. Ascend910B3)"),
      mode_field(),
      field<&P::cube_cores>("cube_cores", Int, "AI cores with a Cube unit (AIC on split SoCs)"),
      field<&P::vector_cores>("vector_cores", Int, "cores that run vector kernels (AIV on split SoCs)"),
      field<&P::freq_mhz>("freq_mhz", Float, "cube clock, MHz"),
      field<&P::vec_freq_mhz>("vec_freq_mhz", Float, "vector clock, MHz (of the standalone Vector Cores where there are some)"),
      field<&P::standalone_vector_cores>(
          "standalone_vector_cores", Int,
          "standalone Vector Cores that a vector kernel can use beside the AI cores (310P), 0: none")
          .optional()
          .zero_ok(),
      field<&P::standalone_ddr_rate>("standalone_ddr_rate", Float,
                                     "GM rate of one standalone Vector Core, bytes/cycle (0: none)")
          .optional()
          .zero_ok(),
  };
}

// On-chip buffers and device memory, bytes.
std::vector<PlatformField> buffer_fields() {
  return {
      field<&P::l0a>("l0a", Float, "L0A buffer per core, bytes"),
      field<&P::l0b>("l0b", Float, "L0B buffer per core, bytes"),
      field<&P::l0c>("l0c", Float, "L0C buffer per core, bytes"),
      field<&P::l1>("l1", Float, "L1 buffer per core, bytes"),
      field<&P::ub>("ub", Float, "Unified Buffer per core, bytes"),
      field<&P::l2>("l2", Float, "L2 cache per chip, bytes"),
      field<&P::bt>("bt", Float, "BiasTable per core, bytes (0: none, the bias is added on the vector unit)")
          .zero_ok(),
      field<&P::hbm_bytes>("hbm_bytes", Float, "device memory size, bytes (0: unknown)").optional().zero_ok(),
  };
}

// Data-path rates and the GM alignment they need.
std::vector<PlatformField> rate_fields() {
  return {
      field<&P::ddr_rate>("ddr_rate", Float, "GM read rate, bytes/cycle/core"),
      field<&P::l2_rate>("l2_rate", Float, "L2 hit read rate, bytes/cycle/core"),
      field<&P::l2_write_rate>("l2_write_rate", Float, "GM write rate through L2, bytes/cycle/core"),
      field<&P::l1_to_l0a>("l1_to_l0a", Float, "L1 -> L0A rate, bytes/cycle/core"),
      field<&P::l1_to_l0b>("l1_to_l0b", Float, "L1 -> L0B rate, bytes/cycle/core"),
      field<&P::l0c_to_ub>("l0c_to_ub", Float, "L0C -> UB rate, bytes/cycle/core"),
      field<&P::ub_to_ddr>("ub_to_ddr", Float, "UB -> GM rate, bytes/cycle/core"),
      field<&P::hbm_gbps>("hbm_gbps", Float, "HBM bandwidth per chip, GB/s"),
      field<&P::l2_gbps>("l2_gbps", Float,
                         "L2 bandwidth per chip, GB/s (0 or absent: derived as cube_cores x l2_rate x freq_mhz)")
          .optional()
          .zero_ok(),
      field<&P::gm_align>("gm_align", Float, "GM address alignment for full-rate access, bytes"),
  };
}

// What the Cube and Vector units do: FixPipe, dtypes.
std::vector<PlatformField> unit_fields() {
  return {
      field<&P::fixpipe>("fixpipe", FieldKind::Bool, "FixPipe applies ReLU/bias on the way out of L0C"),
      field<&P::cube_dtypes>("cube_dtypes", FieldKind::StringList, "input dtypes of the Cube unit").choices(kDtypes),
      field<&P::vector_dtypes>("vector_dtypes", FieldKind::StringList, "dtypes of the Vector unit").choices(kDtypes),
  };
}

// Terms of the cost model: the launch assumption and the figures aoe_native.calibrate fits.
std::vector<PlatformField> cost_fields() {
  return {
      field<&P::launch_overhead_us>(
          "launch_overhead_us", Float,
          "per-kernel launch cost, us; an assumption of this tool, not a measured Ascend figure")
          .optional()
          .zero_ok(),
      field<&P::mte2_eff>("mte2_eff", Float,
                          "MTE2 read rate on L2 hits as a fraction of l2_rate (fitted: aoe_native.calibrate)")
          .optional(),
      field<&P::gm_sector>("gm_sector", Int,
                           "bytes MTE2 moves per GM read sector: shorter or unaligned bursts cost whole sectors "
                           "(fitted: aoe_native.calibrate)")
          .optional(),
      field<&P::mte2_copy_cycles>("mte2_copy_cycles", Float,
                                  "issue cost of one GM -> L1 copy of the cube, cycles (fitted: aoe_native.calibrate)")
          .optional()
          .zero_ok(),
      field<&P::mte2_miss_cycles>("mte2_miss_cycles", Float,
                                  "MTE2 wait per GM -> L1 copy of the cube that misses L2 (HBM latency), cycles "
                                  "(fitted: aoe_native.calibrate; 0: not modelled)")
          .optional()
          .zero_ok(),
      field<&P::scalar_start_cycles>("scalar_start_cycles", Float,
                                     "scalar work of a cube kernel before its first MTE2 (Matmul init, tiling), "
                                     "cycles (fitted: aoe_native.calibrate; 0: not modelled)")
          .optional()
          .zero_ok(),
      field<&P::scalar_block_cycles>("scalar_block_cycles", Float,
                                     "scalar issue and loop control per base-block iteration of a cube kernel, "
                                     "cycles (fitted: aoe_native.calibrate; 0: not modelled)")
          .optional()
          .zero_ok(),
      field<&P::same_address>("same_address", Float,
                              "MTE2 time factor of a cube operand's first pass when the cores sharing it read the "
                              "same GM lines at once (kReorderLoad = 0); 1: not modelled")
          .optional(),
      field<&P::vec_rate_share>("vec_rate_share", Float,
                                "fraction of an AI core's ddr_rate one vector core (AIV) moves; 0: cube_cores / "
                                "vector_cores, the AIVs sharing it (fitted: aoe_native.calibrate)")
          .optional()
          .zero_ok(),
      field<&P::l2_absorb>("l2_absorb", Float,
                           "fraction of L2 that takes a vector kernel's GM writes at l2_gbps instead of HBM "
                           "(write-back); 0: every write at HBM speed (fitted: aoe_native.calibrate)")
          .optional()
          .zero_ok(),
      field<&P::vec_launch_cycles>("vec_launch_cycles", Float,
                                   "start cost of a vector kernel beyond GE's op/MTE heads (launch, first GM "
                                   "burst), cycles; 0: not modelled (fitted: aoe_native.calibrate)")
          .optional()
          .zero_ok(),
      field<&P::vec_cost_scale>("vec_cost_scale", Float,
                                "vector instruction cycles as a multiple of GE's per-API costs (VF dual issue: "
                                "< 1); 1: GE's costs (fitted: aoe_native.calibrate)")
          .optional(),
      field<&P::vec_row_cycles>("vec_row_cycles", Float,
                                "wait per row (per reduce call where a call covers a tile of rows: 910B's TBE "
                                "Softmax) and per reduction of a row-wise vector kernel before the next step can use "
                                "the result, cycles; 0: not modelled (fitted: aoe_native.calibrate_measured)")
          .optional()
          .zero_ok(),
      field<&P::vec_reread_l2>("vec_reread_l2", Float,
                               "share of a vector kernel's re-reads of rows L2 holds (a row swept more than once) "
                               "that MTE2 moves at the L2 hit rate (l2_rate x mte2_eff) instead of ddr_rate; 0: "
                               "none (fitted: aoe_native.calibrate_measured)")
          .optional()
          .zero_ok(),
      field<&P::vec_op_costs>("vec_op_costs", FieldKind::StringList,
                              "per-operator factors on vec_cost_scale, 'Kind=factor' and 'Kind:dtype=factor' "
                              "(both apply; fitted: aoe_native.calibrate_measured); empty: none")
          .optional()
          .zero_ok(),
  };
}

}  // namespace

const std::vector<PlatformField>& platform_fields() {
  static const std::vector<PlatformField> t = [] {
    std::vector<PlatformField> all;
    for (auto group : {core_fields, buffer_fields, rate_fields, unit_fields, cost_fields}) {
      const std::vector<PlatformField> fields = group();
      all.insert(all.end(), fields.begin(), fields.end());
    }
    return all;
  }();
  return t;
}

const char* kind_name(FieldKind k) {
  switch (k) {
    case FieldKind::Int: return "int";
    case FieldKind::Float: return "float";
    case FieldKind::Bool: return "bool";
    case FieldKind::String: return "string";
    case FieldKind::StringList: return "string_list";
  }
  return "?";
}

const PlatformField* find_platform_field(const std::string& name) {
  for (const auto& f : platform_fields())
    if (f.name == name) return &f;
  return nullptr;
}

std::string field_text(const FieldValue& v) {
  struct {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      std::string s(buf, std::to_chars(buf, buf + sizeof buf, d).ptr);
      return std::isfinite(d) && s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
    }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string s;
      for (const auto& x : l) s += (s.empty() ? "" : ", ") + (*this)(x);
      return "[" + s + "]";
    }
  } text;
  return std::visit(text, v);
}

// Upper bounds: the model loops over core counts and converts sizes to int64,
// so absurd values are refused before they are used.  Int fields are core
// counts; Float fields are sizes, rates and clocks (2^53: exact in a double).
constexpr int64_t kMaxPlatformInt = 65536;
constexpr double kMaxPlatformNumber = 9007199254740992.0;

FieldValue check_field(const PlatformField& f, const FieldInput& in, const std::string& where) {
  if (!in.value && !in.unrepresentable && f.default_value) return *f.default_value;
  const FieldValue* v = in.unrepresentable || !in.value ? nullptr : &*in.value;
  const std::string got = ", got " + (!in.repr.empty() ? in.repr : v ? field_text(*v) : "None");
  auto fail = [&](const std::string& rule) {
    throw std::invalid_argument(where + ": '" + f.name + "' must be " + rule);
  };
  auto get = [&](auto tag) { return v ? std::get_if<decltype(tag)>(v) : nullptr; };
  const char* sign = f.zero_ok ? "a non-negative" : "a positive";
  switch (f.kind) {
    case FieldKind::Int: {
      const int64_t* i = get(int64_t());
      if (!i || *i < 0 || (*i == 0 && !f.zero_ok)) fail(sign + std::string(" integer") + got);
      if (*i > kMaxPlatformInt) fail("at most " + std::to_string(kMaxPlatformInt) + got);
      return *i;
    }
    case FieldKind::Float: {
      const int64_t* i = get(int64_t());
      const double* d = get(double());
      const double x = i ? double(*i) : d ? *d : NAN;  // ints are numbers too, bools are not
      if (!std::isfinite(x) || x < 0 || (x == 0 && !f.zero_ok)) fail(sign + std::string(" number") + got);
      if (x > kMaxPlatformNumber) fail("at most 2^53" + got);
      return x;
    }
    case FieldKind::Bool:
      if (!get(bool())) fail("true or false");
      return *v;
    case FieldKind::String: {
      const std::string* s = get(std::string());
      if (f.choices.empty() && (!s || s->empty())) fail("a non-empty string");
      if (!f.choices.empty() && (!s || std::find(f.choices.begin(), f.choices.end(), *s) == f.choices.end()))
        fail(alternatives(f.choices) + got);
      return *v;
    }
    case FieldKind::StringList: {
      const auto* l = get(std::vector<std::string>());
      auto allowed = [&](const std::string& s) {
        return f.choices.empty() || std::find(f.choices.begin(), f.choices.end(), s) != f.choices.end();
      };
      if (!l || (l->empty() && !f.zero_ok) || !std::all_of(l->begin(), l->end(), allowed))
        fail(std::string(f.zero_ok ? "a list" : "a non-empty list") +
             (f.choices.empty() ? " of strings" : " drawn from " + field_text(f.choices)) + got);
      return *v;
    }
  }
  throw std::logic_error("internal: unhandled field kind");
}

namespace {

// Relations between fields that each pass alone but describe no chip the model can stand for.
void check_relations(const Platform& p, const std::string& where) {
  auto bad = [&](const std::string& what) { throw std::invalid_argument(where + ": " + what); };
  if (p.mte2_eff > 1)
    bad("mte2_eff " + field_text(FieldValue{p.mte2_eff}) + " must be at most 1 (a fraction of l2_rate)");
  if (p.gm_sector & (p.gm_sector - 1))
    bad("gm_sector " + std::to_string(p.gm_sector) + " must be a power of two (bytes per GM read sector)");
  if (p.same_address < 1)
    bad("same_address " + field_text(FieldValue{p.same_address}) + " must be at least 1 (a slowdown factor; 1: none)");
  // An AIV moves at most its AI core's rate (the ini's ddr_rate is per AI core), and only
  // the L2 there is can absorb writes.
  if (p.vec_rate_share > 1)
    bad("vec_rate_share " + field_text(FieldValue{p.vec_rate_share}) + " must be at most 1 (a share of ddr_rate)");
  if (p.vec_reread_l2 > 1)
    bad("vec_reread_l2 " + field_text(FieldValue{p.vec_reread_l2}) + " must be at most 1 (a share of the re-reads)");
  if (p.l2_absorb > 1)
    bad("l2_absorb " + field_text(FieldValue{p.l2_absorb}) + " must be at most 1 (a fraction of l2)");
  if (p.split && p.vector_cores % p.cube_cores != 0)
    bad("vector_cores " + std::to_string(p.vector_cores) + " must be a multiple of cube_cores " +
        std::to_string(p.cube_cores) + " on a split SoC (AIVs per AIC)");
  const double align = p.gm_align;
  if (align != std::floor(align) || (int64_t(align) & (int64_t(align) - 1)))
    bad("gm_align " + field_text(FieldValue{p.gm_align}) + " must be a whole power of two (bytes)");
  if (p.standalone_vector_cores > 0 && !(p.standalone_ddr_rate > 0))
    bad("standalone_vector_cores " + std::to_string(p.standalone_vector_cores) +
        " need a standalone_ddr_rate above 0 (their GM rate, bytes/cycle)");
  for (const auto& e : p.vec_op_costs) {
    const auto eq = e.find('=');
    double f = -1;
    if (eq != std::string::npos && eq > 0) {
      try {
        size_t used = 0;
        f = std::stod(e.substr(eq + 1), &used);
        if (used != e.size() - eq - 1) f = -1;
      } catch (const std::exception&) {
        f = -1;
      }
    }
    if (!(f > 0 && std::isfinite(f)))
      bad("vec_op_costs entry '" + e + "' must be 'Kind=factor' or 'Kind:dtype=factor' with a factor above 0");
  }
  for (const auto* list : {&p.cube_dtypes, &p.vector_dtypes}) {
    std::vector<std::string> sorted(*list);
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      bad(std::string(list == &p.cube_dtypes ? "cube_dtypes" : "vector_dtypes") + " lists '" + *dup + "' twice");
  }
}

}  // namespace

Platform platform_from_fields(const std::map<std::string, FieldInput>& fields, const std::string& where) {
  std::string missing;
  for (const auto& f : platform_fields())
    if (f.required() && !fields.count(f.name)) missing += (missing.empty() ? "" : ", ") + f.name;
  if (!missing.empty()) throw std::invalid_argument(where + ": missing field(s) " + missing);
  static const FieldInput absent;
  Platform p;
  for (const auto& f : platform_fields()) {
    auto it = fields.find(f.name);
    f.set(p, check_field(f, it == fields.end() ? absent : it->second, where));
  }
  check_relations(p, where);
  return p;
}

void check_platform(const Platform& p, const std::string& where) {
  for (const auto& f : platform_fields()) check_field(f, FieldInput{f.get(p), false, ""}, where);
  check_relations(p, where);
}

std::vector<std::pair<std::string, FieldValue>> platform_to_fields(const Platform& p) {
  std::vector<std::pair<std::string, FieldValue>> out;
  for (const auto& f : platform_fields()) out.emplace_back(f.name, f.get(p));
  return out;
}

std::vector<std::string> builtin_soc_versions() {
  std::vector<std::string> names;
  for (const auto& [name, fields] : detail::builtin_soc_table()) names.push_back(name);
  return names;
}

Platform builtin_platform(const std::string& name) {
  for (const auto& [soc, fields] : detail::builtin_soc_table())
    if (soc == name) return platform_from_fields(fields, "socs.json entry '" + soc + "'");
  std::string valid;
  for (const auto& soc : builtin_soc_versions()) valid += (valid.empty() ? "" : ", ") + soc;
  throw std::invalid_argument("unknown SoC '" + name + "'; valid soc_version values: " + valid);
}

double Platform::vec_op_cost(const std::string& kind, const std::string& dtype) const {
  // The operator's factor times its factor on this dtype (entries were checked when the
  // platform was built: check_relations).
  double f = 1;
  for (const auto& e : vec_op_costs) {
    const auto eq = e.find('=');
    const std::string key = e.substr(0, eq);
    if (key == kind || key == kind + ":" + dtype) f *= std::stod(e.substr(eq + 1));
  }
  return f;
}

bool Platform::operator==(const Platform& o) const {
  for (const auto& f : platform_fields())
    if (f.get(*this) != f.get(o)) return false;
  return true;
}

}  // namespace aoe::ascend
