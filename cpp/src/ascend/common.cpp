#include "common.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

namespace aoe::ascend::detail {

namespace {
const std::map<std::string, std::string>& dtype_aliases() {
  static const std::map<std::string, std::string> m = {
      {"float16", "float16"}, {"fp16", "float16"}, {"half", "float16"},
      {"bfloat16", "bfloat16"}, {"bf16", "bfloat16"},
      {"float32", "float32"}, {"fp32", "float32"}, {"float", "float32"},
      {"int8", "int8"}, {"uint8", "uint8"}, {"bool", "bool"}, {"int16", "int16"}, {"int32", "int32"},
      {"int64", "int64"}};
  return m;
}
}  // namespace

std::string canonical_dtype(const std::string& dtype) {
  auto it = dtype_aliases().find(dtype);
  if (it == dtype_aliases().end())
    fail("unknown dtype '" + dtype + "'; valid dtypes: float16, bfloat16, float32, int8, uint8, bool, int16, int32, "
         "int64");
  return it->second;
}

int dtype_size(const std::string& dtype) {
  const std::string d = canonical_dtype(dtype);
  if (d == "float16" || d == "bfloat16" || d == "int16") return 2;
  if (d == "int8" || d == "uint8" || d == "bool") return 1;
  if (d == "int64") return 8;
  return 4;
}

bool is_integer_dtype(const std::string& d) {
  return d == "int8" || d == "uint8" || d == "bool" || d == "int16" || d == "int32" || d == "int64";
}

// Per-repeat cycles = GE k_fp16 x 128 elements, per-call = GE b ([G] §3d).
VecCost vec_api_cost(const std::string& api) {
  static const std::map<std::string, VecCost> table = {
      {"Add", {0.0103 * 128, 22.2, 0}},   {"Mul", {0.0110 * 128, 23.1, 0}},
      {"Adds", {0.0071 * 128, 22.5, 0}},  {"Muls", {0.0071 * 128, 22.5, 0}},
      {"Exp", {0.0311 * 128, 28.0, 0}},   {"Div", {0.046 * 128, 29.1, 0}},
      {"Sqrt", {0.0312 * 128, 29.0, 0}},  {"CastUp", {0.0147 * 128, 20.1, 0}},
      {"CastDown", {0.0087 * 128, 20.4, 0}},
      {"WholeReduceSum", {0.0547 * 128, 35.0, 0}},
      {"Sigmoid", {0.101 * 128, 116, 1}}, {"Tanh", {0.198 * 128, 182, 1}}, {"Erf", {0.70 * 128, 478, 2}},
      // Gather (Ascend C Gather/GatherMask by per-element offsets: transposes, GatherElements): GE
      // lists no cost; one cycle per element is the start, each SoC's factor is fitted
      // (vec_op_costs: CANN's transposes run 0.6-1.3 cycles per element and core on 910B2 and 950PR).
      {"Gather", {1.0 * 128, 28.0, 0}},
  };
  auto it = table.find(api);
  if (it == table.end()) fail("internal: no vector cost for API " + api);
  return it->second;
}

namespace {
// Elementwise op (canonical name in op_table()) -> GE APIs it runs.  Ops GE
// does not list are composed from the ones it does (stated per line).  The
// operand count lives in op_table().
const std::map<std::string, std::vector<const char*>>& recipes() {
  static const std::map<std::string, std::vector<const char*>> m = [] {
    std::map<std::string, std::vector<const char*>> r = {
        {"Add", {"Add"}}, {"Sub", {"Add"}},       // Sub: same instruction class as Add
        {"Mul", {"Mul"}}, {"Div", {"Div"}},
        {"Max", {"Add"}}, {"Min", {"Add"}},       // binary compare-select: Add class
        {"Pow", {"Exp", "Mul", "Exp"}},           // exp(b * ln a): Ln costed as Exp
        {"Relu", {"Adds"}}, {"LeakyRelu", {"Muls", "Add"}},  // Maxs: scalar-operand class
        {"Abs", {"Adds"}}, {"Neg", {"Muls"}},
        {"Exp", {"Exp"}}, {"Log", {"Exp"}},       // Ln: same class as Exp
        {"Sqrt", {"Sqrt"}}, {"Reciprocal", {"Div"}}, {"Rsqrt", {"Sqrt", "Div"}},
        {"Sigmoid", {"Sigmoid"}}, {"Tanh", {"Tanh"}}, {"Erf", {"Erf"}},
        // Gelu, tanh form without the Tanh (0.5 (1 + tanh z) = 1 / (1 + e^-2z)), as CANN's
        // Gelu kernel computes it: x / (1 + exp(-sqrt(8/pi) (x + 0.044715 x^3))); the Tanh
        // form was 2x the measured time on 910B2 and 950PR (issue 48).
        {"Gelu", {"Mul", "Mul", "Muls", "Add", "Muls", "Exp", "Adds", "Div"}},
        {"Silu", {"Sigmoid", "Mul"}}, {"HardSwish", {"Adds", "Adds", "Muls", "Mul"}},
        {"Clip", {"Adds", "Adds"}}, {"Identity", {}}, {"Dropout", {}},  // inference: identity
        {"Floor", {"Adds"}}, {"Ceil", {"Adds"}}, {"Round", {"Adds"}}, {"Sign", {"Adds"}},
        {"Equal", {"Add"}}, {"Greater", {"Add"}}, {"Less", {"Add"}},  // compare: Add class
        {"Softplus", {"Exp", "Adds", "Exp"}},  // ln(1 + e^x): Ln costed as Exp
        {"Mish", {"Exp", "Adds", "Exp", "Tanh", "Mul"}},
        {"Cast", {}},  // handled by the caller (direction known there)
        // HardSigmoid: max(0, min(1, a x + b)): Muls, Adds, then Maxs/Mins (scalar-operand class).
        {"HardSigmoid", {"Muls", "Adds", "Adds", "Adds"}},
        {"IsNaN", {"Add"}}, {"IsInf", {"Adds", "Add"}},   // compare x != x; |x| == inf
        {"Not", {"Adds"}}, {"And", {"Add"}}, {"Or", {"Add"}}, {"Xor", {"Add"}},  // bitwise: Add class
        {"GreaterOrEqual", {"Add"}}, {"LessOrEqual", {"Add"}},
        {"Where", {"Add"}},  // Select: one compare-select instruction
        {"PRelu", {"Mul", "Add"}},  // x * slope, then Max
        {"Mod", {"Div", "Adds", "Mul", "Add"}},  // a - floor(a / b) * b
        {"Elu", {"Exp", "Adds", "Muls", "Add"}},  // select(x > 0, x, a (e^x - 1))
        {"Selu", {"Exp", "Adds", "Muls", "Add", "Muls"}},
        {"Softsign", {"Adds", "Adds", "Div"}},  // x / (1 + |x|)
    };
    // The op table and the recipes must name the same ops.
    if (r.size() != elementwise_ops().size())
      throw std::logic_error("internal: the elementwise entries of op_table() and the vector recipes differ");
    for (const auto& e : elementwise_ops())
      if (!r.count(e)) throw std::logic_error("internal: no vector recipe for elementwise op " + e);
    return r;
  }();
  return m;
}
}  // namespace

bool is_elementwise(const std::string& op) {
  const OpEntry* e = find_op(op);
  return e && e->name == op && e->family == OpFamily::Elementwise && e->operands;
}

std::vector<std::string> elementwise_ops() {
  std::vector<std::string> v;
  for (const auto& e : op_table())
    if (e.family == OpFamily::Elementwise && e.operands) v.push_back(e.name);
  std::sort(v.begin(), v.end());
  return v;
}

int vec_program(const std::string& op, const std::string& dtype, std::vector<VecStep>& out) {
  auto it = recipes().find(op);
  if (it == recipes().end()) fail("'" + op + "' is not an elementwise op");
  // fp16 Mish runs in fp32 between casts, as bf16: CANN's fp16 and fp32 Mish take the same
  // time per element on 910B2 (cann-bench: 10.0 vs 10.2 us per M elements), its fp16 Sigmoid half.
  const bool bf16 = dtype == "bfloat16" || (dtype == "float16" && op == "Mish");
  // 4-byte lanes: 64 elements per repeat.  int64 has no vector ALU: it runs as pairs of
  // int32 lanes (Ascend C's int64 Add/Max/Compare), twice the repeats of int32.
  const bool fp32 = dtype == "float32" || bf16 || dtype == "int32" || dtype == "int64";
  const int passes = dtype == "int64" ? 2 : 1;
  if (dtype == "int16" || dtype == "int32" || dtype == "int64") {
    // Integer lanes do integer arithmetic, compares and selects only: the float APIs
    // (Exp, Div, Sqrt, Sigmoid, Tanh, Erf) have no integer form.
    for (const char* api : it->second) {
      const std::string a = api;
      if (a != "Add" && a != "Adds" && a != "Mul" && a != "Muls")
        fail(op + " on " + dtype + " is not modelled: its " + a + " has no integer form on the vector unit "
             "(CANN casts to float first; model the Cast and the float op)");
    }
  }
  // bf16 arithmetic runs in fp32 between casts.
  if (bf16) out.push_back({vec_api_cost("CastUp"), false});
  for (int pass = 0; pass < passes; ++pass)
    for (const char* api : it->second) out.push_back({vec_api_cost(api), fp32});
  if (bf16) out.push_back({vec_api_cost("CastDown"), false});
  return *find_op(op)->operands;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void check_shape(const std::vector<int64_t>& s, const std::string& what) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] <= 0)
      fail(what + " " + shape_str(s) + ": dimension " + std::to_string(i) + " is " + std::to_string(s[i]) +
           " (dimensions must be positive)");
}

