// MoE routing kernels of LLM inference and training (issue 49): MoeGatingTopKSoftmax (the
// router's softmax and top-k), MoeInitRouting (tokens sorted by expert), MoeReRouting (tokens
// regrouped from rank-major to expert-major after an all-to-all), MoeFinalizeRouting (the
// experts' outputs gathered back and weighted), and MhcSinkhorn (the doubly stochastic
// mixing matrix of manifold-constrained hyper-connections, DeepSeek V4's mHC).  Each is one
// kernel of the Ascend C vector pattern (vector.cpp, VecKernel): token rows (or matrices) are
// split over the vector cores (blockDim) and streamed through UB tiles (tileLen, bufferNum).
// The kernels' structure (which rows a core reads, contiguous runs, the vector steps) is
// ASSUMED from their interfaces and hicann/ops-transformer's kernel names (moe/*); the tiling
// baseline is vector.cpp's rule (all cores, whole rows per core).
#include <algorithm>
#include <cmath>
#include <memory>

#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

const std::vector<int64_t>& input(const OpDesc& op, size_t i, const std::string& name) {
  if (op.inputs.size() <= i) fail(op.kind + ": missing input " + std::to_string(i) + " (" + name + ")");
  return op.inputs[i];
}

// A 2-D (or, for x, flattened leading axes) shape's [rows, cols].
std::pair<int64_t, int64_t> rows_cols(const OpDesc& op, const std::vector<int64_t>& s, const std::string& name) {
  check_shape(s, op.kind + " " + name);
  if (s.size() < 2) fail(op.kind + ": " + name + " " + shape_str(s) + " must have at least 2 dimensions");
  return {numel(s) / s.back(), s.back()};
}

void need_float(const OpDesc& op) {
  if (op.dtype != "float16" && op.dtype != "bfloat16" && op.dtype != "float32")
    fail(op.kind + ": dtype " + op.dtype + " is not supported (float16, bfloat16 or float32)");
}

// input_dtypes, when given, has one entry per input ("" for an absent one).  The models read
// the data input's dtype (op.dtype); index, mask and scale inputs are small beside the rows.
void check_input_dtypes(const OpDesc& op) {
  const auto d = attr_strs(op, "input_dtypes");
  if (d.empty()) return;
  if (d.size() != op.inputs.size())
    fail(op.kind + ": input_dtypes has " + std::to_string(d.size()) + " entries for " + std::to_string(op.inputs.size()) +
         " inputs");
  for (size_t i = 0; i < d.size(); ++i)
    if (!d[i].empty()) canonical_dtype(d[i]);  // throws naming the valid ones
}

// ---- fitted constants ---------------------------------------------------------------------
// [F] fitted on the fit half (case id % 4 == 0) of shared/reference/measured_ops/
// cann_bench_calibration.json (CANN's operator benchmark, hicann/cann-bench @ d59d44ca), both
// SoCs pooled (docs/llm_operators.md):
// - a kernel's scalar prologue and epilogue (tiling parse, index set-up, per-expert counts),
//   cycles once per kernel;
// - a gathered token row waited for before its arithmetic (a dependent DataCopy whose source
//   row comes from an index read just before), cycles per row on its core; MoeReRouting copies
//   whole (rank, expert) blocks and pays per token only its index bookkeeping.
// Fitted two at a time per operator (setup, per row) minimising the mean |log(pred / measured)|.
constexpr double kGatherWaitCycles = 330;      // MoeFinalizeRouting, 6 fit records
constexpr double kFinalizeSetupCycles = 3250;
// MoeReRouting on the 950 generation, fitted on 9 records of both SoCs (910B's model now follows
// CANN's 910B kernel, with no fitted constant).
constexpr double kReRoutingRowCycles = 40;
constexpr double kReRoutingSetupCycles = 6000;
constexpr double kTopKSetupCycles = 3000;       // MoeGatingTopKSoftmax, 2 fit records (950PR only)
// MoeReRouting on 910B: cycles of one iteration of its kernel's scalar loops over
// expert_token_num_per_rank (a GM read through the DCache, an index multiply-add, the sum, the
// loop's count and branch: about ten in-order scalar instructions), fitted on its 4 fit records
// of 910B2 (the three of 8 x 8 ranks and experts against the one of 4 x 4; 3 to 10 on the halves
// of an inner split).
constexpr double kReRoutingScalarIterCycles = 10;

VecStep f32(const char* api) { return {vec_api_cost(api), true}; }

// 16-bit data computed in fp32 between casts, as vector.cpp's Softmax.
void cast_around(VecKernel& k, const std::string& dtype, const std::vector<VecStep>& body) {
  const bool cast = dtype != "float32";
  if (cast) k.elem_prog.push_back({vec_api_cost("CastUp"), false});
  k.elem_prog.insert(k.elem_prog.end(), body.begin(), body.end());
  if (cast) k.elem_prog.push_back({vec_api_cost("CastDown"), false});
}

// One pass of the sort instructions (Sort32, MrgSort, the UB -> UB copy between passes) over `n`
// (key, index) pairs: ASSUMED one fp32 Add-class repeat per 64 words (the GE table lists no Sort).
double pair_pass_cycles(int64_t n) {
  const VecCost c = vec_api_cost("Add");
  return std::ceil(double(n) * 2 / 64.0) * c.per_repeat + c.per_call;
}

