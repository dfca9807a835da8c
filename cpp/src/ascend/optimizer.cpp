// Optimizer kernels of LLM training (issue 49): ForeachAddcdivScalar and ForeachNorm (CANN's
// multi-tensor "foreach" kernels), ApplyAdamW, and Gcd (an integer elementwise loop).  Each is
// one kernel of the Ascend C vector pattern (vector.cpp, VecKernel): the elements of every
// tensor are split over the vector cores, each core loops CopyIn -> Compute -> CopyOut over UB
// tiles, so the tiling knobs are vector.cpp's blockDim (elements per core), tileLen (the UB
// tile) and bufferNum.
//
// CANN's default tiling (hicann/ops-nn foreach_tiling_func*: ForeachCommonTiling): blockDim =
// min(vector cores, total elements / 32-byte block), the elements of all tensors split evenly
// between the cores, and a UB tile of the whole UB divided by the queues (double-buffered;
// 16-bit data first divided by 10 for its fp32 casts): the largest tile UB holds
// (VecKernel::baseline_max_tile).  ApplyAdamW on 910B is CANN's TBE elementwise kernel (its tiling
// and compute: tbe_c220_adamw), on the other SoCs the elementwise scheduler of the same shape; Gcd
// takes the same rule (assumed).
#include <algorithm>
#include <cmath>
#include <memory>

#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

// The vector program of an fp32-computed kernel on `dtype` data: 16-bit inputs are cast up
// once per streamed input and the results cast down once per output (the foreach kernels
// compute fp16 and bf16 in fp32: ops-nn reserves UB for the casts of both).
void add_fp32_steps(std::vector<VecStep>& prog, const std::string& dtype, const std::vector<const char*>& apis,
                    int inputs, int outputs) {
  const bool cast = dtype == "float16" || dtype == "bfloat16";
  if (cast)
    for (int i = 0; i < inputs; ++i) prog.push_back({vec_api_cost("CastUp"), false});
  for (const char* a : apis) prog.push_back({vec_api_cost(a), true});
  if (cast)
    for (int i = 0; i < outputs; ++i) prog.push_back({vec_api_cost("CastDown"), false});
}

void need_float(const OpDesc& op) {
  if (op.dtype != "float16" && op.dtype != "bfloat16" && op.dtype != "float32")
    fail(op.kind + ": dtype " + op.dtype + " is not supported (float16, bfloat16 or float32)");
}

// [F] A kernel's fixed cycles beyond vector.cpp's launch heads (scalar prologue: the tiling
// parse, each tensor's address and share; the epilogue: partial results combined), fitted per
// operator on the fit half (case id % 4 == 0) of shared/reference/measured_ops/
// cann_bench_calibration.json (hicann/cann-bench @ d59d44ca), 910B2 and 950PR pooled.
constexpr double kAddcdivSetupCycles = 13750;
constexpr double kNormSetupCycles = 6500;
constexpr double kAdamWSetupCycles = 3500;

// A kernel streaming `n` elements: `in` inputs read and `out` outputs written per element.
VecKernel streaming(const OpDesc& op, const Platform& p, int64_t n, int in, int out) {
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = n;
  k.unit_elems = 1;
  k.in_bytes = double(in) * k.ds;
  k.out_bytes = double(out) * k.ds;
  k.in_streams = in;
  k.ub_buffers = in + out;
  k.unique_bytes = double(n) * (in + out) * k.ds;
  k.baseline_max_tile = true;
  return k;
}

// The lists of a Foreach operator: `lists` lists of `count` tensors each, flattened into
// op.inputs list after list ("tensor_count" gives the list length).  Tensor i of every list
// must have the shape of tensor i of the first.  Returns the elements of each tensor of a list.
std::vector<int64_t> foreach_lists(const OpDesc& op, int lists, const std::vector<std::string>& names) {
  const int64_t n_in = int64_t(op.inputs.size());
  const int64_t count = attr_int(op, "tensor_count", n_in / lists);
  if (count < 1 || count * lists != n_in) {
    std::string all;
    for (const auto& s : names) all += (all.empty() ? "" : ", ") + s;
    fail(op.kind + ": " + std::to_string(n_in) + " input tensors do not make " + std::to_string(lists) +
         " list(s) (" + all + ") of tensor_count = " + std::to_string(count) +
         " tensors: the lists must have the same length");
  }
  std::vector<int64_t> elems;
  for (int64_t i = 0; i < count; ++i) {
    const auto& first = op.inputs[size_t(i)];
    check_shape(first, op.kind + " " + names[0] + "[" + std::to_string(i) + "]");
    if (first.empty()) fail(op.kind + ": " + names[0] + "[" + std::to_string(i) + "] has no shape");
    for (int l = 1; l < lists; ++l) {
      const auto& s = op.inputs[size_t(l * count + i)];
      if (s != first)
        fail(op.kind + ": " + names[size_t(l)] + "[" + std::to_string(i) + "] has shape " + shape_str(s) + ", " +
             names[0] + "[" + std::to_string(i) + "] " + shape_str(first) + " (the lists' tensors must match)");
    }
    elems.push_back(numel(first));
  }
  return elems;
}

