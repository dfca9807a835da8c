// Cube operators: MatMul / Gemm / BatchMatMul and Conv (via img2col, which the
// hardware does with load3d from L1).  Tiling knobs are TCubeTiling's
// ([A] Matmul-Tiling类/TCubeTiling结构体.md, docs/ascend_model.md §2.1).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "aoe_native/ascend/matmul_v3.hpp"
#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

// Fitted constants are Platform fields (aoe_native.calibrate refits them):
// mte2_eff, MTE2's rate on fractal-sized, 512 B-aligned copies that hit L2 as
// a fraction of l2_rate, defaults to 0.84, hand-fitted on the published Matmul
// case ([A] Matmul算子优化Tiling策略.md: 100.7 MB per core in 591 us at 1.8 GHz
// with large packets; 2452 us and 808 us for the other two steps agree within
// 3% with the same factor); mte2_copy_cycles, the cost of one GM->L1 copy,
// defaults to 210 cycles ([C] GemmCycleModel).
constexpr double kMte1Start = 26;    // cycles per L1->L0 load ([C] GemmCycleModel)
constexpr double kFixStart = 26;     // per L0C block written out (same issue cost assumed)
// Cube/vector fusion through a GM workspace (split SoCs): the AIVs consume
// baseM x baseN tiles the AIC wrote to `workspace_slots` GM buffers.  The
// hand-over exposes kCvExposure / slots x short x (short / long) of the
// shorter side: little when one side dominates, most when they balance.
// Fitted on ascend_measured_cases.md §5.6 A2 scenario 1 (mix 1:2, 2 slots:
// task 353.887, aiv_vec 235.871, aic_mac 192.612).  Predicted: §5.6 scenario 2
// (4 slots) 295.5 vs 299.3 (-1.3%), scenario 0 (mix 1:1) 530.4 vs 583.5 (-9.1%),
// §5.5 MatMul+GELU fused 4241.9 vs 4236.9 (+0.1%, from its per-pipe times), §2
// GroupedMatmul 4 slots 133.2 vs 131.8 (+1.1%, from its 1:1 and 1:2 steps).
constexpr double kCvExposure = 1.5006;
// The same hand-over when the vector cores feed the cube (WeightQuantBatchMatmul's antiquant
// through its workspace slots): fitted on the 9 fit-half WeightQuantBatchMatmul records of
// cann_bench_calibration.json (910B2, 950PR), least squares of log(predicted / measured) over
// 0..kCvExposure: 0, i.e. the weight stream hides the hand-over (910B2's 4 alone: 0.27).  Since
// issue 48 round 3 the 910B2 records run CANN's C220 kernels instead (the MSD template, and the
// custom kernel's rounds: CubeQuant::rounds), so it prices 950's hand-over only.
constexpr double kCvPrologueExposure = 0.0;
// ND2NZ inside MTE2 from ND rows whose GM pitch is not a multiple of 32 B
// moves one 32 B C0 block per request: cycles per block, from
// ascend_measured_cases.md §5.8 (A2, half [12288, 12287] GM->L1 on 24 cores:
// task 438.76 us against 230.24 with N = 12288, whose MTE2 is 214.52; so
// about 423 us of MTE2 for the 393,216 blocks of a core, at 1.85 GHz).
constexpr double kNd2nzBlockCycles = 2.0;

// splitK, unitFlag and kReorderLoad came later: their defaults (1, 0, 0;
// TilingSpec::added_defaults) give the model without them, so tilings stored
// before still read the same (kReorderLoad = 0 pays the same-address term,
// as the Matmul API's default does).
// dispatch, usedCoreNum, the L2 tiling and tilingEnable (issue 47) came later
// still: dispatch 0 (static split), all cores, one neutral L2 tile and the
// base template are the model before them.  Their names are MatMulV3's
// knowledge fields (python/aoe_native/ascend/matmul_v3.py maps the two).
// dispatch and tilingEnable come first: the space is enumerated depth-first
// in this order, and the rules of each dispatch mode prune as soon as the
// block sizes are bound.
enum P { kDispatch, kTE, kSM, kSN, kBM, kBN, kBK, kStepM, kStepN, kStepKa, kStepKb, kDepthA1, kDepthB1, kDbA, kDbB,
         kDbC, kOrder, kSplitK, kUnitFlag, kReorder, kUsed, kL2MCnt, kL2NCnt, kL2MBlk, kL2NBlk, kL2Order, kNP };
const char* const kNames[kNP] = {"dispatch", "tilingEnable", "singleCoreM", "singleCoreN", "baseM", "baseN", "baseK",
                                 "stepM", "stepN", "stepKa", "stepKb", "depthA1", "depthB1", "dbL0A", "dbL0B",
                                 "dbL0C", "iterateOrder", "splitK", "unitFlag", "kReorderLoad", "usedCoreNum",
                                 "l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock", "l2IterateOrder"};

// A GEMM C[M,N] = A[M,K] B[K,N] repeated `batch` times, plus how its
// operands sit in GM.
struct CubeProblem {
  std::string kind;
  std::string dtype;  // input dtype (canonical name)
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int in_size = 2, out_size = 2;
  int k0 = 16;  // K elements per cube cycle fractal (16 fp16/bf16, 8 fp32, 32 int8: DtypeMKN)
  bool trans_a = false, trans_b = false, bias = false;
  bool conv = false;
  // Conv geometry for the A operand (feature map in NC1HWC0, [A] 数据排布格式.md).
  int64_t ho = 1, wo = 1, wi = 1, sh = 1, sw = 1, kh_eff = 1, kw_eff = 1, cin_pad = 0, hi = 1;
  double flops = 0;                // useful FLOPs (no padding)
  double a_bytes = 0, b_bytes = 0, c_bytes = 0, extra_bytes = 0;  // unique GM bytes, whole op
  std::vector<VecStep> epilogue;   // vector work per output element
  double epi_extra_per_elem = 0;   // bytes read per output element by binary epilogue ops
  int epi_temps = 0;
  // Split policy (the subgraph tuner's knobs, attributes of the op): AIVs per
  // AIC running the epilogue (0: all of them), GM workspace slots between cube
  // and vector, and whether a last partial wave of core tasks is re-split
  // non-uniformly over all cores (AOE's --Fnonhomo_split).
  int mix_ratio = 0, slots = 2;
  bool nonuniform = false;
  // Ops fused after the GEMM (ReLU on FixPipe included): a K split would apply them to partial sums.
  bool fused_after = false;
  // A quantised matmul's additions (make_quant_cube_model; none for a MatMul or Conv).  Its weight_bytes,
  // dequant, dequant_extra and extra_bytes are folded into b_gm_scale, epilogue, epi_extra_per_elem
  // and extra_bytes, which fused epilogues share; the rest is read from here.
  CubeQuant quant;
  double b_gm_scale = 1;  // B's GM bytes per element over in_size (quant.weight_bytes / in_size; 1: as read)
  bool v3_kernel = true;     // CANN runs it as MatMulV3 (its default tiling is then MatMulV3's)
  bool grouped = false;      // a GroupedMatmul group: its kernel deals blocks its own way
};

// ---- one estimate's steps (CubeModel::evaluate), and what each hands on ------------

// The critical core's task under a tiling: its share of the GEMM, its base
// blocks, and how many times it loads each operand into L1.
struct CubeTask {
  int64_t mB, nB;            // core tasks along M and N
  int64_t split, Kc, tasks;  // K slices, the K of one, the op's tasks
  int64_t ncores, cores, waves;
  int64_t tm, tn, Mt, Nt;    // the task's M and N, fractal-padded in Mt, Nt
  int64_t bM, bN, bK, mIter, nIter, kIter;
  int64_t mL1, nL1, kA, kB, mOut, nOut;  // an L1 copy's rows and K; copies along M and N
  int64_t a_loads, b_loads;  // full loads of the task's A (B)
};

// C220 MatMulV3's staggered dealing of the blocks of an L2 tile (CubeModel::stagger).
struct CubeStagger {
  bool on;
  int64_t mc, nc;              // the L2 tile's blocks along M and N
  int64_t share_a, share_b;    // cores of a wave sharing an A row block (a B column block)
};

// The task's GM -> L1 copies: bytes charged, where they are served, MTE2's cycles.
struct CubeReads {
  double a_one, b_one;  // bytes charged by one load of A (B)
  double a_ch, b_ch;    // ... by all the task's loads
  double a_copies_per_load, b_copies_per_load, a_copies, b_copies;
  double chip_ch, hbm_read;  // the op's bytes charged, and those read from HBM
  double h_a, h_b;           // share of the re-reads of A (B) that hit L2
  double mte2_a, mte2_b;     // MTE2 cycles of the task's A (B)
  double first_a = 0, first_b = 0;  // share of the tasks whose first copy of A (B) misses L2
  double bw_share = 1;              // of MTE2's time, the share that is bandwidth, not latency
};

// The task's cycles on the other pipes.
struct CubePipes {
  double Kt;              // K of the task, fractal-padded
  double mte1_a, mte1_b, cube, fix;
  int64_t group_passes;   // per-group MSD's passes over K (1: none)
  int64_t kchunks;        // single-core split-K's chunks of K (1: none)
  double out_elems;       // of the task's C
  double vec = 0, mte3 = 0, vec_mem = 0;  // epilogue
  double vec_pre = 0, vec_pre_mem = 0;    // weight antiquant
};

// How the pipes overlap in the task (CubeModel::pipeline).
struct CubeFlow {
  double mid, exposed;            // MTE1, MMADs and write-out; MTE2 not double-buffered
  double blocks;                  // base blocks of the task
  double compute_path, mte2_path;
  double tail, scalar;
};

// The op on the chip (CubeModel::chip): times in us, bytes of the whole op.
struct CubeChip {
  double head_us, hbm_us, l2_us, time;
  double chip_write, chip_extra;
};

class CubeModel : public OpModel {
 public:
  CubeModel(const CubeProblem& q, const Platform& p) : q_(q), p_(p) {
    kind_ = q.kind;
    Kp_ = align_up(q.K, q.k0);
    const double f = p.freq_mhz;
    peak_flops_per_us_ = double(p.cube_cores) * 16 * 16 * q.k0 * 2 * f;
    const double mem_bytes = q.a_bytes + q.b_bytes + q.c_bytes + q.extra_bytes;
    hbm_Bpus_ = p.hbm_gbps * 1e3;
    l2_Bpus_ = (p.l2_gbps > 0 ? p.l2_gbps * 1e3 : p.cube_cores * p.l2_rate * f);
    roofline_us_ = std::max(q.flops / peak_flops_per_us_, mem_bytes / hbm_Bpus_);
    vec_per_core_ = p.split ? double(p.vector_cores) / p.cube_cores : 1.0;
    if (q.mix_ratio > 0) vec_per_core_ = q.mix_ratio;
    inv_sector_ = 1.0 / double(p.gm_sector);
    build_spec();
    finish_spec();
  }

  double evaluate(const int64_t* t, Breakdown* out) const override;
  bool holds_all(const int64_t* t) const override;
  bool holds_round_robin(const int64_t* t, int64_t mBlocks, int64_t nBlocks) const;

 private:
  void build_spec();
  // build_spec's steps, in its order.
  void build_values();        // the knobs' values, their defaults for older tilings, and lim_
  void build_restrictions();  // the restrictions, from lim_ (holds_all checks the same natively)
  void build_pruning();
  std::string maximal_splits() const;  // build_pruning's rule on the multi-core splits
  void build_ascendc_baseline();       // ascendc_baseline_
  // MatMulV3's default tiling as this model's knobs, when CANN runs MatMulV3
  // (A2/A3-class SoCs); sets `kind` to the baseline's label.
  std::optional<std::vector<int64_t>> v3_baseline(std::string& kind) const;
  std::vector<int64_t> asw_baseline() const;  // 950's (DAV_3510) MatMulV3 template
  std::vector<int64_t> wqbmm_as_baseline() const;  // 950's WeightQuantBatchMatmul adaptive-split template
  std::vector<int64_t> msd_baseline() const;       // C220's WeightQuantBatchMatmul MSD template
  std::vector<int64_t> msd_group_baseline() const; // ... and its MsdGroup template
  std::vector<int64_t> qbmm_basic_baseline() const;  // C220's QuantBatchMatmulV3 basic template
  // Value lists of the round-robin (dispatch 1) part of the space, around `base`.
  void add_round_robin_values(const std::vector<int64_t>& base);
  void add_round_robin_rules(const std::vector<int64_t>& base);
  std::vector<int64_t> ascendc_baseline_;  // the Ascend C API-style default (Conv's, and the fallback)
  // The constants of the restrictions, shared by their text (build_spec) and
  // their native check (holds_all).
  struct Limits {
    int64_t M, N, K, cores, ds, kq, l0a, l0b, l0c, l1, bt;
    bool bias_table, k_split;  // k_split: splitK > 1 allowed (no Conv, no epilogue on partial sums)
    bool reorder;              // kReorderLoad allowed (Matmul, on a SoC with a same-address factor)
  } lim_{};
  // Charged bytes of one full read of A's tm x Kc (B's Kc x tn), Kc the K of one core.
  double a_read_charge(int64_t tm, int64_t mL1, int64_t kA, int64_t Kc) const;
  double b_read_charge(int64_t tn, int64_t nL1, int64_t kB, int64_t Kc) const;
  // Share of an operand's copies that touch a GM sector no earlier copy of
  // the same load touched (the others find it in L2).
  // (Floating point, the sector a power of two: it runs twice per estimate, and
  // integer divisions there halved estimate_batch's rate.)
  double new_sector_share(bool k_rows, int64_t t, int64_t tL1, int64_t Kc, int64_t kL1, double copies,
                          int64_t pitch_elems) const;
  double sectors_touched(double rows, double row_bytes, double pitch) const;
  // Round-robin dispatch: the A and B bytes read from HBM, given the L2 tiles.
  double l2_tile_reads(const int64_t* t, double chip_reads) const;
  // evaluate()'s steps, in its order (the structs above say what each hands on).
  CubeTask task(const int64_t* t) const;
  CubeStagger stagger(const int64_t* t, const CubeTask& k) const;
  CubeReads reads(const int64_t* t, const CubeTask& k) const;
  void add_miss_latency(const CubeTask& k, const CubeStagger& st, CubeReads& r) const;
  void add_nd2nz_blocks(const CubeTask& k, CubeReads& r) const;
  void add_same_address(const int64_t* t, const CubeTask& k, const CubeStagger& st, CubeReads& r) const;
  CubePipes core_pipes(const int64_t* t, const CubeTask& k) const;
  void add_epilogue(const CubeTask& k, CubePipes& c) const;
  void add_antiquant(const CubeTask& k, const CubeReads& r, CubePipes& c) const;
  void add_custom_antiquant(const CubeTask& k, CubePipes& c) const;
  CubeFlow pipeline(const int64_t* t, const CubeTask& k, const CubeReads& r, const CubePipes& c) const;
  double handover(const CubeTask& k, const CubePipes& c, double cube_side, double vec_side) const;
  CubeChip chip(const CubeTask& k, const CubeReads& r, const CubePipes& c, double core_cycles, double fill) const;
  void fill_breakdown(const CubeTask& k, const CubeReads& r, const CubePipes& c, const CubeFlow& w,
                      const CubeChip& u, double fill, Breakdown& b) const;

  CubeProblem q_;
  Platform p_;
  int64_t Kp_;
  double peak_flops_per_us_, hbm_Bpus_, l2_Bpus_, vec_per_core_;
  double inv_sector_;  // 1 / gm_sector
};

// Sum over the chunks of a row of length `len` cut into pieces of `chunk`.
inline double chunked(int64_t len, int64_t chunk, int64_t ds, int64_t pitch, int64_t sector) {
  const int64_t full = len / chunk, tail = len % chunk;
  double c = double(full) * read_charge(chunk * ds, pitch, chunk * ds, sector);
  if (tail) c += read_charge(tail * ds, pitch, chunk * ds, sector);
  return c;
}

double CubeModel::a_read_charge(int64_t tm, int64_t mL1, int64_t kA, int64_t Kc) const {
  const int64_t ds = q_.in_size;
  const int64_t sector = p_.gm_sector;
  if (q_.conv) {
    // load3d reads the input rows under each M tile once per K pass:
    // rows of output covered (+1 for a tile straddling a row), their input
    // rows with the kernel halo, all (padded) channels; C1 planes are
    // contiguous, so the bursts are long.
    // A tile may span images (M = N * Ho * Wo): each image it touches adds
    // the kernel halo.
    const int64_t tiles = cdiv(tm, mL1);
    const int64_t mt = std::min(mL1, tm);
    if (mt < q_.wo) {
      // A tile shorter than an output row reads only the columns under it
      // (with the kernel's width halo), in one row segment or, when tiles do
      // not divide the row, two: a 1x1 conv on a 4096-wide map read 8x its
      // input when charged whole rows.
      const int64_t segs = q_.wo % mt ? 2 : 1;
      const int64_t cols = std::min(q_.wi, mt * q_.sw + segs * std::max<int64_t>(0, q_.kw_eff - q_.sw));
      const double run = double(cols) * q_.cin_pad * ds;  // C1 planes x columns x C0, per input row
      return double(tiles) * std::ceil(double(q_.kh_eff) * run / sector) * sector;
    }
    const int64_t ho_rows = std::min(cdiv(mL1, q_.wo) + (mL1 % q_.wo ? 1 : 0), cdiv(tm, q_.wo) + 1);
    const int64_t segments = cdiv(ho_rows, q_.ho);
    const int64_t hi_rows = ho_rows * std::min(q_.sh, q_.kh_eff) + segments * std::max<int64_t>(0, q_.kh_eff - q_.sh);
    return double(tiles) * std::ceil(double(hi_rows) * q_.wi * q_.cin_pad * ds / sector) * sector;
  }
  if (!q_.trans_a) {
    const int64_t pitch = q_.K * ds;
    if (kA >= q_.K && Kc >= q_.K) return double(sector_count(tm * pitch, sector) * sector);  // whole rows: one contiguous run
    return double(tm) * chunked(Kc, std::min(kA, Kc), ds, pitch, sector);
  }
  const int64_t pitch = q_.M * ds;  // A stored K x M
  return double(Kc) * chunked(tm, mL1, ds, pitch, sector);
}

