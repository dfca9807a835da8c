// The LLM matmuls of CANN (issue 49): GroupedMatmul (MoE experts), WeightQuantBatchMatmul
// (W8A16 / W4A16) and QuantBatchMatmulV3 (W8A8).  Each is cube.cpp's MatMul model plus what
// the kernel adds, so the MatMul tiling knobs and the memory/pipe model are shared:
// - QuantBatchMatmulV3: an int8 x int8 GEMM (int32 in L0C) whose per-channel / per-tensor
//   dequantisation rides on FixPipe on the way out; a per-token scale is applied on the vector
//   cores, which read the int32 tile back ([O] ops-nn matmul/quant_batch_matmul_v3: the pertoken
//   kernels are MIX AIC+AIV kernels).
// - WeightQuantBatchMatmul: an fp16/bf16 GEMM whose weight sits in GM as int8 / int4; the vector
//   cores antiquantise each weight copy, (w + offset) * scale, before the cube reads it.  On
//   C220 (910B/910C, split cores, no UB -> L1 path) the converted copy goes through a GM
//   workspace ([O] ops-nn matmul/weight_quant_batch_matmul_v2/op_kernel: the __CCE_AICORE__ ==
//   220 "custom" kernel); on 950 (arch35) it is converted in the vector registers on its way
//   ([O] .../op_kernel/arch35/weight_quant_batch_matmul_v2_reg_base.h).
// - GroupedMatmul: one GEMM per expert over its rows of x (group_list), one tiling for every
//   group (the kernel's sizes are runtime values), the base blocks of all groups dealt over the
//   cores ([O] ops-transformer gmm/grouped_matmul/op_kernel: the block index carries on
//   from group to group).
// [O]: CANN's open operator sources, hicann/ops-nn and hicann/ops-transformer (master, 2025).
// [O2]: the same ops-transformer as mirrored at repo-mirror-test/ops-transformer@bfbbec8 (Dec 2025,
// with the arch35 GroupedMatmul the hicann mirror lacks).
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

bool present(const OpDesc& op, size_t i) { return i < op.inputs.size() && !op.inputs[i].empty(); }

// A dtype name with aliases resolved; int4 (packed weights only) is known here, not to the vector ops.
std::string canon(const std::string& d) { return d == "int4" ? d : canonical_dtype(d); }

// The dtype of input i: the "input_dtypes" attribute (one per input, "" for an absent one) or `dflt`.
std::string input_dtype(const OpDesc& op, size_t i, const std::string& dflt) {
  const auto d = attr_strs(op, "input_dtypes");
  if (d.empty()) return dflt;
  if (d.size() != op.inputs.size())
    fail(op.kind + ": input_dtypes lists " + std::to_string(d.size()) + " dtypes for " +
         std::to_string(op.inputs.size()) + " inputs (one per input, \"\" for an absent one)");
  return i < d.size() && !d[i].empty() ? canon(d[i]) : dflt;
}

void need_rank(const OpDesc& op, size_t i, size_t rank, const std::string& name) {
  if (!present(op, i)) fail(op.kind + ": input " + std::to_string(i) + " (" + name + ") is required");
  check_shape(op.inputs[i], op.kind + " input " + name);
  if (op.inputs[i].size() != rank)
    fail(op.kind + ": " + name + " must be " + std::to_string(rank) + "-D, got " + shape_str(op.inputs[i]));
}

// The MatMul a grouped or quantised matmul runs, with the cube attributes it passes on.
OpDesc inner_matmul(const OpDesc& op, std::vector<std::vector<int64_t>> inputs, const std::string& dtype,
                    bool trans_a, bool trans_b) {
  OpDesc mm{op.kind, std::move(inputs), dtype, {}, {}};  // (errors of the MatMul then name the operator)
  for (const char* a : {"mix_ratio", "workspace_slots", "nonuniform_split", "relu"})
    if (op.int_attrs.count(a)) mm.int_attrs[a] = op.int_attrs.at(a);
  if (op.str_attrs.count("epilogue")) mm.str_attrs["epilogue"] = op.str_attrs.at("epilogue");
  mm.int_attrs["transpose_a"] = {trans_a ? 1 : 0};
  mm.int_attrs["transpose_b"] = {trans_b ? 1 : 0};
  return mm;
}

// (w + offset) * scale per weight element on the vector cores: int4 unpacks to int8 first,
// int8 casts to fp16; bf16 runs the arithmetic in fp32 (no bf16 vector ALU on C220: [A] the
// vector instructions' dtypes) and casts down.
std::vector<VecStep> antiquant_program(const std::string& act, bool int4, bool offset) {
  std::vector<VecStep> v;
  if (int4) v.push_back({vec_api_cost("CastUp"), false});
  v.push_back({vec_api_cost("CastUp"), false});
  const bool fp32 = act == "bfloat16";
  if (fp32) v.push_back({vec_api_cost("CastUp"), false});
  if (offset) v.push_back({vec_api_cost("Add"), fp32});
  v.push_back({vec_api_cost("Mul"), fp32});
  if (fp32) v.push_back({vec_api_cost("CastDown"), false});
  return v;
}

// ---- WeightQuantBatchMatmul on C220 (910B/910C): the MSD kernel ----------------------------------
// What C220's registry chooses WeightQuantBatchMatmul's template and tiles by, once
// make_weight_quant_matmul_model has checked the inputs: x [M, K], weight [K, N] ([N, K] with trans_w),
// the antiquant group size g (0: per channel or per tensor), an int4 weight, transpositions, an int8 output.
struct WqbmmCase {
  int64_t M, K, N, g;
  bool int4, trans_x, trans_w, quant_out;
};

// Per-channel int8 weights at M <= 64 run the MSD ("multi-scale dequant") template first in CANN's
// 910B registry ([O] ops-nn matmul/weight_quant_batch_matmul_v2/op_host/op_tiling/
// weight_quant_batch_matmul_v2_tiling_registry.cpp: SplitK (bf16 white list only), MsdGroup (int4
// per group), Msd, ..., Custom; weight_quant_batch_matmul_v2_tiling_msd.cpp IsCapable): the AIVs
// split each row of x into two int8 slices (EXPAND_FACTOR_1 / _2: 127.5 and 2 x 127.5^2), the AICs multiply
// the [2M, K] int8 slices by the int8 weight as it sits in GM (no antiquantised copy), int32 out
// to a workspace, and after the core's GEMM its AIVs combine the two slices with the row maxima,
// the offset (times the row sums) and the scale ([O] .../op_kernel/
// weight_quant_batch_matmul_v2_msd_multicore.h Process; _msd_split_k.h for K in blocks).
// Returns the K blocks of its split (1: none), or 0 when the template does not take the case.
int64_t msd_k_blocks(const OpDesc& op, const WqbmmCase& c) {
  const auto& [M, K, N, group, int4, trans_x, trans_w, quant_out] = c;
  // IsCapable: per channel (scale [N]), no transposed x, no int8 output, M <= 64, K and N multiples
  // of 32; an int4 weight only transposed ([N, K]) and with N >= 2M, always split-K (splitKFlag_).
  const bool per_channel = group == 0 && numel(op.inputs[2]) == N && N > 1;
  // Per group: an int4 K x N weight, group 64 or 128, M <= group / 8, K in whole groups, N a multiple of
  // 64, always split-K (DoMSDGroupSplitKOpTiling: its K blocks only split the AIVs' preprocessing of x,
  // each AIC runs all of K for its share of taskNSize columns: one block here).
  if (group > 0) {
    const bool ok = !trans_x && !quant_out && int4 && !trans_w && (group == 64 || group == 128) && M <= group / 8 &&
                    K % group == 0 && N % 64 == 0;
    return ok ? 1 : 0;
  }
  if (!per_channel || trans_x || quant_out || M > 64 || K % 32 || N % 32) return 0;
  if (int4 && (!trans_w || N < 2 * M)) return 0;
  // int8 with K over 13696 or N over 32000, and int4: the split-K variant (DoMSDGeneralOpTiling): K in
  // 1..6 blocks (4 up when K is 30x N and the weight not transposed), each at most 12 Ki of K, aligned
  // to 64 (SplitKByKBlock: 512 with a transposed weight, 1024 for int4).
  if (!int4 && K <= 13696 && N <= 32000) return 1;
  for (int64_t blocks = (K / N >= 30 && !trans_w) ? 4 : 1; blocks <= 6; ++blocks)
    if (align_up(cdiv(K, blocks), !trans_w ? 64 : int4 ? 1024 : 512) <= 12 * 1024) return blocks;
  return 0;  // (the tiler fails it; the next template takes the case)
}

