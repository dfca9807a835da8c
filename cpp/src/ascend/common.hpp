// Shared pieces of the Ascend cost model: dtypes, GM access charging, the
// vector-instruction cost table and small arithmetic helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "aoe_native/ascend/cost_model.hpp"

namespace aoe::ascend::detail {

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

// Bytes per element; throws for unknown names.
int dtype_size(const std::string& dtype);
// The dtype name with aliases resolved ("fp16" -> "float16"); throws listing valid names.
std::string canonical_dtype(const std::string& dtype);
// int8, uint8, bool, int16, int32, int64.
bool is_integer_dtype(const std::string& dtype);

// The 950 generation (arch35, told by its 256 KB L0C; C220/910B has 128 KB): CANN's kernels for it
// are the regbase Ascend C ones (op_kernel/arch35), 910B's the C220 Ascend C or TBE ones.
inline bool regbase(const Platform& p) { return p.split && int64_t(p.l0c) > 131072; }
// The C220 generation (910B, 910C: split cube/vector cores with a 128 KB L0C).
inline bool c220(const Platform& p) { return p.split && int64_t(p.l0c) == 131072; }

// ---- GM access charging ------------------------------------------------------
// MTE2 moves GM data in sectors (Platform::gm_sector bytes): a burst
// (contiguous run) shorter than a sector costs a whole sector, and a burst
// whose start is not aligned to the 512-byte GM granule touches one sector
// more.  With 256-byte sectors the extra sector makes a 32 B-aligned 512 B
// burst cost 768 B, i.e. 67% of the aligned rate, which is the "about 70%" of
// [A] SIMD算子性能优化/GM地址尽量512B对齐.md; the 256-byte default is
// calibrated on the published Matmul tuning case ([A]
// Matmul算子优化Tiling策略.md: MTE2 2452 us -> 808 us for a 2.67x traffic cut
// is 3.03x only if the 128-byte bursts of base [64,64,256] cost 256 bytes).
constexpr double kGranule = 512.0;  // [A] NPU架构版本2201.md / GM地址尽量512B对齐.md

// Charged bytes of one burst of `b` bytes starting every `step` bytes in rows
// of `pitch` bytes, in sectors of `sector` bytes (integer arithmetic: this is
// on the per-tiling hot path).
// Sectors of `bytes`: power-of-two sectors (every real one) shift instead of
// dividing, as the constant 256 did before it became a Platform field.
inline int64_t sector_count(int64_t bytes, int64_t S) {
  return (S & (S - 1)) == 0 ? (bytes + S - 1) >> __builtin_ctzll(uint64_t(S)) : (bytes + S - 1) / S;
}
inline double read_charge(int64_t b, int64_t pitch, int64_t step, int64_t sector) {
  constexpr int64_t G = int64_t(kGranule);
  const int64_t S = sector;
  int64_t sectors = sector_count(b, S);
  const bool aligned = pitch % G == 0 && (step % G == 0 || G % step == 0) && (b % G == 0 || G % b == 0 || b < S);
  if (!aligned && b >= S) sectors += 1;
  return double(sectors * S);
}
// Writes go to whole 512-byte L2 lines ([A] 基本架构.md: C220 line 512 B);
// the published case blames the 256-byte steps of 64x64 fp32 output blocks.
inline double write_charge(int64_t b, int64_t pitch) {
  constexpr int64_t G = int64_t(kGranule);
  int64_t lines = (b + G - 1) / G;
  if (pitch % G != 0 && b >= G) lines += 1;
  return double(lines * G);
}

// ---- vector instruction costs -------------------------------------------------
// Cycles of one vector API call over n elements: repeats * per_repeat + call,
// one repeat = 256 bytes (8 DataBlocks x 32 B, [A] 高维切分.md).  Per-repeat and
// per-call cycles are GE auto-fusion's fitted per-API costs ([G]
// ascir_api_perf_v1.cpp, table in docs/ascend_model.md §3d) rewritten per repeat
// (k_fp16 * 128 elements); the fp32 entries there (Add, WholeReduceSum) are
// the same cost per repeat, which is why repeats are the unit.
struct VecCost {
  double per_repeat;
  double per_call;
  int temps;  // tile-sized temporaries the API needs (Ascend C's Sigmoid/Tanh/Erf take a sharedTmpBuffer)
};

// Cost of one named elementwise/reduce API (canonical names as in GE:
// Add, Mul, Adds, Exp, ...).  Composite ONNX ops are expanded by vec_program().
VecCost vec_api_cost(const std::string& api);

struct VecStep {
  VecCost cost;
  bool fp32;   // runs on fp32 data (repeats hold 64 elements)
};

// Expands one ONNX elementwise op into vector API calls on `dtype` data.
// Throws for ops that are not elementwise.  Returns the number of tensor
// operands it takes (1 unary, 2 binary: OpEntry::operands).
int vec_program(const std::string& op, const std::string& dtype, std::vector<VecStep>& out);
// Canonical elementwise names of op_table() (FusedElementwise and aliases excluded).
bool is_elementwise(const std::string& op);
std::vector<std::string> elementwise_ops();  // sorted

// The vector program of the elementwise ops fused around an operator, listed
// in attrs[attr] ("epilogue", "prologue"): "BiasAdd" adds a small broadcast
// operand, BatchNormalization is a folded per-channel scale and shift, other
// binary ops read one operand the size of the output (out_size bytes per
// element, added to extra_per_elem).  ReLU and the bias ride on FixPipe where
// it exists (fixpipe).
std::vector<VecStep> fused_program(const OpDesc& op, const std::string& attr, const std::string& dtype,
                                   double& extra_per_elem, bool fixpipe, int out_size);

inline double vec_cycles(const std::vector<VecStep>& prog, double elems) {
  double c = 0;
  for (const auto& s : prog) c += std::ceil(elems / (s.fp32 ? 64.0 : 128.0)) * s.cost.per_repeat + s.cost.per_call;
  return c;
}

// ---- the vector kernel pattern (vector.cpp) ------------------------------------
// 910B's GM -> UB copies (norm_quant.cpp, vector.cpp), [D] from the published A2 figures of
// shared/reference/ascend_measured_cases.md §5.8 (half [12288, 12288], 301.99 MB, 48 vector cores; task times at 1.8 GHz):
// - rows not 32-byte aligned (N = 12287, [64, 1024] tiles) took 275.3 us: 495,500 cycles for the
//   196,600 32-byte blocks a core moves, 2.5 cycles a block (vs 215.82 us aligned);
// - [1, 64] tiles (a 128-byte copy each) took 564.84 us against 215.82 with 2 KB rows: 628,200 more
//   cycles over 49,150 copies a core, 12.8 cycles a copy's start (GE's ATT store call: 12.09).
constexpr double kUnalignedBlockCycles = 2.5;
constexpr double kBurstCycles = 12.8;
// One vector -> scalar wait (SetFlag / WaitFlag V_S, then GetValue) of an Ascend C kernel on 910B:
// half of the V_S + S_V round trip that norm_quant.cpp's kRowScalarNorm (= 2 x this) charges, whose
// 240 cycles were chosen on the fit half.
// [F] checked on the fit half (case id % 4 == 0) of cann_bench_calibration.json only: 910B2's nine
// DynamicQuant and DequantSwigluQuant records, whose per-row wait it is, score a mean |log| of 0.145 /
// 0.112 / 0.098 / 0.102 / 0.122 at 0 / 80 / 120 / 160 / 240 cycles.
constexpr double kVecScalarWait = 120.0;

// Kernels of the Ascend C vector pattern are described by a VecKernel and modelled by one
// class (vector.cpp): the LLM operators' files build their kernels with these.
// The work as the model sees it: `units` independent rows of `unit_elems`
// elements (unit_elems = 1 for plain elementwise work).
struct VecKernel {
  std::string kind;
  std::string dtype;                // of the streamed data (keys vec_op_costs)
  int ds = 2;                       // bytes per element of the streamed data
  int64_t units = 1, unit_elems = 1;
  double in_bytes = 0;              // GM bytes read per element per sweep
  double out_bytes = 0;             // GM bytes written per element
  double out_bytes_per_unit = 0;    // GM bytes written per unit (reductions)
  double bcast_bytes = 0;           // small operands read once per core, kept in UB
  int in_streams = 1;               // GM->UB copies per tile
  std::vector<VecStep> elem_prog;   // per element
  std::vector<VecStep> row_prog;    // per unit (reduce APIs: repeats per row)
  int sweeps_if_split = 1;          // GM passes when a unit does not fit one tile
  // Units that do not fit a tile (opt-in, 910B's TBE Softmax, vector.cpp): split_ws_reads of those
  // passes read a GM workspace of split_ws_bytes an element, written once, instead of the input.
  double split_ws_bytes = 0;
  int split_ws_reads = 0;
  double run_in = 0, run_out = 0;   // contiguous run in GM (0: the whole tile)
  double pitch_in = 0;              // GM bytes from one input run's row to the next (0: runs back to back)
  int transpose_side = 0;           // >0: runs limited by the square tile side
  int ub_buffers = 2;               // tile-sized queue buffers (x bufferNum)
  int temp_fp32 = 0;                // tile-sized fp32 temporaries
  bool split_rows = false;          // cores may split the rows (splitR)
  int syncs = 1;                    // core syncs when rows are split (one per row statistic)
  double unique_bytes = 0;          // for the roofline
  double flops = 0;
  // CANN's default for kernels whose tiling fills UB (Foreach*, ApplyAdamW): the largest
  // double-buffered tile UB holds, not the Ascend C sample's block / 16.
  bool baseline_max_tile = false;
  double fixed_us = 0;              // a phase outside the tiled loop (a sort before a gather), added as is
  double unit_cycles = 0;           // per unit, not overlapped: waits for a unit's dependent gathers
  // Row kernels that loop over the rows of a UB tile (norm_quant.cpp): APIs called once per
  // row (a per-row scalar operand: x * rstd, x * 127 / max), and the scalar cycles per row
  // of reading a row statistic back from UB (a vector -> scalar pipe wait: latency, in cycles as
  // they are, not scaled by Platform::vec_cost_scale as the vector APIs are).
  std::vector<VecStep> row_loop_prog;
  double row_scalar_cycles = 0;
  int64_t baseline_tile = 0;        // >0: the operator's own default UB tile (CANN's tiling rule)
  int baseline_buffer_num = 2;      // with baseline_tile: the operator's own bufferNum (1: its queues do not overlap)
  // With baseline_tile, opt-in (norm_quant.cpp's 910B GroupNorm: a group or a sample a copy):
  // the tile is kept under the search's smallest, not packed with the next unit's elements.
  bool baseline_tile_exact = false;
  // Single-buffered (bufferNum 1) kernels whose output queue is apart from the input's: a tile's
  // store runs beside the next tile's load, the load and the vector work in turn (norm_quant.cpp).
  bool store_beside_load = false;
  int64_t baseline_block_dim = 0;   // >0: the operator's own default core count, when below min(cores, units)
  // Each row's row_prog reductions end in a scalar wait (Platform::vec_row_cycles); false for
  // kernels that reduce a tile of rows per API call (moe_routing.cpp's MoeGatingTopKSoftmax).
  bool row_waits = true;
  // >= 0: this kernel's wait per row reduction instead of Platform::vec_row_cycles, which is fitted on
  // the calibrated families (on 910B, TBE's Softmax, a wait per reduce call).  910B's Ascend C row
  // kernels wait for the scalar unit per row (kVecScalarWait; norm_quant.cpp row_kernel).
  double row_wait_cycles = -1.0;
  double row_wait(const Platform& p) const { return row_wait_cycles >= 0 ? row_wait_cycles : p.vec_row_cycles; }
  // An Ascend C kernel's row waits: kVecScalarWait on 910B; the platform's fitted vec_row_cycles elsewhere.
  void ascend_c_row_waits(const Platform& p) {
    if (c220(p)) row_wait_cycles = kVecScalarWait;
  }
  // Rows one reduce call (and its wait) covers, opt-in (910B's TBE Softmax, vector.cpp): a call's
  // repeats step from row to row in a UB tile.  1: a call and a wait per row.
  int64_t rows_per_reduce_call = 1;
  // Copy-only kernels (moe_routing.cpp's MoeReRouting on 910B), opt-in: a core's stores leave by
  // MTE3's own UB -> GM path beside its loads ([R] the platform ini rates ub_to_ddr apart from
  // ddr_rate) instead of sharing one GM port with them, and with no vector stage between a tile's
  // load and its store the double-buffered pipeline fills by one tile, not two.  A tile's load
  // and store, issue to done, take at least tile_round_trip cycles (0: no such floor).
  bool copy_only = false;
  double tile_round_trip = 0;
  // Vector cycles each tile pays beyond its programs' (opt-in: norm_quant.cpp's RmsNorm MERGE_N
  // isPerformance path, a Mul per 64-column block each behind a PipeBarrier), in cycles as they are.
  double tile_cycles = 0;
  // Copies that move every GM run as a transfer of its own (opt-in: norm_quant.cpp's SwiGlu on 910B,
  // DataCopyPad over rows that are not whole 32-byte blocks): MTE2 / MTE3 cycles per run of
  // run_in / run_out bytes, on top of its bytes, and on the core's GM port like them.
  double run_call_in = 0, run_call_out = 0;
  // Input runs whose GM rows are not whole 32-byte blocks (opt-in, norm_quant.cpp on 910B): MTE2 moves
  // them one 32-byte block per request, at least this many cycles a block (0: bytes at the GM rate).
  double unaligned_block_cycles = 0;
  // Broadcast operands every core reads from the same GM addresses at the same moment (opt-in,
  // norm_quant.cpp's 910B DequantSwigluQuant scales, loaded first thing by every core): their read
  // takes this many times as long as the same bytes of a core's own (1: no such conflict).
  double bcast_same_address = 1;
  // Broadcast operands the kernel loads a slice at a time beside each tile instead of keeping them
  // whole in UB (opt-in: norm_quant.cpp's 910B split-row norms, gamma): >0, UB holds
  // no copy of bcast_bytes (the slice's buffer is one of ub_buffers) and a core reads them from GM
  // again (from L2 after its first read) for every bcast_reload_units of its rows; 0, read once
  // per core and kept in UB.
  int64_t bcast_reload_units = 0;
  // Kernels that loop over their units one at a time (opt-in: moe_routing.cpp's MoeReRouting on
  // 910B, one copy loop per (rank, expert) block): a tile never holds two units, however small.
  bool unit_per_tile = false;
  // Units dealt to the cores in groups of this many while there are as many groups as cores (opt-in:
  // MoeReRouting on 910B gives a core whole ranks, E blocks each); 1: units dealt one by one.
  int64_t unit_group = 1;
  // Units dealt to the cores in whole UB tiles (opt-in: norm_quant.cpp's DynamicQuant special template
  // on 910B, SetSpecialTilingForDs: a head core takes ceil(passes / blockDim) full passes of tileLen /
  // row rows, the last core what is left): a core's rows are a multiple of a tile's, not ceil(rows /
  // blockDim), and only the cores that get a pass run.  Off: rows spread evenly.  (unit_group with
  // the group a tile's rows, but dealt however few the groups, the cores past the last one idle.)
  bool whole_passes_per_core = false;
  // Tensor-list kernels (opt-in: optimizer.cpp's Foreach* on 910B; units = the list's elements,
  // unit_elems 1; the list's split, vector.cpp list_shares, then replaces unit_group's and
  // whole_passes_per_core's dealing): the elements of each tensor, in list order.  The cores take even shares of the
  // list's 32-byte blocks, a share crossing tensor boundaries, and loop over their part of each
  // tensor on its own (a tile never holds two tensors), so a core's tiles are the sum over its
  // parts.  list_block_align: every tensor starts on a block of its own (the share counts its
  // blocks rounded up).  part_cycles: the scalar cycles of each part after a core's first (its
  // addresses, its partial result), not overlapped.
  std::vector<int64_t> list_elems;
  bool list_block_align = false;
  double part_cycles = 0;
};

// The cores CANN's foreach tilings split VecKernel::list_elems over, of `cores`: no more than the
// list's 32-byte blocks (each tensor's rounded up with list_block_align; vector.cpp list_shares).
int64_t list_cores(const VecKernel& k, int64_t cores);
// The cores of 910B's TBE element-wise kernels for n output elements of ds bytes (optimizer.cpp:
// canndev op_tiling/elewise_v3.cc CalcMultiCore and DoBlockTiling): a core share of ceil(n / cores)
// rounded up to 128 elements, one core below 2 x cores 32-byte blocks.
int64_t tbe_elewise_cores(int64_t n, int ds, int64_t cores);
// 910B's TBE element-wise tiling of `k` over n elements whose DSL schedule keeps `nodes` UB nodes of
// node_bytes each (vector.cpp): its default cores, 128-element core blocks, UB factor and buffering.
void tbe_elewise_tiling(VecKernel& k, int64_t n, int nodes, int node_bytes, const Platform& p);
// A kernel named `kind` streaming op.dtype data; throws when the SoC's vector unit lacks the dtype.
VecKernel start_kernel(const OpDesc& op, const Platform& p, const std::string& kind);
// The Ascend C vector pattern's model (blockDim, tileLen, bufferNum[, splitR][, vcBlocks]) of `k`.
std::shared_ptr<OpModel> make_vec_model(const VecKernel& k, const Platform& p);
// How a tile of `k` fills UB: tileLen x (per_buffer x bufferNum + fixed) <= ub, the broadcast operands
// resident beside it (ub <= 0: not even those fit).  The search's UB restriction, and the bound an
// operator's own default tiling is held to.
struct UbFit {
  int64_t ub, per_buffer, fixed;  // bytes left for tiles; bytes a tile element takes per buffer and in fp32 work tiles
  int64_t tile(int buffer_num) const { return std::max<int64_t>(0, ub) / (per_buffer * buffer_num + fixed); }
};
UbFit ub_fit(const VecKernel& k, const Platform& p);

// ---- start costs (GE ATT, [G] perf_param_v1.cpp / pipe_perf_expr.cpp) ---------
constexpr double kOpHead = 300.0;         // per kernel
constexpr double kMte3Head = 497.36;
constexpr double kVecHead = 37.37;
inline double mte2_head(int block_dim, bool big) {
  return big ? 32.72 * block_dim + 1575.03 : 15.89 * block_dim + 882.09;
}
constexpr double kLoadCall = 27.01;       // GM->UB per call
constexpr double kStoreCall = 12.09;      // UB->GM per call
// GE: transfers >= 25000 B run at (9.9074 + 15.896/bd) B/cycle, smaller ones
// at (7.9052 + 7.31/bd); we keep the ratio as a small-transfer efficiency.
inline double small_transfer_eff(double bytes, int bd) {
  if (bytes >= 25000) return 1.0;
  return (7.9052 + 7.31 / bd) / (9.9074 + 15.896 / bd);
}

// ---- validation ------------------------------------------------------------------
[[noreturn]] inline void fail(const std::string& msg) { throw std::invalid_argument(msg); }
std::string shape_str(const std::vector<int64_t>& s);
void check_shape(const std::vector<int64_t>& s, const std::string& what);
// Numpy-style broadcast; throws naming both shapes when incompatible.
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& op);
// Elements of a shape; throws when the product leaves int64.
int64_t numel(const std::vector<int64_t>& s);