double CubeModel::b_read_charge(int64_t tn, int64_t nL1, int64_t kB, int64_t Kc) const {
  const int64_t ds = q_.in_size;
  const int64_t sector = p_.gm_sector;
  if (q_.conv) {  // weights in FRACTAL_Z: contiguous
    return double(sector_count(tn * Kp_ * ds, sector) * sector);
  }
  if (!q_.trans_b) {
    const int64_t pitch = q_.N * ds;  // B stored K x N
    if (nL1 >= q_.N) return double(sector_count(Kc * pitch, sector) * sector);  // whole rows per copy
    return double(Kc) * chunked(tn, nL1, ds, pitch, sector);
  }
  const int64_t pitch = q_.K * ds;  // B stored N x K
  if (kB >= q_.K && Kc >= q_.K) return double(sector_count(tn * pitch, sector) * sector);
  return double(tn) * chunked(Kc, std::min(kB, Kc), ds, pitch, sector);
}

// The 950 class (DAV_3510, arch35): split cores, FixPipe and a 256 KiB L0C ([R] Ascend950PR_9579.ini).
bool dav3510(const Platform& p) { return p.split && p.fixpipe && int64_t(p.l0c) == 262144; }

// ceil of a non-negative x below 2^62 without a libm call (x86-64's baseline
// has no rounding instruction, and this runs in every estimate).
inline double ceil_pos(double x) {
  const double c = double(int64_t(x));
  return c < x ? c + 1 : c;
}

// GM sectors a strided read touches: `rows` runs of `row_bytes`, `pitch` apart.
double CubeModel::sectors_touched(double rows, double row_bytes, double pitch) const {
  const double span = (rows - 1) * pitch + row_bytes;
  return std::min(ceil_pos(span * inv_sector_), rows * ceil_pos(row_bytes * inv_sector_));
}

// The operand is stored with K along its rows (`k_rows`: B as K x N, A
// transposed) or along its columns; a load reads t x Kc of it in `copies`
// copies of tL1 x kL1.
double CubeModel::new_sector_share(bool k_rows, int64_t t, int64_t tL1, int64_t Kc, int64_t kL1, double copies,
                                   int64_t pitch_elems) const {
  const double ds = q_.in_size, pitch = double(pitch_elems) * ds;
  const double ct = double(std::min(tL1, t)), ck = double(std::min(kL1, Kc));
  const double unique = k_rows ? sectors_touched(double(Kc), double(t) * ds, pitch)
                               : sectors_touched(double(t), double(Kc) * ds, pitch);
  const double each = k_rows ? sectors_touched(ck, ct * ds, pitch) : sectors_touched(ct, ck * ds, pitch);
  return std::min(1.0, unique / (copies * each));
}

// MatMulV3 deals the blocks of one L2 tile (l2MTileBlock x l2NTileBlock
// blocks) before the next ([V3] matmul_v3_base_tiling.cpp DoL2CacheTiling;
// the kernel's L2 tile loop, mat_mul_base_block.h).  When A + B + C fit L2,
// every operand byte comes from HBM once (the static model's assumption).
// Otherwise a tile whose rows of A, columns of B and block of C fit L2 reads
// them once, and consecutive tiles share A (l2IterateOrder 0: along N) or B
// (1: along M); a tile larger than L2 re-reads from HBM in proportion to its
// overflow.
double CubeModel::l2_tile_reads(const int64_t* t, double chip_reads) const {
  const double unique = q_.a_bytes + q_.b_bytes;
  if (unique + q_.c_bytes <= p_.l2 || q_.conv) return unique;
  const double fa = std::min(1.0, double(t[kL2MBlk]) * double(t[kSM]) / double(q_.M));
  const double fb = std::min(1.0, double(t[kL2NBlk]) * double(t[kSN]) / double(q_.N));
  const double per = 1.0 / double(q_.batch);  // one matrix of a batch
  const double tile = (fa * q_.a_bytes + fb * q_.b_bytes + fa * fb * q_.c_bytes) * per;
  const double once = t[kL2Order] == 0 ? q_.a_bytes + q_.b_bytes * double(t[kL2MCnt])
                                       : q_.a_bytes * double(t[kL2NCnt]) + q_.b_bytes;
  if (tile <= p_.l2) return std::min(chip_reads, once);
  return std::min(chip_reads, once + (chip_reads - once) * std::max(0.0, 1.0 - p_.l2 / tile));
}

double CubeModel::evaluate(const int64_t* t, Breakdown* out) const {
  const CubeTask k = task(t);
  const CubeStagger st = stagger(t, k);
  CubeReads r = reads(t, k);
  if (p_.mte2_miss_cycles > 0) add_miss_latency(k, st, r);
  if (!q_.conv && !dav3510(p_)) add_nd2nz_blocks(k, r);
  if (lim_.reorder) add_same_address(t, k, st, r);  // (a Matmul on a SoC with the factor)
  // On 950 (DAV_3510) the weight the vector cores convert reaches the cube's L1 from their UB
  // (MTE3; [O] ops-nn .../weight_quant_batch_matmul_v2/op_kernel/arch35/n_first/
  // weight_quant_batch_matmul_v2_cube_compute.h: WeightL1 buffers in the cube's L1, filled by the
  // vector side): the cube's MTE2 reads A only; the weight's GM read is the vector side's.
  if (!q_.quant.antiquant.empty() && !q_.quant.workspace && dav3510(p_)) r.mte2_b = 0;

  CubePipes c = core_pipes(t, k);
  if (!q_.epilogue.empty()) add_epilogue(k, c);
  if (!q_.quant.antiquant.empty()) add_antiquant(k, r, c);
  const CubeFlow w = pipeline(t, k, r, c);
  const double cube_side = std::max(w.compute_path, w.mte2_path);
  const double vec_side = c.vec + c.vec_mem + c.vec_pre + c.vec_pre_mem;
  const double cv_sync = handover(k, c, cube_side, vec_side);
  const double busy_cycles = std::max({w.mid + w.exposed, r.mte2_a + r.mte2_b, vec_side, c.mte3, w.scalar});
  const double core_cycles = std::max({cube_side, vec_side, c.mte3, w.scalar}) + cv_sync + w.tail;
  const double fill = core_cycles - cv_sync - busy_cycles;  // what the fill adds to the busiest pipe
  const CubeChip chip_us = chip(k, r, c, core_cycles, fill);
  if (out) fill_breakdown(k, r, c, w, chip_us, fill, *out);
  return chip_us.time;
}

CubeTask CubeModel::task(const int64_t* t) const {
  const CubeProblem& q = q_;
  CubeTask k;
  k.bM = t[kBM], k.bN = t[kBN], k.bK = t[kBK];
  const int64_t sM = t[kSM], sN = t[kSN];
  k.mB = cdiv(q.M, sM), k.nB = cdiv(q.N, sN);
  // K split into splitK slices (§1 case 11: 16x16x1024 on 1 core -> 2 cores,
  // 19.60 -> 13.70 us): each task multiplies Kc of K and adds its partial C
  // into zeroed GM with FixPipe's atomic add; the critical core has the full Kc.
  // Slices beyond the idle cores run as waves (slice outer): K slabs whose
  // operands fit L2 when those of the whole K do not.
  k.split = t[kSplitK];
  k.Kc = k.split == 1 ? q.K : std::min(q.K, align_up(cdiv(q.K, k.split), lim_.kq));
  k.tasks = q.batch * k.mB * k.nB * k.split;
  // Static split (dispatch 0): each task is one core's rectangle, so tasks
  // beyond the cores come only from a batch or a K split.  MatMulV3's
  // round-robin (dispatch 1) deals the output blocks over usedCoreNum cores in
  // waves ([V3-kernel] ops-nn matmul/mat_mul_v3/op_kernel/mat_mul_base_block.h).
  k.ncores = t[kDispatch] == 1 ? t[kUsed] : int64_t(p_.cube_cores);
  k.cores = std::min<int64_t>(k.ncores, k.tasks);
  k.waves = cdiv(k.tasks, k.ncores);
  // The critical core runs full sM x sN blocks; tail blocks finish earlier.
  k.tm = std::min(sM, q.M), k.tn = std::min(sN, q.N);
  k.Mt = align_up(k.tm, 16), k.Nt = align_up(k.tn, 16);
  k.mIter = cdiv(k.tm, k.bM), k.nIter = cdiv(k.tn, k.bN), k.kIter = cdiv(k.Kc, k.bK);
  k.mL1 = k.bM * t[kStepM], k.nL1 = k.bN * t[kStepN];
  k.kA = k.bK * t[kStepKa], k.kB = k.bK * t[kStepKb];
  k.mOut = cdiv(k.tm, k.mL1), k.nOut = cdiv(k.tn, k.nL1);
  const bool aFull = k.kA >= k.Kc, bFull = k.kB >= k.Kc;
  if (t[kOrder] == 0) {  // M moves first: N outer, M inner
    k.a_loads = (aFull && k.mOut == 1) ? 1 : k.nOut;
    k.b_loads = bFull ? 1 : k.mOut;
  } else {
    k.b_loads = (bFull && k.nOut == 1) ? 1 : k.mOut;
    k.a_loads = aFull ? 1 : k.nOut;
  }
  return k;
}

// C220 MatMulV3's base template with l2IterateOrder (calOrder) 0 deals staggered blocks
// ([O] ops-nn matmul/mat_mul_v3/op_kernel/mat_mul_base_kernel.h Process: UpdateBasicIndex when
// rowOrder == 0; mat_mul_base_block.h UpdateBasicIndex: the i-th block of an L2 tile is row
// i % mCnt, column (i + i / lcm(mCnt, nCnt)) % nCnt).  The cores of a wave walk a diagonal:
// an A row block is shared by cdiv(cores, mCnt) of them, a B column block by cdiv(cores, nCnt).
// (GroupedMatmul's C220 kernel staggers a group of more than 5 rows of blocks the same way over
// 8 x 8 tiles, grouped_quant_matmul.cpp group_row.)
CubeStagger CubeModel::stagger(const int64_t* t, const CubeTask& k) const {
  CubeStagger st;
  st.on = t[kDispatch] == 1 && c220(p_) && q_.v3_kernel && (!q_.grouped || k.mB > 5) && q_.batch == 1 &&
          t[kTE] == 0 && t[kL2Order] == 0;
  st.mc = std::min(t[kL2MBlk], k.mB), st.nc = std::min(t[kL2NBlk], k.nB);
  st.share_a = std::min<int64_t>(st.nc, cdiv(k.cores, st.mc));
  st.share_b = std::min<int64_t>(st.mc, cdiv(k.cores, st.nc));
  return st;
}

CubeReads CubeModel::reads(const int64_t* t, const CubeTask& k) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  CubeReads r;
  const double ds = q.in_size;
  r.a_one = a_read_charge(k.tm, k.mL1, k.kA, k.Kc), r.b_one = b_read_charge(k.tn, k.nL1, k.kB, k.Kc);  // one load
  // Full-load templates keep one operand in L1 across a core's tasks: it is
  // loaded once per core, not once per wave (B for BL1, 20; A for AL1, 10).
  const int64_t te = t[kTE];
  const double keep_a = te == 10 && k.waves > 1 ? 1.0 / double(k.waves) : 1.0;
  const double keep_b = te == 20 && k.waves > 1 ? 1.0 / double(k.waves) : 1.0;
  r.a_ch = keep_a * double(k.a_loads) * r.a_one, r.b_ch = keep_b * double(k.b_loads) * r.b_one;
  r.a_copies_per_load = double(k.mOut) * cdiv(k.Kc, k.kA), r.b_copies_per_load = double(k.nOut) * cdiv(k.Kc, k.kB);
  r.a_copies = keep_a * double(k.a_loads) * r.a_copies_per_load;
  r.b_copies = keep_b * double(k.b_loads) * r.b_copies_per_load;

  // Where reads are served: first touch from HBM; a re-read hits L2 when
  // the data touched by all active cores between two reads of the same
  // block (its reuse footprint) fits L2 ([A] L2-Cache切分.md).
  const double core_ch = r.a_ch + r.b_ch;
  r.chip_ch = core_ch * k.tasks;
  const double unique = t[kDispatch] == 1 ? l2_tile_reads(t, r.chip_ch) : q.a_bytes + q.b_bytes;
  const double act_m = double(std::min<int64_t>(k.mB * q.batch, k.cores));
  const double act_n = double(std::min<int64_t>(k.nB * q.batch, k.cores));
  const double kb = double(k.Kc) * ds;
  double fp_a, fp_b;  // footprints between re-reads of A and of B
  if (t[kOrder] == 0) {
    fp_a = act_m * k.tm * kb + act_n * k.nL1 * kb;
    fp_b = double(k.cores) * (k.mL1 + k.nL1) * kb;
  } else {
    fp_b = act_n * k.tn * kb + act_m * k.mL1 * kb;
    fp_a = double(k.cores) * (k.mL1 + k.nL1) * kb;
  }
  r.h_a = std::min(1.0, p.l2 / fp_a), r.h_b = std::min(1.0, p.l2 / fp_b);
  const double rereads =
      (1 - r.h_a) * r.a_ch * (1 - 1.0 / k.a_loads) + (1 - r.h_b) * r.b_ch * (1 - 1.0 / k.b_loads);
  r.hbm_read = std::min(r.chip_ch, unique + double(k.tasks) * rereads);
  const double f_miss = r.chip_ch > 0 ? r.hbm_read / r.chip_ch : 0;
  const double cyc_per_byte = f_miss / p.ddr_rate + (1 - f_miss) / (p.mte2_eff * p.l2_rate);
  r.mte2_a = r.a_ch * cyc_per_byte, r.mte2_b = r.b_ch * cyc_per_byte;
  return r;
}

// A round of GM->L1 copies (one of A and one of B) that misses L2 waits
// for HBM: MTE2 takes at least rounds x latency (§1 case 6: 80 rounds of
// CFG_NORM in 75.64 us, 20 of CFG_MDL in 46.24 us at the bandwidth; case
// 11: 16 rounds of 2 KB in 13.72 us); hits are assumed pipelined.  A copy
// misses when it is the chip's first touch of its data or a re-read that
// L2 no longer holds.  Copies narrower than a GM sector share sectors, and
// the first brings the next one's part into L2 (§1 case 3: 12 copies of
// 128 B rows of A, 6 misses): a share data / bytes charged misses.  A
// convolution's K steps within one C1 plane read the same input rows
// (shifted windows): only the plane's first copy misses.  An operand block
// shared by several cores is fetched once, but the cores of one wave ask
// for it together and each waits for it: only the tasks of later waves
// find it in L2.  (Counting a shared fetch once per chip let two cores
// sharing B wait half as long as one core alone: MatMul 32x64x16 modelled
// faster than 16x64x16.)
void CubeModel::add_miss_latency(const CubeTask& k, const CubeStagger& st, CubeReads& r) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const double ds = q.in_size;
  const double a_data = q.conv ? r.a_one : double(k.tm) * double(k.Kc) * double(ds);
  const double b_data = q.conv ? r.b_one : double(k.tn) * double(k.Kc) * double(ds);
  // (Staggered dealing: only the wave's sharers of a block it touches first wait for it.)
  r.first_a = std::min(1.0, q.a_bytes * double(st.on ? st.share_a : k.cores) / (double(k.tasks) * a_data));
  r.first_b = std::min(1.0, q.b_bytes * double(st.on ? st.share_b : k.cores) / (double(k.tasks) * b_data));
  const double plane_k = q.conv ? double(q.K / q.cin_pad) * q.k0 : 0;  // K of one C1 plane: kh x kw x C0
  const double new_a = q.conv ? std::min(1.0, double(k.kA) / plane_k)
                              : new_sector_share(q.trans_a, k.tm, k.mL1, k.Kc, k.kA, r.a_copies_per_load,
                                                 q.trans_a ? q.M : q.K);
  const double new_b = q.conv ? 1.0
                              : new_sector_share(!q.trans_b, k.tn, k.nL1, k.Kc, k.kB, r.b_copies_per_load,
                                                 q.trans_b ? q.K : q.N);
  const double miss_a = r.a_copies_per_load * (r.first_a * new_a + double(k.a_loads - 1) * (1 - r.h_a));
  const double miss_b = r.b_copies_per_load * (r.first_b * new_b + double(k.b_loads - 1) * (1 - r.h_b));
  const double latency = std::max(miss_a, miss_b) * p.mte2_miss_cycles, bw = r.mte2_a + r.mte2_b;
  if (latency > bw && bw > 0) {
    r.mte2_a *= latency / bw;
    r.mte2_b *= latency / bw;
    r.bw_share = bw / latency;
  }
}

// Rows not 32 B aligned in GM: ND2NZ copies C0 block by block (§1 case 13,
// N = 4095: AIC MTE2 130.77 us; kNd2nzBlockCycles is fitted on §5.8 instead).
// 950 (DAV_3510) has no such cost: its MTE2 pads each unaligned row (burst) on the way in
// ([A] asc-devkit docs/api/c_api/cube_datamove/asc_copy_gm2l1_align.md, 950PR/950DT only).
void CubeModel::add_nd2nz_blocks(const CubeTask& k, CubeReads& r) const {
  const CubeProblem& q = q_;
  const double ds = q.in_size;
  const int64_t pitch_a = (q.trans_a ? q.M : q.K) * q.in_size, rows_a = q.trans_a ? k.Kc : k.tm;
  const int64_t pitch_b = (q.trans_b ? q.K : q.N) * q.in_size, rows_b = q.trans_b ? k.tn : k.Kc;
  if (pitch_a % 32 && rows_a > 1)
    r.mte2_a = std::max(r.mte2_a, double(k.a_loads) * double(k.tm) * k.Kc * ds / 32 * kNd2nzBlockCycles);
  if (pitch_b % 32 && rows_b > 1)
    r.mte2_b = std::max(r.mte2_b, double(k.b_loads) * double(k.tn) * k.Kc * ds / 32 * kNd2nzBlockCycles);
}