int64_t mul_or_fail(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(what + ": size is beyond the 64-bit range");
  return r;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (auto d : s) n = mul_or_fail(n, d, "shape " + shape_str(s));
  return n;
}

namespace {
std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / 1073741824.0);
  return buf;
}
}  // namespace

void check_fits(const Platform& p, double elements, int elem_size, const std::string& what) {
  const double bytes = elements * elem_size;
  const double limit = p.hbm_bytes > 0 ? p.hbm_bytes : kUnknownMemoryBytes;
  if (bytes > limit)
    fail(what + " needs " + gib(bytes) + ", more than " +
         (p.hbm_bytes > 0 ? "the " + gib(limit) + " of device memory of " + p.name + " (hbm_bytes)"
                          : gib(limit) + " (the limit when the device memory of " + p.name + " is unknown)"));
}

void check_op_limits(const OpDesc& op, const Platform& p) {
  if (op.inputs.size() > kMaxInputs)
    fail(op.kind + ": " + std::to_string(op.inputs.size()) + " input shapes, more than the limit of " +
         std::to_string(kMaxInputs));
  const int size = dtype_size(op.dtype);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const auto& s = op.inputs[i];
    const std::string what = op.kind + " input " + std::to_string(i) + " " +
                             (s.size() > kMaxRank ? "of rank " + std::to_string(s.size()) : shape_str(s));
    if (s.size() > kMaxRank)
      fail(what + ": more than " + std::to_string(kMaxRank) + " dimensions");
    // Non-positive dimensions are reported by the operator's own checks.
    if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d <= 0; })) continue;
    double elements = 1;  // in double: a hostile shape's product may leave int64
    for (auto d : s) elements *= double(d);
    check_fits(p, elements, size, what + " (" + op.dtype + ")");
  }
  auto too_many = [&](const std::string& name, size_t n) {
    if (n > kMaxAttrValues)
      fail(op.kind + ": attribute '" + name + "' has " + std::to_string(n) + " values, more than the limit of " +
           std::to_string(kMaxAttrValues));
  };
  for (const auto& [name, values] : op.int_attrs) {
    too_many(name, values.size());
    for (auto v : values)
      if (v > kMaxInt32 || v < -kMaxInt32)
        fail(op.kind + ": attribute '" + name + "' value " + std::to_string(v) + " is outside the 32-bit range [-" +
             std::to_string(kMaxInt32) + ", " + std::to_string(kMaxInt32) + "]");
  }
  for (const auto& [name, values] : op.str_attrs) too_many(name, values.size());
}

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& op) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i + a.size() >= n ? a[i + a.size() - n] : 1;
    const int64_t y = i + b.size() >= n ? b[i + b.size() - n] : 1;
    if (x != y && x != 1 && y != 1)
      fail(op + ": shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast (axis " +
           std::to_string(int64_t(i) - int64_t(n)) + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    r[i] = std::max(x, y);
  }
  return r;
}

