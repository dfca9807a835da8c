// The LLM vector kernels: RmsNorm, AddRmsNorm, AddRmsNormDynamicQuant, GroupNorm (family
// "norm"), DynamicQuant, DequantSwigluQuant ("quant"), SwiGlu, ApplyRotaryPosEmb
// ("llm_elementwise"), in CANN's names and aclnn input order (docs/llm_operators.md).
//
// Each is a VecKernel of vector.cpp (the Ascend C pattern: blockDim cores, UB tiles of
// tileLen elements, bufferNum buffers) with its own vector program.  For the row kernels
// (norms, quantisation) a unit is one row of the hidden dimension H, so tileLen is what CANN's
// tilings call ubFactor: tileLen / H rows per UB tile (rowFactor) when a row fits, else a
// split of H into ceil(H / tileLen) pieces (CANN's SPLIT_D mode, every piece read once per
// pass); rows are spread over the cores in blocks of ceil(rows / blockDim) (blockFactor).
// The kernels' structure (which vector APIs run per element, per row, per tile) is assumed
// from the operators' definitions and CANN's tiling code (hicann/ops-nn, cited per op); the
// per-row scalar cost is fitted (kRowScalar* below).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

// Cycles per row of a kernel that reads a row statistic (rstd, abs-max) back into a scalar
// register: a vector -> scalar pipe wait (SetFlag/WaitFlag V_S) and the scalar arithmetic of the
// row's factor; pipe latency, so not scaled by the vector unit's issue speed (vec_cost_scale).
// And the 950 generation's regbase quantisers (DynamicQuant, DequantSwigluQuant: op_kernel/arch35),
// which keep a row's abs-max in the vector registers, but whose row scale (127 / max) waits for the
// row's whole reduction: a dependency wait per row inside the vector loop, no scalar round trip.
// [F] chosen on the fit half (case id % 4 == 0) of shared/reference/measured_ops/
// cann_bench_calibration.json only, over {150, 300, 450, 600} x {120, 240, 360, 480} x {0, 50, 100,
// 150} (quant x norm x chain), minimising the mean |log(predicted / measured)| of the 44 records of
// RmsNorm, AddRmsNormDynamicQuant, GroupNorm, DynamicQuant and DequantSwigluQuant: 0.169 (0.191
// with the earlier 600 / 480 / 150 scaled by vec_cost_scale: 1.11 on 910B2, 0.59 on 950PR, which
// left 910B2 over-predicted as rows per core grew).  Inner split: chosen on case id % 8 == 0, the
// % 8 == 4 records score 0.168 (0.190 before); chosen on % 8 == 4, the % 8 == 0 ones 0.186 (0.193).
// (910B's one-row DynamicQuant has no scalar round trip: kPipeDrain below replaces it there.)
// Round 9: 910B's AddRmsNormDynamicQuant NORMAL / SINGLE_ROW charge their per-row chains from the kernel
// (arndq_row_quant: ReduceSumHalfInterval, ReduceMaxInplace's dependent repeats and barriers) and each of
// their two scalar round trips (the rstd's, the abs-max's) at kRowScalarNorm, not kRowScalarQuant:
// re-checked on 910B2's fit half with that, kRowScalarNorm over {160 .. 320} scores its seven 910B2
// records (AddRmsNormDynamicQuant x 3, RmsNorm x 3, GroupNorm) a mean |log| of 0.081 (160), 0.077
// (200-240, flat), 0.085 (280), 0.095 (320): kept.  kRowScalarQuant then binds no 910B2 fit-half record
// (set to 0, none moves): its 910B users are the templates not transcribed yet, AddRmsNormDynamicQuant's
// SLICE_D, whose one fit-half record is bound by its GM reads, and DynamicQuant's TILING_KEY 0/1 and 6,
// which no fit-half record takes; it stays as fitted for them and for the 950 generation's
// AddRmsNormDynamicQuant, whose five fit-half 950PR records it moves.
constexpr double kRowScalarQuant = 450.0;
constexpr double kRowScalarNorm = 2 * kVecScalarWait;  // 240 cycles: V_S then S_V
constexpr double kRowChainRegbase = 100.0;
// 910B's one-row-at-a-time DynamicQuant (op_kernel/dynamic_quant_db.h, TILING_KEY 2/3: ComputeRowMax,
// QuantizeRow) works through each row as a chain of vector calls with a PipeBarrier<PIPE_V> after
// nearly every one (8 barriers a row around the casts, Abs, Brcb, Div and Mul, one more with smooth
// scales, and up to two in the abs-max: dynamic_quant_one_row_910b), and takes the abs-max in place
// (dynamic_quant_base.h ReduceMaxInplace): one Max over the row's repeats with the destination's and
// second source's repeat strides 0 ({1, 1, 1, 0, 8, 0}), so every repeat reads the block the one
// before wrote.  Each barrier and each dependent repeat waits out the vector pipe's latency, per row;
// the row's scale stays in the vector unit (Brcb, Div), no scalar round trip (kRowScalarQuant).
// [F] chosen on the fit half (case id % 4 == 0) of shared/reference/measured_ops/
// cann_bench_calibration.json only: 910B2's five DynamicQuant records, mean |log(predicted /
// measured)| 0.149 at 12-16 cycles (0.209 with kRowScalarQuant a row before; 0.308 at 0: the other
// constants of the time).  Inner split: chosen on case id % 8 == 0 (16), the % 8 == 4 records score
// 0.167 (0.202 before); chosen on % 8 == 4 (10), the % 8 == 0 ones 0.131 (0.218).  Re-checked with the
// kernel's exact barrier count (one fewer a row than the 9 + 1 of that fit): the five records' mean
// |log| is 0.100 at 14 (0.094 with the old count), flat from 14 to 18 (0.086); chosen on % 8 == 0 (16-18),
// the % 8 == 4 records score 0.107 (0.104 at 14); chosen on % 8 == 4 (13-14), % 8 == 0 0.116-0.094: kept.
constexpr double kPipeDrain = 14.0;
// AddRmsNormDynamicQuant's in-place abs-max on 910B (add_rms_norm_dynamic_quant_helper.h ReduceMaxInplace: one
// Max over a row's repeats with the destination's and second source's repeat strides 0) makes each repeat
// wait for the one before it: a result's latency through the vector pipe, without a PipeBarrier's drain
// of the whole pipe and its issue sync (kPipeDrain).  [F] chosen on the fit half (case id % 4 == 0) of
// shared/reference/measured_ops/cann_bench_calibration.json only, with the kernel single-buffered as CANN's
// and its per-row chains charged (arndq_row_quant): 910B2's three NORMAL records ([2048, 8192] bf16,
// [4093, 4093] bf16, [2048, 4096] fp16) at 0.999, 0.993, 1.031x the measured time at 6 cycles (mean
// |log| 0.013; 0.053 double-buffered before; at 14, kPipeDrain: 1.16, 1.13, 1.17x; over 4 .. 8: 0.96 ..
// 1.07x).  Inner split: chosen on case id % 8 == 0 ([2048, 8192], 6), the % 8 == 4 records score 0.019
// (0.019 before); chosen on % 8 == 4 (5-6), the % 8 == 0 one 0.001-0.021 (0.120 before).
// (DynamicQuant's one-row template charges the same Max chain at kPipeDrain a repeat, on top of its
// repeats priced as WholeReduceSum's, as fitted there: its fit half wants 14 or more with that pricing,
// 0.88, 0.89, 0.98, 1.08x at 14 against 0.79, 0.76, 0.92, 0.91x at 6.  Not unified here.)
constexpr double kDependentRepeat = 6.0;

// RmsNorm with 16-bit x and a float32 gamma (input_dtypes), CANN's mixed-dtype tiling on 910B
// ([S] hicann/ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp isMixDtype, CalMixDtypeTiling).
bool rms_mixed_gamma(const OpDesc& op) {
  const auto dts = attr_strs(op, "input_dtypes");
  return op.kind == "RmsNorm" && dts.size() == 2 && dts[0] != "float32" && dts[1] == "float32";
}

// kUnalignedBlockCycles, kBurstCycles: common.hpp.
// 910B's GM -> UB copies of the same addresses by every core at once, [D] from the same section's
// same-address case (all 48 cores reading one half [6144, 512] matrix to UB in [128, 64] tiles):
// 539.42 us when they walk it together against 328.88 us staggered, 1.64 times as long (GM serialises
// concurrent accesses to one 512-byte window: §0's GM access rules).  (The 950 generation's case:
// 342.29 against 335.64 us, no conflict worth charging.)
constexpr double kSameAddressUb = 539.42 / 328.88;

// CANN's RmsNorm / AddRmsNorm UB factor on 910B: 12288 16-bit or 10240 fp32 elements per UB
// pass ([S] hicann/ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp UB_FACTOR_B16 /
// UB_FACTOR_B32; add_rms_norm_tiling.cpp the same); a row wider than that is split (SPLIT_D).
constexpr int64_t kRmsUbFactorB16 = 12288, kRmsUbFactorB32 = 10240;
// Rows of at most 2000 (32-byte aligned) elements take MODE_MERGE_N: many rows per UB pass, the
// rstd of all of them at once ([S] rms_norm_tiling.cpp SMALL_REDUCE_NUM; add_rms_norm the same).
constexpr int64_t kMergeNCols = 2000;

VecStep api(const char* name) { return {vec_api_cost(name), true}; }  // fp32 data: 64 per repeat
VecStep cast_step(bool up) { return {vec_api_cost(up ? "CastUp" : "CastDown"), false}; }

bool is_float(const std::string& d) { return d == "float16" || d == "bfloat16" || d == "float32"; }
bool half(const std::string& d) { return d == "float16" || d == "bfloat16"; }

void need_float(const OpDesc& op) {
  if (!is_float(op.dtype))
    fail(op.kind + ": x is " + op.dtype + "; this kernel takes float16, bfloat16 or float32");
}

// Input i, or an empty shape when absent.
const std::vector<int64_t>& input(const OpDesc& op, size_t i) {
  static const std::vector<int64_t> none;
  return i < op.inputs.size() ? op.inputs[i] : none;
}

void need_inputs(const OpDesc& op, size_t lo, size_t hi, const std::string& names) {
  if (op.inputs.size() < lo || op.inputs.size() > hi)
    fail(op.kind + ": takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
         " inputs (" + names + "), got " + std::to_string(op.inputs.size()));
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (i < lo || !op.inputs[i].empty()) check_shape(op.inputs[i], op.kind + " input " + std::to_string(i));
  const auto dts = attr_strs(op, "input_dtypes");
  if (!dts.empty() && dts.size() != op.inputs.size())
    fail(op.kind + ": input_dtypes lists " + std::to_string(dts.size()) + " dtypes for " +
         std::to_string(op.inputs.size()) + " inputs");
}

// [rows, H] of x: H its last dimension.
std::pair<int64_t, int64_t> rows_hidden(const OpDesc& op, const std::vector<int64_t>& x, const std::string& name) {
  if (x.empty()) fail(op.kind + ": " + name + " needs at least one dimension");
  return {numel(x) / x.back(), x.back()};
}

// A per-channel operand (gamma, beta, a smooth scale): H elements ([H], or [1, H]).
void check_vector(const OpDesc& op, const std::vector<int64_t>& s, int64_t h, const std::string& name,
                  const std::string& what) {
  if (s.empty() || numel(s) != h || s.back() != h)
    fail(op.kind + ": " + name + " " + shape_str(s) + " does not match " + what + " " + std::to_string(h) +
         " (expected [" + std::to_string(h) + "])");
}

// A row kernel over `rows` rows of `h` elements: x streamed in, nothing else yet.
VecKernel row_kernel(const OpDesc& op, const Platform& p, int64_t rows, int64_t h) {
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = rows;
  k.unit_elems = align_up(h, 32 / k.ds);  // rows are 32-byte aligned in UB ([A] NPU架构版本2201.md)
  k.in_bytes = 0;
  k.in_streams = 0;
  k.ub_buffers = 0;
  k.split_rows = false;  // CANN's row kernels keep a row on one core (blockFactor whole rows)
  // 910B: Ascend C kernels, whose row reductions end in a wait for the scalar unit per row, not TBE's
  // per-call wait that Platform::vec_row_cycles is fitted on (Softmax).
  k.ascend_c_row_waits(p);
  return k;
}
// One more GM operand the size of the work (bytes per element), or one more output.
void stream_in(VecKernel& k, double bytes) { k.in_bytes += bytes; k.in_streams += 1; k.ub_buffers += 1; }
void stream_out(VecKernel& k, double bytes) { k.out_bytes += bytes; k.ub_buffers += 1; }

void finish(VecKernel& k, double elems, double unit_out_bytes) {
  k.out_bytes_per_unit = unit_out_bytes;
  k.unique_bytes = elems * (k.in_bytes + k.out_bytes) + double(k.units) * unit_out_bytes + k.bcast_bytes;
  k.flops = elems * double(k.elem_prog.size() + k.row_prog.size() + k.row_loop_prog.size());
}

// ---- norms --------------------------------------------------------------------------------

// RmsNorm's MERGE_N kernel on 910B1-4 takes its isPerformance path for 16-bit x of 2 or 3 dimensions
// (at most 512 rows in the first, 8 in the second), a 1-D gamma of x's dtype and H <= 5120 ([S]
// hicann/ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp: dimOK, sizeOk, dtypeOk, PERFORMANC_DIM_*).
bool rms_performance(const OpDesc& op, const Platform& p) {
  const auto& x = op.inputs[0];
  const bool mixed = rms_mixed_gamma(op);  // dtypeOk: !isMixDtype, a float32 gamma with 16-bit x
  const bool dims = (x.size() == 2 && x[0] <= 512) || (x.size() == 3 && x[0] <= 512 && x[1] <= 8);
  const bool soc_910b = p.name.rfind("Ascend910B", 0) == 0;  // SocVersion::ASCEND910B: 910B1-4
  return op.kind == "RmsNorm" && soc_910b && half(op.dtype) && !mixed && dims && input(op, 1).size() == 1 &&
         x.back() <= 5120;
}

// The rows a NORMAL pass of AddRmsNormDynamicQuant's 910B tiling (below) for rows of h: rowStep, at most 16;
// 0: SINGLE_ROW's one row; -1: neither, SLICE_D.
int64_t quant_910b_row_step(const Platform& p, int64_t h) {
  const int64_t ha = align_up(h, 32), ub = int64_t(p.ub);
  const int64_t row_step = (ub - 3 * ha * 2 - 768) / (16 * ha + 8);
  if (row_step >= 1) return std::min<int64_t>(16, row_step);
  return 16 * ha + 2 * 128 * 4 <= ub ? 0 : -1;
}