int64_t total_elems(const std::vector<int64_t>& elems) {
  int64_t n = 0;
  for (int64_t e : elems) n += e;
  return n;
}

// [G] The latency a tensor part's first tile waits beyond its bytes on CANN's 910B foreach kernels:
// its loads wait for the previous store (MTE3 -> MTE2: foreach_norm.h SingleTensorProcess lines
// 364-366 after the part's partial sum, foreach_one_scalar_quaternary_implict_output.h Compute
// lines 107-109 after each tile), so a part pays a load's and a store's start, GE's one-core MTE2
// head and its MTE3 head (common.hpp).  Its four tensor addresses (GetTensorAddr, lines 217-220)
// are scalar GM reads we do not charge (no source for their latency).
double foreach_part_cycles() { return mte2_head(1, false) + kMte3Head; }

// CANN's 910B foreach kernels loop tensor by tensor (ops-nn kernel_foreach_unary.h Process and
// SingleTensorProcess, foreach_norm.h Process: a tile per maxDataCount of a core's part of each
// tensor, no tile across two tensors) over the split of foreach_tiling_class.h AssignDataToEachCore
// (ForeachNorm's foreach_reduce_tiling_func.cpp: every tensor rounded up to whole 32-byte blocks).
void foreach_c220_list(VecKernel& k, const std::vector<int64_t>& elems, bool block_align) {
  k.list_elems = elems;
  k.list_block_align = block_align;
  k.part_cycles = foreach_part_cycles();
}

// CANN's foreach tilings size their UB tiles alike (ops-nn foreach_tiling_class.h DivideUbMemory1,
// foreach_reduce_tiling_func.cpp DivideUbMemory): inputsTensorUbSize = the UB left after the tiling
// data (16-bit: / 10 first) / `parts`, rounded down to `round` bytes; an fp32 tile is that many
// bytes, a 16-bit one 9x that (COPY_SPACE_MULTIPLE, kernel_foreach_base.h), in elements here.
int64_t foreach_ub_size(int64_t left, int ds, int64_t parts, int64_t round) {
  return (ds == 2 ? left / 10 : left) / parts / round * round;
}
int64_t foreach_tile_elems(int64_t in_ub, int ds) { return (ds == 2 ? 9 * in_ub : in_ub) / ds; }