std::vector<int64_t> attr_ints(const OpDesc& op, const std::string& name, std::vector<int64_t> dflt) {
  auto it = op.int_attrs.find(name);
  return it == op.int_attrs.end() ? dflt : it->second;
}
int64_t attr_int(const OpDesc& op, const std::string& name, int64_t dflt) {
  auto it = op.int_attrs.find(name);
  if (it == op.int_attrs.end()) return dflt;
  if (it->second.empty()) fail(op.kind + ": attribute '" + name + "' has no value");
  if (it->second.size() != 1) fail(op.kind + ": attribute '" + name + "' must be a single integer, got " + shape_str(it->second));
  return it->second[0];
}
bool attr_flag(const OpDesc& op, const std::string& name) {
  const int64_t v = attr_int(op, name, 0);
  if (v != 0 && v != 1) fail(op.kind + ": attribute '" + name + "' must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}
std::vector<std::string> attr_strs(const OpDesc& op, const std::string& name) {
  auto it = op.str_attrs.find(name);
  return it == op.str_attrs.end() ? std::vector<std::string>{} : it->second;
}
double attr_real(const OpDesc& op, const std::string& name, double dflt) {
  const auto it = op.float_attrs.find(name);
  if (it == op.float_attrs.end()) return op.int_attrs.count(name) ? double(attr_int(op, name, 0)) : dflt;
  if (!std::isfinite(it->second)) fail(op.kind + ": attribute '" + name + "' must be finite, got " + std::to_string(it->second));
  return it->second;
}

std::vector<int64_t> core_counts(int64_t n, int64_t max_useful) {
  const int64_t hi = std::max<int64_t>(1, std::min(n, max_useful));
  std::vector<int64_t> v;
  for (int64_t c = 1; c < hi; c *= 2) v.push_back(c);
  for (int64_t c = 8; c < hi; c += 8) v.push_back(c);
  if (n % 2 == 0 && n / 2 < hi) v.push_back(n / 2);
  v.push_back(hi);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int64_t> pow2_range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t x = lo; x <= hi; x *= 2) v.push_back(x);
  if (v.empty()) v.push_back(lo);
  return v;
}

int64_t add_value(std::vector<int64_t>& values, int64_t v) {
  if (std::find(values.begin(), values.end(), v) == values.end())
    values.insert(std::upper_bound(values.begin(), values.end(), v), v);
  return v;
}

std::vector<VecStep> fused_program(const OpDesc& op, const std::string& attr, const std::string& dtype,
                                   double& extra_per_elem, bool fixpipe, int out_size) {
  std::vector<VecStep> prog;
  extra_per_elem = 0;
  for (const auto& name : attr_strs(op, attr)) {
    // ReLU (and the bias of Gemm/MatMul) ride on FixPipe where it exists ([R] support_fixpipe).
    if (fixpipe && (name == "Relu" || name == "BiasAdd")) continue;
    if (name == "BatchNormalization" || name == "BatchNorm" || name == "Scale") {
      // Folded to a per-channel scale and bias: Mul + Add with small operands.
      vec_program("Mul", dtype, prog);
      vec_program("Add", dtype, prog);
      continue;
    }
    if (name == "BiasAdd") { vec_program("Add", dtype, prog); continue; }
    if (!is_elementwise(name))
      fail(attr + " op '" + name + "' is not an elementwise op; fusable ops: BatchNormalization, BiasAdd, " +
           [] { std::string s; for (auto& e : elementwise_ops()) s += (s.empty() ? "" : ", ") + e; return s; }());
    const int arity = vec_program(name, dtype, prog);
    if (arity >= 2) extra_per_elem += double(out_size) * (arity - 1);  // reads output-sized operands
  }
  return prog;
}

}  // namespace aoe::ascend::detail