// Same-address conflicts: cores of one wave that share an operand block
// start their K loops together, so they request the same GM lines at the
// same moment (ascend_measured_cases.md §0; enableKdimReorderLoad staggers
// each core's K start to avoid it, §1 case 12).  Charged on the first pass
// over the block only, the one that misses L2: concurrent misses of a line
// are serialised, hits are not.  §5.8 (all cores reading one matrix that
// misses L2, GM->L1) gives the factor; §1 case 1, whose shared reads are
// mostly L2 re-reads, shows no such penalty.  Staggering spreads the
// sharers over the load's K steps; with fewer steps than sharers, the
// sharers that start on the same step still collide (one K step: all of
// them, as without the knob, which K = 16 was modelled to escape by
// growing to K = 32).
void CubeModel::add_same_address(const int64_t* t, const CubeTask& k, const CubeStagger& st, CubeReads& r) const {
  const Platform& p = p_;
  // On 950 (DAV_3510) the factor, measured with all 32 cores on the same tiles (§5.8: L1
  // 369.99 against 187.35 us; UB copies show none, 342.29 against 335.64), grows with the cores
  // that collide beyond the first: the fit-half QuantBatchMatmulV3 records of
  // cann_bench_calibration.json, whose blocks 4 to 8 cores share, ran 1.17-1.80x faster than
  // the full factor put them.  On C220 a few sharers pay it in full (§1 case 12: 6x4 cores,
  // 98.72 -> 85.68 us staggered).
  const double all_cores = dav3510(p) ? double(std::max<int64_t>(2, p.cube_cores)) - 1 : 0;
  auto colliding = [&](int64_t sharers, int64_t steps) {
    if (sharers <= 1) return 0.0;
    const int64_t together = t[kReorder] == 0 ? sharers : cdiv(sharers, steps);
    if (all_cores > 0) return std::min(1.0, double(together - 1) / all_cores);
    return double(together - 1) / double(sharers - 1);
  };
  // Static split: all of a block's sharers run at once.  Round-robin (dispatch 1): one wave
  // covers min(cores, mB) M blocks of cdiv(cores, mB) N columns (iterateOrder 0; 1 the mirror),
  // so a B block's sharers are the wave's M blocks, each wave touching new columns; an A block is
  // shared by the wave's columns and read first only by the first wave of columns, later waves
  // finding it in L2 (h_a of it).
  const int64_t mB = k.mB, nB = k.nB, cores = k.cores;
  int64_t share_a = std::min<int64_t>(nB, cores), share_b = std::min<int64_t>(mB, cores);
  double first_pass_a = 1.0 / double(k.a_loads), first_pass_b = 1.0 / double(k.b_loads);
  if (t[kDispatch] == 1 && dav3510(p)) {
    // 950's (DAV_3510) sliding-window scheduler deals a window of 4 rows of blocks (columns with
    // iterateOrder 1) across the other axis, snaking, before the next window ([O] ops-nn
    // matmul/mat_mul_v3/op_kernel/arch35/block_scheduler_aswt.h, quant_batch_matmul_v3/op_kernel/
    // arch35/qbmm_asw_block.h: WINDOW_LEN = 4).  A wave's blocks then share both operands: each
    // column block with the window's rows, each row block with the wave's columns; only the first
    // window (the first wave of columns) reads them first, later ones find them in L2.
    const bool m_win = t[kOrder] == 0;
    const int64_t rows = m_win ? mB : nB, cols = m_win ? nB : mB;
    const int64_t win = std::min<int64_t>(4, rows), across = std::min<int64_t>(cols, cdiv(cores, win));
    const double w_win = double(win) / double(rows), w_across = std::min(1.0, double(across) / double(cols));
    int64_t& share_row = m_win ? share_a : share_b;  // a row block (A's with iterateOrder 0)
    int64_t& share_col = m_win ? share_b : share_a;
    share_row = across;
    share_col = win;
    const double h_row = m_win ? r.h_a : r.h_b, h_col = m_win ? r.h_b : r.h_a;
    (m_win ? first_pass_a : first_pass_b) *= w_across + (1 - w_across) * (1 - h_row);
    (m_win ? first_pass_b : first_pass_a) *= w_win + (1 - w_win) * (1 - h_col);
  } else if (st.on) {
    // The staggered dealing (CubeModel::stagger): only the wave that first touches a block reads it from HBM.
    share_a = st.share_a;
    share_b = st.share_b;
    const double wa = std::min(1.0, double(share_a) / double(st.nc));
    const double wb = std::min(1.0, double(share_b) / double(st.mc));
    first_pass_a *= wa + (1 - wa) * (1 - r.h_a);
    first_pass_b *= wb + (1 - wb) * (1 - r.h_b);
  } else if (t[kDispatch] == 1) {
    if (t[kOrder] == 0) {
      share_a = std::min<int64_t>(nB, cdiv(cores, mB));
      const double w = std::min(1.0, double(share_a) / double(nB));
      first_pass_a *= w + (1 - w) * (1 - r.h_a);
    } else {
      share_b = std::min<int64_t>(mB, cdiv(cores, nB));
      const double w = std::min(1.0, double(share_b) / double(mB));
      first_pass_b *= w + (1 - w) * (1 - r.h_b);
    }
  }
  r.mte2_a *= 1 + (p.same_address - 1) * colliding(share_a, cdiv(k.Kc, k.kA)) * first_pass_a;
  r.mte2_b *= 1 + (p.same_address - 1) * colliding(share_b, cdiv(k.Kc, k.kB)) * first_pass_b;
}

// MTE1, the MMADs and FixPipe's write-out of the task.
CubePipes CubeModel::core_pipes(const int64_t* t, const CubeTask& k) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const double ds = q.in_size;
  CubePipes c;
  // MTE1: every base block of A and B is loaded L1 -> L0 for each MMAD.
  c.Kt = double(k.split == 1 ? Kp_ : align_up(k.Kc, q.k0));
  const double Mt = k.Mt, Nt = k.Nt, Kt = c.Kt;
  const int64_t mIter = k.mIter, nIter = k.nIter;
  c.mte1_a = nIter * (Mt * Kt * ds / p.l1_to_l0a) + kMte1Start * mIter * nIter * k.kIter;
  c.mte1_b = mIter * (Kt * Nt * ds / p.l1_to_l0b) + kMte1Start * mIter * nIter * k.kIter;
  // Cube: 16 x k0 x 16 MACs per cycle on fractal-padded blocks (DtypeMKN).
  c.cube = double(k.Mt / 16) * double(k.Nt / 16) * (Kt / q.k0);
  // FixPipe: L0C -> GM, bursts of one block row.
  const int64_t dc = q.out_size, bM = k.bM, bN = k.bN, tm = k.tm, tn = k.tn;
  double fix_bytes;
  if (q.conv) {  // NC1HWC0 output: runs of bM pixels x C0
    fix_bytes = double(k.Nt / 16) * double(tm / bM) * write_charge(bM * 16 * dc, int64_t(kGranule));
    if (tm % bM) fix_bytes += double(k.Nt / 16) * write_charge((tm % bM) * 16 * dc, int64_t(kGranule));
  } else {
    // (a vector dequant's int32 tile: wider than C)
    const int64_t fc = q.quant.fix_out_size > 0 ? q.quant.fix_out_size : dc;
    const int64_t pitch = q.quant.fix_out_size > 0 ? bN * fc : q.N * fc;  // (the workspace holds baseM x baseN tiles)
    const int64_t full = tn / bN, tail = tn % bN;
    fix_bytes = double(tm) * (full * write_charge(bN * fc, pitch) + (tail ? write_charge(tail * fc, pitch) : 0));
  }
  const double fix_rate = (p.split || p.fixpipe) ? p.l2_write_rate : p.l0c_to_ub;
  // Single-core split-K (template 2) loops K in chunks of stepKa x baseK and
  // adds each chunk's partial block into C in GM (atomic add in L2).
  // Per-group MSD (q.quant.msd_group) writes each group's int32 partials out on their own ([O] ops-nn
  // .../weight_quant_batch_matmul_v2_msd_group.h Process: LaunchMatmul per groupIdx, SetTail(.., groupSize),
  // IterateAll into the ping-pong workspace; _msd_split_k.h ProcessCube per group pack).
  c.group_passes = q.quant.msd_group > 0 ? cdiv(k.Kc, q.quant.msd_group) : 1;
  c.kchunks = t[kTE] == 2 ? cdiv(k.Kc, k.bK * t[kStepKa]) : 1;
  const int64_t fix_passes = c.kchunks * c.group_passes;
  fix_bytes *= double(fix_passes);
  c.fix = fix_bytes / fix_rate + kFixStart * mIter * nIter * fix_passes;
  c.out_elems = double(tm) * tn;
  return c;
}

// Epilogue on the vector units: on split SoCs the AIVs read the tile back
// from GM (L2) with any extra operand and write the result; on coupled SoCs
// the tile goes L0C -> UB -> GM (MTE3).
void CubeModel::add_epilogue(const CubeTask& k, CubePipes& c) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t dc = q.out_size, bM = k.bM, bN = k.bN;
  const double out_elems = c.out_elems;
  c.vec = double(k.mIter * k.nIter) * vec_cycles(q.epilogue, double(bM) * bN) / vec_per_core_;
  if (q.quant.qbmm_basic == 2) {
    // C220 QuantBatchMatmulV3's vector dequant (EpilogueDequant::Process, [O] ops-nn
    // .../op_kernel/quant_batch_matmul_v3_basic_epilogue.h; bf16_basic.h BasicDequantCompute): each AIV
    // takes its share of the block's rows (GetTaskRation) in UB passes of ubCalcM rows (qbmm_ub_rows),
    // every API called once a pass, CalBiasAdd's Add once a row.
    const int64_t rows = int64_t(std::ceil(double(bM) / vec_per_core_));
    const int64_t ub_rows = qbmm_ub_rows(q.quant.qbmm_ub, bM, bN, q.M, int64_t(p.ub));
    const int64_t ub_passes = cdiv(rows, ub_rows), last = rows - (ub_passes - 1) * ub_rows;
    c.vec = double(k.mIter * k.nIter) *
            (double(ub_passes - 1) * vec_cycles(q.epilogue, double(ub_rows) * bN) +
             vec_cycles(q.epilogue, double(last) * bN) +
             double(rows) * vec_cycles(q.quant.dequant_row_steps, double(bN)));
  }
  double bytes = out_elems * q.epi_extra_per_elem;
  if (p.split) bytes += out_elems * 2 * dc;
  if (q.quant.msd_group > 0) {
    // ... and its AIVs combine each group's partials of the core's real rows (ProcessMatmulResult on
    // mSize rows; ProcessC1C2PerGroup), reading them back from the workspace once per group.
    c.vec = double(c.group_passes) * vec_cycles(q.epilogue, out_elems) / vec_per_core_;
    bytes = double(c.group_passes + 1) * out_elems * dc + double(c.group_passes) * out_elems * q.epi_extra_per_elem;
  }
  c.vec_mem = bytes / (p.mte2_eff * p.l2_rate);
  if (!p.split) c.mte3 = out_elems * dc / p.ub_to_ddr;
}

// Weight antiquant (WeightQuantBatchMatmul): the vector cores of this cube core convert
// each B copy before the cube loads it, reading the narrow weight (and its scales) and,
// through a GM workspace, writing the converted copy that the cube's MTE2 then reads from L2.
void CubeModel::add_antiquant(const CubeTask& k, const CubeReads& r, CubePipes& c) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  if (q.quant.vec_tile_k > 0) return add_custom_antiquant(k, c);
  const double per_copy = double(std::min(k.nL1, k.tn)) * double(std::min(k.kB, k.Kc));
  c.vec_pre = r.b_copies * vec_cycles(q.quant.antiquant, per_copy) / vec_per_core_;
  const double elems = r.b_copies * per_copy;
  const double bytes = r.b_ch * q.b_gm_scale + elems * q.quant.antiquant_extra + (q.quant.workspace ? r.b_ch : 0);
  c.vec_pre_mem = bytes / (p.mte2_eff * p.l2_rate * vec_per_core_);
}

// C220's custom kernel antiquantises each round's slab of baseN x cubeBlockDimN columns (all K)
// ONCE, split over all the AIVs in vec_tile_k x vec_tile_n tiles; every AIC, whatever its M
// share, then reads the slab from the workspace ([O] ops-nn matmul/weight_quant_batch_matmul_v2/
// op_kernel/weight_quant_batch_matmul_v2_custom.h ProcessVector / AntiquantWeight: loopLimit =
// vecSingleNLoop x vecSingleKLoop, each AIV ceil(loopLimit / vecBlockDimN) tiles;
// op_tiling/weight_quant_batch_matmul_v2_tiling_custom.cpp DoOpTiling: vecBlockDimN =
// ceil(taskNum / ceil(taskNum / aivNum))).  An AIV's tiles of all rounds, spread over the waves.
void CubeModel::add_custom_antiquant(const CubeTask& k, CubePipes& c) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t aiv = std::max<int64_t>(1, p.split ? p.vector_cores : p.cube_cores);
  const int64_t slab = std::min(q.N, k.bN * std::min<int64_t>(k.nB, k.ncores));
  const int64_t k_loops = cdiv(q.K, q.quant.vec_tile_k), tasks_full = cdiv(slab, q.quant.vec_tile_n) * k_loops;
  const int64_t vec_dim = cdiv(tasks_full, cdiv(tasks_full, aiv));
  const int64_t rounds = cdiv(q.N, slab), tail = q.N - (rounds - 1) * slab;
  const double tiles = double(rounds - 1) * double(cdiv(tasks_full, vec_dim)) +
                       double(cdiv(cdiv(tail, q.quant.vec_tile_n) * k_loops, vec_dim));
  const double tile = double(q.quant.vec_tile_k) * double(q.quant.vec_tile_n);
  const double rate = p.mte2_eff * p.l2_rate;
  const double in_bytes = tile * (q.b_gm_scale * q.in_size + q.quant.antiquant_extra);
  // The weight's UB buffer is single-buffered (weight_quant_batch_matmul_v2_common.h originWeightQueue_,
  // SINGLE_BUFFER_NUM; the output queue double): a tile's copy-in, which waits out the GM latency,
  // starts only when the previous tile's cast has freed it (WeightCopyInAndCast), so per tile at least
  // latency + copy-in + cast, the rest of the antiquant and the copy-out overlapping the next copy.
  static const double kCastRepeat = vec_api_cost("CastUp").per_repeat;
  double cast = 0;  // the program's leading casts (int4 -> int8 -> fp16 [-> fp32])
  for (const auto& st : q.quant.antiquant) {
    if (st.cost.per_repeat != kCastRepeat || st.fp32) break;
    cast += vec_cycles({st}, tile);
  }
  const double work = vec_cycles(q.quant.antiquant, tile);
  const double all = work + (in_bytes + tile * q.in_size) / rate;
  const double chain = p.mte2_miss_cycles + in_bytes / rate + cast;
  c.vec_pre = tiles * work / double(k.waves);
  c.vec_pre_mem = tiles * (std::max(all, chain) - work) / double(k.waves);
}

// Pipeline: double-buffered stages overlap, single-buffered ones wait.
CubeFlow CubeModel::pipeline(const int64_t* t, const CubeTask& k, const CubeReads& r, const CubePipes& c) const {
  const Platform& p = p_;
  CubeFlow w;
  const int64_t dbA1 = t[kDepthA1] / (t[kStepM] * t[kStepKa]);
  const int64_t dbB1 = t[kDepthB1] / (t[kStepN] * t[kStepKb]);
  const double inner =
      std::max(c.cube + (t[kDbA] == 1 ? c.mte1_a : 0) + (t[kDbB] == 1 ? c.mte1_b : 0), c.mte1_a + c.mte1_b);
  // UnitFlag: FixPipe drains L0C in 512 B units as the last MMAD of a block
  // writes them (ascend_measured_cases.md §0), so with one L0C buffer the
  // write-out overlaps the next block's MMADs but for one unit, and the
  // pipeline fill waits for one unit rather than the block (§1 case 9, 7.3%).
  const double unit = t[kUnitFlag] == 1 ? std::min(1.0, 512.0 / (double(k.bM) * k.bN * 4)) : 1.0;
  w.mid = t[kDbC] == 2 ? std::max(inner, c.fix)
          : t[kUnitFlag] == 1 ? std::max(inner, c.fix) + unit * std::min(inner, c.fix)
                             : inner + c.fix;
  w.exposed = (dbA1 == 1 ? r.mte2_a + r.a_copies * p.mte2_copy_cycles : 0) +
              (dbB1 == 1 ? r.mte2_b + r.b_copies * p.mte2_copy_cycles : 0);
  // Pipeline fill.  The compute side (MTE1, MMADs, write-out: `mid`, plus
  // any single-buffered copies) waits for the first copy of each
  // double-buffered operand and for its first block's MTE1; MTE2, when it is
  // the busiest pipe, streams from the start and the MTE1 and MMADs on the
  // last copy's data follow it (one copy round's share of them).  The longer
  // path is the time, plus the copy latency and the last write-out (one unit
  // of it with UnitFlag; its trip to GM is in core_us).  Adding both the first copy and one
  // block of compute on top of the busiest pipe made a small operand loaded
  // in one copy pay its MTE2 twice (a MatMul grown from 16x16x16 to 16x128x16
  // modelled faster), and a large copy's compute tail too little.
  w.blocks = double(k.mIter) * k.nIter * k.kIter;
  // (A first copy that misses waits the whole latency; MTE2's time beyond
  // its bandwidth is the latency of all its misses, not spread over copies.)
  const double first_copy = (dbA1 == 1 ? 0 : r.bw_share * r.mte2_a / std::max(1.0, r.a_copies)) +
                            (dbB1 == 1 ? 0 : r.bw_share * r.mte2_b / std::max(1.0, r.b_copies)) +
                            p.mte2_miss_cycles * std::max(dbA1 == 1 ? 0 : r.first_a, dbB1 == 1 ? 0 : r.first_b);
  const double last_copy = inner / std::max({1.0, r.a_copies, r.b_copies});
  w.compute_path = w.mid + w.exposed + first_copy + (c.mte1_a + c.mte1_b) / w.blocks;
  w.mte2_path = r.mte2_a + r.mte2_b + last_copy;
  w.tail = p.mte2_copy_cycles + unit * c.fix / double(k.mIter * k.nIter);
  // Scalar: issue and loop control of each base-block iteration runs beside
  // the pipes; the kernel's set-up runs before its first MTE2 (§1 cases 2, 5, 10).
  w.scalar = p.scalar_block_cycles * w.blocks;
  return w;
}