// 910B (C220): CANN's three MoeGatingTopKSoftmax templates, tried in priority order (ops-transformer
// moe/moe_gating_top_k_softmax @ c29bc10, op_host/*_tiling_*.cpp REGISTER_TILING_TEMPLATE 1000 /
// 10000 / 20000; the first whose IsCapable holds runs):
// - perf (*_tiling_perf.cpp IsCapable): experts % 8 == 0 up to 1024 with k <= 8, or fewer than 8;
// - e_k_full_load (*_tiling_e_k_full_load.cpp IsCapable): up to 98304 experts while a row fits UB;
// - k_full_load (*_tiling_k_full_load.cpp): the rest, a row at a time in column pieces.
// Each gives a core ceil(T / cores) rows (blockFormer, DoOpTiling).  perf and e_k_full_load loop over
// UB tiles of the most rows their buffers hold (calcMaxRowInUb: rows = ceil(blockFormer / ubOuter)
// for the least ubOuter that fits, ubLoopOfFormerBlock = ceil(blockFormer / rows)).
enum class TopKTemplate { Perf, EKFullLoad, KFullLoad };
struct TopKTiling {
  TopKTemplate kind = TopKTemplate::KFullLoad;
  int64_t rows = 0, loops = 0, tail = 0;  // a UB loop's rows, the busiest core's loops, its last loop's rows
  int buffer_num = 2;                     // e_k_full_load: 1 when one row needs more than half of UB
};

// perf isBufferSizeEnough: row_idx out, 96 B, finished x 2, six [rows, colAlign] fp32 buffers.
int64_t topk_perf_ub_bytes(int64_t r, int64_t col_align, int64_t topk) {
  return align_up(topk * 4, 32) * r + 96 + 2 * 32 * r + 6 * r * col_align * 4;
}

// e_k_full_load isBufferSizeEnough: one colAlign int32 index row; x (bf16: cast to fp32) and the
// [rows, colAlign] int32 source_row buffer; the larger of the SoftMax API's temporary (asc-devkit
// softmax_tiling.cpp GetSoftMaxMaxTmpSize on 910B: rows x (32 / size + colAlign + 64) fp32) and
// the TopK API's (topk_tiling_impl.cpp GetTopKMaxMinTmpSize220, TOPK_NORMAL with its index given:
// 16 B x colAlign); y and expert_idx [rows, k] rows 32 B aligned; finished, 32 B a row.
int64_t topk_ek_ub_bytes(int64_t r, int64_t col_align, int64_t topk, const std::string& dtype) {
  const int64_t ts = dtype == "bfloat16" ? 4 : dtype_size(dtype);  // bf16 is computed in fp32
  const int64_t softmax_tmp = r * (32 / ts + col_align + 64) * 4, topk_tmp = 16 * col_align;
  return col_align * 4 + r * col_align * ts + r * col_align * 4 + std::max(softmax_tmp, topk_tmp) +
         r * (align_up(topk * ts, 32) + align_up(topk * 4, 32)) + r * 32;
}

TopKTiling topk_tiling(int64_t T, int64_t E, int64_t topk, const std::string& dtype, const Platform& p) {
  const int64_t block_rows = cdiv(T, int64_t(p.vector_cores)), col_align = align_up(E, 32);
  const int64_t ub = int64_t(p.ub);
  TopKTiling t;
  int64_t held = ub;
  if ((E <= 1024 && E % 8 == 0 && topk <= 8) || E < 8) {
    t.kind = TopKTemplate::Perf;
  } else if (const int64_t one_row = topk_ek_ub_bytes(1, col_align, topk, dtype); E <= 98304 && one_row <= ub) {
    // getDoubleBufferFlag: double-buffered when one row fits half of UB, the rows then fill half.
    t.kind = TopKTemplate::EKFullLoad;
    t.buffer_num = one_row <= ub / 2 ? 2 : 1;
    held = ub / t.buffer_num;
  } else {
    return t;  // k_full_load: its column pieces are not modelled here
  }
  auto fits = [&](int64_t r) {
    return (t.kind == TopKTemplate::Perf ? topk_perf_ub_bytes(r, col_align, topk)
                                         : topk_ek_ub_bytes(r, col_align, topk, dtype)) <= held;
  };
  int64_t outer = 1;
  while (outer < block_rows && !fits(cdiv(block_rows, outer))) ++outer;
  t.rows = cdiv(block_rows, outer);
  t.loops = cdiv(block_rows, t.rows);
  t.tail = block_rows - (t.loops - 1) * t.rows;
  return t;
}

// The vector -> scalar waits of the busiest core.  perf: each UB loop's kernel (op_kernel/
// moe_gating_top_k_softmax_perf.h Compute) writes source_row_idx with one ArithProgression per row
// for its first 8 rows (computeRowIdxPerf / computeRowIdxForSmallBatch; the rest by vector Adds),
// and ArithProgression of k <= 8 values waits for the vector pipe before its scalar SetValue calls
// (asc-devkit arithprogression_common_impl.h: SetFlag / WaitFlag<HardEvent::V_S>); the sorting path
// (k > 1 or more than 64 experts, TopKFP32PerfPhase1) waits once more in InitIndex.
// e_k_full_load (moe_gating_top_k_softmax_e_k_fullload.h Compute): two a loop, the index row's
// ArithProgression before TopK and the V_S flag before source_row_idx's.  (With finished, TopK reads
// each row's flag by GetValue and sets an S -> V flag: the vector pipe waits for the scalar unit,
// which runs ahead, so nothing is charged.)
int64_t topk_row_waits(const TopKTiling& t, int64_t E, int64_t topk) {
  if (t.rows == 0) return 0;
  if (t.kind == TopKTemplate::EKFullLoad) return 2 * t.loops;
  const int64_t sort_wait = (topk > 1 || E > 64) ? 1 : 0;
  return (t.loops - 1) * (std::min<int64_t>(t.rows, 8) + sort_wait) + std::min<int64_t>(t.tail, 8) + sort_wait;
}