// The MsdGroup template, first after the bf16 SplitK white list in the 910B registry ([O] ops-nn
// matmul/weight_quant_batch_matmul_v2/op_host/op_tiling/weight_quant_batch_matmul_v2_tiling_msd_group.cpp
// IsCapable, CheckL1Size, DoOpTiling): per group (64, or 128 for int4), no transposition nor int8 output,
// M <= group / 8, K <= 13952 in whole groups, N <= 2048 per AIC and a multiple of 64; int8 only on its
// white list (JYXC shapes), int4 when A (4M rows padded to 32, the core's K) and B's two group buffers
// of 2048 columns fit L1.  The cores: ceil(N / 2048) along N, the rest along K in blocks of whole
// groups.  Returns the K blocks (cubeBlockDimK), or 0 when the template does not take the case.
int64_t msd_group_k_blocks(const WqbmmCase& c, const Platform& p) {
  const auto& [M, K, N, g, int4, trans_x, trans_w, quant_out] = c;
  const bool group_ok = int4 ? (g == 64 || g == 128) : g == 64;
  if (!group_ok || trans_x || trans_w || quant_out) return 0;
  const int64_t aic = p.cube_cores;
  if (M > g / 8 || K > 13952 || N > aic * 2048 || K % g || N % 64) return 0;
  const int64_t dim_n = cdiv(N, 2048), single_k = align_up(cdiv(K, aic / dim_n), g);
  if (int4) {
    if (single_k * align_up(4 * M, 32) / 2 + 2 * 2048 * g / 2 > int64_t(p.l1)) return 0;
  } else {
    static const std::vector<std::pair<int64_t, int64_t>> white{{12288, 1792}, {12288, 7808}, {3904, 12288},
                                                                {1536, 12288}};  // MSD_GROUP_WHITE_LIST (K, N)
    if (std::find(white.begin(), white.end(), std::make_pair(K, N)) == white.end()) return 0;
  }
  return cdiv(K, single_k);
}

// The MSD kernel as a cube model: the int8 GEMM [2M, K] x [K, N] (int32 out) and the AIVs' combine of
// each int32 element pair (cast, scale by 1/127^k, add, times the row maximum and the scale: about four
// vector ops per int32 element), after the GEMM.  The split of x (M x K) is not charged: the kernel
// preloads up to three weight copies into L1 meanwhile.  Split-K tasks take N in slabs that keep the
// K blocks' int32 partials within 16 MiB of workspace, at most 128 columns per AIV (taskNSize).
// An int4 weight takes three int4 slices of x (order_ 3, [O] .../weight_quant_batch_matmul_v2_tiling_msd.cpp
// IsCapable): an int4 GEMM [3M, K], priced as the int8 GEMM [3M, K/2] of the same bytes and cube cycles
// (int4's fractal holds 64 of K: twice int8's 32).
// Per group (g > 0) each group's partials are combined on their own: the MsdGroup template (`msd_group`:
// 2048 columns per core, K over msd_k_blocks cores) or MSD's per-group split-K (taskNSize = 128 columns
// per AIV, DoMSDGroupSplitKOpTiling; its all-core sync per group pack of 1024 along K is not charged).
std::shared_ptr<OpModel> make_msd_model(const OpDesc& op, const Platform& p, const WqbmmCase& c, int64_t blocks,
                                        bool msd_group) {
  const auto& [M, K, N, g, int4, trans_x, trans_w, quant_out] = c;
  const int64_t order = int4 ? 3 : 2, Kb = int4 ? K / 2 : K;
  const std::vector<int64_t> w = trans_w ? std::vector<int64_t>{N, Kb} : std::vector<int64_t>{Kb, N};
  OpDesc mm = inner_matmul(op, {{order * M, Kb}, w}, "int8", false, trans_w);
  CubeQuant cq;
  cq.msd_k_blocks = blocks;
  cq.msd_group = int4 ? g / 2 : g;  // (int4's K priced as int8's half)
  if (msd_group) {
    cq.msd_single_n = 2048;  // MSD_GROUP_CUBE_BASE_BLOCK
  } else if (g > 0) {
    cq.msd_task_n = 128LL * p.vector_cores;
  } else if (blocks > 1 || int4) {
    const int64_t slab = 16LL * 1024 * 1024 / (blocks * order * M * 4) / 256 * 256;
    cq.msd_task_n = std::min<int64_t>(slab, 128LL * p.vector_cores);
  }
  const int ds = dtype_size(op.dtype);
  cq.extra_bytes = double(M) * K * ds + double(numel(op.inputs[2])) * (present(op, 3) ? 2 : 1) * ds +
                   (present(op, 6) ? double(N) * dtype_size(input_dtype(op, 6, op.dtype)) : 0);  // the combine adds the bias
  cq.dequant = {{vec_api_cost("CastUp"), false}, {vec_api_cost("Mul"), true}, {vec_api_cost("Add"), true},
                {vec_api_cost("Mul"), true}};
  // Per group, per partial: cast, Muls / Axpy by 1/127^k, and per output row element the scale, the row
  // maximum and the running sum (msd_group.h ProcessMatmulResult, ProcessVector4MaxScale): 1 per partial.
  if (g > 0) cq.dequant = {{vec_api_cost("CastUp"), false}, {vec_api_cost("Mul"), true}, {vec_api_cost("Mul"), true}};
  return make_quant_cube_model(mm, p, cq, op.kind);
}