// The cube/vector hand-over's exposed cycles.
double CubeModel::handover(const CubeTask& k, const CubePipes& c, double cube_side, double vec_side) const {
  const CubeProblem& q = q_;
  // Through GM: partly exposed (kCvExposure).
  const double cv_short = std::min(cube_side, vec_side), cv_long = std::max({cube_side, vec_side, 1e-9});
  const double exposure = !q.epilogue.empty() ? kCvExposure : kCvPrologueExposure;
  const bool fused = !q.epilogue.empty() || !q.quant.antiquant.empty();
  double cv_sync = p_.split && fused ? exposure / q.slots * cv_short * cv_short / cv_long : 0;
  if (q.quant.msd_k_blocks > 0) cv_sync = cv_short;  // the dequant waits for the core's whole GEMM
  // (per group: the AIVs combine group i while the AIC runs group i + 1, two workspace slots,
  // WaitForVectorPing / Pong: one group's shorter side exposed)
  if (q.quant.msd_group > 0) cv_sync = cv_short / double(c.group_passes);
  if (q.quant.rounds) {
    // Handed over in R rounds (a core's baseN column steps over all its waves), the vector side one
    // round ahead: v/R + (R-1) max(c, v)/R + c/R, i.e. the shorter side exposed for one round of R.
    // One round (N within one baseN step per core) runs the two sides back to back.
    cv_sync = cv_short / std::max(1.0, double(k.waves) * double(k.nIter));
  }
  return cv_sync;
}

// The op's time: the cores' waves, against HBM's and L2's bandwidth for all the op's bytes.
CubeChip CubeModel::chip(const CubeTask& k, const CubeReads& r, const CubePipes& c, double core_cycles,
                         double fill) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t dc = q.out_size, split = k.split, tasks = k.tasks, waves = k.waves, ncores = k.ncores;
  const double out_elems = c.out_elems;
  CubeChip u;
  u.head_us = cube_head_us(p, int(k.cores));
  // A K split also zeroes C first (one more write of it); each later partial
  // sum's atomic add reads C back, from HBM for the part L2 cannot hold.
  u.chip_write = double(tasks) * (out_elems * dc) * double(c.kchunks) + (split > 1 || c.kchunks > 1 ? q.c_bytes : 0);
  const double atomic_read = split > 1 ? double(split - 1) * q.c_bytes * std::max(0.0, 1 - p.l2 / q.c_bytes) : 0;
  u.chip_extra = double(tasks) * out_elems * q.epi_extra_per_elem;
  u.hbm_us = (r.hbm_read + u.chip_write + u.chip_extra + atomic_read) / hbm_Bpus_;
  // (per-group MSD's partials cycle through two workspace slots per core: written and read back in L2)
  const double group_l2 = c.group_passes > 1 ? 2.0 * double(tasks) * out_elems * dc * double(c.group_passes) : 0;
  // (atomic adds run in L2)
  u.l2_us = (r.chip_ch + u.chip_extra + (split > 1 || c.kchunks > 1 ? u.chip_write : 0) + group_l2) / l2_Bpus_;
  // A last partial wave of `rem` tasks: uniform splits run it at full task
  // size; a non-uniform split cuts each of its tasks (along M, 16 rows at
  // least) over the idle cores, at the cost of one more pipeline fill.
  double wave_count = double(waves);
  const int64_t rem = tasks % ncores;
  if (q.nonuniform && rem && waves >= 1) {
    const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(ncores / rem, k.Mt / 16));
    // never worse than the uniform split, which the kernel can always fall back to
    wave_count = std::min(double(waves), double(waves - 1) + 1.0 / double(pieces) + (pieces > 1 ? fill / core_cycles : 0.0));
  }
  // A core's work ends when its last write-out lands in GM: a round trip
  // taken as one miss latency, after its last task only (the next task does
  // not wait for it).  Fitted with it, the held-out §1 records' mean error is
  // 11.7% against 12.7% without (case 7 and case 11's "after" come within
  // 20%), and the fitted set-up puts case 5's first MTE2 at 3.37 us (3.536
  // published) where a constant per kernel would put it at 2.66 us.
  const double core_us = (wave_count * core_cycles + p.mte2_miss_cycles) / p.freq_mhz;
  u.time = std::max({core_us, u.hbm_us, u.l2_us}) + u.head_us;
  return u;
}

void CubeModel::fill_breakdown(const CubeTask& k, const CubeReads& r, const CubePipes& c, const CubeFlow& w,
                               const CubeChip& u, double fill, Breakdown& b) const {
  const CubeProblem& q = q_;
  const double f = p_.freq_mhz, ds = q.in_size, Kt = c.Kt;
  const int64_t waves = k.waves, dc = q.out_size;
  b.time_us = u.time;
  b.mte2_us = std::max({waves * (r.mte2_a + r.mte2_b) / f, u.hbm_us, u.l2_us});
  b.mte1_us = waves * (c.mte1_a + c.mte1_b) / f;
  b.cube_us = waves * c.cube / f;
  b.fixpipe_us = waves * c.fix / f;
  b.vector_us = waves * (c.vec + c.vec_pre) / f;
  b.mte3_us = waves * c.mte3 / f;
  b.head_us = u.head_us + waves * fill / f;
  b.gm_read_bytes = r.chip_ch + u.chip_extra;
  b.hbm_read_bytes = r.hbm_read + u.chip_extra;
  b.gm_write_bytes = u.chip_write;
  b.l0_bytes = double(k.tasks) * (k.nIter * k.Mt * Kt + k.mIter * Kt * k.Nt) * ds;
  b.ub_bytes = q.epilogue.empty() ? 0 : double(k.tasks) * c.out_elems * (dc * 2 + q.epi_extra_per_elem);
  b.flops = q.flops;
  b.gm_copies = waves * (r.a_copies + r.b_copies);
  b.base_blocks = waves * w.blocks;
  b.cores_used = int(k.cores);
  b.waves = int(waves);
  b.roofline_us = roofline_us_;
  const double busiest = std::max({b.cube_us, b.mte2_us, b.mte1_us, b.fixpipe_us, b.vector_us});
  if (b.head_us > 0.5 * u.time) b.bound = "latency";
  else if (b.cube_us >= busiest) b.bound = "compute";
  else b.bound = "memory";
}

// ---- native restriction check ------------------------------------------------------
// build_spec()'s restrictions in C++: estimate_batch checks every row, and the
// bytecode of fifteen restrictions costs more than evaluate() itself.  Called
// after range_violation() (every value in [0, 2^31)), with the restriction
// language's semantics: a product that leaves int64 makes its restriction
// false (mul() below), floor division and modulo of positive numbers are C's.
// tests/test_restriction_checks.py compares it with the interpreter row by row.
namespace {
inline bool mul(int64_t a, int64_t b, int64_t& r) { return !__builtin_mul_overflow(a, b, &r); }
inline bool mul(int64_t a, int64_t b, int64_t c, int64_t& r) { return mul(a, b, r) && mul(r, c, r); }
inline bool mul(int64_t a, int64_t b, int64_t c, int64_t d, int64_t& r) { return mul(a, b, c, r) && mul(r, d, r); }
inline bool add(int64_t a, int64_t b, int64_t& r) { return !__builtin_add_overflow(a, b, &r); }
}  // namespace

bool CubeModel::holds_all(const int64_t* t) const {
  const Limits& l = lim_;
  const int64_t sM = t[kSM], sN = t[kSN], bM = t[kBM], bN = t[kBN], bK = t[kBK];
  int64_t x, y;
  // ((M + singleCoreM - 1) / singleCoreM) * ((N + singleCoreN - 1) / singleCoreN) <= cores
  if (!add(l.M, sM, x) || !add(l.N, sN, y) || !mul((x - 1) / sM, (y - 1) / sN, x)) return false;
  const int64_t mBlocks = (l.M + sM - 1) / sM, nBlocks = (l.N + sN - 1) / sN;
  if (t[kDispatch] != 1 && x > l.cores) return false;
  // splitK == 1, or splitK * kq <= K where a K split is allowed; the switches' upper bounds
  if (l.k_split ? (!mul(t[kSplitK], l.kq, x) || x > l.K) : t[kSplitK] != 1) return false;
  if (t[kUnitFlag] > 1 || t[kDbA] > 2 || t[kDbB] > 2 || t[kDbC] > 2 || t[kOrder] > 1) return false;
  // kReorderLoad == 0, or 1 where allowed and K is not fully loaded into L1
  if (t[kReorder] != 0 && (t[kReorder] != 1 || !l.reorder ||
                           (!(mul(t[kBK], t[kStepKa], x) && x < l.K) && !(mul(t[kBK], t[kStepKb], x) && x < l.K))))
    return false;
  if (sM % 16 || sN % 16 || bM % 16 || bN % 16 || bK % l.kq) return false;
  if (!mul(bM, bK, l.ds, t[kDbA], x) || x > l.l0a) return false;
  if (!mul(bN, bK, l.ds, t[kDbB], x) || x > l.l0b) return false;
  if (!mul(bM, bN, 4, t[kDbC], x) || x > l.l0c) return false;
  if (l.bias_table && (!mul(bN, 4, x) || x > l.bt)) return false;
  // depthA1 % (stepM * stepKa) == 0 (and for B)
  if (!mul(t[kStepM], t[kStepKa], x) || t[kDepthA1] % x != 0) return false;
  if (!mul(t[kStepN], t[kStepKb], x) || t[kDepthB1] % x != 0) return false;
  // (baseM * baseK * depthA1 + baseN * baseK * depthB1) * ds [+ baseN * 4] <= L1
  int64_t l1;
  if (!mul(bM, bK, t[kDepthA1], x) || !mul(bN, bK, t[kDepthB1], y) || !add(x, y, l1) || !mul(l1, l.ds, l1)) return false;
  if (l.bias_table && (!mul(bN, 4, x) || !add(l1, x, l1))) return false;
  if (l1 > l.l1) return false;
  // stepM == 1 or baseK * stepKa >= K (and for N); kA, kB: K per L1 load of A, B
  int64_t kA, kB;
  if (!add(l.K, t[kSplitK], x)) return false;
  const int64_t Kc = ((x - 1) / t[kSplitK] + l.kq - 1) / l.kq * l.kq;
  if (t[kStepM] != 1 && t[kTE] != 2 && (!mul(bK, t[kStepKa], x) || x < Kc)) return false;
  if (t[kStepN] != 1 && t[kTE] != 2 && (!mul(bK, t[kStepKb], x) || x < Kc)) return false;
  // One K step a multiple of the other, or one K-loop count divides the other:
  // ((K + kA - 1) / kA) % ((K + kB - 1) / kB) == 0 or the reverse.
  if (t[kStepKa] % t[kStepKb] != 0 && t[kStepKb] % t[kStepKa] != 0) {
    if (!mul(bK, t[kStepKa], kA) || !add(l.K, kA, x)) return false;
    if (!mul(bK, t[kStepKb], kB) || !add(l.K, kB, y)) return false;
    const int64_t loopsA = (x - 1) / kA, loopsB = (y - 1) / kB;
    if (loopsA % loopsB != 0 && loopsB % loopsA != 0) return false;
  }
  return holds_round_robin(t, mBlocks, nBlocks);
}

// The restrictions on MatMulV3's knobs (build_spec: "dispatch <= 1 ..." on).
bool CubeModel::holds_round_robin(const int64_t* t, int64_t mBlocks, int64_t nBlocks) const {
  const Limits& l = lim_;
  const int64_t d = t[kDispatch], te = t[kTE], split = t[kSplitK];
  if (d > 1 || t[kL2Order] > 1 || t[kUsed] > l.cores) return false;
  if (d == 0 && (t[kUsed] != l.cores || t[kL2MCnt] != 1 || t[kL2NCnt] != 1 || t[kL2MBlk] != 1 || t[kL2NBlk] != 1 ||
                 t[kL2Order] != 0))
    return false;
  if (d == 1 && (t[kL2MCnt] != (mBlocks + t[kL2MBlk] - 1) / t[kL2MBlk] || t[kL2NCnt] != (nBlocks + t[kL2NBlk] - 1) / t[kL2NBlk]))
    return false;
  if (te != 0 && te != 2 && te != 3 && te != 10 && te != 20) return false;
  if (te == 0 && d == 1 && split != 1) return false;
  if (te == 2 && (d != 0 || split != 1)) return false;
  if (te == 3 && (d != 1 || split <= 1)) return false;
  int64_t x;
  if (te == 20 && (d != 1 || split != 1 || !mul(t[kBN], t[kStepN], x) || x < l.N || !mul(t[kBK], t[kStepKb], x) || x < l.K))
    return false;
  if (te == 10 && (d != 1 || split != 1 || !mul(t[kBM], t[kStepM], x) || x < l.M || !mul(t[kBK], t[kStepKa], x) || x < l.K))
    return false;
  return true;
}

// A tiling from TCubeTiling's 18 knobs (singleCoreM .. kReorderLoad, in the
// order they had before issue 47) and MatMulV3's 8 (dispatch, tilingEnable,
// usedCoreNum, l2MTileCnt, l2NTileCnt, l2MTileBlock, l2NTileBlock, l2IterateOrder).
std::vector<int64_t> tiling_row(const std::vector<int64_t>& cube, const std::vector<int64_t>& v3) {
  static const P kCube[] = {kSM, kSN, kBM, kBN, kBK, kStepM, kStepN, kStepKa, kStepKb, kDepthA1, kDepthB1,
                            kDbA, kDbB, kDbC, kOrder, kSplitK, kUnitFlag, kReorder};
  static const P kV3[] = {kDispatch, kTE, kUsed, kL2MCnt, kL2NCnt, kL2MBlk, kL2NBlk, kL2Order};
  std::vector<int64_t> row(kNP, 0);
  for (size_t i = 0; i < cube.size(); ++i) row[kCube[i]] = cube[i];
  for (size_t i = 0; i < v3.size(); ++i) row[kV3[i]] = v3[i];
  return row;
}

std::string num(double v) {
  std::ostringstream s;
  s << int64_t(v);
  return s.str();
}

// The restriction text: K (`K`, a number) loaded in one step of A and one of B.
std::string k_loaded_whole(const std::string& K) {
  return "baseK * stepKa >= " + K + " and baseK * stepKb >= " + K;
}

void CubeModel::build_spec() {
  const CubeProblem& q = q_;
  auto& s = spec_;
  build_values();
  build_restrictions();
  build_pruning();
  build_ascendc_baseline();
  // MatMulV3's heuristic where CANN runs it; otherwise (Conv: closed TBE
  // Conv2D on 910B; other SoCs) the Ascend C API-style default (build_ascendc_baseline) stands in.
  // Where MatMulV3 runs, its round-robin kernel is what AOE tunes: the searched
  // space is its neighbourhood (the static split stays valid for estimates of
  // custom Ascend C kernels and of tilings stored before issue 47).
  std::string kind = "approximate CANN default";
  auto v3 = v3_baseline(kind);
  // C220 WeightQuantBatchMatmul's custom kernel splits M and N only, each core running all of K
  // ([O] ops-nn .../weight_quant_batch_matmul_v2_tiling_custom.cpp GetMatMulTiling: SetSingleRange
  // singleCoreK = K, mDim x nDim == usedCoreNum): where MatMulV3's default would split K, the API-style
  // default (K whole) stands in.
  if (v3 && q.quant.wqbmm_custom && ((*v3)[kSplitK] > 1 || (*v3)[kTE] == 2)) v3.reset();
  const bool use_v3 = v3 && holds_all(v3->data());  // (never fails on the built-in SoCs)
  s.baseline = use_v3 ? *v3 : ascendc_baseline_;
  s.baseline_kind = use_v3 && q.v3_kernel ? kind : "approximate CANN default";
  if (use_v3) s.api_baseline = ascendc_baseline_;
  if (use_v3) {
    add_round_robin_values(s.baseline);
    add_round_robin_rules(s.baseline);
  }
}