// e_k_full_load's calls per row, GE cycles as one call each (a VecStep of no repeats): the TopK API
// sorts row by row (asc-devkit topk_v220_impl.h TopKCompute, a loop over outter): Sort32 and a copy,
// a 4-way MrgSort and a copy while 4 x z <= colAlign (z = 32, 128, ...), 2-way merges of the lists
// left (MrgTwoQueueSort: the merged run and the next list, each capped at k), two GatherMasks of the
// k values and indices.  Then AddsComputeAlignment adds the row's offset to source_row_idx (an Adds a
// row), and bf16's casts (CastComputeAlignmentBefore / After) run one Cast a row each way.
std::vector<VecStep> topk_ek_row_calls(int64_t E, int64_t topk, const std::string& dtype) {
  const int64_t inner = align_up(E, 32);
  double cyc = 2 * pair_pass_cycles(inner);  // Sort32, copy
  int64_t z = 32;
  for (; z * 4 <= inner; z *= 4) cyc += 2 * pair_pass_cycles(inner);  // MrgSort, copy
  if (z < inner) {
    std::vector<int64_t> lists;
    int64_t left = inner;
    for (int64_t i = z; i >= 32; i /= 4)
      for (int64_t c = left / i; c > 0; --c, left -= i) lists.push_back(i);
    int64_t sorted = 0;
    for (size_t i = 0; i + 1 < lists.size(); ++i) {
      sorted += lists[i];
      cyc += pair_pass_cycles(std::min(sorted, topk) + std::min(lists[i + 1], topk));
    }
  }
  const VecCost gather = vec_api_cost("Add"), adds = vec_api_cost("Adds");
  cyc += 2 * (gather.per_repeat + gather.per_call) + adds.per_repeat + adds.per_call;
  if (dtype == "bfloat16") cyc += vec_api_cost("CastUp").per_call + vec_api_cost("CastDown").per_call;
  return {{{0.0, cyc, 0}, true}};
}

// x [tokens, experts] (+ finished [tokens], bool): softmax over the experts, then k rounds of
// reduce-max with its index and a select masking the winner (910B's e_k_full_load: a sort of each
// row, topk_ek_row_calls).  Outputs y [tokens, k] (x's
// dtype), expert_idx and row_idx [tokens, k] (int32).  A token's row is one unit.
std::shared_ptr<OpModel> make_topk_softmax(const OpDesc& op, const Platform& p) {
  need_float(op);
  const auto [T, E] = rows_cols(op, input(op, 0, "x"), "x");
  if (op.inputs.size() > 2) fail(op.kind + ": expected x and an optional finished, got " + std::to_string(op.inputs.size()) + " inputs");
  const bool finished = op.inputs.size() == 2 && !op.inputs[1].empty();
  if (finished && numel(op.inputs[1]) != T)
    fail(op.kind + ": finished " + shape_str(op.inputs[1]) + " must have one entry per token (" + std::to_string(T) + ")");
  const int64_t topk = attr_int(op, "k", 1);
  if (topk < 1 || topk > E)
    fail(op.kind + ": k = " + std::to_string(topk) + " must be in [1, " + std::to_string(E) +
         "] (the experts of x " + shape_str(op.inputs[0]) + ")");
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = T;
  k.unit_elems = align_up(E, 32 / k.ds);
  k.in_bytes = k.ds + (finished ? 1.0 / double(E) : 0.0);
  k.out_bytes_per_unit = double(topk) * (k.ds + 4 + 4);
  // 910B: CANN's template for the shape (topk_tiling); the 950's model keeps its own rules.
  const TopKTiling tiling = c220(p) ? topk_tiling(T, E, topk, op.dtype, p) : TopKTiling{};
  // e_k_full_load sorts row by row with the TopK API (topk_ek_row_calls), not k reductions.
  const bool row_sort = c220(p) && tiling.kind == TopKTemplate::EKFullLoad;
  std::vector<VecStep> body = {f32("Add"), f32("Exp"), f32("Mul")};  // x - max, exp, * 1 / sum
  if (!row_sort)
    for (int64_t i = 0; i < topk; ++i) body.push_back(f32("Add"));  // mask the winner (select)
  cast_around(k, op.dtype, body);
  k.row_prog = {f32("WholeReduceSum"), f32("WholeReduceSum")};  // max, sum
  if (!row_sort)
    for (int64_t i = 0; i < topk; ++i) k.row_prog.push_back(f32("WholeReduceSum"));  // max with its index
  else
    k.row_loop_prog = topk_ek_row_calls(E, topk, op.dtype);
  // CANN's kernel reduces a UB tile of rows per call (hicann/ops-transformer moe/moe_gating_top_k_softmax:
  // op_kernel/moe_gating_top_k_softmax_perf.h ReduceMaxFP32Perf/ReduceSumFP32Perf, WholeReduceMax and
  // BlockReduce over curRowsNum rows, Brcb to broadcast the results back; e_k_full_load's SoftMax API
  // over [curRowsNum, colAlign]): no scalar wait per row reduction (row_waits).
  k.row_waits = false;
  k.ub_buffers = 2;
  k.temp_fp32 = 2;
  // The row-index loop's waits, each a vector -> scalar wait of the Ascend C kernel.
  k.ascend_c_row_waits(p);
  const double waits = double(topk_row_waits(tiling, E, topk)) * k.row_wait(p);
  k.fixed_us = (kTopKSetupCycles + waits) / p.freq_mhz;
  // Every template's tiling launches ceil(T / ceil(T / cores)) cores (blockNum; tiling_perf.cpp,
  // *_e_k_full_load.cpp, *_k_full_load.cpp DoOpTiling); the 950's model keeps all cores' rule.
  if (c220(p)) k.baseline_block_dim = cdiv(T, cdiv(T, int64_t(p.vector_cores)));
  // 910B perf and e_k_full_load: a UB loop takes the rows calcMaxRowInUb gives (often a core's whole
  // share in one loop, with nothing to overlap its load with), not the sample's block / 16, with the
  // template's queue depth (e_k_full_load: 1 when a row needs more than half of UB).
  if (tiling.rows > 0) {
    k.baseline_tile = tiling.rows * k.unit_elems;
    k.baseline_buffer_num = tiling.buffer_num;
  }
  k.unique_bytes = double(T) * (E * k.ds + double(topk) * (k.ds + 8));
  k.flops = double(T) * double(E) * double(body.size() + k.row_prog.size());
  return make_vec_model(k, p);
}