// ---- input limits ------------------------------------------------------------------
// An operator description may come from a hostile model file or request, so
// its size is bounded before any work (make_op_model checks them all):
constexpr size_t kMaxInputs = 4096;       // input shapes of one operator
constexpr size_t kMaxRank = 32;           // dimensions of a shape (exporters emit at most 8)
constexpr size_t kMaxAttrValues = 4096;   // values of one attribute
// Integer attributes (strides, pads, axes, group...) and tiling values are
// int32 fields in Ascend's operator prototypes and TCubeTiling ([A] TCubeTiling).
constexpr int64_t kMaxInt32 = 2147483647;
// Tensors must fit the device memory (Platform::hbm_bytes); when it is unknown,
// this bound (1 PiB, beyond any device) keeps the model's int64 arithmetic exact.
constexpr double kUnknownMemoryBytes = 1125899906842624.0;
// Pooling windows: the model costs one vector call per window element.
constexpr int64_t kMaxPoolWindow = 65536;

void check_op_limits(const OpDesc& op, const Platform& p);
// Throws when `elements` elements of `elem_size` bytes exceed the device memory.
void check_fits(const Platform& p, double elements, int elem_size, const std::string& what);
// a * b, throwing (naming `what`) when it leaves int64.
int64_t mul_or_fail(int64_t a, int64_t b, const std::string& what);