// The antiquant tile (vecSingleK, vecSingleN) of C220's custom kernel for an ND weight ([O] ops-nn
// matmul/weight_quant_batch_matmul_v2/op_host/op_tiling/weight_quant_batch_matmul_v2_tiling_custom.cpp
// ComputeDefaultBlock, ComputeGroupDefaultBlock, ComputeInt8VectorDefaultBlock, ComputeInt4VectorDefaultBlock).
// Per-channel int8: a fixed tile per dtype and transposition.  int4 or per group: the inner axis fixed
// (1024 along K transposed; min(1024 int4 / 512 int8, slab) along N otherwise, the slab taken as all of N),
// the outer axis the largest whose buffers fit UB (ComputeAntiquantBuffer + ComputeWeightBuffer, which
// size elements by sizeof of the dtype enum: 4 bytes), then aligned to the group (ReviseGroupDefaultBlock*,
// the main cases).  Capped at the aligned K and N.
std::pair<int64_t, int64_t> custom_vec_tile(const WqbmmCase& c, bool bf16, int64_t ub) {
  const auto& [M, K, N, g, int4, trans_x, trans_w, quant_out] = c;
  const int64_t k_align = trans_w ? align_up(K, int4 ? 64 : 32) : K, n_align = trans_w ? N : align_up(N, int4 ? 64 : 32);
  if (!int4 && g == 0) {
    const int64_t k = trans_w ? 512 : (bf16 ? 32 : 48), n = trans_w ? (bf16 ? 32 : 40) : 512;
    return {std::min(k, k_align), std::min(n, n_align)};
  }
  constexpr int64_t kEnum = 4;  // sizeof(ge::DataType) as the tiler uses it for element sizes
  const int64_t w_axis = int4 ? 64 : 32 / kEnum;
  auto fits = [&](int64_t k, int64_t n) {
    int64_t a = align_up(n, 16);  // antiquant params (scale and offset)
    if (g > 0) a = trans_w ? (k >= K ? align_up(cdiv(k, g) * n, 16) : n * align_up(cdiv(k, g), 16)) : cdiv(k, g) * align_up(n, 16);
    const int64_t a_buf = 2 * a * kEnum + (trans_w ? (bf16 ? a * 4 : 0) + 2 * a * 32 : (bf16 ? a * 4 + 2 * a * 4 : 2 * a * kEnum));
    const int64_t shape = trans_w ? n * align_up(k, w_axis) : k * align_up(n, w_axis);
    const int64_t w_buf = (int4 ? shape * kEnum / 2 : shape * kEnum) + 3 * shape * kEnum + (bf16 ? shape * 4 : 0);
    return a_buf + w_buf <= ub;
  };
  // the largest outer axis that fits (the tiler's binary search), inner axis fixed
  auto outer = [&](int64_t inner) {
    int64_t lo = 0, hi = trans_w ? N : K;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (trans_w ? fits(inner, mid) : fits(mid, inner)) lo = mid; else hi = mid - 1;
    }
    return lo;
  };
  int64_t k = 0, n = 0;
  if (trans_w) {
    k = int4 ? 1024 : 512;
    if (g > 0 && (k_align <= (bf16 ? 255 * 8 : 255 * 16) || (g <= (bf16 ? 255 * 8 : 255 * 16) && k_align % g == 0))) {
      k = k_align;  // K whole when the repeat stride allows
      n = outer(k);
    }
    if (n == 0) {
      k = int4 ? 1024 : 512;
      if (g > 0 && k >= g) k = k / g * g;
      for (n = outer(k); g > 0 && n == 0 && k > g; n = outer(k)) k -= g;
    }
  } else {
    n = std::min<int64_t>(int4 ? 1024 : 512, align_up(N, int4 ? 64 : 32));
    k = outer(n);
    // ReviseGroupDefaultBlockWithoutTrans: K in whole groups within 255 repeats; a K short of the group
    // (int4's dozen rows at 1024 columns) takes the largest divisor of the group, a multiple of 32 up to
    // 255 (MIN_GROUP_SIZE, MAX_REPEAT_TIMES), that it holds, else N halves and K is solved again.
    while (g > 0 && n > 0) {
      if (g < 255 && k >= g) {
        k = std::min(255 / g, k / g) * g;
        break;
      }
      int64_t target = 0;
      for (int64_t t = g; t >= 32 && target == 0; t -= 32)
        if (t <= 255 && g % t == 0 && t <= k) target = t;
      if (target > 0) {
        k = target;
        break;
      }
      n /= 2;
      k = outer(n);
    }
  }
  return {std::max<int64_t>(1, std::min(k, k_align)), std::max<int64_t>(1, std::min(n, n_align))};
}

}  // namespace

// ---- WeightQuantBatchMatmul -------------------------------------------------------------
// inputs: x [M, K], weight [K, N] ([N, K] with transpose_weight), antiquant_scale, (antiquant_offset),
// (quant_scale), (quant_offset), (bias [N]).
std::shared_ptr<OpModel> make_weight_quant_matmul_model(const OpDesc& op, const Platform& p) {
  const std::string& K_ = op.kind;
  if (op.inputs.size() < 3 || op.inputs.size() > 7)
    fail(K_ + ": expected inputs x, weight, antiquant_scale and optionally antiquant_offset, quant_scale, "
              "quant_offset, bias (7 at most), got " + std::to_string(op.inputs.size()));
  if (op.dtype != "float16" && op.dtype != "bfloat16")
    fail(K_ + ": x must be float16 or bfloat16 (the activations), got " + op.dtype);
  need_rank(op, 0, 2, "x");
  need_rank(op, 1, 2, "weight");
  const auto dts = attr_strs(op, "weight_dtype");
  const std::string wdt = input_dtype(op, 1, dts.empty() ? "int8" : canon(dts[0]));
  if (wdt != "int8" && wdt != "int4")
    fail(K_ + ": weight must be int8 or int4, got " + wdt);
  const bool trans_x = attr_flag(op, "transpose_x"), trans_w = attr_flag(op, "transpose_weight");
  const auto& x = op.inputs[0];
  const auto& w = op.inputs[1];
  const int64_t Kx = trans_x ? x[0] : x[1], Kw = trans_w ? w[1] : w[0], N = trans_w ? w[0] : w[1];
  if (Kx != Kw)
    fail(K_ + ": x " + shape_str(x) + " has K=" + std::to_string(Kx) + ", weight " + shape_str(w) + " has K=" +
         std::to_string(Kw) + " (transpose_weight=" + std::to_string(int(trans_w)) + ")");
  const bool int4 = wdt == "int4";
  if (int4 && Kx % 2)
    fail(K_ + ": an int4 weight packs two values per byte along K: K must be even, got K=" + std::to_string(Kx));
  const int64_t g = attr_int(op, "antiquant_group_size", 0);
  if (g < 0 || (g > 0 && g >= Kx))
    fail(K_ + ": antiquant_group_size must be 0 (per channel) or in 1.." + std::to_string(Kx - 1) + " (K=" +
         std::to_string(Kx) + "), got " + std::to_string(g));
  // antiquant_scale: [N] or [1] per channel / tensor, [ceil(K/g), N] per group; the offset likewise.
  const std::vector<int64_t> per_group{cdiv(Kx, std::max<int64_t>(g, 1)), N};
  auto check_scale = [&](size_t i, const std::string& name) {
    if (!present(op, i)) return;
    const auto& s = op.inputs[i];
    const bool ok = g > 0 ? s == per_group : (s == std::vector<int64_t>{N} || s == std::vector<int64_t>{1});
    if (!ok)
      fail(K_ + ": " + name + " " + shape_str(s) + " must be " +
           (g > 0 ? shape_str(per_group) + " (per group of " + std::to_string(g) + " along K)"
                  : "[" + std::to_string(N) + "] (per channel) or [1] (per tensor)") +
           " for weight " + shape_str(w));
  };
  if (!present(op, 2)) fail(K_ + ": antiquant_scale (input 2) is required");
  check_scale(2, "antiquant_scale");
  check_scale(3, "antiquant_offset");
  const bool quant_out = present(op, 4);
  for (size_t i : {size_t(4), size_t(5), size_t(6)})
    if (present(op, i) && numel(op.inputs[i]) != N && numel(op.inputs[i]) != 1)
      fail(K_ + ": " + std::string(i == 6 ? "bias" : i == 4 ? "quant_scale" : "quant_offset") + " " +
           shape_str(op.inputs[i]) + " must have " + std::to_string(N) + " elements (or 1)");
  const int64_t M = trans_x ? x[1] : x[0];
  // C220's registry order: SplitK (bf16 white list, not restated), MsdGroup, Msd, CustomNzSplitK (NZ weight), Custom.
  const WqbmmCase wc{M, Kx, N, g, int4, trans_x, trans_w, quant_out};
  const int64_t group_blocks = c220(p) ? msd_group_k_blocks(wc, p) : 0;
  if (group_blocks > 0) return make_msd_model(op, p, wc, group_blocks, true);
  const int64_t msd_blocks = c220(p) ? msd_k_blocks(op, wc) : 0;
  if (msd_blocks > 0) return make_msd_model(op, p, wc, msd_blocks, false);
  std::vector<std::vector<int64_t>> mm_in{x, w};
  if (present(op, 6)) mm_in.push_back({N});
  OpDesc mm = inner_matmul(op, mm_in, op.dtype, trans_x, trans_w);
  if (quant_out) mm.str_attrs["out_dtype"] = {"int8"};
  CubeQuant cq;
  cq.weight_bytes = int4 ? 0.5 : 1.0;
  cq.antiquant = antiquant_program(op.dtype, int4, present(op, 3));
  const int ds = dtype_size(op.dtype);
  const double scales = double(numel(op.inputs[2])) * (present(op, 3) ? 2 : 1) * ds;
  if (g > 0) cq.antiquant_extra = double(ds) * (present(op, 3) ? 2 : 1) / double(g);
  cq.extra_bytes = scales;
  // C220 (split cores, FixPipe, 128 KiB L0C: the test cube.cpp's MatMulV3 baseline uses for 910B)
  // runs the custom kernel, through a GM workspace.  It hands over whole rounds: each round the AIVs
  // antiquantise a slab of baseN x cubeBlockDimN columns over all K into the workspace, all AIVs sync,
  // then the AICs multiply it (IterateAll), the AIVs one round ahead, three slabs in the workspace
  // ([O] ops-nn .../weight_quant_batch_matmul_v2/op_kernel/weight_quant_batch_matmul_v2_custom.h
  // ProcessVector / ProcessCube; op_host/op_tiling/weight_quant_batch_matmul_v2_tiling_custom.cpp
  // DoLibApiTiling: cubeSingleNLoop = each core's N over baseN).
  cq.wqbmm_custom = c220(p);
  cq.workspace = cq.wqbmm_custom;
  cq.rounds = cq.wqbmm_custom;
  if (cq.wqbmm_custom)
    std::tie(cq.vec_tile_k, cq.vec_tile_n) = custom_vec_tile(wc, op.dtype == "bfloat16", int64_t(p.ub));
  if (quant_out) cq.dequant = {{vec_api_cost("Mul"), true}, {vec_api_cost("CastDown"), false}};
  return make_quant_cube_model(mm, p, cq, K_);
}