// Cycles of sorting `n` (key, index) pairs on one core: Sort32 over groups of 32, then 4-way
// MrgSort passes until one list remains (ops-transformer moe_init_routing tiling:
// SORT32_ALIGN_ELEMENT, MRG_LIST_NUM).  Each pass is costed as one fp32 Add-class repeat per
// 64 pairs per word of a pair (key and index; pair_pass_cycles).
double sort_cycles(int64_t n) {
  int passes = 1;  // Sort32
  for (int64_t lists = cdiv(n, 32); lists > 1; lists = cdiv(lists, 4)) ++passes;
  return passes * pair_pass_cycles(n);
}

// x [tokens, H], expert_idx [tokens, k] (int32): the tokens x k (token, expert) pairs are
// sorted by expert (each core sorts its share, then the shares are merged), then each output
// row copies its token's row of x: expanded_x [active rows, H], expanded_row_idx, and the
// per-expert token counts.  The gather is the tiled loop; the sort a fixed phase before it.
std::shared_ptr<OpModel> make_init_routing(const OpDesc& op, const Platform& p) {
  const auto [T, H] = rows_cols(op, input(op, 0, "x"), "x");
  const auto& idx = input(op, 1, "expert_idx");
  const auto [Ti, topk] = rows_cols(op, idx, "expert_idx");
  if (Ti != T)
    fail(op.kind + ": expert_idx " + shape_str(idx) + " has " + std::to_string(Ti) + " tokens, x " +
         shape_str(op.inputs[0]) + " " + std::to_string(T));
  const int64_t pairs = T * topk;
  const int64_t active = attr_int(op, "active_num", pairs);
  if (active < 1 || active > pairs)
    fail(op.kind + ": active_num " + std::to_string(active) + " must be in [1, tokens x k = " + std::to_string(pairs) + "]");
  const int64_t experts = attr_int(op, "expert_num", topk);
  if (experts < topk)
    fail(op.kind + ": expert_idx " + shape_str(idx) + " picks k = " + std::to_string(topk) + " experts per token, more " +
         "than expert_num = " + std::to_string(experts));
  VecKernel k = start_kernel(op, p, op.kind);
  // No MoeInitRouting record to fit: each output row is a gathered row as in MoeFinalizeRouting
  // (its wait), the set-up MoeReRouting's (ASSUMED alike: index bookkeeping of the same kind).
  k.units = active;
  k.unit_elems = H;
  k.unit_cycles = kGatherWaitCycles;
  k.in_bytes = k.ds;
  k.out_bytes = k.ds + 8.0 / double(H);  // the row and its expanded_row_idx, expert id (int32)
  k.run_in = double(H) * k.ds;          // one token row per copy
  k.ub_buffers = 2;
  const int64_t sort_cores = std::min<int64_t>(p.vector_cores, std::max<int64_t>(1, cdiv(pairs, 1024)));
  const double sort_cyc = sort_cycles(cdiv(pairs, sort_cores)) + (sort_cores > 1 ? sort_cycles(pairs) / sort_cores : 0);
  k.fixed_us = (kReRoutingSetupCycles + sort_cyc * p.vec_cost_scale +
                (sort_cores > 1 ? mte2_head(int(sort_cores), false) : 0)) / p.freq_mhz;
  k.unique_bytes = double(T) * H * k.ds + double(active) * (H * k.ds + 8) + double(pairs) * 4;
  return make_vec_model(k, p);
}

// CANN's 910B MoeReRouting kernel (ops-transformer moe_re_routing @ c29bc10, op_kernel/
// moe_re_routing.h Process) sums expert_token_num_per_rank in scalar code.  Before a rank's first
// copy its core reads the r x E counts of the ranks before it (tokenTotalNumsSrc) and, for its first
// expert, tokenNums and the r counts before it (tokenTotalNumsDst); the R reads of each later expert
// run while the previous expert's copies are in flight (TQueBind depth 2), so they are not counted.
// The rank-0 core then writes expert_token_num: E zeroings and R x E read-add-writes after its last
// copy.  The scalar loop iterations of the busiest core outside its copies (cores take ranks
// blockId + i x blockDim).
int64_t re_routing_scalar_iters(int64_t R, int64_t E, int64_t cores) {
  int64_t worst = 0;
  for (int64_t b = 0; b < cores; ++b) {
    int64_t iters = 0;
    for (int64_t r = b; r < R; r += cores) iters += r * E + r + 1 + (r == 0 ? E + R * E : 0);
    worst = std::max(worst, iters);
  }
  return worst;
}

