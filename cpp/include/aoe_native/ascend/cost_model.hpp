// Analytical cost model of one operator on one Ascend AI Core SoC.
//
// make_op_model() checks the operator description once and precomputes
// everything that does not depend on the tiling; OpModel::evaluate() is then
// pure arithmetic per tiling (millions per second), so the native tuner can
// search the operator's tiling space without Python.
//
// The model is a pipeline model of the AI Core queues (MTE2, MTE1, Cube,
// FixPipe, Vector, MTE3): double-buffered stages overlap (time = slowest
// stage), single-buffered stages serialise (times add).  Sources of every
// constant are cited next to it in the .cpp files and in
// python/aoe_native/data/socs.json.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aoe_native/ascend/platform.hpp"
#include "aoe_native/expr.hpp"
#include "aoe_native/objective.hpp"
#include "aoe_native/search_space.hpp"

namespace aoe::ascend {

// One operator instance.  `kind` may be an ONNX or Ascend name (see
// supported_ops()).  Integer and string attributes are kept apart; a scalar
// attribute is a one-element list.
struct OpDesc {
  std::string kind;
  std::vector<std::vector<int64_t>> inputs;
  std::string dtype = "float16";
  std::map<std::string, std::vector<int64_t>> int_attrs = {};    // integer attributes (strides, pads, group, ...)
  std::map<std::string, std::vector<std::string>> str_attrs = {};  // string ones (epilogue, out_dtype, auto_pad, to, mode)
  std::map<std::string, double> float_attrs = {};  // real ones the model reads (Exp's base, scale, shift)
};

// Where the time goes for one tiling.
struct Breakdown {
  double time_us = 0;
  // Busy time per pipe on the critical core (us), and fixed start costs.
  double mte2_us = 0, mte1_us = 0, cube_us = 0, fixpipe_us = 0, vector_us = 0, mte3_us = 0, head_us = 0;
  // Bytes moved, summed over cores: read from GM (L2 hits included), of
  // which served by HBM; written to GM; L1 -> L0A/L0B; through UB.
  double gm_read_bytes = 0, hbm_read_bytes = 0, gm_write_bytes = 0, l0_bytes = 0, ub_bytes = 0;
  double flops = 0;
  // Units of work paid per unit on the critical core (cube operators): GM -> L1
  // copies (each waits for L2 or HBM) and base-block iterations (scalar issue).
  double gm_copies = 0, base_blocks = 0;
  int cores_used = 0;
  int waves = 0;
  std::string bound;         // "compute", "memory" or "latency"
  double roofline_us = 0;    // lower bound for the operator on this SoC (any tiling)
};

// The tiling knobs of an operator: parameters, value lists, and restrictions
// in aoe::Expr syntax.  `restrictions` are hardware limits (every tiling that
// meets them runs); `pruning` only trims the searched space (a tiling that
// breaks a pruning rule is still accepted by estimate()).
struct TilingSpec {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> values;
  std::vector<std::string> restrictions;
  std::vector<std::string> pruning;
  std::vector<int64_t> baseline;  // what a compiler picks without tuning
  // How close `baseline` is to what CANN runs untuned: "CANN MatMulV3 default"
  // (MatMulV3's heuristic, matmul_v3.hpp) or "approximate CANN default" (a
  // stand-in: Conv2D's tiling on 910B is closed, vector ops use this model's rules).
  std::string baseline_kind = "approximate CANN default";
  // The Ascend C API-style default of a custom kernel (the cube's static split), where it
  // differs from `baseline` (MatMulV3's); empty: the same.  Measured custom-kernel cases
  // recorded without a tiling ran it (aoe_native.ascend.calibration).
  std::vector<int64_t> api_baseline;
  // Knobs added after tilings were first stored (bank entries, plans), with the
  // value that reproduces the model without them: a stored tiling lacking one
  // is read with this value (aoe_native.ascend.ops.complete_tiling).
  std::map<std::string, int64_t> added_defaults;
};

class OpModel {
 public:
  virtual ~OpModel() = default;
  const TilingSpec& spec() const { return spec_; }
  const std::string& kind() const { return kind_; }  // canonical op kind
  // Time in us of one tiling (values in spec().names order).  `out` may be
  // null (fast path).  The tiling is not checked here: see violation().
  virtual double evaluate(const int64_t* tiling, Breakdown* out) const = 0;
  double roofline_us() const { return roofline_us_; }
  // The searched tiling space: restrictions (hardware limits) plus pruning rules.
  SearchSpace space() const;
  // How violation() tests the restrictions; every way gives the same answer
  // (tests compare them row by row, benchmarks time them).
  enum class Check {
    Fast,       // holds_all() (native in the cube model), then Compiled to name the violated restriction
    Compiled,   // the restrictions' bytecode (Expr::eval)
    Reference,  // the restrictions' tree interpreter (Expr::eval_reference)
  };
  // Empty when the tiling meets every hardware restriction; otherwise names
  // the first violated restriction.
  std::string violation(const int64_t* tiling, Check how = Check::Fast) const;
  // The cheap part of violation(): every value positive (iterateOrder,
  // splitR, unitFlag and vcBlocks: non-negative) and within int32, as TCubeTiling's fields.  A tiling
  // that passes cannot make evaluate() divide by zero.
  std::string range_violation(const int64_t* tiling) const;
  // True when every restriction holds for a tiling that passed
  // range_violation().  A model may override it with native code equivalent
  // to its restriction strings (they stay the description users read); this
  // default runs their bytecode.
  virtual bool holds_all(const int64_t* tiling) const;