// ---- QuantBatchMatmulV3 ---------------------------------------------------------------------
// Whether CANN's C220 (910B/910C) tiler takes the basic template for an int8 x int8 GEMM with ND
// operands, single batch, fp16/bf16/int8 out ([O] ops-nn matmul/quant_batch_matmul_v3/op_host/op_tiling/
// quant_batch_matmul_v3_basic_tiling.cpp CheckUseBasicTiling; registered first, 0, in
// quant_batch_matmul_v3_tiling.cpp): large shapes, unless one operand is small enough to stay whole in L1
// across the blocks (CheckNotFullLoadForMutliIterate) or the vector dequant meets M <= 256
// (CheckIfUseBasicInMix).  Otherwise the TBE cache tiling (closed) runs, and the API-style default stands
// in.  The tuned-shape lists (CheckSupportConditionQbmm, closed) are not restated.
bool c220_qbmm_basic(int64_t M, int64_t K, int64_t N, bool t1, bool t2, bool ub_quant, int out_size,
                     const Platform& p) {
  const int64_t cores = p.cube_cores;
  const bool decode_range = M <= 16 && K >= 13000 && K <= 18944 && N >= 1500 && out_size == 2;
  if (!decode_range) {
    if (ub_quant && M <= 256) return false;
    const double total = double(M) * K + double(K) * N + double(M) * N * out_size;
    if (K < 1024 && total <= 0.8 * p.l2) return false;  // K small: the old template loads it whole
    const int64_t mn = std::min(M, N);
    if (mn <= 256) return false;
    int64_t full = align_up(mn, 16) * align_up(K, 32);
    if (mn < 512) full = std::min(full, 128 * align_up(K, 32));
    if (full <= 448 * 1024) {  // the smaller operand fits its half of L1
      const int64_t base = (M <= N && !t2) || (M > N && t1) ? 128 : 64;
      if ((cdiv(std::max(M, N), cores * base) - 1) * full > 160 * 1024) return false;
      const int64_t inner = M <= N ? (t1 ? M : K) : (t2 ? K : N);
      if (inner % 128) return false;
    }
  }
  return !(std::min(M, N) <= 512 && std::max(M, N) <= 1024);  // small shapes gain nothing from it
}

// The rows of one UB pass of the basic kernels' vector dequant ([O] ops-nn matmul/quant_batch_matmul_v3/
// op_host/op_tiling/quant_batch_matmul_v3_tiling.cpp CalcUbTiling(baseN, baseM)): a pass is ubCalcM rows of
// baseN columns; per column the int32 in and fp16/bf16 out double-buffered plus 8 B of the dequant API's
// scratch, a per-channel scale double-buffered, an fp32 result when a per-token scale or a non-int32
// bias follows, the per-token product, the bias sum; per row the per-token scale (double-buffered);
// outside the rows the broadcast's baseM x 32 B, the per-token scale's alignment slack and the bias rows.
int64_t qbmm_ub_rows(const CubeQuant::QbmmUb& u, int64_t bm, int64_t bn, int64_t M, int64_t ub_bytes) {
  constexpr int64_t kDb = 2;
  int64_t per_row = (kDb * (4 + 2) + 8) * bn, fixed = 0;  // UB_EXTRE_BYTE 8
  if (!u.per_tensor) per_row += kDb * u.scale_size * bn;
  if (u.pertoken || u.bias_size > 0) per_row += 4 * bn;
  if (u.pertoken) {
    fixed += bm * 32 + kDb * 4 * 7;  // BroadCast's scratch (baseM x ONE_BLK_SIZE); the scale's 32 B alignment
    per_row += kDb * 4 + 4 * bn;
  }
  if (u.bias_size > 0) {
    per_row += 4 * bn;
    fixed += kDb * u.bias_size * bn + 4 * bn;
  }
  return std::max<int64_t>(1, std::min({(ub_bytes - fixed) / per_row, bm, M}));
}