// tokens [A, H] grouped by (source rank, expert), expert_token_num_per_rank [R, E] (int32 or
// int64), per_token_scales [A] (float32, optional): the tokens regrouped by (expert, rank),
// with permute_token_idx [A] and the scales permuted alongside.  The tokens of one (rank,
// expert) block are contiguous in both layouts: a core copies blocks, runs of A / (R E) rows.
std::shared_ptr<OpModel> make_re_routing(const OpDesc& op, const Platform& p) {
  const auto [A, H] = rows_cols(op, input(op, 0, "tokens"), "tokens");
  const auto& counts = input(op, 1, "expert_token_num_per_rank");
  const auto [R, E] = rows_cols(op, counts, "expert_token_num_per_rank");
  if (counts.size() != 2) fail(op.kind + ": expert_token_num_per_rank " + shape_str(counts) + " must be [ranks, experts]");
  const bool scales = op.inputs.size() > 2 && !op.inputs[2].empty();
  if (scales && numel(op.inputs[2]) != A)
    fail(op.kind + ": per_token_scales " + shape_str(op.inputs[2]) + " must have one entry per token (" +
         std::to_string(A) + ")");
  VecKernel k = start_kernel(op, p, op.kind);
  const double side = (scales ? 8.0 : 0.0) + 4.0;  // scales in and out, permute_token_idx
  k.in_bytes = k.ds + (scales ? 4.0 / double(H) : 0.0);
  k.out_bytes = k.ds + (side - (scales ? 4.0 : 0.0)) / double(H);
  k.unique_bytes = 2.0 * double(A) * H * k.ds + double(A) * side + double(R * E) * 4;
  if (c220(p)) {
    // CANN's 910B kernel (hicann/ops-transformer moe/moe_re_routing @ c29bc10: op_host/
    // moe_re_routing_membase_tiling.cpp, the template 910B runs (the r and re tilings are
    // ASCEND910_95 only); op_kernel/moe_re_routing.h): blockDim = ranks, one core per rank.  A core
    // walks its rank's experts and copies each (rank, expert) block GM -> UB -> GM, one DataCopyPad
    // each way per ubFactor rows at most (ubFactor = (UB - 12 KB) / 2 over a row, its index and its
    // scale: DoOpTiling counts the 4-byte scale whether or not the input is there, as GetShapeAttrsInfo
    // sets scaleDtype to DT_FLOAT when it is absent), through a TQueBind of depth 2 with no vector work
    // between: a load and a store of consecutive blocks overlap, and a small block waits on its copies'
    // latency (the round trip of a load and a store, as GE's start costs charge them).  A block is a
    // unit and has its own loops (Process: ubLoop + tail per expert), however small (unit_per_tile);
    // the search may split a rank's blocks over more cores, as the 950 generation's tiling does.
    // blockDim: DoOpTiling's ceil(R / ceil(R / cores)), whole ranks a core (Process: rank
    // blockId + i x coreNum, unit_group), so 50 ranks on 48 cores run on 25 cores, 2 ranks each.
    if (H > 16384)  // GetShapeAttrsInfo's TOKENS_LENGTH_UPPER_BOUND
      fail(op.kind + ": tokens " + shape_str(op.inputs[0]) + " has rows of " + std::to_string(H) +
           " elements; CANN's 910B kernel takes at most 16384");
    const int64_t block_rows = std::max<int64_t>(1, cdiv(A, R * E));
    const int64_t ub_factor = (int64_t(p.ub) - 12288) / 2 / (H * k.ds + 8);
    const int64_t chunk = std::max<int64_t>(1, std::min(block_rows, ub_factor)) * H;
    const int64_t cores = cdiv(R, cdiv(R, p.vector_cores));
    k.units = R * E;
    k.unit_elems = block_rows * H;
    k.unit_per_tile = true;
    k.unit_group = E;
    k.baseline_block_dim = cores;
    k.baseline_tile = align_up(chunk, 32 / k.ds);  // rounded up: one tile holds a block
    k.ub_buffers = 1;  // the TQueBind is one queue, VECIN and VECOUT alike
    k.run_out = double(block_rows * H * k.ds);  // a block's rows are contiguous in permute_tokens only
    k.in_streams = scales ? 2 : 1;
    k.copy_only = true;
    k.tile_round_trip = mte2_head(int(cores), double(chunk) * k.ds >= 25000) + kMte3Head;
    // Before its first copy a core reads expert_token_num_per_rank from GM in scalar code (moe_re_routing.h
    // Process, lines 97-112: srcExpertTokenGm(i), a GlobalTensor read, for the rank's prefix sum and for
    // tokenNums, which sets the copy's offset and ubLoop): the first read misses the scalar DCache and the
    // table is in HBM (the benchmark clears L2), so one GM load's latency (GE's first-copy start,
    // mte2_head) passes before the first DataCopyPad can issue, beside the one the kernel head charges.
    // The table's further 64-B DCache lines (ascend_model.md: 基本架构.md) are not charged apart: the
    // model has no L2-hit latency to price them with.  The scalar loops over the table outside the
    // copies (re_routing_scalar_iters) add their iterations, growing with ranks x experts.
    k.fixed_us = (mte2_head(int(cores), false) +
                  double(re_routing_scalar_iters(R, E, cores)) * kReRoutingScalarIterCycles) / p.freq_mhz;
    return make_vec_model(k, p);
  }
  // The 950 generation's tilings (op_host/moe_re_routing_r_tiling.cpp, *_re_tiling.cpp) also
  // spread a rank's experts over the cores: modelled as token rows over all cores, runs of a block.
  k.units = A;
  k.ub_buffers = 2;
  k.unit_elems = H;
  k.unit_cycles = kReRoutingRowCycles;
  k.fixed_us = kReRoutingSetupCycles / p.freq_mhz;
  k.run_in = k.run_out = double(std::max<int64_t>(1, A / (R * E))) * H * k.ds;
  return make_vec_model(k, p);
}