// AddRmsNormDynamicQuant's 910B tiling and kernels ([S] hicann/ops-nn norm/add_rms_norm_dynamic_quant/
// op_host/arch22/add_rms_norm_dynamic_quant_tiling.cpp, op_kernel/add_rms_norm_dynamic_quant_*_kernel.h) on
// the kernel `k` of make_rms_norm.  The tiling counts 2 bytes an element whatever x is (dtSize_ SIZEOF_B16)
// and pads a row to 32 elements, not bytes (GetShapeInfo: numLastDimAligned_, alignSize BLOCK_SIZE 32 as an
// element count); DoBlockTiling gives ceil(rows / cores) rows a core, ceil(rows / that) cores; DoUbTiling
// takes the first template that fits:
// - NORMAL (CheckUbNormalTiling): rowStep = (UB - 3 weight rows - 768) / (16 x aligned D + 8) rows a pass,
//   at most 16 (MAX_ROW_STEP); UB (normal_kernel.h Init): inRowsQue and outRowsQue two 16-bit rows each a
//   row of the pass, xBufFp32 and yBufFp32 one fp32 row each, gamma and the smooth scales kept whole.
// - SINGLE_ROW (CheckUbSingleRowTiling): one row while 16 bytes an element and 1 KB fit UB; UB
//   (single_row_kernel.h Init): inRowsQue two 16-bit rows, yQue and smoothBuf one each, two fp32 rows;
//   gamma and smooth_scale2 come through inRowsQue again for every row (CopyInGamma, CopyInSmooth).
// - SLICE_D (CheckUbSliceDTiling): pieces of 8864 elements (SLICE_COL_LEN), the last D % 8864; UB
//   (cut_d_kernel.h Init): outRowQue one 16-bit piece, inRowsQue two, tmpOutQue and three fp32 buffers.
// Every template's queues are single-buffered (BUFFER_NUM 1, add_rms_norm_dynamic_quant.cpp), and in
// NORMAL and SINGLE_ROW the next pass cannot load early: the quantisation takes inRowsQue as its scratch
// (normal_kernel.h doQuant1withFlag AllocTensor, single_row_kernel.h ComputeDynamicQuant DeQue), so a
// pass's load waits for the pass before to finish computing; only its store (outRowsQue / yQue) runs
// beside the next load: single-buffered here too, a pass loading, then computing, its store beside the next
// load (the per-row chains charged by make_rms_norm and arndq_row_quant).
// Returns SLICE_D's GM bytes read per element and sweep (0 for the whole-row templates).
double quant_910b_tiling(VecKernel& k, const Platform& p, int64_t h, int quant_outs) {
  const int64_t hal = align_up(h, 32 / k.ds), row_step = quant_910b_row_step(p, h);
  k.baseline_block_dim = cdiv(k.units, cdiv(k.units, p.vector_cores));
  if (row_step >= 0) {
    k.baseline_tile = std::max<int64_t>(1, row_step) * hal;
    k.ub_buffers = 4;  // the 16-bit rows of the queues (and smoothBuf) above
    k.temp_fp32 = 2;
    if (row_step == 0) k.bcast_reload_units = 1;
    k.baseline_buffer_num = 1;
    k.store_beside_load = true;
    return 0;
  }
  // SLICE_D stays double-buffered here, its piece as far as UB holds two (8192, not 8864): in its slice
  // loops a piece's load is issued as soon as the casts before free inRowsQue (cut_d_kernel.h
  // AddX1X2Slice, CopyInSmoothNorm), so loads overlap part of the vector work, which VecKernel's
  // single-buffered pipeline (load, compute, in turn) does not express: single-buffered with CANN's
  // 8864, the fit half's bf16 [4096, 14336] was 1.57x the measured time (0.90x as here).
  k.baseline_tile = 8864;
  // SLICE_D's three passes over a row (cut_d_kernel.h Process) go through a per-core fp32 workspace in
  // GM: x1 + x2 out to it (CopyOutX), back in with gamma and the normalised (smoothed) rows out again
  // (CopyInTmpX, CopyInGamma, CopyOutSmoothNorm), back in to quantise (CopyInSmoothNorm).  Beyond x1 and
  // x2, 4 + ds + 4 q bytes an element come in and 4 + 4 q go out through the core's port, all in L2 (the
  // workspace is one row a core): charged as the re-reads of the three sweeps, 2 ds + 8 + 8 q bytes an
  // element in all beside gamma's.  (As three sweeps of x1 and x2, 2 ds each, the fit half's bf16
  // [4096, 14336] was 0.75x the measured time.)  Gamma and the smooth scales come a slice at a time for
  // every row (CopyInGamma, CopyInSmooth, through inRowsQue): none is kept whole in UB, each is read
  // again per row (from L2).
  k.bcast_reload_units = 1;
  return (2.0 * k.ds + 8 + 8 * std::max(1, quant_outs)) / 3;
}

// AddRmsNormDynamicQuant's dynamic quantisation in its 910B whole-row templates, on the kernel `k` of
// make_rms_norm after the rms norm, for each int8 output (one per smooth scale, one without; [S] hicann/
// ops-nn norm/add_rms_norm_dynamic_quant/op_kernel/add_rms_norm_dynamic_quant_normal_kernel.h
// doQuant1withFlag / doQuant2withFlag, lines 218-297, ScaleTensor lines 318-341; _single_row_kernel.h
// ComputeDynamicQuant, ScaleTensor, lines 158-224):
// - per row: y * smooth (Mul) or y * 1 (Muls), the in-place abs-max (add_rms_norm_dynamic_quant_helper.h
//   ReduceMaxInplace, lines 108-127: one Max over the row's repeats after the first with the destination's
//   and second source's repeat strides 0, so each repeat waits for the one before, a PipeBarrier; the
//   remainder's Max and a PipeBarrier; one WholeReduceMax repeat and a PipeBarrier), then a V_S wait,
//   GetValue, 127 / max and its inverse in the scalar unit, SetValue, an S_V wait (the round trip:
//   kRowScalarNorm, as the rstd's), and Muls by the row's scale;
// - per pass: Abs, the casts fp32 -> int32 -> half -> int8 (CAST_RINT, SetDeqScale, CAST_TRUNC), each
//   behind a PipeBarrier, the smooth scale's cast.
void arndq_row_quant(VecKernel& k, int64_t h, int quant_outs) {
  const int64_t reps = h / 64;
  const double max_chain = kDependentRepeat * double(std::max<int64_t>(0, reps - 1)) +
                           kPipeDrain * double((reps > 1 ? 1 : 0) + (h % 64 ? 1 : 0) + 1);
  const VecCost wrm = vec_api_cost("WholeReduceSum");  // WholeReduceMax: the same class
  for (int q = 0; q < std::max(1, quant_outs); ++q) {
    k.row_loop_prog.push_back(api(q < quant_outs ? "Mul" : "Muls"));  // * smooth, or * 1
    k.row_loop_prog.push_back(api("Add"));                            // Max: the Add class
    k.row_loop_prog.push_back(api("Muls"));                           // * 127 / max
    k.elem_prog.push_back(api("Adds"));                               // Abs: the scalar-operand class
    for (int i = 0; i < 3; ++i) k.elem_prog.push_back(cast_step(false));
    k.row_scalar_cycles += kRowScalarNorm + max_chain + wrm.per_repeat + wrm.per_call;
    stream_out(k, 1);
  }
  // Barriers a pass: after the casts up, the Add, the cast of x down, x^2, the rows' Muls and gamma's cast
  // (normal_kernel.h AddX1X2, CopyOutX, ComputeRmsNorm); per output after the smooth scale's cast (if
  // any) and the rows' Mul(s), Abs, ScaleTensor, the three casts and SetDeqScale; the casts' calls.
  const int outs = std::max(1, quant_outs);
  k.tile_cycles = kPipeDrain * double(6 + 7 * outs + quant_outs) +
                  double(1 + quant_outs) * vec_api_cost("CastUp").per_call;
  k.sweeps_if_split = 3;  // (a row split by a tuned tile: swept as the SLICE_D template's three passes)
}

// make_rms_norm's shapes and CANN template (below): what its steps share.
struct RmsPlan {
  bool add = false, quant = false, h16 = false, mixed = false;
  size_t n_x = 1;  // x inputs: x, or x1 and x2
  int64_t rows = 0, h = 0, hal = 0, ub_rms = 0;
  int quant_outs = 0;  // smooth scales given
  // The 910B template taken (at most one; none on the 950 generation or for the generic per-row kernel).
  bool merge_n = false, rms_normal = false, rms_split_d = false, add_split_d = false, arndq_rows = false;
};

// make_rms_norm's inputs checked: its rows, H and smooth scales.
RmsPlan rms_norm_inputs(const OpDesc& op, const Platform& p) {
  RmsPlan r;
  r.add = op.kind != "RmsNorm";
  r.quant = op.kind == "AddRmsNormDynamicQuant";
  r.n_x = r.add ? 2 : 1;
  if (r.quant) need_inputs(op, 3, 5, "x1, x2, gamma, smooth_scale1, smooth_scale2");
  else need_inputs(op, r.n_x + 1, r.n_x + 1, r.add ? "x1, x2, gamma" : "x, gamma");
  need_float(op);
  const auto& x = op.inputs[0];
  const std::string xname = r.add ? "x1" : "x";
  if (r.add && op.inputs[1] != x)
    fail(op.kind + ": x2 " + shape_str(op.inputs[1]) + " must have x1's shape " + shape_str(x));
  // RmsNorm normalises over all of gamma's dimensions, x's last ones: H is gamma's size, the rows
  // x's leading dimensions ([S] hicann/ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp
  // Tiling4RmsNorm: numCol = gamma_shape.GetShapeSize(), numRow over x's first xDimNum - gammaDimNum
  // dims; CheckInputShape4RmsNorm: gamma equal to x's last gammaDimNum dims).
  const auto& g = op.inputs[r.n_x];
  const bool multi_dim_gamma = op.kind == "RmsNorm" && g.size() > 1 && g.size() <= x.size() &&
                               std::equal(g.begin(), g.end(), x.end() - std::ptrdiff_t(g.size()));
  std::tie(r.rows, r.h) = multi_dim_gamma ? std::pair<int64_t, int64_t>{numel(x) / numel(g), numel(g)}
                                          : rows_hidden(op, x, xname);
  if (!multi_dim_gamma)
    check_vector(op, g, r.h, "gamma", "the hidden size of " + xname + " " + shape_str(x) + ",");
  for (size_t i = r.n_x + 1; i < op.inputs.size(); ++i)
    if (!op.inputs[i].empty()) {
      check_vector(op, op.inputs[i], r.h, "smooth_scale" + std::to_string(i - r.n_x), "the hidden size");
      ++r.quant_outs;
    }
  if (r.quant) {
    const auto od = attr_strs(op, "output_dtype");
    if (!od.empty() && od[0] != "int8")
      fail(op.kind + ": output_dtype '" + od[0] + "' is not modelled (int8)");
    // [S] arch22/add_rms_norm_dynamic_quant_tiling.cpp ValidateInputOutputDtype, SetFlagsAndCheckConsistency.
    if (!regbase(p) && !half(op.dtype))
      fail(op.kind + ": x1 is " + op.dtype + "; CANN's 910B kernel takes float16 or bfloat16");
    if (!regbase(p) && input(op, 3).empty() && !input(op, 4).empty())
      fail(op.kind + ": smooth_scale2 " + shape_str(input(op, 4)) + " is given without smooth_scale1; CANN's 910B "
           "kernel needs smooth_scale1 first");
  }
  r.h16 = half(op.dtype);
  return r;
}

// Which CANN template make_rms_norm's kernel `k` takes on 910B.
void rms_norm_template(RmsPlan& r, const OpDesc& op, const Platform& p, const VecKernel& k) {
  r.hal = align_up(r.h, 32 / k.ds);
  // MERGE_N is RmsNorm's and AddRmsNorm's mode; the quantising kernel's 910B tiling has none
  // (add_rms_norm_dynamic_quant/op_host/arch22/add_rms_norm_dynamic_quant_tiling.cpp DoUbTiling).
  r.merge_n = !r.quant && !regbase(p) && r.hal <= kMergeNCols;
  // RmsNorm's rows up to its UB factor, not MERGE_N, on 910B: MODE_NORMAL (rms_norm_tiling.cpp).
  // With 16-bit x and a float32 gamma (CalMixDtypeTiling): MODE_NORMAL while 16 bytes an element
  // and 512 fit UB - 1 KB, then MODE_SINGLE_ROW (rms_norm_single_row.h: one row a pass, the same
  // ReduceSumHalfInterval and scalar rstd) while 14 bytes do, then SPLIT_D.
  r.mixed = rms_mixed_gamma(op);
  r.ub_rms = int64_t(p.ub) - 1024;  // [S] rms_norm_tiling.cpp UB_USED
  r.rms_normal = op.kind == "RmsNorm" && !r.merge_n && !regbase(p) &&
                 (r.mixed ? 14 * r.hal + 512 < r.ub_rms : r.hal <= (k.ds == 4 ? kRmsUbFactorB32 : kRmsUbFactorB16));
  r.rms_split_d = op.kind == "RmsNorm" && !r.merge_n && !regbase(p) && !r.rms_normal;
  // AddRmsNorm's SPLIT_D on 910B: a row over the UB factor ([S] add_rms_norm_tiling.cpp
  // DetermineModeParameters: numCol > ubFactor, not the aligned numCol).
  r.add_split_d = op.kind == "AddRmsNorm" && !regbase(p) && r.h > (k.ds == 4 ? kRmsUbFactorB32 : kRmsUbFactorB16);
  // AddRmsNormDynamicQuant's whole-row templates on 910B (quant_910b_tiling), their per-row chains charged
  // from the kernel's instruction sequence (rms_norm_steps and arndq_row_quant).
  r.arndq_rows = r.quant && !regbase(p) && quant_910b_row_step(p, r.h) >= 0;
}

// ReduceSumHalfInterval over n fp32 elements ([S] hicann/ops-nn norm/rms_norm/op_kernel/reduce_common.h):
// halving Adds (about one Add over n: the elementwise Add of the programs of make_rms_norm), log2(n / 64)
// calls each behind a PipeBarrier, then one repeat of WholeReduceSum.
double half_interval_cycles(int64_t n) {
  const VecCost add_cost = vec_api_cost("Add"), wrs_cost = vec_api_cost("WholeReduceSum");
  const double levels = std::ceil(std::log2(std::max(1.0, double(n) / 64.0)));
  return levels * (add_cost.per_call + kPipeDrain) + wrs_cost.per_repeat + wrs_cost.per_call;
}