// inputs: x1 [M, K] int8, x2 [K, N] int8, scale [N] or [1], (offset), (bias [N]), (pertoken_scale [M]).
std::shared_ptr<OpModel> make_quant_matmul_model(const OpDesc& op, const Platform& p) {
  const std::string& K_ = op.kind;
  if (op.inputs.size() < 3 || op.inputs.size() > 6)
    fail(K_ + ": expected inputs x1, x2, scale and optionally offset, bias, pertoken_scale, got " +
         std::to_string(op.inputs.size()));
  if (op.dtype != "int8") fail(K_ + ": x1 must be int8, got " + op.dtype);
  if (input_dtype(op, 1, "int8") != "int8") fail(K_ + ": x2 must be int8, got " + input_dtype(op, 1, "int8"));
  need_rank(op, 0, 2, "x1");
  need_rank(op, 1, 2, "x2");
  const bool t1 = attr_flag(op, "transpose_x1"), t2 = attr_flag(op, "transpose_x2");
  const auto& a = op.inputs[0];
  const auto& b = op.inputs[1];
  const int64_t M = t1 ? a[1] : a[0], Ka = t1 ? a[0] : a[1], Kb = t2 ? b[1] : b[0], N = t2 ? b[0] : b[1];
  if (Ka != Kb)
    fail(K_ + ": x1 " + shape_str(a) + " has K=" + std::to_string(Ka) + ", x2 " + shape_str(b) + " has K=" +
         std::to_string(Kb));
  auto check = [&](size_t i, const std::string& name, const std::vector<std::vector<int64_t>>& ok) {
    if (!present(op, i)) return;
    if (std::find(ok.begin(), ok.end(), op.inputs[i]) != ok.end()) return;
    std::string want;
    for (const auto& s : ok) want += (want.empty() ? "" : " or ") + shape_str(s);
    fail(K_ + ": " + name + " " + shape_str(op.inputs[i]) + " must be " + want + " (x1 " + shape_str(a) +
         ", x2 " + shape_str(b) + ")");
  };
  if (!present(op, 2)) fail(K_ + ": scale (input 2) is required");
  check(2, "scale", {{N}, {1}});
  check(3, "offset", {{N}, {1}});
  check(4, "bias", {{N}});
  check(5, "pertoken_scale", {{M}});
  const auto out = attr_strs(op, "output_dtype");
  const std::string odt = out.empty() ? "float16" : canonical_dtype(out[0]);
  if (odt != "float16" && odt != "bfloat16" && odt != "int8")
    fail(K_ + ": output_dtype must be float16, bfloat16 or int8, got " + odt);
  std::vector<std::vector<int64_t>> mm_in{a, b};
  // An int32 bias goes to L0C through the bias table; a bf16/fp16/fp32 one the vector dequant adds in
  // fp32 ([O] ops-nn .../op_kernel/quant_batch_matmul_v3_pertoken_basic.h, _bf16_basic.h BasicMMCompute:
  // SetBias only when biasDtype_ == DT_INT32; quant_batch_matmul_v3_basic_epilogue.h CalBiasAdd).
  // (910B/910C kernels whose dequant the model runs on the vector cores; elsewhere the bias stays the
  // MatMul's.)  (bf16 out dequantises on the vector cores too: the basic tiler's isUbQuant_.)
  const bool ub_quant = present(op, 5) || odt == "bfloat16";
  const int basic = c220(p) && p.fixpipe && c220_qbmm_basic(M, Ka, N, t1, t2, ub_quant, dtype_size(odt), p)
                        ? (ub_quant ? 2 : 1) : 0;
  const bool vec_bias = c220(p) && present(op, 4) && input_dtype(op, 4, "int32") != "int32" &&
                        (present(op, 5) || basic == 2);
  const bool bias_table = present(op, 4) && !vec_bias;
  if (bias_table) mm_in.push_back({N});
  OpDesc mm = inner_matmul(op, mm_in, "int8", t1, t2);
  mm.str_attrs["out_dtype"] = {odt};
  CubeQuant cq;
  cq.extra_bytes = 4.0 * double(numel(op.inputs[2]) + (present(op, 3) ? numel(op.inputs[3]) : 0) +
                                (present(op, 5) ? M : 0)) +
                   (vec_bias ? double(N) * dtype_size(input_dtype(op, 4, "int32")) : 0);
  // A vector dequant: the int32 tile (4 bytes, of which the output tile's read is counted already)
  // as fp32, times `scales` scales, the bias added when it is not the bias table's, cast down.
  auto vector_dequant = [&](int scales) {
    cq.dequant = {{vec_api_cost("CastUp"), false}};
    for (int i = 0; i < scales; ++i) cq.dequant.push_back({vec_api_cost("Mul"), true});
    // (the basic kernels add the bias row by row: CalBiasAdd, one Add per row of a UB pass)
    if (vec_bias) (basic == 2 ? cq.dequant_row_steps : cq.dequant).push_back({vec_api_cost("Add"), true});
    cq.dequant.push_back({vec_api_cost("CastDown"), false});
    cq.dequant_extra = 4.0 - dtype_size(odt);
  };
  if (present(op, 5)) vector_dequant(2);  // per-token: the channel and the token scale
  cq.qbmm_basic = basic;
  cq.qbmm_ub.per_tensor = numel(op.inputs[2]) == 1;
  cq.qbmm_ub.pertoken = present(op, 5);
  cq.qbmm_ub.scale_size = dtype_size(input_dtype(op, 2, "float32"));
  cq.qbmm_ub.bias_size = vec_bias ? dtype_size(input_dtype(op, 4, "int32")) : 0;
  if (cq.qbmm_basic == 2) {
    // C220's vector-dequant basic kernels: the AIC's FixPipe writes the int32 tile to a GM workspace
    // (mm_.GetTensorC into the int32 mmOutGm_), the AIVs read it back ([O] ops-nn
    // matmul/quant_batch_matmul_v3/op_kernel/quant_batch_matmul_v3_pertoken_basic.h,
    // quant_batch_matmul_v3_bf16_basic.h BasicMMCompute).  Without a per-token scale (bf16 out) only
    // AIV 0 of each pair dequantises (BasicMMDequantCompute: GetSubBlockIdx() == 0): AscendDequant,
    // int32 times the channel scale into fp32, then cast down (an fp16/bf16/fp32 bias added between).
    cq.fix_out_size = 4;
    if (!present(op, 5)) {
      vector_dequant(1);
      if (!mm.int_attrs.count("mix_ratio")) mm.int_attrs["mix_ratio"] = {1};
    }
  }
  return make_quant_cube_model(mm, p, cq, K_);
}

// ---- GroupedMatmul ----------------------------------------------------------------------------
// inputs: x [M, K], weight [E, K, N] ([E, N, K] with transpose_weight), (bias [E, N]); group_list
// (E entries, cumulative or counts) splits M's rows among the experts.
namespace {

// The grouped kernel's knobs: one base block and L1 tiling for every group, and how the groups'
// blocks reach the cores (dispatch 1: dealt round-robin on from the last group's last
// core, as CANN's kernel does; 0: each group starts again at core 0, so its last partial wave idles cores).
// nBlocks: base blocks of N in one core's task (the kernel's singleN = baseN x nBlocks; 1 but in
// C220's FullLoadK template).
enum G { gDispatch, gBM, gBN, gBK, gStepKa, gStepKb, gDepthA1, gDepthB1, gNBlocks, gNP };
// C220's grouped tiler's baseN ([O] ops-transformer gmm/grouped_matmul/op_host/op_tiling/
// grouped_matmul_tiling.cpp CalMMTiling: BEST_BASEN).
constexpr int64_t kC220GmmBaseN = 256;
const char* const kGNames[gNP] = {"dispatch", "baseM", "baseN", "baseK", "stepKa",
                                  "stepKb", "depthA1", "depthB1", "nBlocks"};

class GroupedMatmulModel : public OpModel {
 public:
  struct Group {
    int64_t m, count;               // rows, experts with this many rows
    std::shared_ptr<OpModel> cube;  // its MatMul
    std::vector<int> slot;          // the cube's knob i <- entry slot[i] of group_row()'s table
  };
  // The operator beside its groups.  M and K as x gives them, which CANN's C220 tiler selects its
  // template by: M all of x's rows (maxM_; each group's with split K), K before alignment.
  struct Problem {
    int64_t M, K, N;
    int64_t experts;  // the weight's, empty ones too
    int ds;           // bytes per input element
    bool bias, trans_w, split_k;
    double roofline_us;
    double zero_bytes;  // the outputs of split K's empty groups, which the vector cores zero
  };
  GroupedMatmulModel(std::vector<Group> groups, const Platform& p, const Problem& pb)
      : groups_(std::move(groups)), p_(p), pb_(pb), kq_(std::max(16, 32 / pb.ds)), Kq_(align_up(pb.K, kq_)) {
    kind_ = "GroupedMatmul";
    roofline_us_ = pb.roofline_us;
    build_spec();
    finish_spec();
  }
  double evaluate(const int64_t* t, Breakdown* out) const override;