// CANN's 910B tiling of MoeFinalizeRoutingV2 (ops-transformer moe/moe_finalize_routing_v2 @ c29bc10,
// op_host/moe_finalize_routing_v2_tiling_membase.cpp, the template of every SoC but ASCEND910_95).
// CalcTilingData gives a core ceil(T / cores) tokens on ceil(T / that) cores, then takes the first
// template whose UB budget (UB - 1 KB) holds a token: OptimizedCutH (the fp32 H = 5120 network case
// with skip1 and bias, even k, drop_pad_mode 0: two H slices a loop of rows, *_cuth_k2_optimized),
// LoadBiasAndCalcTiling (the *_all_bias kernels), LoadHKAndCalcTiling (fp_db, bf16), else CutH (one
// token a loop, in slices of normalH columns: *_cuth, *_cuth_k2, *_cuth_k4).  bf16 buffers count 3x
// (cast to fp32); an absent bias takes no buffer (biasIsNeedBuffer 0: the *_WITHOUT_BIAS keys).
struct FinalizeTiling {
  int64_t cores = 1, tokens_core = 1;
  int64_t loops = 1;   // CopyIn -> Compute -> CopyOut rounds of the busiest core
  int64_t slices = 1;  // H slices of a token (CutH, OptimizedCutH)
  int64_t rounds = 1;  // gather waits a token and slice (up to two gathered rows in flight)
  bool gm_index = false;  // reads expanded_row_idx from GM in scalar code (all but the *_all_bias kernels)
};

// What the 910B tiling picks its template by: tokens, hidden size, k, x's dtype, the scales' bytes
// per element, and which optional inputs (skip1, skip2, bias) and drop_pad_mode are given.
struct FinalizeShape {
  int64_t T = 1, H = 1, topk = 1;
  std::string dtype;
  int scale_ds = 2;
  bool skip1 = false, skip2 = false, bias = false, drop_pad = false;
};

// A template whose UB pass holds `rows` whole tokens: the busiest core's loops over its `tokens`.
int64_t token_loops(int64_t tokens, int64_t rows) { return cdiv(tokens, std::min(rows, tokens)); }

// OptimizedCutH (tiling_membase.cpp lines 549-597): H cut in halves of whole 512-byte blocks, each loop
// of rows in its slices, the skips, scales and expert ids double-buffered; the row indices in UB
// (PrepareData, as the *_all_bias kernels).  0 loops: UB holds no row.
FinalizeTiling finalize_optimized_cuth_910b(const FinalizeShape& s, int64_t ub, FinalizeTiling t) {
  const int64_t ds = dtype_size(s.dtype), s2 = s.skip2 ? 1 : 0;
  const int64_t nh = cdiv(s.H * ds / 2, int64_t(512)) * 512 / ds;
  const int64_t fixed = 2 * nh * ds * 2 + nh * ds;  // bias present, as the template requires
  const int64_t row = (2 + s2) * nh * ds;
  const int64_t k_bytes = align_up(s.topk * 4, 32) + align_up(s.topk * s.scale_ds, 32);
  const int64_t rows = (ub - fixed - align_up(t.tokens_core, 8) * s.topk * 4) / (2 * row + 2 * k_bytes);
  t.loops = 0;
  if (rows <= 0) return t;
  t.slices = cdiv(s.H, nh);
  t.loops = token_loops(t.tokens_core, rows) * t.slices;
  return t;
}

FinalizeTiling finalize_tiling_910b(const FinalizeShape& s, const Platform& p) {
  FinalizeTiling t;
  const int64_t ub = int64_t(p.ub) - 1024, T = s.T, H = s.H, topk = s.topk;
  t.tokens_core = cdiv(T, int64_t(p.vector_cores));
  t.cores = std::min<int64_t>(cdiv(T, t.tokens_core), p.vector_cores);
  t.rounds = cdiv(topk, 2);
  if (H == 5120 && s.dtype == "float32" && s.skip1 && s.bias && topk % 2 == 0 && !s.drop_pad) {
    const FinalizeTiling n = finalize_optimized_cuth_910b(s, ub, t);
    if (n.loops > 0) return n;
  }
  const int64_t ds = dtype_size(s.dtype), s2 = s.skip2 ? 1 : 0, b = s.bias ? 1 : 0;
  const int64_t big = s.dtype == "bfloat16" ? 3 : 1;
  const int64_t h = align_up(H, 32 / ds);
  const int64_t kk = std::min<int64_t>(topk, 256);  // BOUND_K_V2: larger k is sliced
  const int64_t k_bytes = align_up(kk * 4, 32) + align_up(kk * s.scale_ds, 32);  // a token's expert ids and scales
  if (topk <= 256) {  // LoadBiasAndCalcTiling
    const int64_t fixed = big == 3 ? (b + 1) * h * ds * 2 * 3 : (b + 1) * h * ds * 2 + h * ds;
    const int64_t token = (big * h + big * h * s2 + h) * ds;
    const int64_t rows = (ub - fixed - align_up(t.tokens_core, 8) * topk * 4) / (token + k_bytes);
    if (rows > 0) {
      t.loops = token_loops(t.tokens_core, rows);
      return t;
    }
  }
  t.gm_index = true;
  const int64_t fixed = (b + 1) * h * ds * 2 * big;  // LoadHKAndCalcTiling
  const int64_t token = (big * h + big * h * s2 + h + (big == 3 ? 0 : h)) * ds;
  const int64_t rows = topk <= 256 ? (ub - fixed) / (k_bytes + token) : (ub - fixed - k_bytes) / token;
  if (rows > 0) {
    t.loops = token_loops(t.tokens_core, rows);
    return t;
  }
  const int64_t unroll = topk == 4 ? 4 : 2;  // CutH's rows in flight
  const int64_t parts = big == 3 ? 3 + 3 * s2 + 1 + (b + 1) * unroll * 3 : 3 + s2 + (b + 1) * unroll;
  const int64_t normal_h = std::max<int64_t>(1, (ub - k_bytes) / parts / 32 * 32 / ds);
  t.slices = cdiv(H, normal_h);
  t.loops = t.tokens_core * t.slices;
  if (topk == 2 || topk == 4) t.rounds = 1;  // *_cuth_k2 / *_cuth_k4 issue all k rows, then wait once
  return t;
}