// MERGE_N's row reduction, rstd and * rstd on 910B (RmsNorm and AddRmsNorm).
void rms_merge_n_steps(VecKernel& k, const OpDesc& op, const Platform& p, const RmsPlan& r) {
  // MERGE_N ([S] hicann/ops-nn norm/rms_norm/op_kernel/rms_norm_merge_n.h Compute, normal_flag 0):
  // one ReduceSumMultiN over the tile's rows, their rstd computed as a vector and BroadCast
  // over the tile, applied by one Mul: no per-row call, wait or scalar work.  (Charged per
  // row, the fit half's 910B2 fp32 [2, 3, 17, 1024, 128] was 6.9x the measured time.)
  // ReduceSumMultiN (reduce_common.h ReduceSumForSmallReduceDimPreRepeat; add_rms_norm_merge_n.h
  // the same) adds a row's 64-element blocks into a 64-wide accumulator, one Add over the tile in
  // all, then takes one WholeReduceSum repeat a row (its cost per row below, in cycles).
  const VecCost add_cost = vec_api_cost("Add"), wrs_cost = vec_api_cost("WholeReduceSum");
  k.elem_prog.push_back(api("Add"));
  k.row_scalar_cycles = vec_api_cost("WholeReduceSum").per_repeat;
  if (rms_performance(op, p)) {
    // isPerformance ([S] rms_norm_merge_n.h doPerformanceRstd, repeatByRow, mulRepeat): the rstd
    // by Brcb, one block a row (no BroadCast over the tile), then x * rstd and * gamma each as
    // one Mul per 64-column block (a repeat a row, up to 255 rows a call), every call followed
    // by a PipeBarrier: per tile 2 x ceil(H / 64) dependent calls and the Brcb's, where the
    // programs below charge two Mul calls.  (Rows past 255 a call, only at H <= 16 with
    // CANN's rowFactor, are not charged.)
    const double blocks = double(cdiv(r.hal, 64)), mul_call = vec_api_cost("Mul").per_call;
    k.tile_cycles = (2 * blocks - 2) * mul_call + (2 * blocks + 1) * kPipeDrain + vec_api_cost("Adds").per_call;
  } else {
    k.elem_prog.push_back(api("Adds"));  // BroadCast of the rstd: a copy over the tile
  }
  k.elem_prog.push_back(api("Mul"));
  if (op.kind == "RmsNorm") {
    // RmsNorm's per-pass fixed work on 910B, beyond the programs' one call per step ([S] hicann/ops-nn
    // norm/rms_norm/op_kernel/reduce_common.h ReduceSumMultiN, ReduceSumForSmallReduceDimPreRepeat;
    // rms_norm_merge_n.h Compute): ReduceSumMultiN zeroes its accumulator (Duplicate, PipeBarrier),
    // then adds the pass's rows one 64-column block at a time, one Add (a repeat a row) and a
    // PipeBarrier per whole block, the tail's Add if any, then a PipeBarrier in either case (so
    // 1 + full + 1 + 5 = full + 7 barriers in all, H a multiple of 64 or not: [S] rms_norm/op_kernel/
    // reduce_common.h lines 35-44, the barrier after the tail outside its if), one WholeReduceSum
    // call; the rstd of the pass's rows then comes by Muls, Adds, Sqrt, Duplicate and Div, with five PipeBarriers.
    // (Passes of over 255 rows, only at H <= 32 with CANN's rowFactor, repeat the block loop: not
    // charged.)  Calls: the Adds past the program's one and the two Duplicates (Add class).
    const double blocks = double(cdiv(r.h, 64)), full = double(r.h / 64);
    k.tile_cycles += (blocks + 1) * add_cost.per_call + (full + 7) * kPipeDrain + wrs_cost.per_call +
                     vec_api_cost("Muls").per_call + vec_api_cost("Adds").per_call + vec_api_cost("Sqrt").per_call +
                     vec_api_cost("Div").per_call;
  }
}

// RmsNorm's SPLIT_D steps on 910B.
void rms_split_d_steps(VecKernel& k, const RmsPlan& r) {
  // RmsNorm's SPLIT_D on 910B ([S] hicann/ops-nn norm/rms_norm/op_kernel/rms_norm_split_d.h, the
  // __CCE_AICORE__ 220 path): a core's rows in groups of 64 (row_factor NUM_PER_REP_FP32), each row
  // swept twice slice by slice.  Sweep 1 (ComputeFormerPrecision, ComputeSumPrecision): load the
  // slice, cast it up, square it, ReduceSumHalfInterval; the slices' sums are read by the scalar
  // unit twice a row (after all slices but the last, after the last: V_S, S_V).  Sweep 2
  // (ComputeLatter, ComputeY): load the slice of x again, read the row's rstd back through the
  // scalar unit for every slice (V_S, GetValue, S_V), cast x up again and gamma too (not with a
  // float32 gamma, IS_MIX_DTYPE), Muls, Mul, cast down, store.  Gamma comes one slice per 64-row
  // group (CopyInGamma into inQueueGamma): no whole copy in UB, read again every 64 rows.
  k.elem_prog.push_back(api("Add"));
  if (r.h16) k.elem_prog.push_back(cast_step(true));  // x, cast again in sweep 2
  if (r.h16 && !r.mixed) k.elem_prog.push_back(cast_step(true));  // gamma
  k.row_loop_prog.push_back(api("Muls"));  // * rstd, per slice
  k.row_scalar_cycles = kRowScalarNorm;    // x 2 sweeps: sweep 1's two scalar reads a row
  k.bcast_reload_units = 64;
  k.ub_buffers += r.mixed ? 2 : 1;          // inQueueGamma: a slice of gamma (float32: 4 bytes)
}

// AddRmsNorm's SPLIT_D steps on 910B.
void add_split_d_steps(VecKernel& k, const OpDesc& op, const RmsPlan& r) {
  // AddRmsNorm's SPLIT_D on 910B ([S] hicann/ops-nn norm/add_rms_norm/op_kernel/add_rms_norm_split_d.h):
  // a core's rows in groups of 64 (row_factor), each swept twice slice by slice.  Sweep 1
  // (ComputeFormer, CopyInAndAdd, ComputeSum): load x1 and x2, add them (16-bit: in fp32), store
  // x = x1 + x2, square, Muls by 1 / H, then ReduceSumFP32ToBlock: one Add over the slice's
  // 64-element repeats into one 64-wide block (destination and second source repeat stride 0: each
  // repeat waits for the one before, kPipeDrain); the group's sums by BlockReduceSum, no scalar
  // read.  Sweep 2 (ComputeLatter, CopyInX, ComputeY): load the slice of x back, cast it up, read the
  // row's rstd through the scalar unit (V_S, GetValue, S_V), Muls, cast down, * gamma (bfloat16:
  // cast up again with gamma, Mul, cast down), store y.  Gamma: one slice per 64-row group.
  k.elem_prog.push_back(api("Muls"));  // * 1 / H
  k.elem_prog.push_back(api("Add"));   // ReduceSumFP32ToBlock
  if (r.h16) k.elem_prog.push_back(cast_step(true));  // x, sweep 2
  if (op.dtype == "bfloat16")
    for (bool up : {false, true, true}) k.elem_prog.push_back(cast_step(up));  // x down, up; gamma up
  k.row_loop_prog.push_back(api("Muls"));  // * rstd, per slice
  k.bcast_reload_units = 64;
  // (UB: gamma's slice beside x1, x2 and one output queue for x and y, outQueueY: the four
  // buffers stream_in / stream_out counted.)
}

// make_rms_norm's steps up to y = x * rstd: the inputs (and x1 + x2) and the template's reduction.
void rms_norm_steps(VecKernel& k, const OpDesc& op, const Platform& p, const RmsPlan& r) {
  for (size_t i = 0; i < r.n_x; ++i) {
    stream_in(k, k.ds);
    if (r.h16) k.elem_prog.push_back(cast_step(true));
  }
  if (r.add) {
    k.elem_prog.push_back(api("Add"));
    if (r.h16) k.elem_prog.push_back(cast_step(false));
    stream_out(k, k.ds);  // x1 + x2
  }
  k.elem_prog.push_back(api("Mul"));  // x^2
  if (r.merge_n) {
    rms_merge_n_steps(k, op, p, r);
  } else if (regbase(p)) {
    // The 950 generation's regbase kernel (op_kernel/arch35/rms_norm_regbase*.h) keeps the
    // row's sum and rstd in the vector registers: a reduction per row, no scalar wait.
    k.row_prog.push_back(api("WholeReduceSum"));
    k.elem_prog.push_back(api("Mul"));
  } else if (r.rms_normal) {
    // RmsNorm's MODE_NORMAL on 910B ([S] hicann/ops-nn norm/rms_norm/op_kernel/rms_norm.h Compute):
    // one row at a time, its sum of squares by ReduceSumHalfInterval (reduce_common.h: halving Adds,
    // about one Add over the row, log2(H / 64) calls each with a PipeBarrier, then one repeat of
    // WholeReduceSum), the rstd through the scalar unit (V_S and S_V waits: kRowScalarNorm), Muls by
    // it, and gamma cast to fp32 again for every row (ComputeMulGammaCast).
    k.elem_prog.push_back(api("Add"));
    k.row_loop_prog.push_back(api("Muls"));  // * rstd, the row's scalar
    k.row_scalar_cycles = kRowScalarNorm + half_interval_cycles(r.h);
    if (r.h16) k.elem_prog.push_back(cast_step(true));  // gamma
  } else if (r.rms_split_d) {
    rms_split_d_steps(k, r);
  } else if (r.add_split_d) {
    add_split_d_steps(k, op, r);
  } else if (r.arndq_rows) {
    // AddRmsNormDynamicQuant's NORMAL and SINGLE_ROW rms norm on 910B ([S] hicann/ops-nn norm/
    // add_rms_norm_dynamic_quant/op_kernel/add_rms_norm_dynamic_quant_normal_kernel.h ComputeRmsNorm,
    // lines 164-205; _single_row_kernel.h ComputeRmsNorm, lines 125-156): x^2 over the pass, then per row
    // ReduceSumHalfInterval (reduce_common.h lines 138-168: halving Adds, about one Add over the row, each
    // behind a PipeBarrier, one WholeReduceSum repeat, a V_S wait and GetValue), the rstd in the scalar
    // unit (1 / sqrt), an S_V wait (the round trip: kRowScalarNorm), Muls by it, and * gamma one Mul a
    // row with a PipeBarrier after each.
    k.elem_prog.push_back(api("Add"));
    k.row_loop_prog.push_back(api("Muls"));  // * rstd
    k.row_loop_prog.push_back(api("Mul"));   // * gamma
    k.row_scalar_cycles = kRowScalarNorm + half_interval_cycles(r.h) + kPipeDrain;
  } else {
    k.row_prog.push_back(api("WholeReduceSum"));
    k.row_loop_prog.push_back(api("Muls"));  // * rstd, the row's scalar
    k.row_scalar_cycles = kRowScalarNorm;
  }
}

// make_rms_norm's steps after the norm: * gamma, then y out, or its dynamic quantisation.  Returns the
// bytes written per row beside the elementwise outputs.
double rms_norm_output_steps(VecKernel& k, const RmsPlan& r) {
  if (!r.arndq_rows) k.elem_prog.push_back(api("Mul"));  // * gamma
  k.bcast_bytes += double(r.h) * (r.mixed ? 4 : k.ds) * (1 + r.quant_outs);
  double unit_out = 4;  // rstd (float32) per row
  k.sweeps_if_split = 2;
  if (r.arndq_rows) {
    arndq_row_quant(k, r.h, r.quant_outs);
    unit_out = 4.0 * std::max(1, r.quant_outs);  // float32 scale per row and output (no rstd)
  } else if (r.quant) {
    // One int8 output per smooth scale (one without): smooth Mul, |y|, row max, scale.
    for (int q = 0; q < std::max(1, r.quant_outs); ++q) {
      if (q < r.quant_outs) k.elem_prog.push_back(api("Mul"));
      k.elem_prog.push_back(api("Adds"));  // Abs: scalar-operand class (common.cpp)
      k.row_prog.push_back(api("WholeReduceSum"));  // ReduceMax: same class
      k.row_loop_prog.push_back(api("Muls"));       // * 127 / max
      k.elem_prog.push_back(cast_step(false));      // fp32 -> fp16
      k.elem_prog.push_back(cast_step(false));      // fp16 -> int8
      stream_out(k, 1);
    }
    unit_out = 4.0 * std::max(1, r.quant_outs);  // float32 scale per row and output (no rstd)
    k.row_scalar_cycles += kRowScalarQuant;
    k.sweeps_if_split = 3;
  } else {
    if (r.h16) k.elem_prog.push_back(cast_step(false));
    stream_out(k, k.ds);
  }
  return unit_out;
}

// RmsNorm's 910B tiling: single-buffered passes, MODE_NORMAL's row, SPLIT_D's slices, the cores.
void rms_norm_910b_tiling(VecKernel& k, const Platform& p, const RmsPlan& r) {
  // RmsNorm's 910B kernels are single-buffered ([S] hicann/ops-nn norm/rms_norm/op_kernel/
  // rms_norm_base.h BUFFER_NUM 1, taken by rms_norm.h, rms_norm_merge_n.h and rms_norm_split_d.h):
  // a pass (MODE_NORMAL: one row, rms_norm.h SubProcess; MERGE_N: rowFactor rows; SPLIT_D: a slice)
  // is loaded, then computed, its store running beside the next pass's load (outQueueY is apart from
  // inQueueX).  (With the per-row reduction as one WholeReduceSum and double-buffered queues, the fit
  // half's three 910B2 MODE_NORMAL records were 1.02, 0.78, 0.97x the measured time: right for fp16
  // and bf16 by vector cost, short for fp32, whose rows move twice the bytes; its one MERGE_N record,
  // fp32 [2, 3, 17, 1024, 128], is HBM-bound either way: 1.02x, 1.00x so.  AddRmsNorm's
  // add_rms_norm_merge_n.h double-buffers x and y.)
  k.baseline_buffer_num = 1;
  k.store_beside_load = true;
  if (r.rms_normal) k.baseline_tile = r.hal;
  // SPLIT_D: the row in ceil(H / ubFactor) equal slices, 16-aligned, less 16 while the last slice
  // would be under 16 elements (rms_norm_tiling.cpp MODE_SPLIT_D); with a float32 gamma slices of
  // (UB - 1 KB - 2560) / 16 bytes, 16-aligned (CalMixDtypeTiling: x, y, three fp32 buffers).
  const int64_t ub_factor = k.ds == 4 ? kRmsUbFactorB32 : kRmsUbFactorB16, h = r.h;
  if (r.mixed && !r.merge_n && !r.rms_normal) {
    k.baseline_tile = (r.ub_rms - 2560) / 16 / 16 * 16;
  } else if (!r.merge_n && !r.rms_normal && r.hal > ub_factor) {
    int64_t slice = cdiv(h, cdiv(h, ub_factor) * 16) * 16;
    while (h % slice && h % slice < 16) slice -= 16;
    k.baseline_tile = slice;
  }
  // SPLIT_D's work per slice of a row (a tile, as the row does not fit one): sweep 1's
  // ReduceSumHalfInterval and sweep 2's scalar read of the row's rstd (rms_norm_split_d.h above).
  if (r.rms_split_d) k.tile_cycles = kRowScalarNorm + half_interval_cycles(k.baseline_tile);
  // Cores: blockFactor = ceil(rows / cores) rows each, ceil(rows / blockFactor) cores (Tiling4RmsNorm).
  k.baseline_block_dim = cdiv(r.rows, cdiv(r.rows, p.vector_cores));
}