 protected:
  TilingSpec spec_;
  std::string kind_;
  double roofline_us_ = 0;
  void finish_spec();          // parses the restrictions (call at the end of a constructor)
  std::vector<Expr> checks_;   // spec_.restrictions, parsed
  std::vector<int64_t> min_value_;  // range_violation's lower bound per parameter (0 or 1)
};

// ---- operator vocabulary ------------------------------------------------------
// op_table() is the one list of the operators the model supports: what
// make_op_model() accepts and supported_ops(); Python reads it through
// _core.ascend.op_table() (to classify ONNX nodes, check attribute names).

// Norm, Quant, LlmElementwise: the LLM vector kernels of norm_quant.cpp (RmsNorm..., DynamicQuant...,
// SwiGlu and ApplyRotaryPosEmb: fused kernels with their own inputs, apart from ONNX's element-wise ops).
enum class OpFamily { MatMul, Conv, Elementwise, Rows, Transpose, Pool, Movement, Attention, Optimizer, Routing,
                      GroupedMatmul, Norm, Quant, LlmElementwise };
// "matmul", "conv", "elementwise", "rows", "transpose", "pool", "movement", "attention", "optimizer", "routing",
// "grouped_matmul", "norm", "quant", "llm_elementwise"
const char* family_name(OpFamily f);

struct OpEntry {
  std::string name;                  // canonical kind (the ONNX name), OpModel::kind()
  std::vector<std::string> aliases;  // other accepted names: ONNX ones first, then Ascend/TF ones
  OpFamily family;
  std::optional<int> operands;       // elementwise: tensor operands (1 unary, 2 binary, 3 Where); empty: n-ary or not elementwise
  bool any_attrs;                    // accepts any attribute (elementwise: alpha, approximate, ...; Exp reads base/scale/shift)
  std::vector<std::string> attrs;    // otherwise the attribute names it accepts
};

const std::vector<OpEntry>& op_table();
// The entry whose name or alias is `kind`; null if unsupported.
const OpEntry* find_op(const std::string& kind);

// Builds the model; throws std::invalid_argument with a precise message for
// unknown ops, unsupported dtypes, bad shapes or attributes.
std::shared_ptr<OpModel> make_op_model(const OpDesc& op, const Platform& platform);

// Accepted op type names (names and aliases of op_table()), sorted.
std::vector<std::string> supported_ops();

// ONNX auto_pad of a 2-D convolution of X (NCHW) by W (M, C/group, kH, kW) as explicit pads
// [top, left, bottom, right]: VALID none, SAME_UPPER the odd pixel at the end, SAME_LOWER at
// the beginning.  Conv's "auto_pad" attribute applies it; std::invalid_argument for other modes.
std::vector<int64_t> conv_auto_pads(const std::string& mode, const std::vector<int64_t>& x,
                                    const std::vector<int64_t>& w, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations);

// Evaluates configurations of a SearchSpace built from model->spec() with the
// cost model, natively (no Python, no GIL).
// The model's time of each tiling of `space` (parameters in the model's
// spec().names order).  With `check_tilings` (the default) a tiling that breaks
// a hardware restriction fails with the restriction's text; the model's own
// space() holds none, and a caller tuning it may pass false to skip the check.
class CostObjective : public Objective {
 public:
  explicit CostObjective(std::shared_ptr<const OpModel> model, bool check_tilings = true)
      : model_(std::move(model)), check_(check_tilings) {}
  void evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                std::string* errors) override;
  void check_space(const SearchSpace& space) const override;  // the model's parameters, in order
  size_t max_batch() const override { return 4096; }

 private:
  std::shared_ptr<const OpModel> model_;
  bool check_;
};

}  // namespace aoe::ascend