// Ints of an attribute or a default.
std::vector<int64_t> attr_ints(const OpDesc& op, const std::string& name, std::vector<int64_t> dflt);
int64_t attr_int(const OpDesc& op, const std::string& name, int64_t dflt);
bool attr_flag(const OpDesc& op, const std::string& name);  // 0 (also when absent) or 1; else an error
std::vector<std::string> attr_strs(const OpDesc& op, const std::string& name);
double attr_real(const OpDesc& op, const std::string& name, double dflt);  // a float attribute, or an integer one

// Candidate core counts: 1, 2, 4, ... and every multiple of `step` up to n, and n.
std::vector<int64_t> core_counts(int64_t n, int64_t max_useful);
std::vector<int64_t> pow2_range(int64_t lo, int64_t hi);
// A knob's candidate values, kept sorted, with `v` among them (a default the ladder of values
// lacks); returns v.
int64_t add_value(std::vector<int64_t>& values, int64_t v);

std::shared_ptr<OpModel> make_matmul_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_conv_model(const OpDesc& op, const Platform& p);

// ---- grouped and quantised matmuls (qmm49: cube.cpp, grouped_quant_matmul.cpp) ----------------
// What a quantised matmul adds to the MatMul it runs (a MatMul OpDesc, cube.cpp's model).
struct CubeQuant {
  double weight_bytes = 0;         // GM bytes per B element when B is stored narrower (int8 1, int4 0.5); 0: as read
  std::vector<VecStep> antiquant;  // vector program per B element before the cube reads it
  double antiquant_extra = 0;      // bytes of scales/offsets read per B element beside it
  bool workspace = false;          // the antiquantised B goes AIV -> GM workspace -> AIC (no UB -> L1 path)
  bool rounds = false;             // ... in rounds of baseN columns with barriers (not block by block)
  // ... each round's slab antiquantised once by all the AIVs in tiles of vec_tile_k x vec_tile_n
  // (0: each core converts the B copies it reads).
  int64_t vec_tile_k = 0, vec_tile_n = 0;
  // The kernel is C220 WeightQuantBatchMatmul's custom kernel, which hands over in rounds with
  // vec_tile tiles (above) and runs all of K on each core: its default tiling never splits K.
  bool wqbmm_custom = false;
  // C220 WeightQuantBatchMatmul's MSD kernel: an int8 GEMM of the activations' two int8 slices
  // ([2M, K]) by the int8 weight; `dequant` then runs after the core's GEMM, not block by block.
  // msd_k_blocks: the K blocks it splits K into (1: none); msd_task_n: the N of one task (0: N).
  int64_t msd_k_blocks = 0, msd_task_n = 0;
  // Per-group MSD (MsdGroup, and MSD's per-group split-K): the GEMM's int32 partials of each group
  // of msd_group along K go out and are dequantised on their own (0: one pass per core's K);
  // msd_single_n: the MsdGroup template's N per core, K split over the cores in msd_k_blocks (0: MSD's split).
  int64_t msd_group = 0, msd_single_n = 0;
  std::vector<VecStep> dequant;    // vector program per output element (dequant not on FixPipe)
  double dequant_extra = 0;        // bytes read per output element beside the output tile
  double extra_bytes = 0;          // small operands read once (scales, offsets)
  int fix_out_size = 0;            // bytes per element FixPipe writes out (0: the output dtype's)
  // C220 QuantBatchMatmulV3's basic template (grouped_quant_matmul.cpp decides when CANN takes it):
  // 0 not it, 1 with the dequant on FixPipe (scale in L1), 2 with the dequant on the vector cores.
  int qbmm_basic = 0;
  // With qbmm_basic 2: what sizes the dequant's UB tile (qbmm_ub_rows), and the steps its kernel calls
  // once per row of a UB pass (CalBiasAdd's Add of a bf16/fp16/fp32 bias), not once per pass.
  struct QbmmUb {
    bool per_tensor = false, pertoken = false;
    int scale_size = 4, bias_size = 0;  // bytes; bias_size 0: no bias or an int32 one (bias table)
  } qbmm_ub;
  std::vector<VecStep> dequant_row_steps;
};
// The rows of one UB pass of C220 QuantBatchMatmulV3's vector dequant for base block bm x bn
// (CalcUbTiling; grouped_quant_matmul.cpp).
int64_t qbmm_ub_rows(const CubeQuant::QbmmUb& u, int64_t bm, int64_t bn, int64_t M, int64_t ub_bytes);
// The cube model of MatMul `op` with `quant` applied, reporting `kind`.
std::shared_ptr<OpModel> make_quant_cube_model(const OpDesc& op, const Platform& p, const CubeQuant& quant,
                                               const std::string& kind);