// AddRmsNormDynamicQuant's tiling on the 950 generation.
void arndq_950_tiling(VecKernel& k, const Platform& p, const RmsPlan& r) {
  // The 950 generation's tiling ([S] hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/arch35/
  // add_rms_norm_dynamic_quant_tiling_arch35.cpp): TryPerfTiling, H up to 2 x 64 x 64 x 2 = 16384,
  // takes fullLoadBaseM whole rows a pass (UB less gamma, the smooth scales and 1 KB over
  // x1, x2, x1 + x2 at ds bytes, two fp32 rows and the double-buffered int8 y per element of a
  // row); else SINGLE_ROW, one whole row while 16 bytes an element fit UB; else split.  In all
  // of them x1, x2 and x1 + x2 have one buffer each: a pass loads, computes and stores in turn.
  const int64_t rest = int64_t(p.ub) - (1 + r.quant_outs) * r.hal * k.ds - 1024;
  const int64_t per_row = r.hal * (3 * k.ds + 8 + 2 * std::max(1, r.quant_outs)) + 8;
  if (r.h <= 16384 && rest / per_row >= 1) k.baseline_tile = rest / per_row * r.hal;
  else if (16 * align_up(r.h, 32) + 1024 <= int64_t(p.ub)) k.baseline_tile = r.hal;
  k.baseline_buffer_num = 1;
}

// make_rms_norm's baseline (CANN's default tiling) for its template.  Returns the GM bytes read per
// element and sweep by a template that re-reads (SLICE_D), 0: as streamed.
double rms_norm_baseline(VecKernel& k, const OpDesc& op, const Platform& p, const RmsPlan& r) {
  // (MODE_SINGLE_ROW, a float32 gamma's rows past MODE_NORMAL's 16 bytes an element, keeps one fp32
  // buffer, xBufFp32: rms_norm_single_row.h Init.)
  const bool single_row = r.mixed && r.rms_normal && 16 * r.hal + 512 >= r.ub_rms;
  k.temp_fp32 = single_row || !r.h16 ? 1 : 2;
  // CANN's default: ceil(rows / cores) rows per core, UB passes of ubFactor elements
  // (rms_norm_tiling.cpp; MERGE_N packs as many whole rows as that holds), here as far as UB
  // holds them with the kernel's bufferNum (RmsNorm's 1 on 910B: MERGE_N and MODE_NORMAL below).
  // MERGE_N's own pass: rowFactor = (UB - 1024) / (16 x aligned H + 260) whole rows
  // ([S] rms_norm_tiling.cpp Tiling4RmsNorm, MODE_MERGE_N).
  k.baseline_tile = r.merge_n ? (int64_t(p.ub) - 1024) / (16 * r.hal + (r.mixed ? 288 : 260)) * r.hal
                              : k.ds == 4 ? kRmsUbFactorB32 : kRmsUbFactorB16;
  if (op.kind == "RmsNorm" && !regbase(p)) rms_norm_910b_tiling(k, p, r);
  if (r.add_split_d) {
    // add_rms_norm_tiling.cpp: slices of ceil(H / (ceil(H / cutD) x block)) blocks' elements, cutD
    // 12096 16-bit or 9696 fp32 (UB_FACTOR_*_CUTD); ceil(rows / cores) rows a core
    // (CalculateBlockParameters); single-buffered queues (add_rms_norm_base.h BUFFER_NUM 1).
    const int64_t blk = 32 / k.ds, cut_d = k.ds == 4 ? 9696 : 12096;
    k.baseline_tile = cdiv(r.h, cdiv(r.h, cut_d) * blk) * blk;
    k.baseline_buffer_num = 1;
    k.store_beside_load = true;
    k.baseline_block_dim = cdiv(r.rows, cdiv(r.rows, p.vector_cores));
    // Per slice: sweep 1's dependent repeats, sweep 2's scalar read of the rstd.
    k.tile_cycles = kRowScalarNorm + kPipeDrain * double(cdiv(k.baseline_tile, 64) - 1);
  }
  double slice_d_in = 0;
  if (r.quant && !regbase(p)) slice_d_in = quant_910b_tiling(k, p, r.h, r.quant_outs);
  if (r.quant && regbase(p)) arndq_950_tiling(k, p, r);
  // AddRmsNorm's SPLIT_D reads x1 and x2 in sweep 1 and x = x1 + x2 (its own output) in sweep 2.
  if (r.add_split_d) slice_d_in = 1.5 * k.ds;
  return slice_d_in;
}

// RmsNorm (x, gamma), AddRmsNorm (x1, x2, gamma), AddRmsNormDynamicQuant (x1, x2, gamma,
// smooth_scale1, smooth_scale2): y = x / sqrt(mean(x^2) + eps) * gamma, computed in fp32
// (16-bit inputs cast up).  Assumed structure ([S] hicann/ops-nn norm/rms_norm/op_kernel,
// add_rms_norm, add_rms_norm_dynamic_quant): per row ReduceSum of x^2, the row's rstd to the
// scalar unit, Muls by it; the quantising variant then takes the row's abs-max (ReduceMax),
// scale = max / 127 (float32 output) and y * 127 / max cast fp32 -> fp16 -> int8.
std::shared_ptr<OpModel> make_rms_norm(const OpDesc& op, const Platform& p) {
  RmsPlan r = rms_norm_inputs(op, p);
  VecKernel k = row_kernel(op, p, r.rows, r.h);
  rms_norm_template(r, op, p, k);
  rms_norm_steps(k, op, p, r);
  const double unit_out = rms_norm_output_steps(k, r);
  const double slice_d_in = rms_norm_baseline(k, op, p, r);  // 0: as streamed
  finish(k, double(r.rows) * double(r.h), unit_out);
  if (slice_d_in > 0) k.in_bytes = slice_d_in;  // after finish: the roofline keeps the unique bytes
  return make_vec_model(k, p);
}

// CANN's 910B GroupNorm kernel: aclnnGroupNorm runs GroupNormSilu with activate_silu false on 910B
// ([S] hicann/ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp, NpuArch::DAV_2201), whose
// tiling ([S] norm/group_norm_silu/op_host/group_norm_silu_tiling.cpp SetBlockTiling, SetTiling) gives
// each core ceil(N G / cores) whole groups, one core in all when a channel's H W is under a 32-byte
// block (unless H W is 1 and a group at least a block); a core takes its groups one at a time:
// a statistics pass over the group in 8192-element chunks (Cast, Add, Mul, Add into fp32
// accumulators, two ReduceSums at the end, mean and rstd read by the scalar unit), then a
// normalising pass that reads x again and applies each channel's scale and bias as scalars (Muls,
// Adds, a PipeBarrier after each: op_kernel/group_norm_silu_small_b16.h, _b16.h, _g16.h and their
// b32 twins).  The small-shape template (H W a multiple of a block, at most 4096, C + groups a core
// within 2700, 4000 for fp32) keeps a group of at most 8192 elements from its one read and casts
// a chunk of 8192 / (H W) channels at once; the others copy, cast and store each channel on its own.
constexpr int64_t kGnChunk = 8192;  // [S] group_norm_silu_tiling.cpp DEFAULT_PROCESSSIZE

// CANN's 910B GroupNormSilu templates ([S] group_norm_silu_tiling.cpp SetTiling, SetTilingWithSmallHW; the
// tiling keys' kernels in op_kernel/group_norm_silu.cpp): H W under a 32-byte block takes the H W = 1
// template (_hw1_b16.h, _hw1_b32.h) or the basic one (_g16.h, _g32.h); else C + groups a core over
// 2700 (4000 fp32) the basic one, H W a multiple of 16 (8 fp32) within 4096 the small-shape one
// (_small_b16.h, _small_b32.h), the rest the high-performance one (_b16.h, _b32.h).
enum class GnTemplate { kSmall, kHighPerf, kBasic, kHw1 };
GnTemplate gn_910b_template(int64_t c, int64_t hw, int64_t per_core, int64_t ds) {
  if (hw < 32 / ds) return hw == 1 ? GnTemplate::kHw1 : GnTemplate::kBasic;
  if (c + per_core > (ds == 4 ? 4000 : 2700)) return GnTemplate::kBasic;
  return hw % (ds == 4 ? 8 : 16) == 0 && hw <= 4096 ? GnTemplate::kSmall : GnTemplate::kHighPerf;
}

// The 910B kernel's vector work on a unit (see group_norm_arch22).
void gn_910b_program(VecKernel& k, const Platform& p, GnTemplate t, int64_t d, int64_t hw, bool silu,
                     bool equal_c) {
  const bool hw1 = t == GnTemplate::kHw1, small = t == GnTemplate::kSmall, basic = t == GnTemplate::kBasic;
  const bool h16 = k.ds != 4, one_read = small && d * hw <= kGnChunk;
  stream_in(k, k.ds);
  if (!one_read) stream_in(k, k.ds);  // the normalising pass reads x again
  // The statistics pass: a group in one chunk is cast and squared, then reduced (small and
  // high-performance templates, AccumulateXandX2OneLoop: Cast, Mul, two ReduceSums); a longer one
  // (and any group in the basic and H W = 1 templates, AccumulateXAndX2) adds each chunk into the
  // fp32 accumulators (Cast, Add, Mul, Add).
  if (h16) k.elem_prog.push_back(cast_step(true));
  const bool accumulate = basic || hw1 || d * hw > kGnChunk;
  if (accumulate) for (const char* a : {"Add", "Mul", "Add"}) k.elem_prog.push_back(api(a));
  else k.elem_prog.push_back(api("Mul"));  // x squared: the ReduceSums come per group, below
  // The normalising pass: per channel Muls, Adds (and, but for the small-shape template's chunks,
  // the casts and SiLU too: each channel a call of its own).  H W = 1 (CalculateGroupNormSilu):
  // a group's D channels at once, Adds -mean, Muls rstd, Mul gamma, Add beta, with gamma and beta
  // loaded beside x and (16-bit) cast up (CopyInGammaBeta16).
  std::vector<VecStep>& per_channel = hw1 ? k.elem_prog : k.row_loop_prog;
  std::vector<VecStep>& chunk = small || hw1 ? k.elem_prog : k.row_loop_prog;
  if (h16 && !one_read) chunk.push_back(cast_step(true));
  if (hw1) {
    for (const char* a : {"Adds", "Muls"}) k.elem_prog.push_back(api(a));
    if (h16) for (int i = 0; i < 2; ++i) k.elem_prog.push_back(cast_step(true));
  }
  per_channel.push_back(api(hw1 ? "Mul" : "Muls"));
  per_channel.push_back(api(hw1 ? "Add" : "Adds"));
  if (silu) for (const char* a : {"Muls", "Exp", "Adds", "Div"}) chunk.push_back(api(a));
  if (h16) chunk.push_back(cast_step(false));
  stream_out(k, k.ds);
  // Per channel a PipeBarrier after each call; per group the two ReduceSums of a chunk and the
  // scalar wait for mean and rstd (kRowScalarNorm), spread over the group's D channels.
  const int64_t barriers = 2 + int64_t(small ? 0 : (h16 ? 2 : 0) + (silu ? 4 : 0));
  double reduce = 2.0 * vec_cycles({api("WholeReduceSum")}, double(std::min(d * hw, kGnChunk))) * p.vec_cost_scale;
  // The basic and H W = 1 templates zero both fp32 accumulators over all 8192 elements for every
  // group, whatever its size ([S] group_norm_silu_g16.h AccumulateXAndX2: Duplicate x1Buf32, x2Buf32
  // over processSize; _g32.h, _hw1_b16.h, _hw1_b32.h the same; Duplicate priced as Adds, one scalar
  // operand).
  if (basic || hw1) reduce += 2.0 * vec_cycles({api("Adds")}, double(kGnChunk)) * p.vec_cost_scale;
  // The basic template copies the channel's gamma and beta from GM before its x, and the scalar
  // unit waits for them ([S] group_norm_silu_g16.h ComputeGroupNormSilu, CopyInGammaBeta16: both
  // copies issued, then each cast and a V_S wait: one GM load latency, GE's first-copy cost
  // mte2_head, and two scalar waits on the vector unit; _g32.h CopyInGammaBeta32: an MTE2_S wait
  // after each copy, two latencies in turn), in turn with everything else: x's copy is issued after them.
  // (H W = 1 and a channel a group: every channel is its own mean, y = beta, no statistics:
  // ProcessYWithEqualC.)
  k.row_scalar_cycles = hw1 ? (equal_c ? 0.0 : kRowScalarNorm + reduce)
                            : kPipeDrain * double(barriers) + (basic && h16 ? 2 * kRowScalarNorm : 0.0) +
                                  (kRowScalarNorm + reduce) / double(d);
}

// UB, bufferNum and the gamma / beta operands of the 910B kernel (see group_norm_arch22).
void gn_910b_buffers(VecKernel& k, GnTemplate t, int64_t d, int64_t c, int64_t cores, bool equal_c) {
  const int64_t blk = 32 / k.ds;
  // UB: one x and one y queue, double-buffered, and xBuf32, x1Buf32, x2Buf32 for 16-bit x, x1Buf32 (or
  // tempX) for fp32 ([S] group_norm_silu_b16.h, _b32.h, _small_*.h, _g16.h, _g32.h Init): 20 bytes an
  // element of an 8192-element chunk either way.
  k.ub_buffers = 2;
  k.temp_fp32 = k.ds == 4 ? 1 : 3;
  // The small and high-performance templates hold gamma and beta whole in UB (inQueueGamma,
  // inQueueBeta of C: what keeps C + groups a core within 2700 / 4000); the basic one a 32-byte
  // block of each, copied for every channel (_g16.h CopyInGammaBeta16, inQueueGamma of a block).
  k.bcast_bytes = 2.0 * double(c) * k.ds;
  if (t == GnTemplate::kBasic) {
    k.bcast_bytes = 2.0 * 32;
    k.bcast_reload_units = 1;
  }
  if (t != GnTemplate::kHw1) return;
  // H W = 1: every copy is waited for at once (queues of one buffer, group_norm_silu_hw1_b16.h Init,
  // CopyInX), a group (in pieces of 8192) read for its statistics, the scalar unit waiting for them,
  // then read again beside its gamma and beta and stored (ProcessGroupNormSilu): two GM load
  // latencies a group, whatever its size; its store beside the next group's first load.  (The
  // normalising pass waits for gamma, beta and x in turn, CopyInGammaBeta16 then CopyInX: not
  // modelled.)  Its queues: x, gamma, beta (a group's D each, reloaded for every group) and y.
  k.baseline_buffer_num = 1;
  if (equal_c) {
    // A channel a group (ProcessYWithSameType): beta copied to y a sample at a time, in pieces of
    // 8192 channels, never two samples a copy; no gamma.
    k.baseline_tile = std::min(align_up(c, blk), kGnChunk);
    k.baseline_tile_exact = true;
    k.bcast_bytes = 0;
    return;
  }
  k.ub_buffers = 4;
  k.bcast_bytes = 2.0 * double(d) * k.ds;
  k.bcast_reload_units = 1;
  k.baseline_tile = std::min(align_up(d, blk), kGnChunk);
  k.tile_round_trip = 2 * mte2_head(int(cores), false);
}