 private:
  void build_spec();
  // CANN's C220 default base block and K steps (baseM, baseN, baseK, stepKa, stepKb), over the
  // approximate ones; each also a value of its knob.
  std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> c220_baseline(bool bt);
  bool c220_full_load_k(int64_t bm, int64_t bk) const;
  std::vector<Group> groups_;
  Platform p_;
  Problem pb_;
  int kq_;      // baseK's granule: K elements of a 32 B fractal row, at least 16
  int64_t Kq_;  // K aligned to it
};

// The MatMul knobs every group's cube model takes, by name, for a grouped tiling `t` and a
// group of m rows: round-robin dispatch of baseM x baseN blocks on all cores, one L2 tile.
// C220's kernel deals a group of more than 5 rows of blocks (thresholdDimM) in stripes of 8 rows
// across N, each 8 x 8 square of blocks walked diagonally (the i-th block: row i % 8, column
// (i + i / lcm) % 8), so that a wave's cores share few operand blocks ([O] ops-transformer
// gmm/grouped_matmul/op_kernel/grouped_matmul.h MNBlockIdxCompute, thresholdBlockNum 8): the
// MatMul's staggered dealing over L2 tiles of 8 x 8 blocks (cube.cpp); fewer rows go row by row.
// (`row` holds the cube's knobs; a model has at most 32: CostObjective's bound.)
void group_row(const GroupedMatmulModel::Group& g, const int64_t* t, int64_t N, int64_t cores, bool c220_diag,
               int64_t* row) {
  const int64_t single_n = t[gBN] * t[gNBlocks];
  const int64_t mB = cdiv(g.m, t[gBM]), nB = cdiv(N, single_n);
  const bool diag = c220_diag && mB > 5;
  const int64_t tm = diag ? 8 : mB, tn = diag ? 8 : nB;
  const int64_t v[] = {1, 0, t[gBM], single_n, t[gBM], t[gBN], t[gBK], 1, 1, t[gStepKa], t[gStepKb], t[gDepthA1],
                       t[gDepthB1], 2, 2, 1, 0, 1, 1, 0, cores, cdiv(mB, tm), cdiv(nB, tn), tm, tn, 0};
  for (size_t i = 0; i < g.slot.size(); ++i) row[i] = v[g.slot[i]];
}
// The MatMul knob names in the order of group_row's table.
const std::vector<std::string>& row_names() {
  static const std::vector<std::string> n = {
      "dispatch", "tilingEnable", "singleCoreM", "singleCoreN", "baseM", "baseN", "baseK", "stepM", "stepN",
      "stepKa", "stepKb", "depthA1", "depthB1", "dbL0A", "dbL0B", "dbL0C", "iterateOrder", "splitK", "unitFlag",
      "kReorderLoad", "usedCoreNum", "l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock", "l2IterateOrder"};
  return n;
}

void GroupedMatmulModel::build_spec() {
  const Platform& p = p_;
  const int ds = pb_.ds, kq = kq_;
  const int64_t N = pb_.N;
  auto& s = spec_;
  s.names.assign(kGNames, kGNames + gNP);
  int64_t max_m = 16;
  for (const auto& g : groups_) max_m = std::max(max_m, g.m);
  s.values = {{0, 1},
              pow2_range(16, std::max<int64_t>(16, std::min<int64_t>(256, align_up(max_m, 16)))),
              pow2_range(16, std::max<int64_t>(16, std::min<int64_t>(256, align_up(N, 16)))),
              pow2_range(kq, std::max<int64_t>(kq, std::min<int64_t>(512 / ds, Kq_))),
              {1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8, 16}, {1, 2, 4, 8, 16}, {1, 2, 4}};
  // The restrictions of the MatMul model (cube.cpp build_spec) that the groups' rows do not
  // meet by construction: L0A/L0B double-buffered, L0C single, L1, the K loops.
  const std::string Kq = std::to_string(Kq_), D = std::to_string(ds);
  auto& r = s.restrictions;
  r.push_back("dispatch <= 1");
  r.push_back("baseM % 16 == 0 and baseN % 16 == 0 and baseK % " + std::to_string(kq) + " == 0");
  r.push_back("baseM * baseK * " + D + " * 2 <= " + std::to_string(int64_t(p.l0a)));
  r.push_back("baseN * baseK * " + D + " * 2 <= " + std::to_string(int64_t(p.l0b)));
  r.push_back("baseM * baseN * 4 <= " + std::to_string(int64_t(p.l0c)));
  const bool bt = pb_.bias && p.bt > 0;
  if (bt) r.push_back("baseN * 4 <= " + std::to_string(int64_t(p.bt)));
  r.push_back("depthA1 % stepKa == 0 and depthB1 % stepKb == 0");
  r.push_back("(baseM * baseK * depthA1 + baseN * baseK * depthB1) * " + D + (bt ? " + baseN * 4" : "") +
              " <= " + std::to_string(int64_t(p.l1)));
  r.push_back("stepKa % stepKb == 0 or stepKb % stepKa == 0 or ((" + Kq + " + baseK * stepKa - 1) / (baseK * stepKa)) % ((" + Kq +
              " + baseK * stepKb - 1) / (baseK * stepKb)) == 0 or ((" + Kq + " + baseK * stepKb - 1) / (baseK * stepKb)) % ((" +
              Kq + " + baseK * stepKa - 1) / (baseK * stepKa)) == 0");
  s.pruning.push_back("baseK * stepKa < 2 * " + Kq + " and baseK * stepKb < 2 * " + Kq);
  s.pruning.push_back("depthA1 <= 2 * stepKa and depthB1 <= 2 * stepKb");
  s.pruning.push_back("nBlocks == 1 or baseN * nBlocks < 2 * " + std::to_string(N));
  // Approximate CANN default: base (128, 256, 64) as MatMul's Ascend C default (cube.cpp),
  // shrunk to the largest group and N and to L0, K in 4 base steps per L1 copy,
  // L1 double-buffered, round-robin over the groups.
  auto floor_in = [](const std::vector<int64_t>& v, int64_t x) {
    int64_t r = v.front();
    for (auto e : v) if (e <= x) r = e;
    return r;
  };
  int64_t bm = floor_in(s.values[gBM], 128), bn = floor_in(s.values[gBN], 256);
  int64_t bk = floor_in(s.values[gBK], std::max<int64_t>(kq, 128 / ds));
  int64_t step = 4;
  if (groups_.size() > 1 && p.split && p.fixpipe && int64_t(p.l0c) == 262144) {
    // 950 (DAV_3510), rows split over several groups: base 256 x 256, K from half of L0B over 256
    // columns (64 fp16, 32 fp32), whatever the groups' rows ([O2] ops-transformer gmm/grouped_matmul/
    // op_host/op_tiling/arch35/grouped_no_quant_matmul_tiling.cpp CalBaseMMTiling, BASE_M/N_DEFAULT;
    // a block wider than the rows or N covers them), K in L1 copies filling half of L1 each
    // (CalL1Tiling: 4 base steps).
    bn = floor_in(s.values[gBN], 256);
    bk = floor_in(s.values[gBK], std::max<int64_t>(kq, int64_t(p.l0b) / 2 / (256 * ds) / 16 * 16));
    const int64_t tiler_bm = std::min<int64_t>(256, int64_t(p.l0a) / 2 / (bk * ds));
    bm = floor_in(s.values[gBM], tiler_bm);
    step = std::max<int64_t>(1, int64_t(p.l1) / 4 / (tiler_bm * bk * ds));
  }
  while (bn > 16 && bn * bk * ds * 2 > p.l0b) bn /= 2;
  while (bm > 16 && (bm * bk * ds * 2 > p.l0a || bm * bn * 4 > p.l0c)) bm /= 2;
  while (step > 1 && ((bm + bn) * bk * 2 * step * ds + (bt ? bn * 4 : 0) > p.l1 || bk * step >= 2 * Kq_))
    step /= 2;
  int64_t step_a = step, step_b = step, n_blocks = 1;
  if (c220(p)) {
    std::tie(bm, bn, bk, step_a, step_b) = c220_baseline(bt);
    if (c220_full_load_k(bm, bk)) {
      // FullLoadK (grouped_matmul_tiling.cpp FullLoadK, constants in grouped_matmul_host_util.h):
      // all of A's K in one L1 copy (stepKa = ceil(K / baseK)), B in halves, and each task
      // singleN = FULL_K_SINGLE_N = 1280 columns wide (the kernel's SetMNConfig, GMM_FLOAT), so a
      // core loops 5 base blocks of 256 over one copy of A.
      constexpr int64_t kFullKSingleN = 1280;
      step_a = add_value(s.values[gStepKa], cdiv(pb_.K, bk));
      step_b = add_value(s.values[gStepKb], step_a / 2);
      add_value(s.values[gDepthA1], 2 * step_a);
      add_value(s.values[gDepthB1], 2 * step_b);
      n_blocks = add_value(s.values[gNBlocks], kFullKSingleN / bn);
    }
  }
  s.baseline = {1, bm, bn, bk, step_a, step_b, 2 * step_a, 2 * step_b, n_blocks};
  s.baseline_kind = "approximate CANN default";
}

// C220 (910B/910C): CANN's grouped tiler ([O] ops-transformer gmm/grouped_matmul/op_host/op_tiling/
// grouped_matmul_tiling.cpp CalMMTiling, CalcStepKaKb; no quantisation): baseN 256, baseK from half
// of L0B over it (64 fp16), baseM from half of L0A and L0C (128), or all of x's rows (M, not the
// largest group's) when fewer; L1 in a 256 KiB part for the narrower base block's operand (A while
// baseM <= baseN) and the rest (less a bias row) for the other, each double-buffered, the larger
// K step a multiple of the smaller.  The kernel runs each block at singleN = baseN and singleM =
// baseM ([O] op_kernel/grouped_matmul.h SetMNConfig, MMCompute: the last block of a group takes the
// rest), so a base block wider than N (deeper than K) runs as one block of N (K) aligned to 16: the
// model's knob takes that width (depth), not a smaller power of two that would split N (K) in two.
// (A copy deeper than K stops at K, as the MatMul's loads do.)
std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> GroupedMatmulModel::c220_baseline(bool bt) {
  const Platform& p = p_;
  const int ds = pb_.ds, kq = kq_;
  auto& s = spec_;
  constexpr int64_t kBaseN = kC220GmmBaseN, kPartA = 256 * 1024;
  const int64_t total_m = pb_.M;
  const int64_t tiler_bk = std::max<int64_t>(kq, int64_t(p.l0b) / 2 / (kBaseN * ds) / 16 * 16);
  int64_t tiler_bm = std::min<int64_t>(int64_t(p.l0a) / 2 / (tiler_bk * ds), int64_t(p.l0c) / (kBaseN * 4));
  tiler_bm = std::min<int64_t>(256, tiler_bm > total_m ? align_up(total_m, 16) : tiler_bm / 16 * 16);
  const int64_t bm = add_value(s.values[gBM], tiler_bm);
  const int64_t bn = add_value(s.values[gBN], std::min<int64_t>(kBaseN, align_up(pb_.N, 16)));
  const int64_t bk = add_value(s.values[gBK], std::min<int64_t>(tiler_bk, Kq_));
  const int64_t avail = int64_t(p.l1) - (bt ? kBaseN * 4 : 0);
  const int64_t l1a = bm > kBaseN ? kPartA : avail - kPartA, l1b = avail - l1a;
  int64_t step_a = std::max<int64_t>(1, l1a / 2 / (bm * tiler_bk * ds));
  int64_t step_b = std::max<int64_t>(1, l1b / 2 / (kBaseN * tiler_bk * ds));
  if (step_a > step_b) step_a = step_a / step_b * step_b;
  else step_b = step_b / step_a * step_a;
  const int64_t k_steps = cdiv(Kq_, bk);
  return {bm, bn, bk, add_value(s.values[gStepKa], std::min(step_a, k_steps)), add_value(s.values[gStepKb], std::min(step_b, k_steps))};
}

// C220's FullLoadK template ([O] ops-transformer gmm/grouped_matmul/op_host/op_tiling/
// grouped_matmul_tiling.cpp FullLoadK, thresholds "by experiment" in grouped_matmul_host_util.h):
// fp16/bf16, ND weight not transposed, x not transposed, split along M (the model's lists are
// single tensors), N exactly FULL_K_N_THRESHOLD 2560, K in [320, 384], x's rows at least
// 256 per expert and above 2048, and both operands' full-K copies double-buffered within L1.
bool GroupedMatmulModel::c220_full_load_k(int64_t bm, int64_t bk) const {
  const int64_t total_m = pb_.M, ds = pb_.ds;
  if (ds != 2 || pb_.trans_w || pb_.split_k || pb_.N != 2560 || pb_.K > 384 || pb_.K < 320 ||
      total_m < 256 * pb_.experts || total_m <= 2048)
    return false;
  const int64_t step_a = cdiv(pb_.K, bk), step_b = step_a / 2;
  return bm * bk * ds * 2 * step_a + kC220GmmBaseN * bk * ds * 2 * step_b <= int64_t(p_.l1);
}

double GroupedMatmulModel::evaluate(const int64_t* t, Breakdown* out) const {
  const int64_t cores = p_.cube_cores;
  double serial = 0, block_time = 0, blocks = 0, widest = 0, flops = 0;
  Breakdown big{};
  int64_t big_m = -1;
  for (const auto& g : groups_) {
    int64_t row[32];
    group_row(g, t, pb_.N, cores, c220(p_), row);
    Breakdown b;
    const double time = g.cube->evaluate(row, &b);
    const double work = time - cube_head_us(p_, b.cores_used);  // the launch is paid once
    const double nb = double(cdiv(g.m, t[gBM]) * cdiv(pb_.N, t[gBN] * t[gNBlocks]));
    serial += double(g.count) * work;
    // One block takes one wave's time on its core.
    const double per_block = work / std::max(1, b.waves);
    block_time += double(g.count) * nb * per_block;
    blocks += double(g.count) * nb;
    widest = std::max(widest, per_block);
    flops += double(g.count) * b.flops;
    if (g.m > big_m) big_m = g.m, big = b;
  }
  // Dealt on: the busiest core runs ceil(blocks / cores) blocks of the mean block time.
  const double dealt = std::max(widest, std::ceil(blocks / double(cores)) * block_time / std::max(1.0, blocks));
  const double body = t[gDispatch] == 1 ? std::min(serial, dealt) : serial;
  const int used = int(std::min<double>(double(cores), blocks));
  // C220: each core reads the group list's first entry in scalar code before its first block
  // ([O] ops-transformer gmm/grouped_matmul/op_kernel/grouped_matmul.h GMMProcess::Process,
  // grouped_matmul_utils.h GetSplitValueFromGroupList: groupListGm.GetValue): the scalar DCache
  // misses and the list is in HBM, one GM load's latency before the first copy (as moe_routing.cpp
  // charges its index reads; the list's further 64-B lines are not charged apart).
  const double list_us = c220(p_) ? mte2_head(std::max(1, used), false) / p_.freq_mhz : 0;
  // Split K: the vector cores zero the outputs of empty groups while the cube cores run the others
  // ([O] op_kernel/grouped_matmul.cpp GMM_FLOAT TRANS_A == 1: EmptyTensorCompute on the AIVs beside
  // GMMProcess on the AICs; grouped_matmul_vector.h: InitOutput of an empty group's M x N, its rows
  // split over the cores), a stream at HBM bandwidth.
  const double zero_us = pb_.zero_bytes / (p_.hbm_gbps * 1e3);
  const double time = std::max(body, zero_us) + cube_head_us(p_, std::max(1, used)) + list_us;
  if (out) {
    *out = big;
    out->time_us = time;
    out->flops = flops;
    out->cores_used = used;
    out->waves = int(std::ceil(blocks / double(cores)));
    out->roofline_us = roofline_us_;
  }
  return time;
}

}  // namespace