// The knobs' values, their defaults for tilings stored before a knob existed, and lim_.
void CubeModel::build_values() {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t cores = p.cube_cores;
  const int64_t ds = q.in_size;
  const int64_t kq = std::max<int64_t>(16, q.k0);  // baseK granule ([A] TCubeTiling: C0 or 16)
  auto& s = spec_;
  s.names.assign(kNames, kNames + kNP);
  s.values.assign(kNP, {});
  // Multi-core split: per-core extents for 1..cores pieces, on 16 rows.
  auto splits = [&](int64_t n) {
    std::vector<int64_t> v;
    for (int64_t d = 1; d <= cores; ++d) v.push_back(align_up(cdiv(n, d), 16));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  s.values[kSM] = splits(q.M);
  s.values[kSN] = splits(q.N);
  s.values[kBM] = pow2_range(16, std::max<int64_t>(16, std::min<int64_t>(256, align_up(q.M, 16))));
  s.values[kBN] = pow2_range(16, std::max<int64_t>(16, std::min<int64_t>(256, align_up(q.N, 16))));
  // baseK up to 512 bytes of K per row (256 fp16 elements).
  s.values[kBK] = pow2_range(kq, std::max<int64_t>(kq, std::min<int64_t>(512 / ds, align_up(Kp_, kq))));
  s.values[kStepM] = {1, 2, 4};
  s.values[kStepN] = {1, 2, 4};
  s.values[kStepKa] = {1, 2, 4, 8};
  s.values[kStepKb] = {1, 2, 4, 8};
  s.values[kDepthA1] = {1, 2, 4, 8, 16, 32, 64};
  s.values[kDepthB1] = {1, 2, 4, 8, 16, 32, 64};
  s.values[kDbA] = {1, 2};
  s.values[kDbB] = {1, 2};
  s.values[kDbC] = {1, 2};
  s.values[kOrder] = {0, 1};
  // A K split adds partial sums, so no op may be fused after it, and Conv's
  // load3d is not modelled per K slice.  It adds C's traffic, so it is searched
  // only where it can pay: where the 128 x 128 blocks of M x N leave cores idle
  // (§1 case 11), or as slabs of at least 256 of K where A and B overflow L2.
  // (MSD's dequant sums its K blocks' partial products itself)
  const bool k_split = !q.conv && (q.epilogue.empty() || q.quant.msd_k_blocks > 0) && !q.fused_after;
  const int64_t Kq = align_up(Kp_, kq);
  s.values[kSplitK] = {1};
  const int64_t pieces = q.batch * cdiv(q.M, 128) * cdiv(q.N, 128);
  const bool overflow = q.a_bytes + q.b_bytes > p.l2;
  if (k_split)
    for (int64_t v = 2; v * kq <= Kq && (v * pieces <= cores || (overflow && Kq / v >= 256)); v *= 2)
      s.values[kSplitK].push_back(v);
  s.values[kUnitFlag] = {0, 1};
  // Staggered K loads are the Matmul API's (MDL), searched where the SoC has a same-address
  // factor to avoid (none measured: the knob would change nothing); Conv's load3d has no such knob.
  const bool reorder = !q.conv && p.same_address > 1;
  s.values[kReorder] = reorder ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  // The knobs of MatMulV3's round-robin kernel; add_round_robin_values()
  // widens them for MatMul (Conv keeps the static split).
  s.values[kDispatch] = {0};
  s.values[kUsed] = {cores};
  s.values[kL2MCnt] = s.values[kL2NCnt] = s.values[kL2MBlk] = s.values[kL2NBlk] = {1};
  s.values[kL2Order] = {0};
  s.values[kTE] = {0};
  s.added_defaults = {{kNames[kSplitK], 1},   {kNames[kUnitFlag], 0}, {kNames[kReorder], 0},
                      {kNames[kDispatch], 0}, {kNames[kUsed], cores}, {kNames[kL2MCnt], 1},
                      {kNames[kL2NCnt], 1},   {kNames[kL2MBlk], 1},   {kNames[kL2NBlk], 1},
                      {kNames[kL2Order], 0},  {kNames[kTE], 0}};

  lim_ = {q.M, q.N, Kq, cores, ds, kq, int64_t(p.l0a), int64_t(p.l0b), int64_t(p.l0c),
          int64_t(p.l1), int64_t(p.bt), q.bias && p.bt > 0, k_split, reorder};
}

// The restrictions, from lim_.
void CubeModel::build_restrictions() {
  const CubeProblem& q = q_;
  const int64_t cores = p_.cube_cores;
  const int64_t ds = q.in_size, kq = lim_.kq;
  auto& s = spec_;
  const Limits& l = lim_;  // holds_all() checks the same restrictions natively: keep the two in step
  const std::string M = num(q.M), N = num(q.N), K = num(l.K);
  const std::string mB = "((" + M + " + singleCoreM - 1) / singleCoreM)";
  const std::string nB = "((" + N + " + singleCoreN - 1) / singleCoreN)";
  auto& r = s.restrictions;
  // [A] TCubeTiling table 2.
  // (A static split: one rectangle per core; round-robin deals any number of blocks.)
  r.push_back("dispatch == 1 or " + mB + " * " + nB + " <= " + num(cores));
  r.push_back(l.k_split ? "splitK * " + num(kq) + " <= " + K : std::string("splitK == 1"));
  // Switches (double buffers, iteration order, UnitFlag) take their listed values only.
  r.push_back("unitFlag <= 1 and dbL0A <= 2 and dbL0B <= 2 and dbL0C <= 2 and iterateOrder <= 1");
  // Staggered K loading needs K loaded in several steps ([A] MatmulConfig enableKdimReorderLoad).
  const std::string k_full = k_loaded_whole(K);
  r.push_back(l.reorder ? "kReorderLoad == 0 or (kReorderLoad == 1 and not (" + k_full + "))"
                        : std::string("kReorderLoad == 0"));
  r.push_back("singleCoreM % 16 == 0 and singleCoreN % 16 == 0");
  r.push_back("baseM % 16 == 0 and baseN % 16 == 0 and baseK % " + num(kq) + " == 0");
  r.push_back("baseM * baseK * " + num(ds) + " * dbL0A <= " + num(l.l0a));
  r.push_back("baseN * baseK * " + num(ds) + " * dbL0B <= " + num(l.l0b));
  r.push_back("baseM * baseN * 4 * dbL0C <= " + num(l.l0c));  // L0C holds fp32/int32
  if (l.bias_table) r.push_back("baseN * 4 <= " + num(l.bt));  // bias table
  // L1 holds whole copies ([V3] CalL1Tiling: "depth % (stepKa * stepM) == 0"); the bank CANN
  // ships has depthB1 = 4 stepKb (more than double buffering, which the model prices as double).
  r.push_back("depthA1 % (stepM * stepKa) == 0");
  r.push_back("depthB1 % (stepN * stepKb) == 0");
  r.push_back("(baseM * baseK * depthA1 + baseN * baseK * depthB1) * " + num(ds) +
              (l.bias_table ? " + baseN * 4" : "") + " <= " + num(l.l1));
  // MDL: M (N) may take several base blocks only when K is fully loaded.
  // (K of one task: a K split's slice; single-core split-K's chunk is a step.)
  const std::string Kc = "((" + K + " + splitK - 1) / splitK + " + num(kq - 1) + ") / " + num(kq) + " * " + num(kq);
  r.push_back("stepM == 1 or tilingEnable == 2 or baseK * stepKa >= " + Kc);
  r.push_back("stepN == 1 or tilingEnable == 2 or baseK * stepKb >= " + Kc);
  // The K steps of A and B: one a multiple of the other ([A] TCubeTiling: stepKa and stepKb
  // in a multiple relation; MatMulV3's default with a bias takes stepKa 16, stepKb 4 on K = 7168),
  // or K loops that nest.
  r.push_back("stepKa % stepKb == 0 or stepKb % stepKa == 0 or ((" + K + " + baseK * stepKa - 1) / (baseK * stepKa)) % ((" + K +
              " + baseK * stepKb - 1) / (baseK * stepKb)) == 0 or ((" + K + " + baseK * stepKb - 1) / (baseK * stepKb)) % ((" +
              K + " + baseK * stepKa - 1) / (baseK * stepKa)) == 0");
  // MatMulV3's knobs ([V3] matmul_v3_tuning.h MatMulV3TunnerTiling; the kernel
  // templates of CheckAoeTilingEnable).  Static splits keep them neutral.
  r.push_back("dispatch <= 1 and l2IterateOrder <= 1 and usedCoreNum <= " + num(cores));
  r.push_back("dispatch == 1 or (usedCoreNum == " + num(cores) +
              " and l2MTileCnt == 1 and l2NTileCnt == 1 and l2MTileBlock == 1 and l2NTileBlock == 1 and "
              "l2IterateOrder == 0)");
  r.push_back("dispatch == 0 or (l2MTileCnt == (" + mB + " + l2MTileBlock - 1) / l2MTileBlock and l2NTileCnt == (" +
              nB + " + l2NTileBlock - 1) / l2NTileBlock)");
  r.push_back("tilingEnable == 0 or tilingEnable == 2 or tilingEnable == 3 or tilingEnable == 10 or tilingEnable == 20");
  r.push_back("tilingEnable != 0 or dispatch == 0 or splitK == 1");
  r.push_back("tilingEnable != 2 or (dispatch == 0 and splitK == 1)");
  r.push_back("tilingEnable != 3 or (dispatch == 1 and splitK > 1)");
  // Full load: all of B's (A's) K and N (M) in L1 at once.
  r.push_back("tilingEnable != 20 or (dispatch == 1 and splitK == 1 and baseN * stepN >= " + N +
              " and baseK * stepKb >= " + K + ")");
  r.push_back("tilingEnable != 10 or (dispatch == 1 and splitK == 1 and baseM * stepM >= " + M +
              " and baseK * stepKa >= " + K + ")");
  // holds_all() checks exactly these restrictions natively: one added or removed here must be there too.
  if (r.size() != 24 + size_t(l.bias_table))
    throw std::logic_error("internal: CubeModel::holds_all does not cover the restrictions of build_spec");
}

void CubeModel::build_pruning() {
  const Limits& l = lim_;
  const std::string K = num(l.K);
  auto& pr = spec_.pruning;
  // Pruning: no block or L1 extent beyond twice what it covers; use at least
  // half of the cores the shape can occupy.
  pr.push_back("baseM < 2 * singleCoreM and baseN < 2 * singleCoreN");
  pr.push_back("baseM * stepM < 2 * singleCoreM and baseN * stepN < 2 * singleCoreN");
  pr.push_back("dispatch == 1 or (baseK * stepKa < 2 * " + K + " and baseK * stepKb < 2 * " + K + ")");
  const std::string maximal = maximal_splits();
  if (!maximal.empty()) pr.push_back("dispatch == 1 or (" + maximal + ")");
  // L0A/L0B and the two L1 operands are double-buffered alike (Ascend C's
  // recommended setting has both on; the model treats the sides alike).
  pr.push_back("dbL0A == dbL0B");
  // The searched L1 buffering is single or double ([A] TCubeTiling: depth = step x {1, 2}).
  pr.push_back("depthA1 <= 2 * stepM * stepKa and depthB1 <= 2 * stepN * stepKb");
  // UnitFlag only overlaps (never slower in the model): the search keeps it on.
  pr.push_back("unitFlag == 1");
  // So does staggered K loading, where it is allowed.
  if (l.reorder) pr.push_back("kReorderLoad == 1 or (" + k_loaded_whole(K) + ")");
  pr.push_back("dispatch == 1 or depthA1 * stepN * stepKb == depthB1 * stepM * stepKa");
}

// Maximal multi-core splits only: no other split uses at least as many
// pieces along both M and N (and more along one) within the cores.
// With a K split, maximal within the cores left to each K slice (one wave)
// or within all of them (the slices run as waves).
// The pruning rule's alternatives ("" when none).
std::string CubeModel::maximal_splits() const {
  const CubeProblem& q = q_;
  const int64_t cores = p_.cube_cores;
  const auto& s = spec_;
  auto maximal_within = [&](int64_t cap) {
    std::vector<std::pair<int64_t, int64_t>> pieces;  // (mB, nB) of each value pair
    std::vector<std::pair<int64_t, int64_t>> vals;
    for (int64_t sm : s.values[kSM])
      for (int64_t sn : s.values[kSN]) {
        const int64_t a = cdiv(q.M, sm), b = cdiv(q.N, sn);
        if (a * b <= cap) pieces.push_back({a, b}), vals.push_back({sm, sn});
      }
    std::string any;
    for (size_t i = 0; i < pieces.size(); ++i) {
      bool maximal = true;
      for (const auto& o : pieces)
        if (o.first >= pieces[i].first && o.second >= pieces[i].second && o != pieces[i]) maximal = false;
      if (maximal)
        any += (any.empty() ? "" : " or ") + std::string("(singleCoreM == ") + num(vals[i].first) +
               " and singleCoreN == " + num(vals[i].second) + ")";
    }
    return any;
  };
  // A batch's matrices run as tasks too: the splits maximal within one
  // wave of the batch join those maximal within the cores (BatchMatMul
  // 12 x 128x128x64 on 20 cores had only 16 pieces per matrix, 10 waves of
  // 16x64 tasks, each paying its pipeline fill: 17.8 us against 6.3 us for
  // one 128x128 task per matrix).
  auto either = [](const std::string& a, const std::string& b) {
    return a.empty() || a == b ? b : b.empty() ? a : a + " or " + b;
  };
  const std::string within_all =
      either(maximal_within(std::max<int64_t>(1, cores / q.batch)), maximal_within(cores));
  std::string by_split;
  for (int64_t ks : s.values[kSplitK]) {
    std::string any = within_all;
    if (ks > 1 && ks <= cores) {
      const std::string one_wave = maximal_within(std::max<int64_t>(1, cores / (ks * q.batch)));
      if (!one_wave.empty()) any = any.empty() ? one_wave : one_wave + " or " + any;
    }
    if (s.values[kSplitK].size() == 1) by_split = any;
    else if (!any.empty())
      by_split += (by_split.empty() ? "" : " or ") + std::string("(splitK == ") + num(ks) + " and (" + any + "))";
  }
  return by_split;
}

void CubeModel::build_ascendc_baseline() {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t cores = p.cube_cores;
  const int64_t ds = q.in_size;
  const int64_t kq = lim_.kq;
  const auto& s = spec_;
  // Baseline ([A] TCubeTiling recommended values; [M] heuristics): all cores
  // (one wave of the batch's tasks) with the most even split, base (128, 256,
  // 64) shrunk to the per-core block, L0A/L0B double-buffered, L1
  // double-buffered when it fits, K loaded in one base step (no large
  // packets: that is what tuning adds).
  int64_t best_sm = s.values[kSM].back(), best_sn = s.values[kSN].back();
  double best_score = -1;
  for (int64_t sm : s.values[kSM])
    for (int64_t sn : s.values[kSN]) {
      // (A batch's matrices are tasks too: a batch of 12 on 20 cores is 12
      // whole-matrix tasks, not each matrix cut in 16.)
      const int64_t used = q.batch * cdiv(q.M, sm) * cdiv(q.N, sn);
      if (used > cores && !(sm == s.values[kSM].back() && sn == s.values[kSN].back())) continue;
      // Fewer-bytes-per-core split among those using the most cores.
      const double score = double(std::min(used, cores)) * 1e9 - double(sm + sn);
      if (score > best_score) best_score = score, best_sm = sm, best_sn = sn;
    }
  auto floor_pow2 = [](int64_t v) { int64_t r = 16; while (r * 2 <= v) r *= 2; return r; };
  int64_t bm = std::min<int64_t>(128, floor_pow2(best_sm));
  int64_t bn = std::min<int64_t>(256, floor_pow2(best_sn));
  int64_t bk = std::min<int64_t>(std::max<int64_t>(kq, 128 / ds), s.values[kBK].back());
  int64_t dba = 2, dbb = 2, dbc = 2;
  // Shrink until the buffers fit: double buffering first, then K, then the base block
  // itself (user platforms may have small L0 buffers; the built-in ones never get there).
  while (bm * bk * ds * dba > p.l0a || bn * bk * ds * dbb > p.l0b) {
    if (dba == 2) dba = dbb = 1;
    else if (bk > kq) bk = std::max<int64_t>(kq, bk / 2);
    else if (bn > 16 && bn * bk * ds > p.l0b) bn /= 2;
    else if (bm > 16) bm /= 2;
    else break;
  }
  while (bm * bn * 4 * dbc > p.l0c) {
    if (dbc == 2) dbc = 1;
    else if (bn > 16) bn /= 2;
    else if (bm > 16) bm /= 2;
    else break;
  }
  int64_t depth = 2;
  if ((bm * bk * depth + bn * bk * depth) * ds + (q.bias && p.bt > 0 ? bn * 4 : 0) > p.l1) depth = 1;
  ascendc_baseline_ = tiling_row({best_sm, best_sn, bm, bn, bk, 1, 1, 1, 1, depth, depth, dba, dbb, dbc, 0, 1, 0, 0},
                                 {0, 0, cores, 1, 1, 1, 1, 0});
}

std::optional<std::vector<int64_t>> CubeModel::v3_baseline(std::string& kind) const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  // MatMulV3's 910B tiler: split AIC/AIV, FixPipe L0C -> GM, 128 KiB L0C
  // ([V3] GetMoreArgs' L0C switch); fp16/bf16/fp32 ([V3] GetDtype).
  const bool a2 = c220(p) && p.fixpipe;
  // (WeightQuantBatchMatmul runs its own arch35 kernel and tiler: the API-style default stands in.)
  if (q.quant.msd_single_n > 0) return msd_group_baseline();
  if (q.quant.msd_k_blocks > 0) return msd_baseline();
  if (q.quant.qbmm_basic > 0) return qbmm_basic_baseline();
  if (!q.conv && q.quant.antiquant.empty() && dav3510(p)) return asw_baseline();
  if (!q.conv && !q.quant.antiquant.empty() && dav3510(p)) return wqbmm_as_baseline();
  if (q.conv || !a2 || (q.dtype != "float16" && q.dtype != "bfloat16" && q.dtype != "float32")) return std::nullopt;
  MatMulV3Case c{q.M, q.K, q.N, q.trans_a, q.trans_b, q.bias, q.dtype, false};
  MatMulV3Hw hw{p.cube_cores, int64_t(p.l1), int64_t(p.l0a), int64_t(p.l0b), int64_t(p.l0c), int64_t(p.ub),
                int64_t(p.l2), int64_t(p.bt)};
  const MatMulV3Tiling v = matmul_v3_default_tiling(c, hw);
  // The model's template: split-K variants 5 (NKM) and 6 (GM -> L1) are
  // priced as 2; the FixPipe digit (thousands) is not priced.
  const int64_t units = v.tilingEnable % 10, tens = v.tilingEnable / 10 % 10;
  int64_t te = 0;
  if (units == 2 || units == 5 || units == 6) te = 2;
  else if (units == 3) te = 3;
  else if (tens == 1 || tens == 2) te = 10 * tens;
  const bool exact = v.exact && q.batch == 1 && te == v.tilingEnable % 1000;
  const int64_t dispatch = te == 2 ? 0 : 1;
  const int64_t sM = align_up(v.singleCoreM, 16), sN = align_up(v.singleCoreN, 16);
  const int64_t split = te == 3 ? cdiv(q.K, v.singleCoreK) : 1;
  const int64_t mB = cdiv(q.M, sM), nB = cdiv(q.N, sN);
  int64_t mBlk = std::min(std::max<int64_t>(v.l2MTileBlock, 1), mB), nBlk = std::min(std::max<int64_t>(v.l2NTileBlock, 1), nB);
  if (te == 3) mBlk = mB, nBlk = nB;  // the split-K templates run over one L2 tile
  const int64_t used = dispatch == 1 ? v.usedCoreNum : int64_t(p.cube_cores);
  std::vector<int64_t> b = tiling_row({sM, sN, v.baseM, v.baseN, v.baseK, v.stepM, v.stepN, v.stepKa, v.stepKb, v.depthA1,
                                       v.depthB1, v.dbL0A, v.dbL0B, v.dbL0C, v.iterateOrder, split,
                                       1,  // unitFlag: MatMulV3's kernels use MM_CFG_NO_PRELOAD ([V3-kernel] mat_mul_v3_common.h)
                                       0},
                                      {dispatch, te, used, cdiv(mB, mBlk), cdiv(nB, nBlk), mBlk, nBlk, v.l2IterateOrder});
  if (dispatch == 0) b[kL2MCnt] = b[kL2NCnt] = b[kL2MBlk] = b[kL2NBlk] = 1, b[kL2Order] = 0;
  kind = exact ? "CANN MatMulV3 default" : "approximate CANN default";
  return b;
}