// The 910B kernel above as a VecKernel: a unit is one channel of one sample (H W elements), the
// per-group work (the two reductions, the rstd through the scalar unit) spread over its D channels.
// With H W = 1 the kernel (group_norm_silu_hw1_b16.h ProcessGroupNormSilu) works on a group's D
// channels back to back in GM, scale and bias vectors: a unit is a group, and the cores split the
// N G groups as above (SetBlockTiling), not the samples; only with a channel a group
// (ProcessYWithEqualC) are the units samples, split by N.
VecKernel group_norm_arch22(const OpDesc& op, const Platform& p, int64_t n, int64_t c, int64_t g, int64_t hw,
                            bool silu) {
  const bool hw1 = hw == 1, equal_c = hw1 && g == c;
  const int64_t d = c / g, groups = n * g;
  const int64_t unit = equal_c ? c : hw1 ? d : hw;  // a group's channels lie back to back in GM
  VecKernel k = row_kernel(op, p, equal_c ? n : hw1 ? groups : n * c, unit);
  k.unit_elems = unit;
  const int64_t blk = 32 / k.ds;
  const int64_t per_core = cdiv(groups, p.vector_cores);
  int64_t cores = cdiv(groups, per_core);
  if (hw < blk && (hw != 1 || d < blk)) cores = 1;
  if (hw == 1 && g == c) cores = c % blk ? 1 : cdiv(n, cdiv(n, p.vector_cores));  // split by N
  const GnTemplate t = gn_910b_template(c, hw, per_core, k.ds);
  const bool b32 = k.ds == 4, small = t == GnTemplate::kSmall, basic = t == GnTemplate::kBasic;
  gn_910b_program(k, p, t, d, hw, silu, equal_c);
  // A channel under a block still moves one 32-byte block each way (its own DataCopyPad) and
  // takes one in UB.
  if (basic && hw < blk) k.unit_elems = blk;
  // The small template's normalising pass: its first load is issued only once the group's mean and
  // rstd are in the scalar unit: one GM load latency a group exposed (GE's first-copy cost,
  // mte2_head), spread over its channels.
  if (small) k.unit_cycles = mte2_head(int(cores), false) / double(d);
  if (basic) k.unit_cycles = (b32 ? 2 : 1) * mte2_head(int(cores), false);
  // The small template's normalising pass copies groupD = min(D, 8192 / (H W)) channels at a time,
  // never past the group's end ([S] group_norm_silu_small_b16.h ComputeSilu / ComputeAlign; the whole
  // group when it is at most 8192 elements, ComputeWithCopyOnce; _small_b32.h the same), however small
  // the group: its copies are the group's, not packed with the next group's.
  k.baseline_tile = small ? std::min(d, kGnChunk / hw) * hw : kGnChunk;
  k.baseline_tile_exact = small;
  if (!small && !hw1) {
    // The other templates' normalising pass copies one channel at a time, in pieces of at most
    // 8192 elements ([S] group_norm_silu_b16.h ComputeMultipleLoop: CopyInX, CalcSilu, CopyOutY per
    // channel dIdx; _b32.h, _g16.h, _g32.h the same): a tile per channel, not 8192 / (H W) channels.
    k.baseline_tile = std::min(align_up(hw, blk), kGnChunk);
    // Each channel's load and store is a GM round trip (GE's start costs of a load and a store,
    // mte2_head + kMte3Head), and one channel is in flight, not the two bufferNum 2 would allow: the
    // channel loop reads the channel's gamma and beta into scalar registers first (GetValue; the
    // scale and bias of its Muls and Adds), from fp32 buffers the vector unit wrote, so the scalar
    // unit, which issues the channel's load, waits for the vector pipe to finish the channel before
    // (group_norm_silu_b16.h ComputeMultipleLoop / ComputeOneLoop, _b32.h the same; _g16.h
    // CopyInGammaBeta16 makes the wait explicit: SetFlag/WaitFlag V_S each channel, _g32.h MTE2_S).
    // Each channel then takes at least a whole round trip (vector.cpp: tile_round_trip / 2 a tile on
    // each pipe), whatever its size, the group's first load included (no unit_cycles then).  The fit
    // half's 910B2 [5, 48, 33, 65] (8 channels of 2145 a core) and [2, 64, 67, 71] (8 of 4757) take
    // the same time (9.68, 9.47 us) with 2.2x the data (when this was written, the model gave 7.32 and
    // 9.05 us with two channels in flight, 10.69 and 9.95 with one).
    k.tile_round_trip = 2 * (mte2_head(int(cores), false) + kMte3Head);
  }
  gn_910b_buffers(k, t, d, c, cores, equal_c);
  k.baseline_block_dim = cores;
  k.sweeps_if_split = 1;  // the second read is the stream above, for any tile
  return k;
}

// GroupNorm, GroupNormSilu (x [N, C, *], gamma [C], beta [C]; num_groups G): a row is one group's C/G channels
// of every spatial position.  Structure assumed as LayerNorm's (vector.cpp): mean and variance
// by two row reductions, then per channel (x - mean) * rstd * gamma + beta; outputs y and the
// per-group mean and rstd.  On 910B, CANN's kernel as group_norm_arch22 above.
std::shared_ptr<OpModel> make_group_norm(const OpDesc& op, const Platform& p) {
  need_inputs(op, 1, 3, "x, gamma, beta");
  need_float(op);
  const auto& x = op.inputs[0];
  if (x.size() < 2) fail(op.kind + ": x " + shape_str(x) + " needs at least [N, C]");
  const int64_t c = x[1];
  const int64_t g = attr_int(op, "num_groups", 0);
  if (g <= 0) fail(op.kind + ": attribute num_groups (positive) is required, got " + std::to_string(g));
  if (c % g != 0)
    fail(op.kind + ": x " + shape_str(x) + " has " + std::to_string(c) + " channels, not a multiple of num_groups " +
         std::to_string(g));
  for (size_t i = 1; i < op.inputs.size(); ++i)
    if (!op.inputs[i].empty())
      check_vector(op, op.inputs[i], c, i == 1 ? "gamma" : "beta",
                   "the channels (x's dimension 1) of x " + shape_str(x) + ",");
  // GroupNormSilu: y * sigmoid(y) unless activate_silu is 0 (CANN's default: 1).
  const bool silu = op.kind == "GroupNormSilu" && attr_int(op, "activate_silu", 1) != 0;
  if (!regbase(p)) {
    VecKernel k = group_norm_arch22(op, p, x[0], c, g, numel(x) / (x[0] * c), silu);
    finish(k, double(numel(x)), 2.0 * k.ds);  // mean and rstd per group
    return make_vec_model(k, p);
  }
  // Fewer groups than cores: the cores take whole channels and combine the group statistics.
  // An assumption against CANN's code: the 950 (arch35) tiling gives each core whole groups,
  // ceil(N G / cores) of them ([S] hicann/ops-nn norm/group_norm_silu/op_host/
  // group_norm_silu_tiling_arch35.cpp numPerCore).  A group per core priced the fit half's
  // [16, 257, 32, 31] (16 groups) at 1.8x the measured 950PR time (with the per-row constants 120
  // and 300 of the time): the kernel moves a group faster than this model's one core does, and the
  // split stands in for that.
  const int64_t groups = x[0] * g;
  const int64_t rows = groups < p.vector_cores ? x[0] * c : groups, h = numel(x) / rows;
  VecKernel k = row_kernel(op, p, rows, h);
  const bool h16 = half(op.dtype);
  stream_in(k, k.ds);
  if (h16) k.elem_prog.push_back(cast_step(true));
  k.elem_prog.push_back(api("Mul"));  // x^2 for the variance
  k.row_prog = {api("WholeReduceSum"), api("WholeReduceSum")};
  for (const char* a : {"Adds", "Muls", "Muls", "Adds"}) k.elem_prog.push_back(api(a));  // - mean, * rstd, * gamma_c, + beta_c
  // The benchmark's GroupNorm runs GroupNormSilu with activate_silu false (aclnn_group_norm.cpp, on
  // the 950 generation too), but this stand-in was chosen with the SiLU's Sigmoid and Mul charged
  // there: without them the fit half's three 950PR GroupNorm records go from 1.04, 0.88, 0.71x the
  // measured time to 0.80, 0.67, 0.59x.  The stand-in keeps that vector work until the arch35 kernel
  // (op_kernel/arch35/group_norm_silu_regbase_*.h) is modelled.
  if (silu || op.kind == "GroupNormSilu") {
    k.elem_prog.push_back(api("Sigmoid"));
    k.elem_prog.push_back(api("Mul"));
  }
  if (h16) k.elem_prog.push_back(cast_step(false));
  stream_out(k, k.ds);
  k.bcast_bytes = 2.0 * double(c) * k.ds;
  k.row_scalar_cycles = kRowScalarNorm;
  k.sweeps_if_split = 2;
  k.temp_fp32 = h16 ? 2 : 1;
  finish(k, double(numel(x)), 2.0 * k.ds);  // mean and rstd per group
  return make_vec_model(k, p);
}

// ---- quantisation ---------------------------------------------------------------------------

// The per-row dynamic quantisation tail on fp32 data: |y|, row abs-max, scale out, y * 127/max,
// fp32 -> fp16 -> int8 (int4: one more narrowing step).
void quant_tail(VecKernel& k, const Platform& p, bool int4, bool multi_row) {
  k.elem_prog.push_back(api("Adds"));            // Abs
  k.row_prog.push_back(api("WholeReduceSum"));   // ReduceMax
  if (multi_row) {
    k.elem_prog.push_back(api("Mul"));           // * 127 / max, broadcast over the tile's rows
    if (regbase(p)) k.row_scalar_cycles = kRowChainRegbase;
  } else {
    k.row_loop_prog.push_back(api("Muls"));      // * 127 / max, the row's scalar
    k.row_scalar_cycles = kRowScalarQuant;
  }
  for (int i = 0; i < (int4 ? 3 : 2); ++i) k.elem_prog.push_back(cast_step(false));
  stream_out(k, int4 ? 0.5 : 1.0);
}
bool int4_output(const OpDesc& op) {
  const auto od = attr_strs(op, "output_dtype");
  if (od.empty() || od[0] == "int8") return false;
  if (od[0] == "int4") return true;
  fail(op.kind + ": output_dtype '" + od[0] + "' is not int8 or int4");
}

// 910B's one-row-at-a-time DynamicQuant templates ([S] hicann/ops-nn quant/dynamic_quant/op_host/
// dynamic_quant_tiling.cpp SetTilingData, CalculateMaxUbSizePerRow; the rows neither the multi-row nor
// the special template takes), on the kernel `k` of make_dynamic_quant (x cast, smooth Mul, Abs, abs-max,
// * 127 / max, the casts down).  With ubPerRowNew = 11 bytes an aligned element (17 with smooth scales)
// and ubPerRow = 13 (19), UB - 1024 bytes hold ubAvail = (UB - 1024) / ubPerRowNew rows:
// - ubAvail >= 1 and ubPerRow < UB - 1024: TILING_KEY 2/3 (op_kernel/dynamic_quant_db.h), passes of
//   min(255, ubAvail) rows, x's queue double-buffered; the fp32 work buffers hold one row, not a pass
//   (dynamic_quant_base.h InitBaseBuffer: sizeHalfLen elements).  Per row a chain of vector calls with
//   a PipeBarrier<PIPE_V> after nearly every one (below) and the in-place Max over the row's repeats
//   (ReduceMaxInplace, repeat strides 0: each repeat reads the block the one before wrote), each waiting out the pipe's latency (kPipeDrain); the row's scale
//   stays in the vector unit.
// - ubAvail >= 1, ubPerRow >= UB - 1024 (useDb false): TILING_KEY 0/1 (op_kernel/dynamic_quant.h), one
//   row a pass, every queue single-buffered (BUFFER_NUM 1: the load and the vector work in turn, the
//   store beside the next load), the same chain on the fp32 cast (64 a repeat), and the row's 127 / max
//   read into a scalar register (SetFlag/WaitFlag V_S, GetValue: kRowScalarQuant) for its Muls.
// - ubAvail 0 (a row UB does not hold): TILING_KEY 6 (op_kernel/dynamic_quant_large_shape_opt.h), the row
//   in pieces of innerLoopEle = (UB - 1024) / 19 / 128 x 128 elements, double-buffered, in two passes: the
//   abs-max pass (per piece Cast, Abs, the in-place Max chain, a V_S wait and GetValue), then the quant
//   pass re-reading every piece (Cast, Muls, the casts down); smooth scales are loaded with each piece in
//   both passes (CopyInByEle) and cast and multiplied in both.
void dynamic_quant_one_row_910b(VecKernel& k, const Platform& p, bool fp16, bool smooth, int64_t h) {
  const int64_t avail = int64_t(p.ub) - 1024, hpad = align_up(h, 16);
  const int64_t rows_fit = avail / ((smooth ? 17 : 11) * hpad);
  const int extra = smooth ? 1 : 0;
  if (rows_fit == 0) {
    const int64_t piece = avail / 19 / 128 * 128, pieces = cdiv(h, piece);
    k.baseline_tile = piece;
    k.ub_buffers -= 1;  // UB (below) without the int8 output, which VecKernel would count at x's width
    if (smooth) {  // the smooth scales as a second stream, read in both passes
      k.bcast_bytes = 0;
      stream_in(k, k.ds);
      k.elem_prog.push_back(cast_step(true));  // the smooth piece's cast, in the abs-max pass
      k.elem_prog.push_back(cast_step(true));  // and in the quant pass, with its Mul
      k.elem_prog.push_back(api("Mul"));
    }
    k.elem_prog.push_back(cast_step(true));  // x's cast again in the quant pass
    // Barriers per piece: Cast, Abs, the Max chain's end, (smooth: Cast, Mul) in the first pass; Cast,
    // Muls, Cast, SetDeqScale, Cast, (Cast, Mul) in the second; the dependent repeats of each piece's
    // Max; the V_S round trip per piece.  Charged per row and sweep (vector.cpp: x units x sweeps).
    const double barriers = double(pieces) * (3 + 5 + 4 * extra) + double(cdiv(h, 64) - pieces);
    k.row_scalar_cycles = (kPipeDrain * barriers + double(pieces) * kRowScalarQuant) / k.sweeps_if_split;
    return;
  }
  const bool db = (smooth ? 19 : 13) * hpad < avail;
  // fp16 without smooth scales takes the DB template's abs-max on x itself, 128 a repeat.
  const int64_t per_rep = db && fp16 && !smooth ? 128 : 64;
  // Per row, both templates: 8 barriers around the casts, Abs and the quantisation (dynamic_quant_db.h
  // ComputeRowMax + QuantizeRow; dynamic_quant.h Compute), one more with smooth scales; then
  // ReduceMaxInplace (dynamic_quant_base.h): reps = h / per_rep whole repeats, the in-place Max over
  // the reps - 1 after the first (a barrier after it, only when reps > 1; split in two Max calls at
  // 255 repeats, MAX_REPEAT), and the remainder's Max (a barrier, only when reps > 0).
  const int64_t reps = h / per_rep;
  const int64_t barriers = 8 + extra + (reps > 1 ? 1 : 0) + (reps - 1 > 255 ? 1 : 0) + (h % per_rep && reps > 0 ? 1 : 0);
  k.row_scalar_cycles = kPipeDrain * double(barriers + std::max<int64_t>(0, reps - 1));
  if (db) {
    k.baseline_tile = std::min<int64_t>(255, rows_fit) * hpad;
    k.temp_fp32 = 0;  // the fp32 work buffers are one row (above), beside the pass
  } else {
    k.baseline_tile = hpad;
    k.ub_buffers -= 1;  // so that UB holds the row as CANN's 11 bytes an element do (the int8 output's left out)
    k.baseline_buffer_num = 1;
    k.store_beside_load = true;
    k.row_scalar_cycles += kRowScalarQuant;
  }
}