// out [T, H] = skip1 + skip2 + sum_j scales[t, j] (expanded_x[row of (t, j)] + bias[expert of
// (t, j)]) (MoeFinalizeRoutingV2; drop_pad_mode 1: expanded_x is [E, capacity, H]).  Each
// output element reads its k gathered rows (one row per copy) and the skips from HBM; the bias
// table ([experts, H], a few hundred KB at most) is read from L2 after its first use, so its k
// rows per token cost vector work (the Add) but no HBM traffic.
std::shared_ptr<OpModel> make_finalize_routing(const OpDesc& op, const Platform& p) {
  need_float(op);
  static const char* kNames[] = {"expanded_x", "expanded_row_idx", "skip1", "skip2", "bias", "scales", "expert_idx"};
  if (op.inputs.size() != 7)
    fail(op.kind + ": expected 7 input shapes (expanded_x, expanded_row_idx, skip1, skip2, bias, scales, expert_idx; "
         "[] for an absent one), got " + std::to_string(op.inputs.size()));
  const auto [rows, H] = rows_cols(op, op.inputs[0], kNames[0]);
  // k is scales' second dimension, 1 without scales (tiling_membase.cpp DoGetShapeAttrsInfo, lines
  // 201-214); expert_idx, when given, is [tokens, k]; the bias needs it and at least k rows (lines 274-320);
  // skip2 needs skip1 (lines 254-259).
  const auto& eidx = op.inputs[6];
  const bool scaled = !op.inputs[5].empty(), bias = !op.inputs[4].empty();
  const auto [T, topk] = !eidx.empty() ? rows_cols(op, eidx, kNames[6])
                         : scaled      ? rows_cols(op, op.inputs[5], kNames[5])
                                       : std::pair<int64_t, int64_t>{numel(input(op, 1, kNames[1])), 1};
  const bool drop_pad = attr_flag(op, "drop_pad_mode");
  if (numel(input(op, 1, kNames[1])) != T * topk)
    fail(op.kind + ": expanded_row_idx " + shape_str(op.inputs[1]) + " must have tokens x k = " +
         std::to_string(T * topk) + " entries (" +
         (eidx.empty() ? "scales " + shape_str(op.inputs[5]) : "expert_idx " + shape_str(eidx)) + ")");
  if (!drop_pad && rows < T * topk)
    fail(op.kind + ": expanded_x " + shape_str(op.inputs[0]) + " has fewer rows than tokens x k = " + std::to_string(T * topk));
  int skips = 0;
  for (size_t i : {size_t(2), size_t(3)}) {
    if (op.inputs[i].empty()) continue;
    if (op.inputs[i] != std::vector<int64_t>{T, H})
      fail(op.kind + ": " + kNames[i] + " " + shape_str(op.inputs[i]) + " must be [tokens, H] = " + shape_str({T, H}));
    ++skips;
  }
  if (op.inputs[2].empty() && !op.inputs[3].empty())
    fail(op.kind + ": skip2 " + shape_str(op.inputs[3]) +
         " is given without skip1 (CANN takes skip2 only beside skip1)");
  if (bias && (op.inputs[4].size() != 2 || op.inputs[4][1] != H || op.inputs[4][0] < topk))
    fail(op.kind + ": bias " + shape_str(op.inputs[4]) + " must be [experts, H] with H = " + std::to_string(H) +
         " and experts >= k = " + std::to_string(topk));
  if (bias && eidx.empty())
    fail(op.kind + ": bias " + shape_str(op.inputs[4]) + " needs expert_idx (it picks the bias rows)");
  if (scaled && !eidx.empty() && op.inputs[5] != eidx)
    fail(op.kind + ": scales " + shape_str(op.inputs[5]) + " must have expert_idx's shape " + shape_str(eidx));
  if (!scaled && topk != 1)
    fail(op.kind + ": expert_idx " + shape_str(eidx) + " picks k = " + std::to_string(topk) +
         " rows a token but scales is absent (CANN then takes k = 1: give scales [tokens, k])");
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = T;
  k.unit_elems = H;
  k.unit_cycles = double(topk) * kGatherWaitCycles;
  k.fixed_us = kFinalizeSetupCycles / p.freq_mhz;
  if (c220(p)) {
    const auto dts = attr_strs(op, "input_dtypes");
    const int scale_ds = dts.size() > 5 && !dts[5].empty() ? dtype_size(dts[5]) : k.ds;
    const FinalizeShape shape{T, H, topk, op.dtype, scale_ds, !op.inputs[2].empty(), !op.inputs[3].empty(),
                              bias, drop_pad};
    const FinalizeTiling t = finalize_tiling_910b(shape, p);
    // 910B: CANN's kernel gathers a token's k rows two at a time (ops-transformer moe/
    // moe_finalize_routing_v2 @ c29bc10, op_kernel/moe_finalize_routing_v2_fp_db_all_bias.h Compute,
    // lines 363-495, and *_bf16_all_bias.h lines 418-567: ping (Db0) and pong (Db1) loads in flight
    // together, PARALLEL_NUM 2 in moe_finalize_routing_v2_common.h; the next pair's index read waits on
    // this pair), and an odd k's last row alone (fp_db_all_bias.h lines 496-567, the same wait for one
    // row): ceil(k / 2) rounds a token, each the wait of two gathered rows (2 x kGatherWaitCycles, the
    // fit's wait per row at even k); CutH waits so in each slice, its k = 2 and k = 4 kernels once
    // (*_cuth_k4.h Compute issues the four rows' copies, then waits).
    k.unit_cycles = double(t.slices * t.rounds) * 2.0 * kGatherWaitCycles;
    k.baseline_block_dim = t.cores;
    // Each loop's Compute waits for its CopyIn (skips, scales, expert ids; MTE2_S, *_all_bias.h
    // CopyIn / Compute) before its first gather: a GM load's latency (GE's first-copy start, mte2_head)
    // a loop after the first, whose start the kernel head charges.
    // The fp_db, bf16 and *_cuth* kernels read a gathered row's index from GM in scalar code
    // (gmExpandedSrcToDstRow_.GetValue in Compute; the *_all_bias kernels copy the indices to UB first,
    // PrepareData): the first read misses the scalar DCache and the table is in HBM (the benchmark
    // clears L2), one GM load's latency more before the first gather, as MoeReRouting's counts read.
    // Its further 64-B lines are not charged apart (no L2-hit latency in the model to price them).
    const int64_t gm_waits = t.loops - 1 + (t.gm_index ? 1 : 0);
    k.fixed_us += double(gm_waits) * mte2_head(int(t.cores), false) / p.freq_mhz;
  }
  // A token's k scales, k expert ids (with the bias) and k row indices, 4 bytes each, beside its rows.
  const double index_bytes = 4.0 * double(topk) * (1 + (scaled ? 1 : 0) + (eidx.empty() ? 0 : 1));
  k.in_bytes = double(topk + skips) * k.ds + index_bytes / double(H);
  k.out_bytes = k.ds;
  k.run_in = double(H) * k.ds;  // one gathered row per copy
  k.in_streams = int((bias ? 2 : 1) * topk + skips);  // the bias rows pass through UB too
  k.ub_buffers = k.in_streams + 1;
  std::vector<VecStep> body;
  // + bias (without one, fp_db_all_bias.h Compute's Adds of 0 in its place), * scale, accumulate.
  for (int64_t j = 0; j < topk; ++j)
    for (const char* a : {bias ? "Add" : "Adds", "Muls", "Add"}) body.push_back(f32(a));
  for (int s = 0; s < skips; ++s) body.push_back(f32("Add"));
  cast_around(k, op.dtype, body);
  k.temp_fp32 = 2;
  k.unique_bytes = (double(T * topk) + skips * T) * H * k.ds + (bias ? double(numel(op.inputs[4])) : 0.0) * k.ds +
                   double(T) * H * k.ds;
  k.flops = double(T) * H * double(body.size());
  return make_vec_model(k, p);
}