// DAV_3510 (950: split cores, FixPipe, 256 KiB L0C): MatMulV3's adaptive sliding-window template,
// which CANN's arch35 matmuls run ([V3-35] hicann/ops-nn matmul/mat_mul_v3/op_host/op_tiling/arch35:
// matmul_v3_tiling_helper.cpp ResetBaseDav3510 / CalL1TilingDefault, matmul_v3_asw_tiling.cpp):
// base 256 x 256 x 128 B (shrunk to M and N), L0C single-buffered, the base blocks dealt round-robin
// over all cores, and K in L1 copies of up to 8 base steps such that A and B double-buffered fit L1,
// neither operand's pair over half of it, preferring a copy whose K is a multiple of 256 B.
// Not restated: the tail-block re-split and the full-load variants.
std::vector<int64_t> CubeModel::asw_baseline() const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t ds = q.in_size, kq = q.k0;
  const int64_t bm = std::min<int64_t>(256, align_up(q.M, 16)), bn = std::min<int64_t>(256, align_up(q.N, 16));
  const int64_t bk = std::min<int64_t>(std::max<int64_t>(kq, 128 / ds), align_up(q.K, kq));
  const int64_t l1 = int64_t(p.l1) - (q.bias ? bn * 2 * 4 : 0);
  int64_t step = 1;
  for (int64_t s = 1; s <= std::min<int64_t>(cdiv(q.K, bk), 8); ++s) {
    const int64_t a = bm * bk * s * ds, b = bn * bk * s * ds;
    if ((a + b) * 2 > l1 || std::max(a, b) * 4 > int64_t(p.l1)) break;
    if (bk * s * ds % 256 == 0 || (step * bk * ds) % 256 != 0) step = s;
  }
  const int64_t mB = cdiv(q.M, bm), nB = cdiv(q.N, bn);
  return tiling_row({bm, bn, bm, bn, bk, 1, 1, step, step, 2 * step, 2 * step, 2, 2, 1, 0, 1, 1, 0},
                    {1, 0, std::min<int64_t>(p.cube_cores, mB * nB * q.batch), 1, 1, mB, nB, 0});
}

// DAV_3510's WeightQuantBatchMatmul: the adaptive-split template, which CANN's arch35 tiler tries
// first ([O] ops-nn matmul/weight_quant_batch_matmul_v2/op_host/op_tiling/arch35/
// weight_quant_batch_matmul_v2_adaptive_split_tiling.cpp, ADAPTIVE_SPLIT_PRIORITY 7 below the
// reg-base and ASW templates; its ComputeCubeSplit / OptimizeMatmulTiling / ComputeBasicTiling):
// N in L1 blocks of 256 over min(cores, N / 256) cores, M in blocks of up to 256 rows over the
// cores left, so small M runs on N / 256 cores, not all; base K from half of L0A over a 256-wide
// N block (64 for fp16), K in L1 copies of 256, both double-buffered, one L0C buffer; A kept in
// L1 for the whole K when baseM x K fits half of L1 (240 KiB with a bias).  Not restated: the
// high-performance split of transposed weights (per channel) and the tail re-split.
std::vector<int64_t> CubeModel::wqbmm_as_baseline() const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t ds = q.in_size, cores = p.cube_cores;
  const int64_t n_blocks = std::min<int64_t>(cores, cdiv(q.N, 256));
  const int64_t m_blocks = std::max<int64_t>(1, std::min<int64_t>(cdiv(q.M, 256), cores / n_blocks));
  const int64_t sm = cdiv(q.M, m_blocks), bm = std::min<int64_t>(q.bias ? 240 : 256, align_up(sm, 16));
  const int64_t bn = std::min<int64_t>(256, align_up(cdiv(q.N, n_blocks), 16));
  const int64_t bk = std::max<int64_t>(16, int64_t(p.l0a) / 2 / ds / 256 / 16 * 16);
  const int64_t step = cdiv(256, bk);
  const int64_t a_l1 = q.bias ? 240 * 1024 : 256 * 1024;
  const bool a_full = bm * align_up(q.K, 16) * ds <= a_l1;
  const int64_t step_a = a_full ? cdiv(align_up(q.K, 16), bk) : step;
  const int64_t mB = cdiv(q.M, align_up(sm, 16)), nB = cdiv(q.N, bn);
  return tiling_row({align_up(sm, 16), bn, bm, bn, bk, 1, 1, step_a, step, a_full ? step_a : 2 * step, 2 * step, 2, 2,
                     1, 0, 1, 1, 0},
                    {1, a_full ? 10 : 0, std::min(m_blocks * n_blocks, mB * nB * q.batch), 1, 1, mB, nB, 0});
}

// C220's WeightQuantBatchMatmul MSD template ([O] ops-nn matmul/weight_quant_batch_matmul_v2/op_host/
// op_tiling/weight_quant_batch_matmul_v2_tiling_msd.cpp, weight_quant_batch_matmul_v2_compute_matmul_
// tiling.cpp): M not split (cubeBlockDimM 1), N over the cores in floor(N / cores) columns rounded up
// to 256 (ND K x N weight; GetMatMulTiling) or 32 (transposed weight; MsdA16W8CommonTiling), base
// 2M x 256 x 128, K in msd_k_blocks blocks.  L1 copies: a transposed weight takes CalcCommonTiling's
// stepKb 4 and A whole in L1 when its 2M x K slices fit 256 KiB, or, up to 384 KiB (or when 256 KiB
// does not fit L1 beside B), base 2M x 128 x 256 with stepKb 2 and A whole; an ND K x N weight takes the TBE cache
// tiling (GetCacheTiling -> GenTiling), not restated: one base block per copy (stepKb 1) stands in,
// the depth that reproduces the three fit-half MSD records of cann_bench_calibration.json (910B2
// predicted / measured 1.05, 1.12, 1.10; with stepKb 4: 0.70, 0.93, 0.74), each copy then a round
// that waits out the HBM latency (mte2_miss_cycles).
std::vector<int64_t> CubeModel::msd_baseline() const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t task_n = q.quant.msd_task_n > 0 ? std::min(q.N, q.quant.msd_task_n) : q.N;
  const int64_t n_align = q.trans_b ? 32 : 256;
  const int64_t sn = std::max(n_align, align_up(task_n / p.cube_cores, n_align));
  const int64_t sm = align_up(q.M, 16), kc = align_up(cdiv(q.K, q.quant.msd_k_blocks), q.k0);
  int64_t bn = std::min<int64_t>(256, sn), bm = sm, bk = std::min<int64_t>(128, kc), depth_b = q.trans_b ? 4 : 1;
  bool a_full = false;
  if (q.trans_b && q.M * q.K <= 384 * 1024) {
    const int64_t a_l1 = bm * 128 * cdiv(kc, 128);  // CalcCommonTiling: depthA1Tmp = ceil(K / 128)
    a_full = q.M * q.K <= 256 * 1024 && a_l1 + bn * 128 * 8 <= int64_t(p.l1);
    if (!a_full && a_l1 * 2 + 128 * 256 * 4 <= int64_t(p.l1)) {
      bn = std::min<int64_t>(128, sn), bk = std::min<int64_t>(256, kc), depth_b = 2;
      a_full = true;
    }
  }
  // (int4's 3M rows: baseN within L0C, SimpleIncreTiling's l0cMaxBaseN; int8's 2M <= 128 always fits)
  bn = std::min(bn, std::max<int64_t>(16, int64_t(p.l0c) / (bm * 4) / 16 * 16));
  const int64_t k_steps = cdiv(kc, bk);
  const int64_t step_b = std::min<int64_t>(depth_b, k_steps);
  // (A whole: its K steps a multiple of B's, as CANN's ceil(K / 128) over the whole K is for K in 512s)
  const int64_t step_a = a_full ? align_up(k_steps, step_b) : step_b;
  const int64_t split = q.quant.msd_k_blocks;
  // (K blocks: its (slab, K block) tasks dealt over the cores, the model's split-K template 3; N beyond
  // one task of taskNSize columns: the tasks one after another, each over the cores, i.e. dealt in waves)
  const bool dealt = split > 1 || cdiv(q.N, sn) > p.cube_cores;
  const int64_t dispatch = dealt ? 1 : 0, te = split > 1 ? 3 : 0;
  const int64_t mb = dealt ? cdiv(q.M, sm) : 1, nb = dealt ? cdiv(q.N, sn) : 1;
  return tiling_row({sm, sn, bm, bn, bk, 1, 1, step_a, step_b, a_full ? step_a : 2 * step_a, 2 * step_b, 2, 2, 1, 0,
                     split, 1, 0},
                    {dispatch, te, p.cube_cores, 1, 1, mb, nb, 0});
}

// C220's WeightQuantBatchMatmul MsdGroup template ([O] ops-nn matmul/weight_quant_batch_matmul_v2/op_host/
// op_tiling/weight_quant_batch_matmul_v2_tiling_msd_group.cpp DoOpTiling, GetMatMulTiling): N over
// cubeBlockDimN cores in 2048 columns, K over the other cores in msd_k_blocks blocks (groups whole), each
// core's GEMM one group at a time (SetFixSplit: base align(order x M, 16) x 512 x groupSize), A whole in L1
// (CopyInAL1 of the core's K), B one group per copy with ping-pong (inQueueBL1_).  The kernel copies the
// group's 2048 columns at once; the model's B copy is baseN x stepN wide, its step rule keeps stepN 1
// under a K split and L0B holds 512 x 64 twice, so a copy here takes four groups of 512 columns instead
// (stepKb 4, fewer where L1 cannot hold them beside A): the kernel's bytes and count of copies, each a
// round that waits out the HBM latency.
std::vector<int64_t> CubeModel::msd_group_baseline() const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const int64_t sm = align_up(q.M, 16), sn = std::min(q.N, q.quant.msd_single_n), split = q.quant.msd_k_blocks;
  const int64_t bn = std::min<int64_t>(512, align_up(sn, 16));
  const int64_t bk = q.quant.msd_group;
  const int64_t kc = align_up(cdiv(q.K, split), q.k0), k_steps = cdiv(kc, bk);
  // (A whole: its K steps a multiple of B's, the model's K-step rule)
  int64_t step_b = std::min<int64_t>(2048 / bn, k_steps);
  while (step_b > 1 && (sm * bk * align_up(k_steps, step_b) + bn * bk * 2 * step_b) * q.in_size > int64_t(p.l1)) --step_b;
  const int64_t step_a = align_up(k_steps, step_b);
  const int64_t dispatch = split > 1 ? 1 : 0, te = split > 1 ? 3 : 0;
  const int64_t db_c = 2 * sm * bn * 4 <= int64_t(p.l0c) ? 2 : 1;  // dbL0C: 2 where two int32 tiles fit
  return tiling_row({sm, sn, sm, bn, bk, 1, 1, step_a, step_b, step_a, 2 * step_b, 2, 2, db_c, 0, split, 1, 0},
                    {dispatch, te, p.cube_cores, 1, 1, 1, split > 1 ? cdiv(q.N, sn) : 1, 0});
}