// 910B's multi-row and special templates (op_kernel/dynamic_quant_multi_row.h,
// dynamic_quant_single_row.h) keep the row statistics in the vector unit: per row one Max over
// its repeats into the first (ComputeReduceMax, a PipeBarrier after it), one WholeReduceMax for
// the pass's rows, the 127 / max of each row broadcast over the pass (BroadCast; Brcb + Copy)
// and multiplied in.  No per-row wait for the scalar unit (the row reduction's vec_row_cycles).
// One UB buffer (TBuf; TQue depth 1): a pass's load, then its vector work; the store beside the
// next load.
void dynamic_quant_pass_stats_910b(VecKernel& k, bool smooth, bool special, int64_t rows) {
  k.row_prog.clear();
  k.row_loop_prog.push_back(api("Add"));  // Max: the Add class
  k.elem_prog.push_back(api("Adds"));     // the broadcast copy of the rows' scales
  // The smooth scales copied over the pass's rows before their Mul (single_row.h: Copy, every pass;
  // multi_row.h CopyInAndApplySmooth: BroadCast when the pass holds more than one row).
  if (smooth && (special || std::min(rows, k.baseline_tile / k.unit_elems) > 1)) k.elem_prog.push_back(api("Adds"));
  k.baseline_buffer_num = 1;
  k.store_beside_load = true;
}

// DynamicQuant (x [..., H], smooth_scales [H]): per-token int8/int4 and a float32 scale per row.
std::shared_ptr<OpModel> make_dynamic_quant(const OpDesc& op, const Platform& p) {
  need_inputs(op, 1, 2, "x, smooth_scales");
  if (!half(op.dtype))  // [S] dynamic_quant_tiling.cpp CheckInputDtype
    fail("DynamicQuant: x is " + op.dtype + "; CANN's kernel takes float16 or bfloat16");
  const auto [rows, h] = rows_hidden(op, op.inputs[0], "x");
  if (op.inputs[0].size() < 2 || op.inputs[0].size() > 8)  // [S] op_host/op_api/aclnn_dynamic_quant.cpp CheckShape
    fail("DynamicQuant: x " + shape_str(op.inputs[0]) + " has " + std::to_string(op.inputs[0].size()) +
         " dimensions; CANN's aclnnDynamicQuant takes 2 to 8");
  const bool smooth = !input(op, 1).empty();
  if (smooth) check_vector(op, op.inputs[1], h, "smooth_scales", "the hidden size of x " + shape_str(op.inputs[0]) + ",");
  const bool int4 = int4_output(op);
  if (int4 && h % 2)
    fail("DynamicQuant: int4 output packs two values per byte; x's last dimension " + std::to_string(h) + " is odd");
  VecKernel k = row_kernel(op, p, rows, h);
  stream_in(k, k.ds);
  k.elem_prog.push_back(cast_step(true));
  if (smooth) k.elem_prog.push_back(api("Mul"));
  k.bcast_bytes = smooth ? double(h) * k.ds : 0;
  // CANN's 910B tiling ([S] hicann/ops-nn quant/dynamic_quant/op_host/dynamic_quant_tiling.cpp):
  // rows of 128 to maxUbLen elements, a multiple of 8, take the multi-row template, UB passes of
  // maxUbLen / H whole rows (maxUbLen = (UB - 1024 - 3392 bytes) / 11, / 15 with smooth scales,
  // in multiples of 64, at most 255 x 64), the per-row factors applied to all of them at once.
  // Other rows go one statistic at a time (the per-row chain, kPipeDrain) in passes (below).
  const int64_t hpad = align_up(h, 16);
  bool multi_row = false, special = false;
  if (regbase(p)) {
    // The 950 generation's regbase kernel ([S] hicann/ops-nn quant/dynamic_quant/op_host/
    // dynamic_quant_tiling_arch35.cpp CalculateTilingData): any row that fits UB goes in passes of
    // min(255, (UB - 1024) / (16-aligned H x 22 bytes)) whole rows (x, y, scale and offset
    // double-buffered; 26 with smooth scales; 11 / 13 bytes single-buffered when 22 / 26 do not
    // fit one row), the row statistics kept in the vector registers (no per-row scalar wait);
    // a longer row is split in innerLoopEle pieces, one row at a time.
    const int64_t avail = int64_t(p.ub) - 1024, db_bytes = smooth ? 26 : 22, sb_bytes = smooth ? 13 : 11;
    if (hpad * sb_bytes > avail) {
      k.baseline_tile = (avail - 1024) / (2 * (smooth ? 8 : 4)) / 128 * 128;
    } else {
      multi_row = true;
      const int64_t per_row = hpad * (hpad * db_bytes > avail ? sb_bytes : db_bytes);
      k.baseline_tile = std::min<int64_t>(255, avail / per_row) * hpad;
    }
  } else if (!int4 && rows >= 4 && rows <= 384 && (h == 4096 || h == 5120 || h == 10240)) {
    // SetSpecialTilingForDs (the same file): UB filled first (16384 / H rows a pass,
    // MAX_ROW_LEN_SPECIAL), then the passes spread over as few cores as keep the most passes a
    // core the same: ceil(passes / ceil(passes / cores)) cores; DynamicQuantSingleRow's loop.
    // A head core takes tmpR = ceil(passes / cores) whole passes (rowPerHeadCore = tmpR x
    // maxHandleRowsPerUb), the last core the rows left (rowPerTailCore): 5 rows of 4096 are 4 + 1
    // on two cores, not 3 + 2 (whole_passes_per_core).
    special = true;
    const int64_t per_pass = std::min<int64_t>(16384 / h, rows), passes = cdiv(rows, per_pass);
    k.baseline_tile = per_pass * h;
    k.baseline_block_dim = cdiv(passes, cdiv(passes, p.vector_cores));
    k.whole_passes_per_core = true;
  } else {
    const int64_t max_ub_len =
        std::min<int64_t>((int64_t(p.ub) - 1024 - 3392) / (smooth ? 15 : 11) / 64 * 64, 255 * 64);
    multi_row = h >= 128 && h % 8 == 0 && h <= max_ub_len;
    // The multi-row template fills UB first (whole rows, each 32-byte aligned in UB), then takes
    // one core per full pass, at most all of them (CalculateMultiRowCoreDistribution: coreNum =
    // rows / rowsPerPass when that is below the core count; the rows left over are spread on those cores).
    if (multi_row) {
      // A pass's rows lie back to back in UB, not 32-byte aligned each (op_kernel/dynamic_quant_multi_row.h
      // AllocateLocalBuffers, ProcessQuant: singleLoopEle = rows x rowLen, one DataCopyPad): an H of 8
      // mod 16 packs maxUbLen / H rows, not maxUbLen / align_up(H, 16).  The tile is 16-aligned, less
      // than a row more.
      k.unit_elems = h;
      k.baseline_tile = align_up(max_ub_len / h * h, 16);
      k.baseline_block_dim = std::max<int64_t>(1, rows / std::min(rows, max_ub_len / h));
    }
  }
  // The special template's 127 / max goes over its pass as the multi-row one's does (Brcb, Copy, Mul:
  // dynamic_quant_single_row.h ProcessBf16 / ProcessFp16), no scalar round trip per row.
  quant_tail(k, p, int4, multi_row || special);
  // 910B's kernels narrow int8 as they do int4, in three casts: fp32 -> int32 (int16 in the multi-row
  // and DB templates) with CAST_RINT, -> half, -> int8 with CAST_TRUNC (dynamic_quant.h Compute,
  // dynamic_quant_db.h QuantizeRow, _multi_row.h ComputeQuantization, _single_row.h, _large_shape_opt.h).
  if (!regbase(p) && !int4) k.elem_prog.push_back(cast_step(false));
  if (!regbase(p) && (multi_row || special)) dynamic_quant_pass_stats_910b(k, smooth, special, rows);
  k.sweeps_if_split = 2;
  // x's fp32 cast and the abs / int work buffer (tempCastUb, fp32_buf_); the special template one fp32
  // buffer of the pass (dynamic_quant_single_row.h Init: tmpBufNew_; its x queue twice x's size).
  k.temp_fp32 = special ? 1 : 2;
  if (!regbase(p) && !multi_row && !special) dynamic_quant_one_row_910b(k, p, op.dtype == "float16", smooth, h);
  finish(k, double(rows) * double(h), 4);
  return make_vec_model(k, p);
}

// CANN's default UB pass of DequantSwigluQuant on the 950 generation, in output elements (rows of H,
// 32-byte aligned), for `rows` rows of H outputs ([S] hicann/ops-nn quant/dequant_swiglu_quant/
// op_host/dequant_swiglu_quant_tiling_arch35.cpp DoOpTiling): H up to 5120 (Y_LAST_DIM_FULL_LOAD_MAX_
// VALUE) takes ubFactorDimx whole rows a pass: (UB - 1 KB - 3 fp32 rows) over, per row, x double-
// buffered (2H at its width, + 32 B of activation scale), y double-buffered (int8), 32 B and one
// fp32 row (one more with a static quant offset); a longer row goes one piece of ubFactorDimy
// outputs at a time: (UB - 1 KB - 32 B) / (2 x (1 + x's share of 2H + the weight scale's + 4) + 8),
// 32-byte aligned.  (910B's tiling: dequant_swiglu_910b below.)
int64_t dequant_swiglu_tile(const Platform& p, bool x_int32, bool dynamic, bool weight_scale, int64_t rows, int64_t h) {
  const int64_t ub = int64_t(p.ub);
  if (h <= 5120) {
    const int64_t a32 = align_up(h, 8), ax = x_int32 ? a32 : align_up(h, 16), xb = x_int32 ? 4 : 2;
    const int64_t avail = ub - 1024 - 3 * a32 * 4;
    const int64_t per_row = 2 * (ax * 2 * xb + 32) + 2 * align_up(h, 32) + 32 + a32 * 4 + (dynamic ? 0 : a32 * 4);
    return std::max<int64_t>(1, std::min(rows, avail / per_row)) * align_up(h, 32);
  }
  const int64_t split = 2 * (1 + (x_int32 ? 8 : 4) + (weight_scale ? 8 : 0) + 4) + 8;
  return (ub - 1024 - 32) / split / 32 * 32;
}

// CANN's DequantSwigluQuant tiling on 910B ([S] hicann/ops-nn quant/dequant_swiglu_quant/op_host/
// dequant_swiglu_quant_tiling_base.cpp, the template without group_index; not on the regbase SoCs).
struct DequantSwiglu910b {
  int64_t base_rows;  // rows a UB pass (baseRowLen)
  int64_t base_cols;  // outputs of a row a UB pass (baseColLen; below H: the row goes in pieces)
  int64_t cores;      // usedCoreNum
  bool perf;          // the ping-pong template (tiling key 30013, dequant_swiglu_quant_dynamic_performance.hpp)
};
DequantSwiglu910b dequant_swiglu_910b(const Platform& p, bool x_int32, int ds, bool dynamic, bool act_scale,
                                      bool qs_one, int64_t rows, int64_t h) {
  // GetBufferNumAndDataLenPerUB: UB bytes per output element, fp32 buffers x 4 + the int8 output (the
  // bias dtype defaults to float without a bias, so int32 x takes the 11 / 12-buffer line).
  const int64_t per_elem = dynamic ? (x_int32 ? 11 * 4 + 1 : 6 * 4 + 1) : (x_int32 ? 12 * 4 + 1 : 7 * 4 + 1);
  const int64_t max_tile = int64_t(p.ub) / per_elem / 32 * 32;  // CalcUbMaxTileLen: 32-element aligned
  // getBaseColLenUpBound: a row UB does not hold goes in 512-byte pieces (cacheLineLen = 512 / x's size).
  const int64_t line = 512 / ds;
  int64_t cols = std::min(h, max_tile);
  if (h % (32 / ds)) cols = std::min<int64_t>(cols, 65535 / 4);  // DISCONTINE_COPY_MAX_BLOCKLEN / sizeof(DataType)
  if (cols < h && cols > line) cols = cols / line * line;
  // CalcOptBaseShape: several rows a pass only for dynamic quantisation of 16-bit x, at most a core's share.
  int64_t base_rows = 1;
  if (dynamic && !x_int32)
    base_rows = std::max<int64_t>(1, std::min({max_tile / align_up(cols, 32), rows, cdiv(rows, p.vector_cores)}));
  // SaveOptBaseShape: a core per row, at most all of them; small problems (H < 1536 and < 128 rows) on 12.
  int64_t cores = std::min<int64_t>(rows, p.vector_cores);
  if (h < 1536 && rows < 128) cores = std::min<int64_t>(cores, 12);
  // isPerformanceBranch + getTilingKeyDynamic: int32 x, rows of at most 1536 whole 32-byte blocks in one
  // piece, an activation scale, no bias, a quant scale that is not a single value.
  const bool perf = x_int32 && dynamic && !qs_one && h % 8 == 0 && h <= 1536 && cols == h && act_scale;
  return {base_rows, cols, std::max<int64_t>(1, cores), perf};
}

