// Op-type registry, tiling checks and the native objective.
#include "aoe_native/ascend/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common.hpp"

namespace aoe::ascend {

using namespace detail;

namespace {

enum class Family { MatMul, Conv, Elementwise, Rows, Transpose, Pool };

// Accepted names -> (canonical kind, family).  ONNX names first; Ascend/TF
// names as aliases.
const std::map<std::string, std::pair<std::string, Family>>& op_table() {
  static const std::map<std::string, std::pair<std::string, Family>> t = [] {
    std::map<std::string, std::pair<std::string, Family>> m = {
        {"MatMul", {"MatMul", Family::MatMul}},       {"MatMulV2", {"MatMul", Family::MatMul}},
        {"Gemm", {"Gemm", Family::MatMul}},           {"BatchMatMul", {"BatchMatMul", Family::MatMul}},
        {"BatchMatMulV2", {"BatchMatMul", Family::MatMul}},
        {"Conv", {"Conv", Family::Conv}},             {"Conv2D", {"Conv", Family::Conv}},
        {"ReduceSum", {"ReduceSum", Family::Rows}},   {"ReduceMean", {"ReduceMean", Family::Rows}},
        {"ReduceMax", {"ReduceMax", Family::Rows}},   {"ReduceMin", {"ReduceMin", Family::Rows}},
        {"ReduceSumD", {"ReduceSum", Family::Rows}},  {"ReduceMeanD", {"ReduceMean", Family::Rows}},
        {"ReduceMaxD", {"ReduceMax", Family::Rows}},
        {"Softmax", {"Softmax", Family::Rows}},       {"SoftmaxV2", {"Softmax", Family::Rows}},
        {"LayerNormalization", {"LayerNormalization", Family::Rows}},
        {"LayerNorm", {"LayerNormalization", Family::Rows}},
        {"Transpose", {"Transpose", Family::Transpose}}, {"TransposeD", {"Transpose", Family::Transpose}},
        {"MaxPool", {"MaxPool", Family::Pool}},       {"AveragePool", {"AveragePool", Family::Pool}},
        {"MaxPoolV3", {"MaxPool", Family::Pool}},     {"AvgPoolV2", {"AveragePool", Family::Pool}},
        {"FusedElementwise", {"FusedElementwise", Family::Elementwise}},
        {"RealDiv", {"Div", Family::Elementwise}},    {"Maximum", {"Max", Family::Elementwise}},
        {"Minimum", {"Min", Family::Elementwise}},    {"Square", {"Mul", Family::Elementwise}},
    };
    for (const auto& e : elementwise_ops()) m.emplace(e, std::make_pair(e, Family::Elementwise));
    return m;
  }();
  return t;
}

}  // namespace

std::vector<std::string> supported_ops() {
  std::vector<std::string> v;
  for (const auto& kv : op_table()) v.push_back(kv.first);
  return v;
}

std::shared_ptr<OpModel> make_op_model(const OpDesc& in, const Platform& platform) {
  auto it = op_table().find(in.kind);
  if (it == op_table().end()) {
    std::string v;
    for (const auto& n : supported_ops()) v += (v.empty() ? "" : ", ") + n;
    fail("unknown op type '" + in.kind + "'; supported: " + v);
  }
  OpDesc op = in;
  op.kind = it->second.first;
  op.dtype = canonical_dtype(in.dtype);
  if (op.dtype == "int32") fail(op.kind + ": int32 is an output dtype only; inputs may be float16, bfloat16, float32 or int8");
  // Square(x) = Mul(x, x): one operand.
  if (in.kind == "Square") op.inputs.push_back(op.inputs.empty() ? std::vector<int64_t>{} : op.inputs[0]);
  switch (it->second.second) {
    case Family::MatMul: return make_matmul_model(op, platform);
    case Family::Conv: return make_conv_model(op, platform);
    case Family::Elementwise: return make_elementwise_model(op, platform);
    case Family::Rows: return make_rows_model(op, platform);
    case Family::Transpose: return make_transpose_model(op, platform);
    case Family::Pool: return make_pool_model(op, platform);
  }
  fail("internal: unhandled op family");
}

void OpModel::finish_spec() {
  checks_.clear();
  for (const auto& r : spec_.restrictions) checks_.emplace_back(r, spec_.names);
  if (!spec_.baseline.empty() && !violation(spec_.baseline.data()).empty())
    throw std::logic_error("internal: baseline tiling of " + kind_ + " violates " + violation(spec_.baseline.data()));
}

std::string OpModel::violation(const int64_t* tiling) const {
  for (size_t p = 0; p < spec_.names.size(); ++p)
    if (tiling[p] <= 0 && spec_.names[p] != "iterateOrder" && spec_.names[p] != "splitR")
      return spec_.names[p] + " > 0";
  for (const auto& e : checks_)
    if (!e.holds(tiling)) return e.text();
  return {};
}

void CostObjective::evaluate(const SearchSpace& space, const ConfigId* ids, size_t n, double* out,
                             std::string* /*errors*/) {
  const size_t np = space.num_params();
  int64_t buf[32];
  if (np > 32) throw std::logic_error("CostObjective: too many parameters");
  for (size_t i = 0; i < n; ++i) {
    space.values(ids[i], buf);
    out[i] = model_->evaluate(buf, nullptr);
  }
}

}  // namespace aoe::ascend