// CANN's 910B ForeachAddcdivScalar (hicann/ops-nn @ e5c3fa93, the non-arch35 kernel
// foreach/foreach_addcdiv_scalar/op_kernel/foreach_addcdiv_scalar.cpp on foreach_utils/op_kernel/
// foreach_one_scalar_quaternary_implict_output.h and kernel_foreach_unary.h):
// - SingleTensorProcess (kernel_foreach_unary.h lines 143-168) runs CopyIn, CopyInPlus, Compute per
//   tile, and Compute (implict_output.h lines 85-111) waits V->MTE3 before the tile's store and
//   MTE3->MTE2 after it, so the next tile's loads wait for this tile's store: a tile's loads, its
//   vector work and its store run in turn, tile after tile.  The queues have 2 buffers, the
//   pipeline is that of bufferNum 1.
// - The result is stored from x1's buffer (no output queue): three tile buffers.
// - The tile (foreach_tiling_class.h DivideUbMemory1, FOREACH_POINTWISE_OP_CODE, lines 755-764):
//   inputsTensorUbSize = (UB - the 3056-byte ForeachCommonTilingData, foreach_tiling_def.h) / 8
//   (16-bit: / 10 first), rounded down to 32 bytes (16-bit: 64); an fp32 tile is inputsTensorUbSize
//   bytes, a 16-bit one 9x that (COPY_SPACE_MULTIPLE, kernel_foreach_base.h line 26; implict_output.h
//   Init lines 156-166), computed in fp32 pieces of inputsTensorUbSize / 4 elements (the fp32
//   copies are a piece's, not a tile's: no tile-sized temporaries).
// - A 16-bit piece (AddcDivScalarAdapter / ComputerPerCastForAddcDivScalar, foreach_addcdiv_scalar.cpp
//   lines 35-74) runs its own three casts up, Div, Axpy and cast down, each behind a PipeBarrier:
//   a call's start is paid per piece of 592 elements (18 a tile), not once per tile, so it is
//   charged with the piece's repeats.
// The elements of all tensors are split over min(cores, 32-byte blocks) cores (GetNeedCoreNum,
// lines 613-624: 100 fp32 elements take 13 cores), a block apart at most (AssignDataToEachCore,
// lines 629-682), as the model's even split.
void cann_c220_addcdiv_loop(VecKernel& k, const Platform& p) {
  const int64_t in_ub = foreach_ub_size(int64_t(p.ub) - 3056, k.ds, 8, k.ds == 2 ? 64 : 32);
  k.baseline_tile = foreach_tile_elems(in_ub, k.ds);
  k.baseline_buffer_num = 1;
  k.baseline_block_dim = cdiv(k.units, 32 / k.ds);
  k.ub_buffers = 3;
  k.temp_fp32 = 0;
  if (k.ds == 2) {
    const double piece = double(in_ub / 4);
    for (auto& s : k.elem_prog) {
      s.cost.per_repeat += s.cost.per_call * (s.fp32 ? 64.0 : 128.0) / piece;
      s.cost.per_call = 0;
    }
  }
}

// y_i = x1_i + scalar * x2_i / x3_i over every tensor of the three lists.
std::shared_ptr<OpModel> make_addcdiv(const OpDesc& op, const Platform& p) {
  need_float(op);
  const auto elems = foreach_lists(op, 3, {"x1", "x2", "x3"});
  const int64_t n = total_elems(elems);
  VecKernel k = streaming(op, p, n, 3, 1);
  add_fp32_steps(k.elem_prog, op.dtype, {"Div", "Muls", "Add"}, 3, 1);
  k.temp_fp32 = k.ds == 4 ? 0 : 3;  // the fp32 copies of the three inputs
  k.fixed_us = kAddcdivSetupCycles / p.freq_mhz;
  k.flops = 3.0 * double(n);
  if (c220(p)) {
    cann_c220_addcdiv_loop(k, p);
    foreach_c220_list(k, elems, false);
  }
  return make_vec_model(k, p);
}

// CANN's 910B ForeachNorm loop (hicann/ops-nn foreach/foreach_norm/op_kernel/foreach_norm.h, the
// non-arch35 kernel): each UB tile is loaded (CopyInStage1), then reduced, and the reduction's
// sum is read by the scalar unit (GetValue behind a V->S wait, SetValue behind an S->V wait:
// SquareAndReduceRound1Compute[PerCast], lines 98-193) before SingleTensorProcess's loop (lines
// 328-352) issues the next tile's load.  So although its queue has BUFFER_NUM = 2, a tile's load
// and its vector work run in turn: bufferNum 1 here, which costs the most where a core has many
// tiles (the 4 x [255, 8193] record, ~5 tiles a core) and nothing where it has one ([1000003]).
// The tile (ops-nn foreach/foreach_utils/op_host/foreach_reduce_tiling_func.cpp DivideUbMemory,
// lines 206-215): inputsTensorUbSize = (UB - the 4496-byte ForeachReduceTilingData - 16384) / 2
// (16-bit: first / 10), rounded down to 32 bytes (bf16: 64); fp32 tiles are inputsTensorUbSize
// bytes, 16-bit ones 9x that (foreach_norm.h Init, COPY_SPACE_MULTIPLE).  Not modelled: the
// scalar round trip of each 16-bit cast piece (inputsTensorUbSize / 4 elements, ~19 a tile):
// at Platform::vec_row_cycles a wait it overshot the fit half (when tried, issue 48 round 5: the
// 4 x [255, 8193] record 0.90 -> 1.24 of measured, against 1.04 without it), so a wait there costs
// less; no source says how much.
// The cores (foreach_reduce_tiling_func.cpp GetNeedCoreNum): min(vector cores, the list's
// 32-byte blocks, each tensor's rounded up), each core's part of a tensor reduced on its own
// (foreach_c220_list).  The fp32 copies of a 16-bit tile are a piece's (float32Queue, 2 x
// inputsTensorUbSize bytes; the accumulator is calcBuf's few bytes): no tile-sized fp32 buffer.
// After a SyncAll, stage 2 (Process, lines 273-290) gives core c the tensors c, c + needCoreNum,
// ...: each loads its partials, reduces them and stores the norm in turn (MTE3 -> MTE2 wait), a
// load's and a store's start per round (foreach_part_cycles); the first round is in
// kNormSetupCycles' fit.
void cann_c220_norm_loop(VecKernel& k, const Platform& p, const std::vector<int64_t>& elems) {
  const int64_t in_ub = foreach_ub_size(int64_t(p.ub) - 4496 - 16384, k.ds, 2, k.dtype == "bfloat16" ? 64 : 32);
  k.baseline_tile = foreach_tile_elems(in_ub, k.ds);
  k.baseline_buffer_num = 1;
  k.temp_fp32 = 0;
  foreach_c220_list(k, elems, true);
  const int64_t need = list_cores(k, p.vector_cores);
  k.baseline_block_dim = need;
  k.fixed_us += double(cdiv(int64_t(elems.size()), need) - 1) * foreach_part_cycles() / p.freq_mhz;
}