namespace {
// Each expert's share of the split axis (x's rows, or K with split K) from group_list (cumulative
// or counts): share -> experts with it, empty ones left out.
std::map<int64_t, int64_t> group_sizes(const OpDesc& op, int64_t experts, int64_t total, const std::string& axis,
                                       const std::string& x_desc) {
  const std::string& kind = op.kind;
  const auto gl = attr_ints(op, "group_list", {});
  const int64_t type = attr_int(op, "group_list_type", 0);
  if (type != 0 && type != 1)
    fail(kind + ": group_list_type must be 0 (cumulative) or 1 (counts), got " + std::to_string(type));
  if (int64_t(gl.size()) != experts)
    fail(kind + ": group_list has " + std::to_string(gl.size()) + " entries, weight has " + std::to_string(experts) +
         " experts (one entry per expert)");
  std::map<int64_t, int64_t> sizes;
  int64_t sum = 0;
  for (size_t e = 0; e < gl.size(); ++e) {
    const int64_t m = type == 0 ? gl[e] - (e ? gl[e - 1] : 0) : gl[e];
    if (m < 0)
      fail(kind + ": group_list " + shape_str(gl) + (type == 0 ? " must not decrease (cumulative)" : " has a negative count"));
    sum += m;
    if (m > 0) sizes[m] += 1;
  }
  if (sum != total)
    fail(kind + ": group_list " + shape_str(gl) + " covers " + std::to_string(sum) + ", x " + x_desc + " has " + axis + "=" +
         std::to_string(total) + " (the groups must sum to it)");
  if (sizes.empty()) fail(kind + ": every group is empty (" + axis + "=0)");
  return sizes;
}
}  // namespace