// The fixed start of a cube kernel on `cores` cores (us): what one launch pays once.
double cube_head_us(const Platform& p, int cores);
// GroupedMatmul, WeightQuantBatchMatmul, QuantBatchMatmulV3 (grouped_quant_matmul.cpp).
std::shared_ptr<OpModel> make_grouped_matmul_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_weight_quant_matmul_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_quant_matmul_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_elementwise_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_rows_model(const OpDesc& op, const Platform& p);  // reduce/softmax/layernorm
std::shared_ptr<OpModel> make_transpose_model(const OpDesc& op, const Platform& p);
std::shared_ptr<OpModel> make_pool_model(const OpDesc& op, const Platform& p);  // MaxPool, AveragePool, LRN
std::shared_ptr<OpModel> make_movement_model(const OpDesc& op, const Platform& p);  // Concat, Slice, Gather, Resize...
// attention.cpp: FusedInferAttentionScore (PromptFlashAttention, IncreFlashAttention), SparseFlashAttention, MlaProlog.
std::shared_ptr<OpModel> make_attention_model(const OpDesc& op, const Platform& p);
// ---- LLM operators (issue 49) -----------------------------------------------------------
// optimizer.cpp: ForeachAddcdivScalar, ForeachNorm, ApplyAdamW (multi-tensor elementwise
// kernels) and Gcd (an integer elementwise loop).
std::shared_ptr<OpModel> make_optimizer_model(const OpDesc& op, const Platform& p);
// moe_routing.cpp: MoeGatingTopKSoftmax, MoeInitRouting, MoeReRouting, MoeFinalizeRouting and
// MhcSinkhorn (the doubly stochastic mixing matrix of hyper-connections).
std::shared_ptr<OpModel> make_routing_model(const OpDesc& op, const Platform& p);
// LLM vector kernels (norm_quant.cpp): RmsNorm, AddRmsNorm, AddRmsNormDynamicQuant, GroupNorm,
// DynamicQuant, SwiGlu, DequantSwigluQuant, ApplyRotaryPosEmb.
std::shared_ptr<OpModel> make_norm_quant_model(const OpDesc& op, const Platform& p);

}  // namespace aoe::ascend::detail