// make_dequant_swiglu_quant's inputs, checked.
struct DequantSwigluShape {
  int64_t rows = 0, h2 = 0, h = 0;  // rows of x, x's last dimension, its half (the outputs a row)
  int64_t n_qs = 0;                 // quant_scale's values: H, 1, or 0 (absent)
  bool x_int32 = false, weight_scale = false, act_scale = false, quant_scale = false;
  bool dynamic = true;              // quant_mode "dynamic" (else "static")
};
DequantSwigluShape dequant_swiglu_inputs(const OpDesc& op) {
  need_inputs(op, 1, 4, "x, weight_scale, activation_scale, quant_scale");
  const auto& x = op.inputs[0];
  if (op.dtype != "int32" && !half(op.dtype))
    fail("DequantSwigluQuant: x is " + op.dtype + "; it takes int32 (matmul accumulators), float16 or bfloat16");
  DequantSwigluShape s;
  std::tie(s.rows, s.h2) = rows_hidden(op, x, "x");
  if (s.h2 % 2)
    fail("DequantSwigluQuant: x " + shape_str(x) + " splits its last dimension in two halves; " +
         std::to_string(s.h2) + " is odd");
  s.h = s.h2 / 2;
  const auto& ws = input(op, 1);
  const auto& as = input(op, 2);
  const auto& qs = input(op, 3);
  if (!ws.empty()) check_vector(op, ws, s.h2, "weight_scale", "x's last dimension");
  if (!as.empty() && numel(as) != s.rows)
    fail("DequantSwigluQuant: activation_scale " + shape_str(as) + " must have one value per row of x " + shape_str(x) +
         " (" + std::to_string(s.rows) + ")");
  // [S] hicann/ops-nn quant/dequant_swiglu_quant/op_host/dequant_swiglu_quant_tiling_base.cpp: int32 x
  // needs a weight scale; the quant scale has H values or one.
  if (op.dtype == "int32" && ws.empty())
    fail("DequantSwigluQuant: x is int32 (matmul accumulators), which needs weight_scale (input 1) to dequantise");
  if (!qs.empty() && numel(qs) != 1) check_vector(op, qs, s.h, "quant_scale", "half of x's last dimension,");
  attr_flag(op, "activate_left");  // checked (0 or 1); which half takes the SiLU is the same work
  const auto qm = attr_strs(op, "quant_mode");
  const std::string mode = qm.empty() ? "dynamic" : qm[0];
  if (mode != "dynamic" && mode != "static")
    fail("DequantSwigluQuant: quant_mode '" + mode + "' is not 'dynamic' or 'static'");
  s.n_qs = qs.empty() ? 0 : numel(qs);
  s.x_int32 = op.dtype == "int32";
  s.weight_scale = !ws.empty();
  s.act_scale = !as.empty();
  s.quant_scale = !qs.empty();
  s.dynamic = mode == "dynamic";
  return s;
}

// DequantSwigluQuant's loads: x's two halves, and on 910B how its kernel copies them and the scales.
void dequant_swiglu_loads(VecKernel& k, const Platform& p, const DequantSwigluShape& s) {
  stream_in(k, k.ds);  // the activation half
  stream_in(k, k.ds);  // the gate half
  k.run_in = double(s.h) * k.ds;  // each half of a row is one contiguous run
  // 910B's kernel copies each half of a row with DataCopyPad from where the row puts it
  // ([S] hicann/ops-nn@e5c3fa9 quant/dequant_swiglu_quant/op_kernel/
  // dequant_swiglu_quant_dynamic_base.hpp CopyIn, lines 517-531: blockLen = H x x's size, one row a
  // pass for int32 x or a row over half of UB); halves that are not whole 32-byte blocks go a block at a time,
  // as do int32 x's weight and quant scales, rows of H floats copied the same way once a core
  // (CopyInWeightAndBias, CopyInQuantScale, lines 480-515).
  if (c220(p) && (s.h * k.ds) % 32 != 0) k.unaligned_block_cycles = kUnalignedBlockCycles;
  // Every core's first copies are those scale rows (CanFullLocaOneRow: CopyInQuantScale, then
  // CopyInDequantBuffer's CopyInWeightAndBias, lines 290-297 and 480-515): all the cores read the same
  // addresses at the same moment, the same-address conflict (kSameAddressUb).
  if (c220(p)) k.bcast_same_address = kSameAddressUb;
}

// DequantSwigluQuant's baseline (CANN's default tiling) on the kernel `k`.  Sets `scale_wait` (the serial
// 910B template's per-row read of the activation scale, dequant_swiglu_steps) and `split_sweeps` (GM sweeps
// over a row UB does not hold: the abs-max's, then the quantisation's).
void dequant_swiglu_baseline(VecKernel& k, const Platform& p, const DequantSwigluShape& s, bool& scale_wait,
                             int& split_sweeps) {
  scale_wait = false;
  split_sweeps = 2;
  const int64_t rows = s.rows, h = s.h;
  if (regbase(p)) {
    k.baseline_tile = dequant_swiglu_tile(p, s.x_int32, s.dynamic, s.weight_scale, rows, h);
    // One core per full-load pass, at most all of them (DoOpTiling: maxPreCore_ = min(cores,
    // ceil(rows / ubFactorDimx))); a split row (H > 5120) takes a core a row.
    if (h <= 5120) k.baseline_block_dim = cdiv(rows, k.baseline_tile / align_up(h, 32));
    return;
  }
  const auto t = dequant_swiglu_910b(p, s.x_int32, k.ds, s.dynamic, s.act_scale, s.n_qs == 1, rows, h);
  k.baseline_tile = t.base_cols < h ? t.base_cols : t.base_rows * k.unit_elems;
  k.baseline_block_dim = t.cores;
  // Its queues are single-buffered (TQue depth 1, InitBuffer(..., 1, ...)) and each pass waits for
  // its load (DeQue) while the scalar unit waits for the pass's last row: a pass's load and vector
  // work in turn, the store beside the next load (CanFullLocaOneRow).  The performance template
  // loads the next row into its ping-pong buffers during this one's work.
  k.baseline_buffer_num = t.perf ? 2 : 1;
  k.store_beside_load = !t.perf;
  scale_wait = !t.perf && s.x_int32 && s.act_scale && s.dynamic;
  if (t.base_cols < h) {
    // A row UB does not hold goes in pieces of base_cols, each with its slices of the scales, no
    // whole copy in UB: dynamic_base.hpp CanNotFullLocaOneRow (lines 328-375) loads them per row and
    // piece (CopyInQuantScale; for int32 x CopyInDequantBuffer's weight scales), static_base.hpp
    // processCompute (lines 230-270) per piece only, its pieces outermost and every row of the
    // core's run through each, one pass (no row abs-max: no second sweep).  The slices' fp32
    // queues take UB beside the tile.
    k.bcast_reload_units = s.dynamic ? 1 : rows;
    k.ub_buffers += int(((s.x_int32 && s.weight_scale ? 2 : 0) + (s.n_qs > 1 ? 1 : 0)) * 4 / k.ds);
    split_sweeps = s.dynamic ? 2 : 1;
  }
}

// DequantSwigluQuant's vector steps: dequantise, silu(a) * b, * quant_scale, then the quantisation.
void dequant_swiglu_steps(VecKernel& k, const OpDesc& op, const Platform& p, const DequantSwigluShape& s,
                          bool scale_wait) {
  // The 950 generation's kernel takes whole rows a UB pass with their statistics in the vector
  // registers (op_kernel/arch35/dequant_swiglu_quant*.h); the 910B one loops over a pass's rows,
  // each row's abs-max read back by the scalar unit (op_kernel/dequant_swiglu_quant_dynamic_base.hpp
  // DynamicCompute: ReduceMax, a V_S wait, GetValue, then Muls by the row's scale).
  const bool multi_row = regbase(p);
  for (int i = 0; i < 2; ++i) k.elem_prog.push_back(cast_step(true));  // int32 / 16-bit -> fp32
  if (s.weight_scale) for (int i = 0; i < 2; ++i) k.elem_prog.push_back(api("Mul"));
  if (s.act_scale) {
    for (int i = 0; i < 2; ++i)
      if (multi_row) k.elem_prog.push_back(api("Mul"));  // broadcast over the pass's rows
      else k.row_loop_prog.push_back(api("Muls"));       // the row's scalar
    k.in_bytes += 4.0 / s.h;
  }
  // silu(a) * b; the 910B kernel's SiLU is a / (1 + exp(-a)) (BaseCompute: Muls, Exp, Adds, Div).
  for (const char* a : multi_row ? std::vector<const char*>{"Sigmoid", "Mul", "Mul"}
                                 : std::vector<const char*>{"Muls", "Exp", "Adds", "Div", "Mul"})
    k.elem_prog.push_back(api(a));
  if (s.quant_scale) k.elem_prog.push_back(api("Mul"));
  k.bcast_bytes = 4.0 * double((s.weight_scale ? s.h2 : 0) + s.n_qs);  // float32 scales
  const bool int4 = int4_output(op);
  if (s.dynamic) {
    quant_tail(k, p, int4, multi_row);
    // 910B: the row's wait is its ReduceMax's (vec_row_cycles, the row reduction's wait): the scalar
    // work after it is a division and the Muls' operand, no second round trip (kRowScalarQuant on top
    // put the fit half's 910B2 [4096, 4096] bf16 at 1.43x and int32 [16384, 512] at 1.67x measured).
    if (!multi_row) k.row_scalar_cycles = 0;
    // The serial template reads each row's activation scale into a scalar register only once the row's
    // loads are in (dynamic_base.hpp getActivateScaleValue, lines 412-424: SetFlag / WaitFlag MTE2_S, then
    // GetValue, before the row's first Cast is issued; the performance template reads it from GM
    // instead): a pipe -> scalar wait a row on the row's path, as the row reduction's (vec_row_cycles).
    if (scale_wait) k.row_scalar_cycles += k.row_wait(p);
  } else {  // static: y * quant_scale (above) is the quantised value, no row statistic
    for (int i = 0; i < (int4 ? 3 : 2); ++i) k.elem_prog.push_back(cast_step(false));
    stream_out(k, int4 ? 0.5 : 1.0);
  }
}

// DequantSwigluQuant (x [..., 2H] int32 or float16/bfloat16, weight_scale [2H], activation_scale
// [rows], quant_scale [H], as the calibration records order them; absent ones []): dequantise
// (x * weight_scale * activation_scale), y = silu(a) * b of the halves, then y * quant_scale and
// the dynamic int8 quantisation with a float32 scale per row (quant_mode "dynamic", the default;
// "static": quant_scale alone).  A unit is one row of H outputs, each reading its two inputs.
std::shared_ptr<OpModel> make_dequant_swiglu_quant(const OpDesc& op, const Platform& p) {
  const DequantSwigluShape s = dequant_swiglu_inputs(op);
  VecKernel k = row_kernel(op, p, s.rows, s.h);
  dequant_swiglu_loads(k, p, s);
  bool scale_wait = false;
  int split_sweeps = 2;
  dequant_swiglu_baseline(k, p, s, scale_wait, split_sweeps);
  dequant_swiglu_steps(k, op, p, s, scale_wait);
  k.sweeps_if_split = split_sweeps;
  k.temp_fp32 = 3;  // the two fp32 halves and Sigmoid's buffer
  finish(k, double(s.rows) * double(s.h), s.dynamic ? 4 : 0);  // the float32 scale per row
  return make_vec_model(k, p);
}

// ---- SwiGlu, RoPE -------------------------------------------------------------------------

// SwiGlu's largest base block, in elements ([S] hicann/ops-nn activation/swi_glu/op_host/swi_glu_tiling.cpp
// CalcUbMaxTileLen): UB over buffer_num x 3 queues of x's dtype + fp32 work buffers (2 for 16-bit x,
// 1 for fp32: SWIGLU_TBUF_NUM_*).
int64_t swiglu_max_tile(const Platform& p, int ds, int buffer_num) {
  return int64_t(p.ub) / (buffer_num * 3 * ds + (ds == 4 ? 4 : 8));
}

// CANN's SwiGlu tiling on 910B ([S] hicann/ops-nn@e5c3fa9 activation/swi_glu/op_host/swi_glu_tiling.cpp,
// GluSingleTilingCalculator): x is viewed as rows x 2 cols (rows: the dims before `dim`, cols: half of
// the rest, SetTotalShape) and cut into base blocks of base_rows x base_cols outputs, which the kernel
// deals to the cores one at a time (glu_tiling_kernel.hpp SWIGLU_SINGLE_PROCESS: tileIdx = blockIdx,
// tileIdx += blockNum).
struct SwiGlu910b {
  int64_t base_rows = 0, base_cols = 0;  // baseRowLen, baseColLen
  int64_t tiles = 0;                     // totalTileNum (tail blocks included)
  int64_t cores = 0;                     // totalUsedCoreNum = blockDim
  int64_t per_core = 0;                  // tileNumPerCore: the busiest core's blocks
  int64_t size = 0, base_tiles = 0;      // optBaseSize, optBaseTileNum (SaveOptBaseShape's tie-breaks)
  int buffer_num = 2;                    // isDoubleBuffer ? 2 : 1
};
SwiGlu910b swiglu_910b(const Platform& p, int ds, int64_t rows, int64_t cols) {
  const int64_t blk = 32 / ds, line = 512 / ds;  // ubMinBlockLen; cacheLineLen = alignPackLen
  const bool aligned = cols % blk == 0;           // is32BAligned
  constexpr int64_t kMaxBlock = 65535;            // DISCONTINE_COPY_MAX_BLOCKLEN / _STRIDE
  // MustBeSingleBaseRowLen: the copy's stride from one row's piece to the next exceeds its field.
  auto one_row = [&](int64_t bc) { return aligned ? 2 * cols - bc > kMaxBlock * blk : (2 * cols - bc) * ds > kMaxBlock; };
  auto calc = [&](int buffer_num) {
    const int64_t max_tile = swiglu_max_tile(p, ds, buffer_num) / blk * blk;  // 32-byte aligned
    // getBaseColLenUpBound: a row UB does not hold goes in 512-byte pieces.
    int64_t bc = std::min({cols, max_tile, aligned ? kMaxBlock : kMaxBlock / ds});
    if (bc < cols && bc > line) bc = bc / line * line;
    SwiGlu910b best;
    // SaveOptBaseShape: the most cores, then the fewest blocks, the largest block, the most whole blocks.
    auto save = [&](int64_t br, int64_t c) {
      const int64_t tiles = cdiv(rows, br) * cdiv(cols, c), used = std::min<int64_t>(tiles, p.vector_cores);
      const int64_t size = br * c, whole = (rows / br) * (cols / c);
      if (best.tiles == 0 || std::make_tuple(used, -tiles, size, whole) >
                                 std::make_tuple(best.cores, -best.tiles, best.size, best.base_tiles))
        best = {br, c, tiles, used, cdiv(tiles, used), size, whole, buffer_num};
    };
    // CalcOptBaseShape: from the widest piece down a cache line at a time, as many rows as UB holds
    // (rows padded to 32 B, at most 4095: DISCONTINE_COPY_MAX_BLOCKCNT).
    const int64_t row_cap = std::min<int64_t>(rows, 4095);
    if (one_row(bc)) {
      save(1, bc);
      return best;
    }
    while (true) {
      const int64_t br = std::min(max_tile / align_up(bc, blk), row_cap);
      if (br < 1 || (br > 1 && one_row(bc))) break;
      if (!(br > 1 && one_row(cols % bc))) save(br, bc);  // isValidTailCol
      if (bc <= line || br >= row_cap) break;
      bc = bc % line == 0 ? bc - line : bc / line * line;
    }
    if (best.tiles == 0) save(1, bc);  // (CANN fails the tiling here: no valid block)
    return best;
  };
  // CalcTiling: double-buffered, unless that leaves each core two blocks and single buffers take
  // them in one on as many cores.
  SwiGlu910b t = calc(2);
  if (t.per_core == 2) {
    const SwiGlu910b one = calc(1);
    if (one.per_core == 1 && one.cores >= t.cores) t = one;
  }
  return t;
}