namespace {
// The cores' first-touch spread of a dealing (CalcCoreDistribution): each core starts a run of
// `round` consecutive blocks (round - 1 after the first total % cores), the blocks numbered along N
// (row first) or along M (col_first); returns the most cores starting in one row or column of
// blocks, and the rows and columns some core starts in.
// (m_clash, n_clash: the most cores starting in one row, in one column; clash the larger.)
struct QbmmDist { int64_t clash, rows, cols, m_clash, n_clash; };
QbmmDist qbmm_core_dist(int64_t mc, int64_t nc, bool col_first, int64_t round, int64_t used) {
  std::vector<int64_t> md(mc, 0), nd(nc, 0);
  const int64_t pre = (mc * nc) % used ? (mc * nc) % used : used;
  for (int64_t i = 0, t = 0; i < used; t += i >= pre ? round - 1 : round, ++i) {
    ++md[col_first ? t % mc : t / nc];
    ++nd[col_first ? t / mc : t % nc];
  }
  const auto zero = [](const std::vector<int64_t>& v) { return int64_t(std::count(v.begin(), v.end(), 0)); };
  const int64_t m_clash = *std::max_element(md.begin(), md.end()), n_clash = *std::max_element(nd.begin(), nd.end());
  return {std::max(m_clash, n_clash), mc - zero(md), nc - zero(nd), m_clash, n_clash};
}

// The basic tiler's choice of base block (SetBase, CompareBase, CheckLoadAndCalcSize, CheckL2Load,
// CheckMTE1; IsMNSmallForMultiCores / ProcessMNSmallShape; [O] ops-nn quant_batch_matmul_v3_basic_tiling.cpp):
// from the default 128 x 256, candidates per transposition (CalcL0Tiling) that fit L0C and the
// bias/scale tables replace it when they load less into L1 (M x N blocks + N x M blocks), run
// fewer rounds, or (same baseM + baseN; vector dequant, or K > N) start on fewer rows and
// columns in L2 without piling too many cores onto one (its example: 1024 x 4096 x 14336 with a
// per-token scale swaps to 256 x 128), or when M and N are within 10% and baseM < baseN.
std::pair<int64_t, int64_t> qbmm_basic_base(int64_t M, int64_t K, int64_t N, bool ta, bool tb, bool ub, bool bias,
                                            int64_t cores) {
  static const std::vector<int64_t> all{64, 80, 96, 128, 192, 256, 320, 384, 512}, nd{128, 256, 512, 1024},
      all_nd{64, 128, 256, 512}, nz{64, 96, 128, 160, 192, 256, 320, 384, 512};
  const std::vector<int64_t>& mb = ta ? (tb || M >= N ? nd : all_nd) : all;
  const std::vector<int64_t>& nb = ta ? (tb ? all : M >= N ? nz : all_nd) : (tb ? all : nd);
  auto fit = [&](int64_t& bm, int64_t& bn) {  // ModifyBase
    if (bm > M) bm = align_up(M, ta ? 32 : 16);
    if (bn > N) bn = align_up(N, tb ? 16 : 32);
  };
  int64_t bm = 128, bn = 256;
  fit(bm, bn);
  int64_t used = std::min(cores, cdiv(M, bm) * cdiv(N, bn)), round = cdiv(cdiv(M, bm) * cdiv(N, bn), used);
  auto dist = [&](int64_t m_, int64_t n_, int64_t r, int64_t u) {  // GetCalcOrder, then the spread
    const int64_t mc = cdiv(M, m_), nc = cdiv(N, n_);
    bool col = N / 5 > M;
    if (u >= 2 && mc % (u / 2) == 0) col = true;
    else if (u >= 2 && nc % (u / 2) == 0) col = false;
    const QbmmDist d = qbmm_core_dist(mc, nc, col, r, u);
    return std::make_pair(d.clash, d.rows * m_ + d.cols * n_);
  };
  auto [clash, first_l2] = dist(bm, bn, round, used);
  int64_t best_load = M * cdiv(N, bn) + N * cdiv(M, bm);
  // Both M and N outer axes of a small problem: fill the cores in one round instead.
  const bool small = tb && !ta && K >= 512 &&
                     std::min(cdiv(M, 128) * cdiv(N, 256), cdiv(M, 256) * cdiv(N, 128)) <= cores / 2;
  for (size_t i = 0; i < mb.size(); ++i) {
    if (M < mb[i] && i > 0 && M <= mb[i - 1]) break;
    for (int64_t n0 : nb) {
      if (K <= 2048 && (n0 == 160 || n0 == 192 || n0 == 320)) continue;
      int64_t m = mb[i], n = n0;
      fit(m, n);
      if (32768 / m < n || (bias && n > 256) || (!ub && n > 512)) break;  // L0C; CheckBiasAndScale (single L0C)
      const int64_t tot = cdiv(M, m) * cdiv(N, n), u = std::min(cores, tot), r = cdiv(tot, u);
      if (small) {
        if ((tot > used && tot <= cores) || (tot == used && n > bn)) bm = m, bn = n, used = tot;
        continue;
      }
      if (m == bm && n == bn) continue;
      const int64_t load = M * cdiv(N, n) + N * cdiv(M, m);
      if (load * 0.9 > best_load) continue;
      bool update = best_load * 0.9 > load ||
                    (r >= 5 && std::min(m, n) >= 128 && (M * cdiv(N, bn) + N * cdiv(M, bm)) * 0.95 > load);
      if (!update) {
        const int64_t prev = best_load;
        best_load = std::min(best_load, load);
        // CheckTrans (its base defaults to 256): x1 transposed alone always; else an inner-axis base of 256,
        // or of 512 that loads less.
        const int64_t axis = ta ? (tb ? m : 256) : (tb ? 0 : n);
        update = axis == 256 || (axis == 512 && load < prev);
        if (!update) {
          const int64_t was = bm * bn * round, now = m * n * r;
          if (was * 0.9 > now) update = true;
          else if (now > was) continue;
        }
      }
      update = update || (r >= 5 && double(bm) * bn / (bm + bn) < double(m) * n / (m + n));
      int64_t c = 0, l2 = 0;
      if (!update && m + n == bm + bn) {
        std::tie(c, l2) = dist(m, n, r, u);
        const double better = std::max((ub ? 0.75 : 0.85) * double(c) / double(clash), 1.3);
        update = (ub || N < K) && l2 < first_l2 && c <= (ub ? 8 : 6) && c / 2 <= clash && first_l2 / better >= l2;
        update = update || (m < n && std::abs(M - N) < 0.1 * N);
      }
      if (update) {
        bm = m, bn = n, used = u, round = r;
        std::tie(clash, first_l2) = l2 ? std::make_pair(c, l2) : dist(m, n, r, u);
      }
    }
  }
  return {bm, bn};
}

// The basic tiler's L2 cache tiling (DoL2CacheTiling, CalcTile, CalcTileCnt, CheckTileTail, IsTileClash,
// GetCalcOrder; [O] ops-nn quant_batch_matmul_v3_basic_tiling.cpp): when A + B + C reach 100/192 of L2
// (110/192 with the vector dequant) or one of them 128 MB, M and N are cut into L2 tiles of whole base
// blocks, searched from the largest (at most 625 blocks a tile): a tile must keep the cores busy, fit
// under that threshold, leave tails of at least 0.8 of a tile, and start no more than 6 (nor more than the
// last choice) cores on one row or column of blocks, in any of its four full/tail variants; an axis of
// up to 15 MB, or whose tile would hold all its blocks, stays whole.  The kernel walks the tiles M tile
// outer, N tile inner (quant_batch_matmul_v3_pertoken_basic.h Process: consecutive tiles share A), and
// deals each tile's blocks in the tile's own order (GetCalcOrder), which replaces DetermineCalcOrder's.
struct QbmmL2 {
  int64_t m_tiles = 1, n_tiles = 1, m_blk = 0, n_blk = 0;
  int order = -1;  // -1: not split (DetermineCalcOrder stands); 0 M first (COL_FIRST), 1 N first (ROW_FIRST)
};
QbmmL2 qbmm_l2_tiling(int64_t M, int64_t K, int64_t N, int64_t bm, int64_t bn, bool ub, int out_size,
                      const Platform& p) {
  constexpr int64_t kMiB = int64_t(1) << 20;
  auto total = [&](int64_t m, int64_t n) { return m * K + K * n + m * n * out_size; };  // GetTotalSize
  const int64_t size_a = M * K, size_b = K * N, size_c = M * N * out_size;
  const double thr = p.l2 * (ub ? 110.0 : 100.0) / 192;
  QbmmL2 r;
  r.m_blk = cdiv(M, bm), r.n_blk = cdiv(N, bn);
  if (double(size_a + size_b + size_c) < thr && size_a < 128 * kMiB && size_b < 128 * kMiB && size_c < 128 * kMiB)
    return r;
  // CalcTileCnt: (M tiles, N tiles) from the largest tiles down, repeats skipped.
  std::vector<std::pair<int64_t, int64_t>> counts;
  int64_t last_inner = -1;
  for (int64_t ob = 625; ob > 0; --ob) {
    const int64_t ot = cdiv(M, bm * ob);
    if (ob > 1 && ot == cdiv(M, bm * (ob - 1))) continue;
    for (int64_t ib = 625 / ob; ib > 0; --ib) {
      const int64_t it = cdiv(N, bn * ib);
      if (it == last_inner) continue;
      last_inner = it;
      counts.emplace_back(ot, it);
    }
  }
  const int64_t none = std::numeric_limits<int64_t>::max();
  std::array<std::pair<int64_t, int64_t>, 4> clash;
  clash.fill({none, none});
  int64_t m_split = M, n_split = N, max_used = 0;
  int order = 1;  // nothing found: calOrder 0, the kernel's ROW_FIRST
  bool found = false;
  for (const auto& [ot, it] : counts) {
    const int64_t ms = align_up(cdiv(M, ot), bm), ns = align_up(cdiv(N, it), bn);
    const int64_t mc = cdiv(ms, bm), nc = cdiv(ns, bn), used = std::min<int64_t>(mc * nc, p.cube_cores);
    if (used < max_used || double(total(ms, ns)) >= thr) continue;
    const int64_t m_tail = M % ms, n_tail = N % ns;
    if (found && ((m_tail && m_tail < ms * 0.8) || (n_tail && n_tail < ns * 0.8))) continue;
    bool col = ns / 5 > ms;
    if (used >= 2 && mc % (used / 2) == 0) col = true;
    else if (used >= 2 && nc % (used / 2) == 0) col = false;
    auto tmp = clash;
    bool bad = false;
    const int64_t sizes[4][2] = {{ms, ns}, {ms, n_tail}, {m_tail, ns}, {m_tail, n_tail}};
    for (int i = 0; i < 4 && !bad; ++i) {  // IsTileClash
      if (sizes[i][0] == 0 || sizes[i][1] == 0) continue;
      const int64_t tm = cdiv(sizes[i][0], bm), tn = cdiv(sizes[i][1], bn);
      const int64_t u = std::min<int64_t>(tm * tn, p.cube_cores);
      const QbmmDist d = qbmm_core_dist(tm, tn, col, cdiv(tm * tn, u), u);
      bad = d.clash > 6 || d.m_clash > tmp[i].first || d.n_clash > tmp[i].second;
      if (!bad) tmp[i] = {d.m_clash, d.n_clash};
    }
    if (bad && found) continue;
    m_split = ms, n_split = ns, max_used = used, order = col ? 0 : 1, found = true;
    clash = tmp;
  }
  r.order = order;
  r.m_blk = cdiv(m_split, bm), r.n_blk = cdiv(n_split, bn);
  r.m_tiles = cdiv(M, r.m_blk * bm), r.n_tiles = cdiv(N, r.n_blk * bn);
  if (r.m_blk >= M / bm || size_a <= 15 * kMiB) r.m_tiles = 1, r.m_blk = cdiv(M, bm);
  if (r.n_blk >= N / bn || size_b <= 15 * kMiB) r.n_tiles = 1, r.n_blk = cdiv(N, bn);
  return r;
}
}  // namespace

// C220's QuantBatchMatmulV3 basic template ([O] ops-nn matmul/quant_batch_matmul_v3/op_host/op_tiling/
// quant_batch_matmul_v3_basic_tiling.cpp, the non-arch35 tiler; DoBasicTiling): the base block of
// qbmm_basic_base (SetBase), baseK the largest of 1024 .. 32 B that half
// of L0A holds beside baseM and baseN (GetBaseK), the base blocks dealt round-robin over min(cores,
// blocks) cores, L0C double-buffered only when two blocks and their bias/scale fit (CheckDbL0c).  L1
// (CalcL1Tiling, GetStepK, CorrectStepK, ModifyStepKForKOuter): each operand's double buffer sized to
// half of L1, the deeper halved when both overflow L1 less the bias and scale rows, the smaller K step
// cut to a multiple of 256 B (to 256 B when K <= 512 B) and the larger a multiple of it, then for an
// ND K x N weight (K its outer axis) B's step cut to 2 and A's doubled when B gave up as many bytes:
// 910B2 at 1024 x 4096 x 14336 runs stepKa 8, stepKb 2.  L2 tiles: qbmm_l2_tiling.
std::vector<int64_t> CubeModel::qbmm_basic_baseline() const {
  const Platform& p = p_;
  const CubeProblem& q = q_;
  const std::pair<int64_t, int64_t> base =
      qbmm_basic_base(q.M, q.K, q.N, q.trans_a, q.trans_b, q.quant.qbmm_basic == 2, q.bias, p.cube_cores);
  const int64_t bm = base.first, bn = base.second;
  const int64_t half_l0 = int64_t(p.l0a) / 2;
  int64_t bk = 32;
  for (int64_t k : {1024, 512, 256, 128, 64, 32})
    if (k <= std::min(half_l0 / bm, half_l0 / bn)) { bk = k; break; }
  const bool ub = q.quant.qbmm_basic == 2, bias = q.bias;
  auto fits_db = [&](int64_t n) { return !(bias && n > 128) && (ub || n <= 128); };  // bias table, FixPipe scale
  const int64_t dbc = bm * bn * 4 * 2 <= int64_t(p.l0c) && fits_db(bn) ? 2 : 1;
  const int64_t l1 = int64_t(p.l1), reserve = (bias ? bn * dbc * 4 : 0) + (ub ? 0 : bn * dbc * 8);
  int64_t da = l1 / 2 / bm / bk, db = l1 / 2 / bn / bk;
  if ((da * bm + db * bn) * bk >= l1 - reserve) (da >= db ? da : db) /= 2;
  int64_t sa = std::max<int64_t>(1, da / 2), sb = std::max<int64_t>(1, db / 2);
  int64_t kl1 = std::min(sa, sb) * bk;
  if (q.K <= 512) kl1 = std::min<int64_t>(kl1, 256);
  const int64_t step = kl1 / 256 * 256 / bk;
  int64_t& big = sa >= sb ? sa : sb;
  int64_t& small = sa >= sb ? sb : sa;
  if (step > 0) {
    small = step;
    int64_t times = big / small;
    if (bm < 64 || bn < 64) times = 1;
    else if (bm < 128 || bn < 128) times = std::min<int64_t>(times, 2);
    big = times * small;
    if (std::min(sa, sb) % 2 == 0) {
      if (q.trans_a) {
        const int64_t a2 = std::min<int64_t>(sa, 2);
        if (q.trans_b && sb <= 4 && (sa - a2) * bm >= sb * bn) sb *= 2;
        sa = a2;
      }
      if (!q.trans_b) {
        const int64_t b2 = std::min<int64_t>(sb, 2);
        if (!q.trans_a && sa <= 4 && (sb - b2) * bn >= sa * bm) sa *= 2;
        sb = b2;
      }
    }
  } else {
    big = big / small * small;
  }
  const int64_t mB = cdiv(q.M, bm), nB = cdiv(q.N, bn), used = std::min<int64_t>(p.cube_cores, mB * nB * q.batch);
  // The order blocks are dealt in (DetermineCalcOrder): M first (COL_FIRST; iterateOrder 0 in the
  // model's round-robin) when N > 5 M or when the cores' rounds divide M's block count but not N's,
  // N first (ROW_FIRST, 1) otherwise, and N first when M first would start 9 or more cores on one row
  // or column of blocks, more than N first would (its fallback, calOrder left 0: the kernel's default
  // ROW_FIRST).  An L2 split deals each tile in its own order (qbmm_l2_tiling).  The kernel hands each core a run of
  // consecutive blocks in that order ([O] .../op_kernel/quant_batch_matmul_v3_block.h
  // InitFirstTileBlockIndex), which the model prices as MatMulV3's dealing, every cores-th block:
  // it still charges every wave's first copies as L2 misses.  (Priced as runs, fewer copies miss and
  // the fit-half records of cann_bench_calibration.json come out 0.67-0.82 of measured: the L2-hit
  // rate of these copies, not restated, is then the gap.)
  const int64_t round = cdiv(mB * nB, used), half = std::max<int64_t>(1, used / 2);
  auto divides = [&](int64_t cnt) { return std::max(cnt, round) % std::min(cnt, round) == 0; };
  int64_t order = 1;
  const int64_t col_clash = q.N > 5 * q.M ? 0 : qbmm_core_dist(mB, nB, true, round, used).clash;
  if (q.N > 5 * q.M) order = mB % half != 0 && nB % half == 0 ? 1 : 0;
  else if (col_clash >= 9 && col_clash > qbmm_core_dist(mB, nB, false, round, used).clash) order = 1;
  else if (divides(nB) != divides(mB)) order = divides(nB) ? 0 : 1;
  else if (divides(nB)) order = bm < bn ? 0 : 1;
  else order = mB % half == 0 ? 0 : 1;
  const QbmmL2 l2 = qbmm_l2_tiling(q.M, q.K, q.N, bm, bn, ub, q.out_size, p);
  if (l2.order >= 0) order = l2.order;
  return tiling_row({bm, bn, bm, bn, bk, 1, 1, sa, sb, 2 * sa, 2 * sb, 2, 2, dbc, order, 1, 1, 0},
                    {1, 0, used, l2.m_tiles, l2.n_tiles, l2.m_blk, l2.n_blk, 0});
}

namespace {
void add_values(std::vector<int64_t>& list, std::initializer_list<int64_t> more) {
  for (int64_t v : more)
    if (v > 0 && std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  std::sort(list.begin(), list.end());
}
}  // namespace

// Round-robin (dispatch 1) values: the baseline's, the other orientation of
// its block, blocks dealt as one or two base blocks, and L2 tiles of 1..8
// blocks' worth of tiles per axis (AOE's neighbourhood, issue 47 / B.5 of
// ../shared/reference/cann_bank_and_default_tiling.md).
void CubeModel::add_round_robin_values(const std::vector<int64_t>& b) {
  auto& v = spec_.values;
  add_values(v[kDispatch], {1});
  add_values(v[kBM], {b[kBM], b[kBN]});
  add_values(v[kBN], {b[kBN], b[kBM]});
  add_values(v[kBK], {b[kBK]});
  for (int64_t x : std::vector<int64_t>(v[kBM])) add_values(v[kSM], {x, 2 * x});
  for (int64_t x : std::vector<int64_t>(v[kBN])) add_values(v[kSN], {x});
  add_values(v[kSM], {b[kSM], b[kBM] * b[kStepM]});
  add_values(v[kSN], {b[kSN], b[kBN] * b[kStepN], align_up(q_.N, 16)});
  add_values(v[kStepM], {b[kStepM]});
  add_values(v[kStepN], {b[kStepN]});
  add_values(v[kStepKa], {b[kStepKa]});
  add_values(v[kStepKb], {b[kStepKb]});
  add_values(v[kDepthA1], {b[kDepthA1], 2 * b[kStepKa]});
  add_values(v[kDepthB1], {b[kDepthB1], 2 * b[kStepKb]});
  add_values(v[kSplitK], {b[kSplitK]});
  add_values(v[kUsed], {b[kUsed]});
  if (q_.a_bytes + q_.b_bytes + q_.c_bytes > p_.l2) add_values(v[kL2Order], {1});
  add_values(v[kTE], {b[kTE]});
  // Deterministic multi-core split-K where the model searches K splits at all
  // (M x N leaves cores idle, or A and B overflow L2).
  if (v[kSplitK].size() > 1) add_values(v[kTE], {3});
  // Full loads where the kept operand fits half of L1.
  if (double(align_up(q_.N, 16)) * double(Kp_) * q_.in_size <= p_.l1 / 2) add_values(v[kTE], {20});
  if (double(align_up(q_.M, 16)) * double(Kp_) * q_.in_size <= p_.l1 / 2) add_values(v[kTE], {10});
  // L2 tiles matter only when A + B + C overflow L2 (l2_tile_reads); else one tile.
  const bool tiles = q_.a_bytes + q_.b_bytes + q_.c_bytes > p_.l2;
  add_values(v[kL2MCnt], {b[kL2MCnt]});
  add_values(v[kL2NCnt], {b[kL2NCnt]});
  add_values(v[kL2MBlk], {b[kL2MBlk]});
  add_values(v[kL2NBlk], {b[kL2NBlk]});
  for (int64_t sm : std::vector<int64_t>(v[kSM])) {
    const int64_t mb = cdiv(q_.M, sm);
    add_values(v[kL2MBlk], {mb});
    if (tiles)
      for (int64_t c : {2, 3, 4, 6, 8}) add_values(v[kL2MBlk], {cdiv(mb, c)}), add_values(v[kL2MCnt], {cdiv(mb, cdiv(mb, c))});
  }
  for (int64_t sn : std::vector<int64_t>(v[kSN])) {
    const int64_t nb = cdiv(q_.N, sn);
    add_values(v[kL2NBlk], {nb});
    if (tiles)
      for (int64_t c : {2, 3, 4, 6, 8}) add_values(v[kL2NBlk], {cdiv(nb, c)}), add_values(v[kL2NCnt], {cdiv(nb, cdiv(nb, c))});
  }
}

// The searched round-robin tilings: AOE's neighbourhood of MatMulV3's block
// (the bank CANN ships keeps baseK and, but for orientation, the block area:
// B.5 of ../shared/reference/cann_bank_and_default_tiling.md), each task one
// base block (two for BL1 full load, stepM blocks for split-K), all cores or
// the baseline's count.
void CubeModel::add_round_robin_rules(const std::vector<int64_t>& b) {
  auto& pr = spec_.pruning;
  const std::string area = num(b[kBM] * b[kBN] / 2), N = num(q_.N);
  // (One rule per last-bound knob: the space is enumerated in parameter order.)
  pr.push_back("dispatch == 0 or singleCoreM <= 4 * baseM");
  pr.push_back("dispatch == 0 or (singleCoreN <= 4 * baseN or singleCoreN >= " + N + ") and baseM * baseN >= " + area);
  pr.push_back("dispatch == 0 or baseK == " + num(b[kBK]));
  pr.push_back("dispatch == 0 or singleCoreM == baseM * stepM or (tilingEnable == 20 and singleCoreM == 2 * baseM) or "
               "tilingEnable == 10");
  // Copies of K longer than twice K only as the baseline's (MatMulV3 sizes stepK from L1, not from K).
  const std::string K = num(lim_.K);
  pr.push_back("dispatch == 0 or baseK * stepKa < 2 * " + K + " or stepKa == " + num(b[kStepKa]));
  pr.push_back("dispatch == 0 or baseK * stepKb < 2 * " + K + " or stepKb == " + num(b[kStepKb]));
  pr.push_back("dispatch == 0 or singleCoreN == baseN * stepN or singleCoreN >= " + N);
  pr.push_back("dispatch == 0 or usedCoreNum == " + num(p_.cube_cores) + " or usedCoreNum == " + num(b[kUsed]));
  // Static splits only as single-core split-K (template 2, where it is the baseline's).
  pr.push_back("dispatch == 1 or tilingEnable == 2");
  // The base template: one base block per task, L1 double-buffered (depth =
  // 2 x stepK, [V3] CalL1Tiling); dbL0A/dbL0B are not read from the bank
  // ([V3] TranslateAoeTiling keeps the API's 2).
  pr.push_back("dispatch == 0 or tilingEnable != 0 or (stepM == 1 and stepN == 1)");
  pr.push_back("dispatch == 0 or tilingEnable != 0 or (depthA1 == 2 * stepKa and depthB1 == 2 * stepKb)");
  pr.push_back("dispatch == 0 or (dbL0A == 2 and dbL0B == 2)");
  // Full-load and split-K templates run over one L2 tile ([V3] DoBL1FullLoadTilingBase,
  // DoAL1FullLoadTiling set one tile; the split-K ones keep the whole output per K slice),
  // and split-K loads A and B in equal K steps ([V3] SetBasicBlockOfMK33/NK33, SetBasicBlockOf24).
  pr.push_back("tilingEnable == 0 or (l2MTileCnt == 1 and l2NTileCnt == 1)");
  pr.push_back("tilingEnable != 3 or (stepKa == stepKb and stepM * stepN <= 3)");
}

// Without a bias table (before C220) the bias is added on the vector unit.
void finish_bias(CubeProblem& q, const Platform& p, const std::string& dtype) {
  if (q.bias && p.bt <= 0) vec_program("Add", dtype == "int8" ? "float16" : dtype, q.epilogue);
}

int cube_k0(const std::string& dtype) {
  if (dtype == "int8") return 32;
  if (dtype == "float32") return 8;
  return 16;
}

void check_cube_dtype(const std::string& dtype, const Platform& p, const std::string& kind) {
  if (std::find(p.cube_dtypes.begin(), p.cube_dtypes.end(), dtype) == p.cube_dtypes.end()) {
    std::string v;
    for (auto& d : p.cube_dtypes) v += (v.empty() ? "" : ", ") + d;
    fail(kind + ": dtype " + dtype + " is not supported by the cube of " + p.name + " (supported: " + v + ")");
  }
}

int out_dtype_size(const OpDesc& op, const std::string& dtype) {
  auto it = op.str_attrs.find("out_dtype");
  if (it != op.str_attrs.end() && !it->second.empty()) return dtype_size(canonical_dtype(it->second[0]));
  if (dtype == "int8") return 4;  // int32 accumulators
  return dtype_size(dtype);
}

// The split-policy attributes (see CubeProblem).
void read_split_policy(const OpDesc& op, const Platform& p, CubeProblem& q) {
  const int64_t ratio = attr_int(op, "mix_ratio", 0);
  const int64_t max_ratio = p.split ? p.vector_cores / std::max<int64_t>(1, p.cube_cores) : 1;
  if (ratio < 0 || ratio > max_ratio)
    fail(q.kind + ": mix_ratio " + std::to_string(ratio) + " is out of range: " + p.name + " has " +
         std::to_string(max_ratio) + " vector core(s) per cube core (0 = all)");
  const int64_t slots = attr_int(op, "workspace_slots", 2);
  if (slots < 1 || slots > 8)
    fail(q.kind + ": workspace_slots must be in 1..8 (GM tiles between cube and vector), got " + std::to_string(slots));
  const int64_t nonuni = attr_int(op, "nonuniform_split", 0);
  if (nonuni != 0 && nonuni != 1) fail(q.kind + ": nonuniform_split must be 0 or 1, got " + std::to_string(nonuni));
  q.mix_ratio = int(ratio);
  q.slots = int(slots);
  q.nonuniform = nonuni == 1;
}

}  // namespace