// The p-norm of each tensor of a list: every element is read once, |x| (|x|^2, |x|^p) of each
// UB tile reduced to one fp32 partial (ReduceSum, or ReduceMax for the infinity norm: the
// WholeReduceSum class, per element of the tile), the partials of each tensor combined at the
// end (a few scalars per tensor, in the fixed cost).  norm_type: 1 (L1, default), 2 (L2), 0
// (infinity) or 3 (any other p: |x|^p = exp(p ln |x|), Ln costed as Exp as in common.cpp's Pow).
std::shared_ptr<OpModel> make_foreach_norm(const OpDesc& op, const Platform& p) {
  need_float(op);
  const auto elems = foreach_lists(op, 1, {"x"});
  const int64_t n = total_elems(elems);
  const int64_t norm = attr_int(op, "norm_type", 1);
  std::vector<const char*> apis;
  if (norm == 1 || norm == 0) apis = {"Adds", "WholeReduceSum"};  // Abs (a scalar-operand op), reduce
  else if (norm == 2) apis = {"Mul", "WholeReduceSum"};
  else if (norm == 3) apis = {"Adds", "Exp", "Muls", "Exp", "WholeReduceSum"};
  else fail(op.kind + ": norm_type must be 0 (infinity), 1, 2 or 3 (another p), got " + std::to_string(norm));
  VecKernel k = streaming(op, p, n, 1, 0);
  add_fp32_steps(k.elem_prog, op.dtype, apis, 1, 0);
  k.ub_buffers = 1;
  k.temp_fp32 = 1;  // the accumulator
  k.fixed_us = kNormSetupCycles / p.freq_mhz;
  k.unique_bytes = double(n) * k.ds;
  k.flops = double(apis.size()) * double(n);
  if (c220(p) && (norm == 1 || norm == 2)) cann_c220_norm_loop(k, p, elems);  // inf and other p: LpNormV2 (records.py)
  return make_vec_model(k, p);
}

}  // namespace

// 910B runs ApplyAdamW as a TBE elementwise kernel: hicann/ops-nn @ e5c3fa93 builds its Ascend C
// optim/apply_adam_w for ascend950 only (op_host/apply_adam_w_def.cpp), and experimental/optim/
// apply_adam_w (ascend910b) only with build.sh --experimental, so CANN's built-in package keeps the
// TBE one (CANN 8.1.RC1 opp tbe/impl/dynamic/apply_adam_w.py, ascend910b config apply_adam_w.json).
// Its runtime block tiling (canndev ops/built-in/op_tiling/elewise_v3.cc CalcMultiCore and
// DoBlockTiling, public mirror dengguojie/vue-element-admin @ 62c5a7f2; ASSUMED unchanged since):
// one core below 2 x cores 32-byte blocks of output, else a core share of ceil(n / cores) rounded up
// to 128 elements (ELEWISE_REPEAT_NUMS) and ceil(n / share) cores; the cores are the AIVs (assumed).
int64_t tbe_elewise_cores(int64_t n, int ds, int64_t cores) {
  if (n < 32 / ds * cores * 2) return 1;
  return cdiv(n, cdiv(cdiv(n, cores), 128) * 128);
}