// The padded elements of the busiest core's blocks as SwiGlu's 910B kernel deals them: block i (row-major
// over rowTileNum x colTileNum) to core i mod blockDim (glu_tiling_kernel.hpp SWIGLU_SINGLE_PROCESS), the
// last row / column of blocks holding the tail rows / columns (CaclOneTileParam: tailRow*, *TailCol
// CalLen).  With few blocks a core, the core with whole blocks does several times the blocks' mean (x
// [7, 3000] fp32: 6 x 1152 outputs on core 0, 2.6x the mean of its 4 blocks).
double swiglu_busiest_910b(const SwiGlu910b& t, int64_t rows, int64_t cols, int64_t blk) {
  const int64_t col_tiles = cdiv(cols, t.base_cols), row_tiles = cdiv(rows, t.base_rows);
  const bool aligned = cols % blk == 0;
  auto padded = [&](int64_t c) { return aligned ? c : align_up(c, blk); };
  const int64_t tail_rows = rows - (row_tiles - 1) * t.base_rows;
  const int64_t tail_cols = padded(cols - (col_tiles - 1) * t.base_cols), base_cols = padded(t.base_cols);
  std::vector<double> core(size_t(t.cores), 0.0);  // (a block per loop: a few million at most, HBM's size)
  for (int64_t i = 0; i < t.tiles; ++i) {
    const int64_t r = i / col_tiles, c = i % col_tiles;
    core[size_t(i % t.cores)] += double(r + 1 < row_tiles ? t.base_rows : tail_rows) *
                                 double(c + 1 < col_tiles ? base_cols : tail_cols);
  }
  return *std::max_element(core.begin(), core.end());
}

// SwiGlu's 910B kernel on swiglu_910b's blocks: a unit is one base block, a loop of the kernel (never two
// a UB tile: unit_per_tile), so a core's loop count is the busiest core's blocks, as the kernel deals
// them, and a unit's size that core's mean block (swiglu_busiest_910b; tail blocks are smaller).
// Returns the outputs as UB holds them (rows padded to 32 bytes).
double swiglu_kernel_910b(VecKernel& k, const Platform& p, bool h16, int64_t rows, int64_t cols) {
  const SwiGlu910b t = swiglu_910b(p, k.ds, rows, cols);
  const int64_t blk = 32 / k.ds;
  const bool aligned = cols % blk == 0;
  // A block's UB rows are padded to 32 bytes when the halves are not, and the vector APIs run over the
  // padding (glu_tiling_kernel.hpp CaclTileCopyParams: *CalLen = rows x AlignUp(cols, 32 B)); GM moves
  // the halves' bytes only.
  const int64_t pad = aligned ? t.base_cols : align_up(t.base_cols, blk);
  const int64_t tail = cols % t.base_cols;
  const int64_t padded_cols = aligned ? cols : (cols / t.base_cols) * pad + align_up(tail, blk);
  k.units = t.tiles;
  k.unit_elems = int64_t(std::ceil(swiglu_busiest_910b(t, rows, cols, blk) / double(t.per_core)));
  k.unit_per_tile = true;
  k.in_bytes *= double(cols) / double(padded_cols);
  k.out_bytes *= double(cols) / double(padded_cols);
  k.baseline_tile = t.base_rows * pad;  // tileLength, the queues' size
  k.baseline_block_dim = t.cores;
  k.baseline_buffer_num = t.buffer_num;
  // A block's copy takes base_rows runs of base_cols from each half (CaclOneTileCopyParam, lines
  // 121-136: blockCount = rows, blockLen = cols, stride = the rest of x's row); the output's rows
  // follow each other when a block holds whole rows (dst stride 0), one run for the block.
  k.run_in = double(t.base_cols) * k.ds;
  k.run_out = aligned && t.base_cols == cols ? 0.0 : double(t.base_cols) * k.ds;
  if (!aligned) {
    // Halves not whole 32-byte blocks: one DataCopyPad per half and one for the output, blockCount =
    // the block's rows (swi_glu_single.hpp CopyIn_Non32BAligned / CopyOut_Non32BAligned, lines
    // 82-111): a row is three byte-granular bursts of its own, each paying a copy's start
    // (kBurstCycles, on the core's GM port), the halves read a 32-byte block at a time
    // (kUnalignedBlockCycles), the output written as whole L2 lines (common.hpp write_charge).
    // Without these the fit half's fp32 [2, 3, 17, 512, 100] dim -1 on 910B2 was 0.39x measured.
    k.run_call_in = k.run_call_out = kBurstCycles;
    k.unaligned_block_cycles = kUnalignedBlockCycles;
  }
  // The vector program, a PipeBarrier after each call: SiLU as a / (1 + exp(-a)) in fp32
  // (swi_glu_impl.hpp SwigluVector::Compute for fp32: Muls, Exp, Adds, Div of a tile of ones, Mul by
  // a, Mul by b; swi_glu_bf16.hpp SwigluVectorBF16::Compute for float16 and bfloat16: Cast a, Muls,
  // Exp, Adds, Div, Cast b, Mul, Cast back), no Sigmoid and its work buffer.
  if (h16) k.elem_prog.push_back(cast_step(true));
  for (const char* a : {"Muls", "Exp", "Adds", "Div"}) k.elem_prog.push_back(api(a));
  k.elem_prog.push_back(h16 ? cast_step(true) : api("Mul"));
  k.elem_prog.push_back(api("Mul"));
  if (h16) k.elem_prog.push_back(cast_step(false));
  // Work buffers: the tile of ones (fp32), or the fp32 casts of a and of the result (16-bit).
  k.temp_fp32 = h16 ? 2 : 1;
  return double(rows) * double(padded_cols);
}

// SwiGlu (x split in two along `dim`): y = silu(a) * b, element-wise over the output; each
// half is read in contiguous runs of (split extent / 2) x (the dims after it) elements.
std::shared_ptr<OpModel> make_swiglu(const OpDesc& op, const Platform& p) {
  need_inputs(op, 1, 1, "x");
  need_float(op);
  const auto& x = op.inputs[0];
  if (x.empty()) fail("SwiGlu: x needs at least one dimension");
  const int64_t r = int64_t(x.size()), d = attr_int(op, "dim", -1);
  if (d < -r || d >= r) fail("SwiGlu: dim " + std::to_string(d) + " is out of range for x " + shape_str(x));
  const size_t ax = size_t(d < 0 ? d + r : d);
  if (x[ax] % 2)
    fail("SwiGlu: x " + shape_str(x) + " is split in two along dim " + std::to_string(d) + ", whose extent " +
         std::to_string(x[ax]) + " is odd");
  int64_t inner = x[ax] / 2;
  for (size_t i = ax + 1; i < x.size(); ++i) inner *= x[i];
  const int64_t n = numel(x) / 2;
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = n;
  k.unit_elems = 1;
  k.in_bytes = 0; k.in_streams = 0; k.ub_buffers = 1;  // + the output queue
  stream_in(k, k.ds);
  stream_in(k, k.ds);
  k.run_in = double(inner) * k.ds;
  k.out_bytes = k.ds;
  const bool h16 = half(op.dtype);
  double elems = double(n);
  if (c220(p)) {
    elems = swiglu_kernel_910b(k, p, h16, n / inner, inner);
  } else {
    // Halves not 32-byte aligned: one GM burst per row of the output too, written as whole L2 lines
    // (common.hpp write_charge).  Not on the 950 generation, whose MTE pads unaligned bursts itself
    // (as cube.cpp's unaligned rows): the fit half's fp32 [2, 3, 17, 512, 100] dim -1 took 78.1 us on
    // 910B2 against 21.2 on 950PR (3.7x; the chips' usual ratio is about 0.7x).
    if ((inner * k.ds) % 32 != 0 && !regbase(p)) k.run_out = double(inner) * k.ds;
    if (h16) for (int i = 0; i < 2; ++i) k.elem_prog.push_back(cast_step(true));
    for (const char* a : {"Sigmoid", "Mul", "Mul"}) k.elem_prog.push_back(api(a));
    if (h16) k.elem_prog.push_back(cast_step(false));
    k.temp_fp32 = 1 + (h16 ? 2 : 0) + vec_api_cost("Sigmoid").temps;
    // CANN's default: the largest base block UB holds, double-buffered, that still gives every core
    // work: tiles of min(maxTileLen, output / cores).
    k.baseline_tile = std::max<int64_t>(1, std::min<int64_t>(swiglu_max_tile(p, k.ds, 2), cdiv(n, p.vector_cores)));
  }
  finish(k, elems, 0);
  return make_vec_model(k, p);
}

// ApplyRotaryPosEmb (query [B, S, N, D], key [B, S, Nkv, D], cos, sin [B or 1, S, 1, D]; BNSD:
// [B, N, S, D] and [B or 1, 1, S, D]): q * cos + rotate(q) * sin for q and k in place.
// Assumed structure: BSND takes one token's heads of q and k as a row with its cos/sin row;
// BNSD takes one head's S x D block with the S x D cos/sin, read again for every head.
// rotate-half negates and swaps the halves (Muls); interleave swaps neighbours (two more
// gather-like copies, Add class).
std::shared_ptr<OpModel> make_rope(const OpDesc& op, const Platform& p) {
  need_inputs(op, 4, 4, "query, key, cos, sin");
  need_float(op);
  const auto lay = attr_strs(op, "input_layout");
  const std::string layout = lay.empty() ? "BSND" : lay[0];
  if (layout != "BSND" && layout != "BNSD")
    fail("ApplyRotaryPosEmb: input_layout '" + layout + "' is not BSND or BNSD");
  const auto rm = attr_strs(op, "rotary_mode");
  const std::string mode = rm.empty() ? "half" : rm[0];
  if (mode != "half" && mode != "interleave")
    fail("ApplyRotaryPosEmb: rotary_mode '" + mode + "' is not 'half' or 'interleave'");
  const auto &q = op.inputs[0], &kk = op.inputs[1], &cs = op.inputs[2], &sn = op.inputs[3];
  if (q.size() != 4 || kk.size() != 4)
    fail("ApplyRotaryPosEmb: query " + shape_str(q) + " and key " + shape_str(kk) + " must be 4-D (" + layout + ")");
  const bool bsnd = layout == "BSND";
  const size_t sa = bsnd ? 1 : 2, na = bsnd ? 2 : 1;
  const int64_t b = q[0], s = q[sa], nq = q[na], dd = q[3], nk = kk[na];
  if (kk[0] != b || kk[sa] != s || kk[3] != dd)
    fail("ApplyRotaryPosEmb: key " + shape_str(kk) + " must share query " + shape_str(q) + "'s batch, sequence and head "
         "size (" + layout + ")");
  if (nq % nk != 0)
    fail("ApplyRotaryPosEmb: key has " + std::to_string(nk) + " heads, which does not divide the query's " +
         std::to_string(nq));
  if (dd % 2) fail("ApplyRotaryPosEmb: the head size " + std::to_string(dd) + " of query " + shape_str(q) + " is odd");
  const std::vector<int64_t> want = bsnd ? std::vector<int64_t>{b, s, 1, dd} : std::vector<int64_t>{b, 1, s, dd};
  for (const auto* t : {&cs, &sn}) {
    const std::string name = t == &cs ? "cos" : "sin";
    bool ok = t->size() == 4 && ((*t)[0] == b || (*t)[0] == 1);
    for (size_t i = 1; ok && i < 4; ++i) ok = (*t)[i] == want[i];
    if (!ok)
      fail("ApplyRotaryPosEmb: " + name + " " + shape_str(*t) + " does not broadcast to query " + shape_str(q) +
           " (expected [" + std::to_string(b) + " or 1, " + std::to_string(want[1]) + ", " + std::to_string(want[2]) +
           ", " + std::to_string(dd) + "], " + layout + ")");
  }
  VecKernel k = start_kernel(op, p, op.kind);
  const int64_t heads = nq + nk;
  k.units = bsnd ? b * s : b * heads;
  k.unit_elems = bsnd ? heads * dd : s * dd;
  k.in_bytes = 0; k.in_streams = 0; k.ub_buffers = 0;
  stream_in(k, k.ds);  // q and k rows
  // cos and sin: once per token (BSND, shared by its heads) or per head (BNSD).
  const double trig = bsnd ? 2.0 / double(heads) : 2.0;
  k.in_bytes += trig * k.ds;
  k.in_streams += 2;
  k.ub_buffers += 2;
  stream_out(k, k.ds);
  const bool h16 = half(op.dtype);
  if (h16) for (int i = 0; i < 3; ++i) k.elem_prog.push_back(cast_step(true));
  for (const char* a : {"Mul", "Muls", "Mul", "Add"}) k.elem_prog.push_back(api(a));
  if (mode == "interleave") for (int i = 0; i < 2; ++i) k.elem_prog.push_back(api("Add"));
  if (h16) k.elem_prog.push_back(cast_step(false));
  k.sweeps_if_split = 1;
  k.split_rows = false;
  k.temp_fp32 = h16 ? 3 : 1;
  finish(k, double(k.units) * double(k.unit_elems), 0);
  return make_vec_model(k, p);
}

}  // namespace

std::shared_ptr<OpModel> make_norm_quant_model(const OpDesc& op, const Platform& p) {
  if (op.kind == "RmsNorm" || op.kind == "AddRmsNorm" || op.kind == "AddRmsNormDynamicQuant") return make_rms_norm(op, p);
  if (op.kind == "GroupNorm" || op.kind == "GroupNormSilu") return make_group_norm(op, p);
  if (op.kind == "DynamicQuant") return make_dynamic_quant(op, p);
  if (op.kind == "DequantSwigluQuant") return make_dequant_swiglu_quant(op, p);
  if (op.kind == "SwiGlu") return make_swiglu(op, p);
  if (op.kind == "ApplyRotaryPosEmb") return make_rope(op, p);
  fail("internal: no norm/quant model for " + op.kind);
}

}  // namespace aoe::ascend::detail