namespace {
// The GEMM of a MatMul / Gemm / BatchMatMul description (make_matmul_model; the quantised
// matmuls build theirs from it, grouped_quant_matmul.cpp).
CubeProblem matmul_problem(const OpDesc& op, const Platform& p) {
  CubeProblem q;
  q.kind = op.kind;
  q.grouped = op.kind == "GroupedMatmul";  // its groups are MatMul problems (grouped_quant_matmul.cpp)
  q.dtype = op.dtype;
  const std::string dtype = op.dtype;
  check_cube_dtype(dtype, p, op.kind);
  const bool gemm = op.kind == "Gemm";
  if (op.inputs.size() < 2 || op.inputs.size() > 3)
    fail(op.kind + ": expected 2 inputs (A, B) or 3 (A, B, bias), got " + std::to_string(op.inputs.size()));
  std::vector<int64_t> a = op.inputs[0], b = op.inputs[1];
  check_shape(a, op.kind + " input A");
  check_shape(b, op.kind + " input B");
  q.trans_a = attr_flag(op, gemm ? "transA" : "transpose_a");
  q.trans_b = attr_flag(op, gemm ? "transB" : "transpose_b");
  if (a.empty() || b.empty())  // ONNX MatMul takes no scalars (found by fuzzing: indexed out of range)
    fail(op.kind + ": A and B must have at least one dimension, got A " + shape_str(a) + " and B " + shape_str(b));
  if (gemm && (a.size() != 2 || b.size() != 2))
    fail("Gemm: A and B must be 2-D, got A " + shape_str(a) + " and B " + shape_str(b));
  if (a.size() == 1) { a.insert(a.begin(), 1); q.trans_a = false; }
  if (b.size() == 1) { b.push_back(1); q.trans_b = false; }
  const int64_t M = q.trans_a ? a[a.size() - 1] : a[a.size() - 2];
  const int64_t Ka = q.trans_a ? a[a.size() - 2] : a[a.size() - 1];
  const int64_t Kb = q.trans_b ? b[b.size() - 1] : b[b.size() - 2];
  const int64_t N = q.trans_b ? b[b.size() - 2] : b[b.size() - 1];
  if (Ka != Kb)
    fail(op.kind + ": inner dimensions differ: A " + shape_str(op.inputs[0]) + " has K=" + std::to_string(Ka) +
         ", B " + shape_str(op.inputs[1]) + " has K=" + std::to_string(Kb));
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const std::vector<int64_t> batch_shape = broadcast(ab, bb, op.kind + " batch dimensions");
  {
    double out = double(M) * double(N);
    for (auto d : batch_shape) out *= double(d);
    std::vector<int64_t> out_shape = batch_shape;
    out_shape.push_back(M);
    out_shape.push_back(N);
    check_fits(p, out, out_dtype_size(op, dtype), op.kind + " output " + shape_str(out_shape));
  }
  int64_t batch = numel(batch_shape);
  q.M = M; q.N = N; q.K = Ka; q.batch = batch;
  // Shared weights: fold the batch into M, as compilers do (one bigger GEMM).
  if (batch > 1 && numel(bb) == 1 && !q.trans_a) { q.M = M * batch; q.batch = 1; }
  q.in_size = dtype_size(dtype);
  q.out_size = out_dtype_size(op, dtype);
  q.k0 = cube_k0(dtype);
  q.flops = 2.0 * double(batch) * M * N * Ka;
  q.a_bytes = double(numel(a)) * q.in_size;
  q.b_bytes = double(numel(b)) * q.in_size;
  q.c_bytes = double(batch) * M * N * q.out_size;
  q.bias = attr_flag(op, "bias");
  if (op.inputs.size() == 3) {
    const auto& c = op.inputs[2];
    check_shape(c, op.kind + " input C");
    const std::vector<int64_t> out{M, N};
    const auto bc = broadcast(out, c, op.kind + " bias C");
    if (bc != out) fail(op.kind + ": C " + shape_str(c) + " does not broadcast to the output [" + std::to_string(M) + ", " + std::to_string(N) + "]");
    if (numel(c) == N || numel(c) == 1) q.bias = true;  // per-column bias -> bias table
    else { q.epi_extra_per_elem += q.out_size; q.extra_bytes += double(numel(c)) * q.out_size; vec_program("Add", dtype, q.epilogue); }
  }
  double extra = 0;
  auto epi = fused_program(op, "epilogue", dtype == "int8" ? "float16" : dtype, extra, p.fixpipe, q.out_size);
  q.epilogue.insert(q.epilogue.end(), epi.begin(), epi.end());
  q.epi_extra_per_elem += extra;
  q.extra_bytes += extra * double(batch) * M * N;
  if (!p.fixpipe && attr_flag(op, "relu")) vec_program("Relu", dtype, q.epilogue);
  q.fused_after = !attr_strs(op, "epilogue").empty() || attr_flag(op, "relu");
  finish_bias(q, p, dtype);
  read_split_policy(op, p, q);
  return q;
}
}  // namespace

std::shared_ptr<OpModel> make_matmul_model(const OpDesc& op, const Platform& p) {
  return std::make_shared<CubeModel>(matmul_problem(op, p), p);
}

std::shared_ptr<OpModel> make_quant_cube_model(const OpDesc& op, const Platform& p, const CubeQuant& quant,
                                               const std::string& kind) {
  CubeProblem q = matmul_problem(op, p);
  q.kind = kind;
  q.v3_kernel = false;  // its own kernel: MatMulV3's tiling only approximates its default
  q.quant = quant;
  if (quant.weight_bytes > 0) {
    q.b_gm_scale = quant.weight_bytes / q.in_size;
    q.b_bytes *= q.b_gm_scale;
  }
  q.extra_bytes += quant.extra_bytes;
  q.epilogue.insert(q.epilogue.end(), quant.dequant.begin(), quant.dequant.end());
  q.epi_extra_per_elem += quant.dequant_extra;
  // (a vector dequant rules out partial sums, as fused ops do; the antiquant runs before the MMADs)
  q.fused_after = q.fused_after || (!quant.dequant.empty() && quant.msd_k_blocks == 0);
  return std::make_shared<CubeModel>(q, p);
}

double cube_head_us(const Platform& p, int cores) {
  return (kOpHead + mte2_head(cores, true) + p.scalar_start_cycles) / p.freq_mhz;
}

std::shared_ptr<OpModel> make_conv_model(const OpDesc& op, const Platform& p) {
  CubeProblem q;
  q.kind = "Conv";
  q.conv = true;
  const std::string dtype = op.dtype;
  check_cube_dtype(dtype, p, "Conv");
  if (op.inputs.size() < 2 || op.inputs.size() > 3)
    fail("Conv: expected inputs [X, W] or [X, W, B], got " + std::to_string(op.inputs.size()) + " inputs");
  const auto& x = op.inputs[0];
  const auto& w = op.inputs[1];
  check_shape(x, "Conv input X");
  check_shape(w, "Conv input W");
  if (x.size() != 4 || w.size() != 4)
    fail("Conv: only 2-D convolution is supported: X must be NCHW and W (M, C/group, kH, kW); got X " +
         shape_str(x) + ", W " + shape_str(w));
  const int64_t group = attr_int(op, "group", 1);
  const auto strides = attr_ints(op, "strides", {1, 1});
  const auto dil = attr_ints(op, "dilations", {1, 1});
  if (strides.size() != 2 || dil.size() != 2) fail("Conv: strides and dilations need 2 values each ([h, w])");
  for (auto v : strides) if (v <= 0) fail("Conv: strides must be positive, got " + shape_str(strides));
  for (auto v : dil) if (v <= 0) fail("Conv: dilations must be positive, got " + shape_str(dil));
  const auto ks = attr_ints(op, "kernel_shape", {});
  if (!ks.empty() && ks != std::vector<int64_t>{w[2], w[3]})
    fail("Conv: kernel_shape " + shape_str(ks) + " does not match W " + shape_str(w) + " (kH, kW = [" +
         std::to_string(w[2]) + ", " + std::to_string(w[3]) + "])");
  const auto auto_pad = attr_strs(op, "auto_pad");
  if (auto_pad.size() > 1) fail("Conv: auto_pad takes one value, got " + std::to_string(auto_pad.size()));
  const std::string pad_mode = auto_pad.empty() ? "NOTSET" : auto_pad[0];
  if (pad_mode != "NOTSET" && op.int_attrs.count("pads"))  // ONNX forbids both; which wins would be a guess
    fail("Conv: auto_pad '" + pad_mode + "' and explicit pads " + shape_str(op.int_attrs.at("pads")) +
         " together; give one (ONNX allows pads only with auto_pad NOTSET)");
  const auto pads = pad_mode == "NOTSET" ? attr_ints(op, "pads", {0, 0, 0, 0}) : conv_auto_pads(pad_mode, x, w, strides, dil);
  if (pads.size() != 4) fail("Conv: pads need 4 values ([top, left, bottom, right]), got " + shape_str(pads));
  for (auto v : pads) if (v < 0) fail("Conv: pads must be >= 0, got " + shape_str(pads));
  const int64_t n = x[0], c = x[1], h = x[2], wd = x[3];
  const int64_t m = w[0], cg = w[1], kh = w[2], kw = w[3];
  if (group <= 0 || c % group || m % group)
    fail("Conv: group=" + std::to_string(group) + " must divide the input channels (" + std::to_string(c) +
         ") and the output channels (" + std::to_string(m) + ")");
  if (cg != c / group)
    fail("Conv: W " + shape_str(w) + " has " + std::to_string(cg) + " input channels per group, X " + shape_str(x) +
         " with group=" + std::to_string(group) + " needs " + std::to_string(c / group));
  const double padded_h = double(h + pads[0] + pads[2]), padded_w = double(wd + pads[1] + pads[3]);
  if (double(kh - 1) * double(dil[0]) + 1 > padded_h || double(kw - 1) * double(dil[1]) + 1 > padded_w)
    fail("Conv: kernel " + std::to_string(kh) + "x" + std::to_string(kw) + " with dilations " + shape_str(dil) +
         " is larger than the padded input " + std::to_string(h + pads[0] + pads[2]) + "x" +
         std::to_string(wd + pads[1] + pads[3]));
  const int64_t ekh = (kh - 1) * dil[0] + 1, ekw = (kw - 1) * dil[1] + 1;
  const int64_t ho = (h + pads[0] + pads[2] - ekh) / strides[0] + 1;
  const int64_t wo = (wd + pads[1] + pads[3] - ekw) / strides[1] + 1;
  if (h + pads[0] + pads[2] < ekh || wd + pads[1] + pads[3] < ekw)
    fail("Conv: kernel " + std::to_string(ekh) + "x" + std::to_string(ekw) + " (with dilation) is larger than the padded input " +
         std::to_string(h + pads[0] + pads[2]) + "x" + std::to_string(wd + pads[1] + pads[3]));
  check_fits(p, double(n) * double(m) * double(ho) * double(wo), out_dtype_size(op, dtype),
             "Conv output " + shape_str({n, m, ho, wo}));
  if (op.inputs.size() == 3 && numel(op.inputs[2]) != m)
    fail("Conv: bias B " + shape_str(op.inputs[2]) + " must have " + std::to_string(m) + " elements");
  q.in_size = dtype_size(dtype);
  q.out_size = out_dtype_size(op, dtype);
  q.k0 = cube_k0(dtype);
  const int64_t c0 = 32 / q.in_size;  // C0 of NC1HWC0 ([A] 数据排布格式.md)
  const int64_t mg = m / group;
  // Small groups (depthwise) are packed block-diagonally into one C0-wide
  // cube group: e groups share a fractal.
  int64_t e = 1;
  if (group > 1) e = std::max<int64_t>(1, std::min<int64_t>(group, c0 / std::max<int64_t>(cg, mg)));
  const int64_t groups = cdiv(group, e);
  q.batch = groups;
  q.M = n * ho * wo;
  q.K = align_up(e * cg, c0) * kh * kw;
  q.N = e * mg;
  q.ho = ho; q.wo = wo; q.wi = wd + pads[1] + pads[3]; q.hi = h + pads[0] + pads[2];
  q.sh = strides[0]; q.sw = strides[1]; q.kh_eff = ekh; q.kw_eff = ekw;
  q.cin_pad = align_up(e * cg, c0);
  q.flops = 2.0 * n * ho * wo * m * cg * kh * kw;
  // Input rows the kernel touches (a stride above the kernel height skips rows).
  const int64_t rows = std::min(h, ho * std::min(ekh, strides[0]) + std::max<int64_t>(0, ekh - strides[0]));
  q.a_bytes = double(numel(x)) * q.in_size * double(rows) / double(h);
  q.b_bytes = double(numel(w)) * q.in_size;
  q.c_bytes = double(n) * m * ho * wo * q.out_size;
  q.bias = op.inputs.size() == 3 || attr_flag(op, "bias");
  double extra = 0;
  q.epilogue = fused_program(op, "epilogue", dtype == "int8" ? "float16" : dtype, extra, p.fixpipe, q.out_size);
  q.epi_extra_per_elem = extra;
  q.extra_bytes = extra * double(n) * m * ho * wo;
  finish_bias(q, p, dtype);
  read_split_policy(op, p, q);
  return std::make_shared<CubeModel>(q, p);
}

}  // namespace aoe::ascend::detail

namespace aoe::ascend {

std::vector<int64_t> conv_auto_pads(const std::string& mode, const std::vector<int64_t>& x,
                                    const std::vector<int64_t>& w, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations) {
  if (mode == "NOTSET" || mode == "VALID") return {0, 0, 0, 0};
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER")
    detail::fail("Conv: auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '" + mode + "'");
  if (x.size() != 4 || w.size() != 4 || strides.size() != 2 || dilations.size() != 2)
    detail::fail("Conv: auto_pad needs X (NCHW), W (M, C/group, kH, kW) and 2 strides and dilations");
  std::vector<int64_t> begin, end;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t size = x[2 + i], k = w[2 + i], s = strides[i], d = dilations[i];
    if (s <= 0 || d <= 0) detail::fail("Conv: strides and dilations must be positive");
    const int64_t out = (size + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - size);
    const int64_t small = total / 2, big = total - total / 2;
    begin.push_back(mode == "SAME_UPPER" ? small : big);
    end.push_back(mode == "SAME_UPPER" ? big : small);
  }
  return {begin[0], begin[1], end[0], end[1]};
}

}  // namespace aoe::ascend