namespace {

// 910B's TBE ApplyAdamW (CANN 8.1.RC1 opp tbe/impl/dynamic/apply_adam_w.py apply_adam_w_compute) in
// the DSL's elewise schedule.  UB: the schedule's coexisting nodes (elewise_schedule.py
// _calc_storage_bound replayed on this graph: 6 at vdiv(m_out, denom) with m_out, var_t and the chain
// live, 7 with amsgrad's max_grad_norm input; + 1 for two or more inputs), of fp32 for fp32 and bf16
// (support_bfp16 casts bf16 up) and of fp16 for fp16 (every instruction below takes fp16 on 910B:
// Intrinsic_vdiv, vsqrt), the tiling tbe_elewise_tiling's.
// Its compute, instruction by instruction over the full shape: gt = vmuls(grad, +-1) (maximize only
// flips the constant: no extra instruction, make_adamw); m: vmul, vadds, vmul, vsub; v: vmul, vadds,
// vmul, vmul, vsub; var_t: vmuls, vmul, vadds, vmul; (amsgrad: vmax); vmuls, vdiv, vsqrt, vadd;
// vdiv, vmul, vadd: 21 instructions (22), with the broadcast scalars of b1, b2 and lr vector_dup'd
// (ASSUMED), fp16 in fp16 lanes without casts.  Costed so (issue 48 round 10) it scored worse on the
// inner split of the fit half (910B2 81% within 25%, mean |log| 0.162, against 88% / 0.140 with the
// model's 14 fp32 steps below): the fp16 record ran 0.57x (fp16 lanes halve its vector work, while
// 910B2's fp16 record costs 0.74x bf16's per element) and the fp32 pair spread 1.29 / 1.66x.  So the
// model keeps its recipe; the 910B2 records look like ~20 us fixed + a per-element cost, the fixed
// part with no source here.
void tbe_c220_adamw(VecKernel& k, int64_t n, bool amsgrad, const Platform& p) {
  tbe_elewise_tiling(k, n, amsgrad ? 8 : 7, k.dtype == "float16" ? 2 : 4, p);
}

// AdamW on var, m, v with grad (torch_npu.npu_apply_adam_w order; max_grad_norm, the fifth
// input, only with amsgrad): var, m and v are written back.  Per element, in fp32:
//   var *= 1 - lr wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   var -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)       (+ max(v_max, v) with amsgrad)
std::shared_ptr<OpModel> make_adamw(const OpDesc& op, const Platform& p) {
  need_float(op);
  static const char* kNames[] = {"var", "m", "v", "grad", "max_grad_norm"};
  const bool amsgrad = attr_flag(op, "amsgrad");
  const size_t want = amsgrad ? 5 : 4;
  const size_t given = std::count_if(op.inputs.begin(), op.inputs.end(), [](const auto& s) { return !s.empty(); });
  if (op.inputs.size() < 4 || op.inputs.size() > 5 || given != want)
    fail(op.kind + ": expected the shapes of var, m, v, grad" + (amsgrad ? ", max_grad_norm (amsgrad = 1)" : "") +
         ", got " + std::to_string(given));
  const auto& var = op.inputs[0];
  check_shape(var, op.kind + " var");
  for (size_t i = 1; i < want; ++i)
    if (op.inputs[i] != var)
      fail(op.kind + ": " + kNames[i] + " has shape " + shape_str(op.inputs[i]) + ", var " + shape_str(var) +
           " (AdamW's tensors must have one shape)");
  const int64_t n = numel(var);
  // var, m and v are written back; max_grad_norm is only read, amsgrad or not (CANN 8.1.RC1 opp
  // tbe/impl/dynamic/apply_adam_w.py apply_adam_w_compute returns [var, m, v]).
  const int in = int(want), out = 3;
  VecKernel k = streaming(op, p, n, in, out);
  std::vector<const char*> apis = {"Muls", "Muls", "Muls", "Add", "Mul", "Muls", "Muls", "Add",
                                   "Sqrt", "Muls", "Adds", "Div", "Muls", "Add"};
  if (attr_flag(op, "maximize") && !c220(p)) apis.push_back("Muls");  // -grad (910B: tbe_c220_adamw)
  if (amsgrad) apis.push_back("Add");                     // max(v_max, v): Add class
  add_fp32_steps(k.elem_prog, op.dtype, apis, in, out);
  k.temp_fp32 = 2;
  k.fixed_us = kAdamWSetupCycles / p.freq_mhz;
  k.flops = double(apis.size()) * double(n);
  if (c220(p)) tbe_c220_adamw(k, n, amsgrad, p);
  return make_vec_model(k, p);
}

// Stein's binary GCD per element pair, as CANN's kernel runs it (hicann/ops-math
// math/gcd/op_kernel/arch35/gcd_dag.h: per lane, strip the common factor of two, then loop
// {b >>= ctz(b); (a, b) = (min, max); b -= a} until b is 0; no division): per iteration a
// count-trailing-zeros and a shift (scalar-operand class) and a compare, two selects and a
// subtract (Add class), int64 as int32 pairs.  That kernel is SIMT (the 950 generation); the
// SIMD per-API costs stand in for its lanes, and 910B's kernel is ASSUMED to be the same loop.
// The step count is data dependent and a tile (or warp) loops until its slowest lane is done:
// binary GCD takes 0.706 lg(max) steps on average (Brent 1976; Knuth TAOCP 4.5.2), and we
// ASSUME the slowest lanes 30% more: 0.706 x 1.3 x (bits - 1), 28 for int32 (attribute
// "iterations" overrides it).  Not fitted: the calibration file has no Gcd record on its fit half.
std::shared_ptr<OpModel> make_gcd(const OpDesc& op, const Platform& p) {
  if (op.dtype != "int32" && op.dtype != "int64" && op.dtype != "int16")
    fail(op.kind + ": dtype " + op.dtype + " is not supported (int16, int32 or int64)");
  if (op.inputs.size() != 2) fail(op.kind + ": expected two input shapes (x1, x2), got " + std::to_string(op.inputs.size()));
  check_shape(op.inputs[0], op.kind + " x1");
  check_shape(op.inputs[1], op.kind + " x2");
  const auto out = broadcast(op.inputs[0], op.inputs[1], op.kind + " (x1 and x2)");
  check_fits(p, double(numel(out)), dtype_size(op.dtype), op.kind + " output " + shape_str(out));
  const int64_t n = numel(out);
  const int64_t bits = 8 * dtype_size(op.dtype) - 1;
  const int64_t iters = attr_int(op, "iterations", std::llround(0.706 * 1.3 * double(bits)));
  if (iters < 1 || iters > 128) fail(op.kind + ": iterations must be in [1, 128], got " + std::to_string(iters));
  VecKernel k = start_kernel(op, p, op.kind);
  k.units = n;
  k.in_streams = 0;
  for (const auto& s : op.inputs) {  // a broadcast operand small enough stays in UB
    if (numel(s) < n && double(numel(s)) * k.ds <= 16384) k.bcast_bytes += double(numel(s)) * k.ds;
    else { k.in_bytes += k.ds; k.in_streams += 1; }
  }
  k.out_bytes = k.ds;
  k.ub_buffers = k.in_streams + 1;
  k.temp_fp32 = 1;  // the shift of the common factor of two
  k.baseline_max_tile = true;
  const int passes = op.dtype == "int64" ? 2 : 1;
  const std::vector<const char*> step = {"Adds", "Adds", "Add", "Add", "Add", "Add"};
  for (int64_t i = 0; i < iters * passes; ++i)
    for (const char* a : step) k.elem_prog.push_back({vec_api_cost(a), true});
  k.unique_bytes = double(numel(op.inputs[0]) + numel(op.inputs[1]) + n) * k.ds;
  k.flops = double(n) * double(iters) * double(step.size());
  // 910B's Gcd is TBE's (CANN 8.1.RC1 opp tbe/impl/dynamic/gcd.py: tbe.vgcd under the elewise
  // schedule), whose UB accounting (elewise_schedule.py _calc_storage_bound) gives vgcd 3 more
  // nodes (24 for int64) beside x1, x2 and the result, and one more for the two inputs: 7 (28)
  // nodes of the input dtype.  Broadcast shapes take the broadcast schedule: not transcribed.
  if (c220(p) && numel(op.inputs[0]) == n && numel(op.inputs[1]) == n)
    tbe_elewise_tiling(k, n, op.dtype == "int64" ? 28 : 7, k.ds, p);
  return make_vec_model(k, p);
}

}  // namespace

std::shared_ptr<OpModel> make_optimizer_model(const OpDesc& op, const Platform& p) {
  if (op.kind == "ForeachAddcdivScalar") return make_addcdiv(op, p);
  if (op.kind == "ForeachNorm") return make_foreach_norm(op, p);
  if (op.kind == "ApplyAdamW") return make_adamw(op, p);
  if (op.kind == "Gcd") return make_gcd(op, p);
  fail("internal: no optimizer model for " + op.kind);
}

}  // namespace aoe::ascend::detail
