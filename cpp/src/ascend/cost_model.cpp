// Op-type registry, tiling checks and the native objective.
#include "aoe_native/ascend/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common.hpp"

namespace aoe::ascend {

using namespace detail;

namespace {

const std::vector<std::string> kCubeAttrs = {"epilogue", "out_dtype", "bias", "relu", "mix_ratio", "workspace_slots",
                                             "nonuniform_split"};
const std::vector<std::string> kReduceAttrs = {"axes", "keepdims", "noop_with_empty_axes", "prologue", "epilogue"};
// Data-movement ops: the front-end resolves the sizes ONNX gives as tensors (Slice
// starts/ends, Pad pads, Expand shape, Resize scales, Tile repeats) into the output shape.
OpEntry movement(std::string name, std::vector<std::string> aliases, std::vector<std::string> attrs) {
  attrs.insert(attrs.begin(), {"output_shape", "axis"});
  return {std::move(name), std::move(aliases), OpFamily::Movement, std::nullopt, false, std::move(attrs)};
}

OpEntry op(std::string name, std::vector<std::string> aliases, OpFamily family, std::vector<std::string> attrs) {
  return {std::move(name), std::move(aliases), family, std::nullopt, false, std::move(attrs)};
}
// Cube ops share the epilogue/output attributes.
OpEntry cube(std::string name, std::vector<std::string> aliases, OpFamily family, std::vector<std::string> attrs) {
  attrs.insert(attrs.begin(), kCubeAttrs.begin(), kCubeAttrs.end());
  return op(std::move(name), std::move(aliases), family, std::move(attrs));
}
OpEntry elementwise(std::string name, int operands, std::vector<std::string> aliases = {}) {
  return {std::move(name), std::move(aliases), OpFamily::Elementwise, operands, true, {}};
}

}  // namespace

const char* family_name(OpFamily f) {
  switch (f) {
    case OpFamily::MatMul: return "matmul";
    case OpFamily::Conv: return "conv";
    case OpFamily::Elementwise: return "elementwise";
    case OpFamily::Rows: return "rows";
    case OpFamily::Transpose: return "transpose";
    case OpFamily::Pool: return "pool";
    case OpFamily::Movement: return "movement";
    case OpFamily::Attention: return "attention";
    case OpFamily::Optimizer: return "optimizer";
    case OpFamily::Routing: return "routing";
    case OpFamily::GroupedMatmul: return "grouped_matmul";
    case OpFamily::Norm: return "norm";
    case OpFamily::Quant: return "quant";
    case OpFamily::LlmElementwise: return "llm_elementwise";
  }
  return "?";
}

// Attribute lists: what each op reads, plus the ONNX attributes it accepts
// because the model derives them itself (noop_with_empty_axes, stash_type) or
// they do not change the cost (alpha, beta, epsilon).  Listing them lets a
// misspelt "stride" be refused instead of ignored.
const std::vector<OpEntry>& op_table() {
  using F = OpFamily;
  static const std::vector<OpEntry> t = {
      // CANN kernel names (MatMulV3, StridedSliceV3, GatherElementsV2, ...) are aliases:
      // aoe_native.predict_record reads CANN's benchmark records through them.
      cube("MatMul", {"MatMulV2", "MatMulV3"}, F::MatMul, {"transpose_a", "transpose_b"}),
      cube("BatchMatMul", {"BatchMatMulV2"}, F::MatMul, {"transpose_a", "transpose_b"}),
      cube("Gemm", {}, F::MatMul, {"alpha", "beta", "transA", "transB"}),
      // The LLM matmuls (qmm49, grouped_quant_matmul.cpp; input order in docs/llm_operators.md).
      cube("WeightQuantBatchMatmul", {"WeightQuantBatchMatmulV2"}, F::MatMul,
           {"input_dtypes", "weight_dtype", "antiquant_group_size", "transpose_x", "transpose_weight"}),
      cube("QuantBatchMatmulV3", {"QuantBatchMatmul"}, F::MatMul,
           {"input_dtypes", "output_dtype", "transpose_x1", "transpose_x2"}),
      op("GroupedMatmul", {}, F::GroupedMatmul,
         {"group_list", "group_list_type", "group_type", "transpose_weight", "split_item", "input_dtypes"}),
      cube("Conv", {"Conv2D"}, F::Conv, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}),
      op("ReduceSum", {"ReduceSumD"}, F::Rows, kReduceAttrs),
      op("ReduceMean", {"ReduceMeanD"}, F::Rows, kReduceAttrs),
      op("ReduceMax", {"ReduceMaxD"}, F::Rows, kReduceAttrs),
      op("ReduceMin", {}, F::Rows, kReduceAttrs),
      op("Softmax", {"SoftmaxV2"}, F::Rows, {"axis", "prologue", "epilogue"}),
      op("LayerNormalization", {"LayerNorm"}, F::Rows, {"axis", "epsilon", "stash_type", "prologue", "epilogue"}),
      op("Transpose", {"TransposeD"}, F::Transpose, {"perm"}),
      op("MaxPool", {"MaxPoolV3"}, F::Pool,
         {"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "storage_order", "prologue", "epilogue"}),
      op("AveragePool", {"AvgPoolV2"}, F::Pool,
         {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad", "prologue", "epilogue"}),
      // Local response normalization: a window along the channels (vector.cpp, make_lrn_model).
      op("LRN", {}, F::Pool, {"size", "alpha", "beta", "bias", "prologue", "epilogue"}),
      // Data movement on the vector cores (vector.cpp, make_movement_model).
      movement("Concat", {"ConcatD", "ConcatV2"}, {}),
      movement("Split", {"SplitD", "SplitV"}, {"split", "num_outputs"}),
      movement("Slice", {"StridedSlice", "StridedSliceD", "StridedSliceV3"}, {"steps"}),
      movement("Gather", {"GatherV2"}, {"batch_dims"}),
      movement("GatherElements", {"GatherElementsV2"}, {}),
      movement("Pad", {"PadD", "PadV3"}, {"mode"}),
      movement("Expand", {"BroadcastTo"}, {}),
      movement("Tile", {"TileD"}, {}),
      movement("Resize", {"ResizeNearestNeighborV2", "ResizeBilinearV2"},
               {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"}),
      movement("DepthToSpace", {}, {"blocksize", "mode"}),
      movement("SpaceToDepth", {}, {"blocksize"}),
      // A chain of elementwise ops run as one kernel (attrs: "ops" in order, "to" for a Cast).
      {"FusedElementwise", {}, F::Elementwise, std::nullopt, true, {}},
      // One entry per vector recipe in common.cpp (checked there).  Square(x)
      // is Mul(x, x): make_op_model repeats its one operand.  Exp takes CANN's base, scale and
      // shift (float attributes; vector.cpp exp_scalar_apis checks them and adds their instructions).
      elementwise("Add", 2), elementwise("Sub", 2), elementwise("Mul", 2, {"Square"}),
      elementwise("Div", 2, {"RealDiv"}), elementwise("Max", 2, {"Maximum"}), elementwise("Min", 2, {"Minimum"}),
      elementwise("Pow", 2), elementwise("Equal", 2), elementwise("Greater", 2), elementwise("Less", 2),
      elementwise("Relu", 1), elementwise("LeakyRelu", 1), elementwise("Abs", 1), elementwise("Neg", 1),
      elementwise("Exp", 1), elementwise("Log", 1), elementwise("Sqrt", 1), elementwise("Reciprocal", 1),
      elementwise("Rsqrt", 1), elementwise("Sigmoid", 1), elementwise("Tanh", 1), elementwise("Erf", 1),
      elementwise("Gelu", 1), elementwise("Silu", 1), elementwise("HardSwish", 1), elementwise("Clip", 1),
      elementwise("Identity", 1), elementwise("Dropout", 1), elementwise("Floor", 1), elementwise("Ceil", 1),
      elementwise("Round", 1), elementwise("Sign", 1), elementwise("Softplus", 1), elementwise("Mish", 1),
      elementwise("Cast", 1), elementwise("HardSigmoid", 1), elementwise("IsNaN", 1), elementwise("IsInf", 1),
      elementwise("Not", 1), elementwise("Elu", 1), elementwise("Selu", 1), elementwise("Softsign", 1),
      elementwise("And", 2), elementwise("Or", 2), elementwise("Xor", 2), elementwise("GreaterOrEqual", 2),
      elementwise("LessOrEqual", 2), elementwise("PRelu", 2), elementwise("Mod", 2),
      elementwise("Where", 3, {"Select", "SelectV2"}),
      // LLM attention (attention.cpp; issue 49).  Inputs in aclnn order: query, key, value, then
      // atten_mask (FusedInferAttentionScore) or sparse_indices (SparseFlashAttention).
      op("FusedInferAttentionScore", {"PromptFlashAttention", "IncreFlashAttention"}, F::Attention,
         {"input_layout", "num_heads", "num_key_value_heads", "causal", "actual_seq_lengths",
          "actual_seq_lengths_kv"}),
      op("SparseFlashAttention", {}, F::Attention, {"input_layout", "num_heads", "num_key_value_heads", "causal"}),
      op("MlaProlog", {}, F::Attention, {"num_heads"}),
      // ---- issue 49, optimizer and MoE routing kernels (optimizer.cpp, moe_routing.cpp) ----
      // Foreach inputs are lists of tensors flattened list after list; tensor_count is a list's length.
      op("ForeachAddcdivScalar", {}, F::Optimizer, {"tensor_count"}),
      op("ForeachNorm", {}, F::Optimizer, {"tensor_count", "norm_type"}),
      op("ApplyAdamW", {}, F::Optimizer, {"amsgrad", "maximize"}),
      op("Gcd", {}, F::Optimizer, {"iterations"}),
      op("MoeGatingTopKSoftmax", {}, F::Routing, {"k", "input_dtypes"}),
      op("MoeInitRouting", {"MoeInitRoutingV2"}, F::Routing,
         {"expert_num", "active_num", "expert_capacity", "drop_pad_mode", "expert_tokens_count_or_cumsum_flag",
          "expert_tokens_before_capacity_flag", "input_dtypes"}),
      op("MoeReRouting", {}, F::Routing, {"expert_token_num_type", "idx_type", "input_dtypes"}),
      op("MoeFinalizeRouting", {"MoeFinalizeRoutingV2"}, F::Routing, {"drop_pad_mode", "input_dtypes"}),
      op("MhcSinkhorn", {}, F::Routing, {"iter_step"}),
      // ---- end of issue 49 optimizer/routing block ----
      // ---- LLM vector kernels (norm_quant.cpp), CANN's names and aclnn input order (docs/llm_operators.md).
      op("RmsNorm", {}, F::Norm, {"epsilon", "input_dtypes"}),
      op("AddRmsNorm", {}, F::Norm, {"epsilon", "input_dtypes"}),
      op("AddRmsNormDynamicQuant", {}, F::Norm, {"epsilon", "input_dtypes", "output_dtype"}),
      op("GroupNorm", {}, F::Norm, {"num_groups", "epsilon", "input_dtypes"}),
      op("GroupNormSilu", {}, F::Norm, {"num_groups", "epsilon", "activate_silu", "input_dtypes"}),
      op("DynamicQuant", {}, F::Quant, {"input_dtypes", "output_dtype"}),
      op("DequantSwigluQuant", {}, F::Quant, {"activate_left", "input_dtypes", "output_dtype", "quant_mode"}),
      op("SwiGlu", {}, F::LlmElementwise, {"dim"}),
      op("ApplyRotaryPosEmb", {}, F::LlmElementwise, {"input_layout", "rotary_mode"}),
  };
  return t;
}

const OpEntry* find_op(const std::string& kind) {
  static const std::map<std::string, const OpEntry*> by_name = [] {
    std::map<std::string, const OpEntry*> m;
    auto add = [&](const std::string& n, const OpEntry& e) {
      if (!m.emplace(n, &e).second) throw std::logic_error("internal: op name " + n + " listed twice");
    };
    for (const auto& e : op_table()) {
      add(e.name, e);
      for (const auto& a : e.aliases) add(a, e);
    }
    return m;
  }();
  auto it = by_name.find(kind);
  return it == by_name.end() ? nullptr : it->second;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> v;
  for (const auto& e : op_table()) {
    v.push_back(e.name);
    v.insert(v.end(), e.aliases.begin(), e.aliases.end());
  }
  std::sort(v.begin(), v.end());
  return v;
}

std::shared_ptr<OpModel> make_op_model(const OpDesc& in, const Platform& platform) {
  const OpEntry* entry = find_op(in.kind);
  if (!entry) {
    std::string v;
    for (const auto& n : supported_ops()) v += (v.empty() ? "" : ", ") + n;
    fail("unknown op type '" + in.kind + "'; supported: " + v);
  }
  check_platform(platform, "platform '" + platform.name + "'");  // a hand-filled one too: no division by 0 later
  if (!entry->any_attrs) {
    std::set<std::string> unknown;
    auto note = [&](const auto& attrs) {
      for (const auto& a : attrs)
        if (std::find(entry->attrs.begin(), entry->attrs.end(), a.first) == entry->attrs.end()) unknown.insert(a.first);
    };
    note(in.int_attrs);
    note(in.str_attrs);
    if (!unknown.empty()) {
      std::string names, accepted;
      for (const auto& n : unknown) names += (names.empty() ? "'" : ", '") + n + "'";
      std::vector<std::string> sorted_attrs = entry->attrs;
      std::sort(sorted_attrs.begin(), sorted_attrs.end());
      for (const auto& n : sorted_attrs) accepted += (accepted.empty() ? "" : ", ") + n;
      fail(in.kind + ": unknown attribute(s) " + names + "; " + in.kind + " accepts " + accepted);
    }
  }
  // Attribute kinds: a value in the wrong map would otherwise be ignored (Cast's "to" given as
  // ONNX's integer code, "strides" as strings).
  // input_dtypes: one per input ("" for an absent optional one) where an operator mixes them
  // (quantised matmuls: int8/int4 weights beside float16/bfloat16 activations).
  static const std::set<std::string> kStringAttrs = {"auto_pad",     "epilogue",     "mode",        "ops",
                                                     "out_dtype",    "prologue",     "to",          "input_layout",
                                                     "input_dtypes", "output_dtype", "weight_dtype", "rotary_mode",
                                                     "quant_mode"};
  for (const auto& [name, values] : in.int_attrs)
    if (kStringAttrs.count(name))
      fail(in.kind + ": attribute '" + name + "' takes strings (str_attrs), got integers " + detail::shape_str(values));
  for (const auto& [name, values] : in.str_attrs)
    if (!kStringAttrs.count(name) &&
        std::find(entry->attrs.begin(), entry->attrs.end(), name) != entry->attrs.end())
      fail(in.kind + ": attribute '" + name + "' takes integers (int_attrs), got strings");
  OpDesc op = in;
  op.kind = entry->name;
  op.dtype = canonical_dtype(in.dtype);
  check_op_limits(op, platform);
  // The cube takes float and int8 inputs; vector kernels any dtype their SoC's vector_dtypes list.
  if ((entry->family == OpFamily::MatMul || entry->family == OpFamily::Conv) && is_integer_dtype(op.dtype) &&
      op.dtype != "int8")
    fail(op.kind + ": " + op.dtype + " is an output dtype only; inputs may be float16, bfloat16, float32 or int8");
  // Square(x) = Mul(x, x): one operand.
  if (in.kind == "Square") op.inputs.push_back(op.inputs.empty() ? std::vector<int64_t>{} : op.inputs[0]);
  switch (entry->family) {
    case OpFamily::MatMul:
      if (op.kind == "WeightQuantBatchMatmul") return make_weight_quant_matmul_model(op, platform);
      if (op.kind == "QuantBatchMatmulV3") return make_quant_matmul_model(op, platform);
      return make_matmul_model(op, platform);
    case OpFamily::GroupedMatmul: return make_grouped_matmul_model(op, platform);
    case OpFamily::Conv: return make_conv_model(op, platform);
    case OpFamily::Elementwise: return make_elementwise_model(op, platform);
    case OpFamily::Rows: return make_rows_model(op, platform);
    case OpFamily::Transpose: return make_transpose_model(op, platform);
    case OpFamily::Pool: return make_pool_model(op, platform);
    case OpFamily::Movement: return make_movement_model(op, platform);
    case OpFamily::Attention: return make_attention_model(op, platform);
    case OpFamily::Optimizer: return make_optimizer_model(op, platform);
    case OpFamily::Routing: return make_routing_model(op, platform);
    case OpFamily::Norm:
    case OpFamily::Quant:
    case OpFamily::LlmElementwise: return make_norm_quant_model(op, platform);
  }
  fail("internal: unhandled op family");
}

void OpModel::finish_spec() {
  checks_.clear();
  for (const auto& r : spec_.restrictions) checks_.emplace_back(r, spec_.names);
  min_value_.clear();
  // Knobs whose "off" is 0 (TCubeTiling's iterateOrder and the switches this model adds).
  static const std::set<std::string> zero_ok = {"iterateOrder", "splitR", "unitFlag", "kReorderLoad", "vcBlocks",
                                                "dispatch", "l2IterateOrder", "tilingEnable", "gqaPack"};
  for (const auto& n : spec_.names) min_value_.push_back(zero_ok.count(n) ? 0 : 1);
  // The default tiling shrinks to the platform's buffers; if even the smallest does not fit,
  // the platform (a user's, the built-in ones are tested) is too small for this operator.
  if (!spec_.baseline.empty() && !violation(spec_.baseline.data()).empty())
    fail(kind_ + ": even the smallest default tiling does not fit this platform's buffers (it violates " +
         violation(spec_.baseline.data()) + "); check the platform's L0/L1/UB sizes");
}

SearchSpace OpModel::space() const {
  std::vector<std::string> checks = spec_.restrictions;
  checks.insert(checks.end(), spec_.pruning.begin(), spec_.pruning.end());
  return SearchSpace(spec_.names, spec_.values, checks);
}

bool OpModel::holds_all(const int64_t* tiling) const {
  for (const auto& e : checks_)
    if (!e.holds(tiling)) return false;
  return true;
}

std::string OpModel::violation(const int64_t* tiling, Check how) const {
  std::string bad = range_violation(tiling);
  if (!bad.empty()) return bad;
  if (how == Check::Fast && holds_all(tiling)) return {};
  for (const auto& e : checks_)
    if (!(how == Check::Reference ? e.holds_reference(tiling) : e.holds(tiling))) return e.text();
  if (how == Check::Fast) throw std::logic_error("internal: the native restriction check of " + kind_ +
                                                 " refuses a tiling that meets every restriction");
  return {};
}

std::string OpModel::range_violation(const int64_t* tiling) const {
  // One branch-free pass for the common case (every row of estimate_batch), then the name.
  const size_t np = min_value_.size();
  bool bad = false;
  for (size_t p = 0; p < np; ++p) bad |= (tiling[p] < min_value_[p]) | (tiling[p] > kMaxInt32);
  if (!bad) return {};
  for (size_t p = 0; p < np; ++p) {
    if (tiling[p] < min_value_[p]) return spec_.names[p] + (min_value_[p] ? " > 0" : " >= 0");
    if (tiling[p] > kMaxInt32) return spec_.names[p] + " <= " + std::to_string(kMaxInt32);
  }
  return {};
}

void CostObjective::check_space(const SearchSpace& space) const {
  const auto& names = model_->spec().names;
  if (space.param_names() != names) {
    std::string want;
    for (const auto& n : names) want += (want.empty() ? "" : ", ") + n;
    throw std::invalid_argument("CostObjective: the space has " + std::to_string(space.num_params()) +
                                " parameters, the " + model_->kind() + " model's tilings " +
                                std::to_string(names.size()) + " (" + want + ", in this order; use the model's space())");
  }
  if (names.size() > 32) throw std::logic_error("CostObjective: too many parameters");
}

void CostObjective::evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                             std::string* errors) {
  int64_t buf[32];
  check_space(space);  // (tune() checked it; a direct call has not)
  for (size_t i = 0; i < n; ++i) {
    space.values(ids[i], buf);
    if (check_) {  // a space of one's own may hold tilings the hardware refuses (or that divide by 0)
      std::string bad = model_->violation(buf);
      if (!bad.empty()) {
        out[i] = std::numeric_limits<double>::quiet_NaN();
        errors[i] = model_->kind() + " tiling violates " + bad;
        continue;
      }
    }
    out[i] = model_->evaluate(buf, nullptr);
  }
}

}  // namespace aoe::ascend