// x [..., n, n] (float32): exp, then iter_step rounds of row and column normalisation (a sum
// and a divide each), on each n x n matrix in UB; one matrix is a unit.
std::shared_ptr<OpModel> make_sinkhorn(const OpDesc& op, const Platform& p) {
  need_float(op);
  const auto& x = input(op, 0, "x");
  const auto [rows, n] = rows_cols(op, x, "x");
  if (x[x.size() - 2] != n) fail(op.kind + ": x " + shape_str(x) + " must end in a square matrix [n, n]");
  const int64_t iters = attr_int(op, "iter_step", 20);
  if (iters < 1 || iters > 1024) fail(op.kind + ": iter_step must be in [1, 1024], got " + std::to_string(iters));
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = rows / n;
  k.unit_elems = align_up(n * n, 32 / k.ds);
  k.in_bytes = k.ds;
  k.out_bytes = k.ds;
  std::vector<VecStep> body = {f32("Exp")};
  for (int64_t i = 0; i < iters; ++i)
    for (const char* a : {"Add", "Div", "Add", "Div"}) body.push_back(f32(a));
  cast_around(k, op.dtype, body);
  k.ub_buffers = 2;
  k.temp_fp32 = 2;
  k.unique_bytes = 2.0 * double(numel(x)) * k.ds;
  k.flops = double(numel(x)) * double(body.size());
  return make_vec_model(k, p);
}

}  // namespace

std::shared_ptr<OpModel> make_routing_model(const OpDesc& op, const Platform& p) {
  check_input_dtypes(op);
  if (op.kind == "MoeGatingTopKSoftmax") return make_topk_softmax(op, p);
  if (op.kind == "MoeInitRouting") return make_init_routing(op, p);
  if (op.kind == "MoeReRouting") return make_re_routing(op, p);
  if (op.kind == "MoeFinalizeRouting") return make_finalize_routing(op, p);
  if (op.kind == "MhcSinkhorn") return make_sinkhorn(op, p);
  fail("internal: no routing model for " + op.kind);
}

}  // namespace aoe::ascend::detail