// group_type 0 (split M, the default): x [M, K], weight [E, K, N] ([E, N, K] transposed), y [M, N].
// group_type 2 (split K): x as CANN's kernel takes it, transposed: [K, M] (grouped_matmul_tiling.cpp
// SplitKSingleXSingleWeightSingleY: K is x's first dimension with transpose_x), weight [K, N], each
// expert a slice of K, y [E, M, N] (op_kernel/grouped_matmul.h SetMKN: groupType 2, k = the split value).
std::shared_ptr<OpModel> make_grouped_matmul_model(const OpDesc& op, const Platform& p) {
  const std::string K_ = op.kind;
  if (op.inputs.size() < 2 || op.inputs.size() > 3)
    fail(K_ + ": expected inputs x, weight and optionally bias, got " + std::to_string(op.inputs.size()));
  const int64_t gtype = attr_int(op, "group_type", 0);
  if (gtype != 0 && gtype != 2)
    fail(K_ + ": group_type must be 0 (split M: each expert owns rows of x) or 2 (split K: each owns a slice of K), "
         "got " + std::to_string(gtype));
  const bool split_k = gtype == 2;
  need_rank(op, 0, 2, "x");
  need_rank(op, 1, split_k ? 2 : 3, "weight");
  const auto& x = op.inputs[0];
  const auto& w = op.inputs[1];
  const bool tw = attr_flag(op, "transpose_weight");
  // CANN's split-K kernel takes the weight untransposed (grouped_matmul.cpp GMM_FLOAT: TRANS_A == 1
  // runs GMMProcess with transB false).
  if (split_k && tw) fail(K_ + ": group_type 2 (split K) takes the weight [K, N] untransposed, got transpose_weight=1");
  const int64_t M = split_k ? x[1] : x[0], K = split_k ? x[0] : x[1];
  const int64_t E = split_k ? int64_t(attr_ints(op, "group_list", {}).size()) : w[0];
  const int64_t Kw = split_k ? w[0] : (tw ? w[2] : w[1]), N = split_k ? w[1] : (tw ? w[1] : w[2]);
  if (K != Kw)
    fail(K_ + ": x " + shape_str(x) + " has K=" + std::to_string(K) + ", weight " + shape_str(w) + " has K=" +
         std::to_string(Kw) + " (transpose_weight=" + std::to_string(int(tw)) + ", group_type=" + std::to_string(gtype) + ")");
  const bool bias = present(op, 2);
  if (bias && op.inputs[2] != std::vector<int64_t>{E, N})
    fail(K_ + ": bias " + shape_str(op.inputs[2]) + " must be [" + std::to_string(E) + ", " + std::to_string(N) +
         "] (one row per expert)");
  const auto sizes = group_sizes(op, E, split_k ? K : M, split_k ? "K" : "M", shape_str(x));
  std::vector<GroupedMatmulModel::Group> groups;
  int64_t busy = 0;
  for (const auto& [share, count] : sizes) {
    const int64_t m = split_k ? M : share, k = split_k ? share : K;
    std::vector<std::vector<int64_t>> in{split_k ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k},
                                         tw ? std::vector<int64_t>{N, k} : std::vector<int64_t>{k, N}};
    if (bias) in.push_back({N});
    OpDesc mm = inner_matmul(op, in, op.dtype, split_k, tw);
    GroupedMatmulModel::Group g{m, count, make_matmul_model(mm, p), {}};
    const auto& names = g.cube->spec().names;
    for (const auto& n : names) {
      const auto& rn = row_names();
      const auto it = std::find(rn.begin(), rn.end(), n);
      if (it == rn.end() || names.size() > 32) fail("internal: GroupedMatmul does not set the MatMul knob " + n);
      g.slot.push_back(int(it - rn.begin()));
    }
    groups.push_back(std::move(g));
    busy += count;
  }
  const int ds = dtype_size(op.dtype);
  const double out_elems = double(split_k ? E : 1) * double(M) * double(N);
  const double bytes = (double(numel(x)) + double(numel(w)) + out_elems) * ds;
  const double peak = double(p.cube_cores) * 16 * 16 * (32 / ds) * 2 * p.freq_mhz;  // 16 x C0 x 16 MACs per cycle
  const double roofline = std::max(2.0 * M * N * K / peak, bytes / (p.hbm_gbps * 1e3));
  const double zero_bytes = split_k ? double(E - busy) * double(M) * double(N) * ds : 0;
  const GroupedMatmulModel::Problem pb{M, K, N, E, ds, bias, tw, split_k, roofline, zero_bytes};
  return std::make_shared<GroupedMatmulModel>(std::move(groups), p, pb);
}

}  // namespace aoe::ascend::detail
