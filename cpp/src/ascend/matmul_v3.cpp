// CANN MatMulV3's default tiling on Atlas A2, restated (not copied) from
// [V3] hicann/ops-nn @ e5c3fa93 matmul/mat_mul_v3/op_host/op_tiling/
// matmul_v3_base_tiling.cpp; the function named next to each rule is where
// it lives there.  Only the 910B branches are kept (L0C 128 KiB, FixPipe
// L0C -> GM, no L1 -> BT bf16): the "David" (arch35) and 310P branches are
// left out, as is hf32 and the force-group-accumulate fp32 mode.
#include "aoe_native/ascend/matmul_v3.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace aoe::ascend {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t align(int64_t a, int64_t b) { return cdiv(a, b) * b; }
int64_t floor_align(int64_t a, int64_t b) { return a / b * b; }
bool aligned256(int64_t v, int64_t ds) { return v * ds % 256 == 0; }

// Inner-axis byte sizes MTE2 converts ND -> NZ on the fly ([V3] SUPPORT_ND2NZ_GM2L0).
const std::vector<int64_t> kOnTheFly = {32, 64, 96, 128, 160, 192, 224, 256, 384};
bool on_the_fly(int64_t v) { return std::find(kOnTheFly.begin(), kOnTheFly.end(), v) != kOnTheFly.end(); }
constexpr int64_t kOnTheFlyLimit = 65535;   // [V3] ND2NZ_ON_THE_FLY_LIMIT
constexpr int64_t kSplitKThres = 27392;     // [V3] SPLIT_K_THRES
constexpr int64_t kMultiCoreSingleK = 384;  // [V3] MULTI_CORE_SINGLE_K
constexpr int64_t kMB = 1024 * 1024;

// Template digits ([V3] matmul_v3_common.h TilingEnable*; CheckAoeTilingEnable).
enum Split { kBase = 0, kSingleSplitK = 2, kDeterministicSplitK = 3, kNkmSplitK = 5, kSplitKGmToL1 = 6 };
enum FullLoad { kNoFullLoad = 0, kAL1Full = 1, kBL1Full = 2 };

class V3Tiler {
 public:
  V3Tiler(const MatMulV3Case& c, const MatMulV3Hw& hw) : c_(c), hw_(hw), M(c.m), K(c.k), N(c.n) {
    fp32_ = c.dtype == "float32";
    ds_ = fp32_ ? 4 : 2;
    m256_ = aligned256(M, ds_), k256_ = aligned256(K, ds_), n256_ = aligned256(N, ds_);
    nd2nz_flags();
  }
  MatMulV3Tiling run();

 private:
  const MatMulV3Case& c_;
  MatMulV3Hw hw_;
  int64_t M, K, N;
  int64_t ds_;
  bool fp32_, m256_, k256_, n256_;
  bool nd2nz_a_ = false, nd2nz_b_ = false;
  bool enable_cache_ = true;  // [V3] enableCache_{true}: false only when the L2 split search fails
  int split_ = kBase, full_ = kNoFullLoad, fix_ = 0;
  MatMulV3Tiling t_;

  void nd2nz_flags();
  void reset_base();
  void base_block();
  void small_shape();
  void formulaic_base();
  void calc_base_m_by_nk();
  void calc_base_mn_by_k();
  void cal_base_mn(int64_t& bm, int64_t& bn, int64_t max_m = 128, int64_t max_n = 256) const;
  int64_t base_size(int64_t cnt, int64_t size, int64_t max_base) const;
  void balance_base();
  void l1_tiling();
  void update_step_k(int64_t& step) const;
  void load_balance();
  void step_k_halving();
  bool bl1_fixpipe();
  bool al1_full_load();
  bool bl1_full_load();
  bool bl1_full_load_base();
  void l2_tiling();
  bool calc_tile(bool n_outer, bool inner_bad, int64_t& out_split, int64_t& inner_split) const;
  bool single_core_split_k();
  bool single_core_split_k_supported() const;
  bool single_core_split_k_ok(MatMulV3Tiling tmp);
  bool deterministic_split_k();
  bool incre_shape() const;
  bool mix_nd2nz() const { return nd2nz_a_ || nd2nz_b_; }
};

// [V3] GetMoreArgs, NeedNd2NzVnchw, GetNd2nzA/B: which operands need a vector
// ND -> NZ pre-pass (inner axis not 256 B aligned and not convertible on the fly).
void V3Tiler::nd2nz_flags() {
  const int64_t in_a = c_.trans_a ? M : K, out_a = c_.trans_a ? K : M;
  const int64_t in_b = c_.trans_b ? K : N, out_b = c_.trans_b ? N : K;
  auto need = [&](int64_t inner, bool nd) {
    return nd && (!aligned256(inner, ds_) || inner > kOnTheFlyLimit) && !on_the_fly(inner * ds_) &&
           !(fp32_ && inner < kOnTheFlyLimit);
  };
  auto vnchw = [&](int64_t outer, int64_t inner, bool nd) {
    if (!nd) return false;
    const int64_t b = inner * ds_;
    const bool fits = outer > 8192 && inner > 1 && (b <= 192 || (b <= 384 && inner % 2 == 0) || (b <= 512 && inner % 4 == 0));
    return fits && !aligned256(inner, ds_) && !on_the_fly(b) && inner != 32 / ds_;
  };
  nd2nz_a_ = need(in_a, true) || vnchw(out_a, in_a, true);
  nd2nz_b_ = need(in_b, !c_.b_nz) || vnchw(out_b, in_b, !c_.b_nz);
  // "mata" address conflicts: B is converted first for these shapes (fp16/bf16, ND B, 24 cores).
  const bool half = !fp32_, bnd = !c_.b_nz, full = hw_.aic >= 24;
  const bool mata_a = !c_.trans_b && N % 16384 == 0 && (M > 4096 || (M == 4096 && full)) && K >= 6656 && bnd && half;
  const bool mata_b = !c_.trans_a && c_.trans_b && K == 16384 && M >= 4096 && M <= 4480 && N >= 7168 && bnd && half && full;
  nd2nz_b_ = nd2nz_b_ || mata_a || mata_b;
}

// [V3] ResetBase: 128 x 256 x (128 B of K), steps 1, L0C single-buffered.
void V3Tiler::reset_base() {
  t_.baseM = 128, t_.baseN = 256, t_.baseK = 128 / ds_;
  t_.stepM = t_.stepN = 1, t_.iterateOrder = 0, t_.dbL0C = 1;
}

// [V3] SetBaseBlockTiling: orientation of the 32768-element block by transposes.
void V3Tiler::base_block() {
  t_.usedCoreNum = hw_.aic;
  reset_base();
  if (!c_.trans_a && !c_.trans_b) return;
  if (c_.trans_a && c_.trans_b) { t_.baseM = 256, t_.baseN = 128; return; }
  if (c_.b_nz) return;
  const int64_t large = (hw_.aic >> 1) * 256;
  const bool m_large = M >= large, n_large = N >= large;
  if (m_large && n_large) {
    const int64_t m_major = cdiv(M, 256) * N + cdiv(N, 128) * M, n_major = cdiv(M, 128) * N + cdiv(N, 256) * M;
    if (m_major < n_major) t_.baseM = 256, t_.baseN = 128;
  } else if (m_large || M > N) {
    t_.baseM = 256, t_.baseN = 128;
  }
}

// [V3] CalBaseSize: the base along an axis once `cnt` blocks of the other axis share the cores.
int64_t V3Tiler::base_size(int64_t cnt, int64_t size, int64_t max_base) const {
  const int64_t share = cnt == 0 ? 1 : std::max<int64_t>(hw_.aic / cnt, 1);
  return std::min(align(std::max<int64_t>(size / share, 1), 16), max_base);
}

// [V3] CalBaseMBaseN: shrink the base on the axis with more blocks so ~all cores get one.
void V3Tiler::cal_base_mn(int64_t& bm, int64_t& bn, int64_t max_m, int64_t max_n) const {
  const int64_t m_core = cdiv(M, max_m), n_core = cdiv(N, max_n);
  if (m_core < n_core) {
    bn = std::min(align(std::max<int64_t>(N / std::max<int64_t>(hw_.aic / m_core, 1), 1), 16), max_n);
  } else {
    bm = std::min(align(std::max<int64_t>(M / std::max<int64_t>(hw_.aic / n_core, 1), 1), 16), max_m);
  }
  bm = align(std::min(M, bm), 16);
  bn = align(std::min(N, bn), 16);
}

// [V3] CalcBase: among three candidate blocks, the one whose per-core load
// (bm + bn) x waves is smallest (first wins ties).  M_BY_BASE_NK re-spreads M
// (CALC_M_BASIC), MN_BY_BASE_K re-spreads M or N (CALC_MN_BASIC).
void V3Tiler::calc_base_m_by_nk() {
  const int64_t cand[3][3] = {{128, 256, 128}, {128, 128, 256}, {64, 512, 64}};  // [V3] CALC_M_BASIC
  int64_t best = -1, bm = 0, bn = 0, bk = 0;
  for (const auto& c : cand) {
    const int64_t n_cnt = cdiv(N, c[1]);
    const int64_t m = base_size(n_cnt, M, c[0]);
    const int64_t cnt = cdiv(M, m) * n_cnt;
    const int64_t load = (m + c[1]) * (cnt / hw_.aic) + (cnt % hw_.aic ? m + c[1] : 0);
    if (best < 0 || load < best) best = load, bm = m, bn = c[1], bk = c[2] / ds_;
  }
  t_.baseM = bm, t_.baseN = bn, t_.baseK = bk;
}

void V3Tiler::calc_base_mn_by_k() {
  const int64_t cand[3][3] = {{64, 64, 512}, {128, 128, 256}, {128, 256, 128}};  // [V3] CALC_MN_BASIC
  int64_t best = -1, bm = 0, bn = 0, bk = 0;
  for (const auto& c : cand) {
    int64_t m = c[0], n = c[1];
    cal_base_mn(m, n, c[0], c[1]);
    const int64_t cnt = cdiv(M, m) * cdiv(N, n);
    const int64_t load = (m + n) * (cnt / hw_.aic) + (cnt % hw_.aic ? m + n : 0);
    if (best < 0 || load < best) best = load, bm = m, bn = n, bk = c[2] / ds_;
  }
  t_.baseM = bm, t_.baseN = bn, t_.baseK = bk;
}

// [V3] BalanceBaseBlockTiling: both operands need ND -> NZ; spread N over the
// cores left by M's 128-blocks (or grow N to fill L0C when M < 128).
void V3Tiler::balance_base() {
  reset_base();
  if (M >= 128) {
    const int64_t n_core = std::max<int64_t>(hw_.aic / std::max<int64_t>(cdiv(M, 128), 1), 1);
    t_.baseN = std::min<int64_t>(align(cdiv(N, n_core), 16), 256);
    const int64_t ka = hw_.l0a / 2 / ds_ / 256, kb = hw_.l0b / (2 * ds_ * t_.baseN);
    t_.baseK = floor_align(std::min(ka, kb), 16);
  } else {
    const int64_t min_n = M >= 64 ? 128 : 1024;
    t_.baseM = align(M, 16);
    t_.baseN = std::max(align(std::max<int64_t>(N / hw_.aic, 1), 16), min_n);
    int64_t max_n = floor_align(hw_.l0c / (4 * t_.baseM), 16);
    if (c_.bias) max_n = std::min(max_n, hw_.bt / 4);
    t_.baseN = std::min(t_.baseN, max_n);
    const int64_t tail = t_.baseN > 256 ? cdiv(N, 256) % hw_.aic : 0;
    if (cdiv(N, t_.baseN) % hw_.aic < tail) t_.baseN = 256;
    const int64_t ka = hw_.l0a / (2 * ds_ * t_.baseM), kb = hw_.l0b / (2 * ds_ * t_.baseN);
    t_.baseK = floor_align(std::min(ka, kb), 16);
  }
  if (t_.baseM <= 0 || t_.baseN <= 0 || t_.baseK <= 0 || t_.baseM % 16 || t_.baseN % 16 || t_.baseK % 16) reset_base();
}

// [V3] FormulaicBaseBlockTiling / FormulaicTilingNoTrans, by transposes and 256 B alignment.
void V3Tiler::formulaic_base() {
  const int64_t m_core = cdiv(M, t_.baseM), n_core = cdiv(N, t_.baseN);
  if (!c_.trans_a && !c_.trans_b) {
    calc_base_m_by_nk();
    if (!k256_ && !n256_) {
      balance_base();
    } else if (!k256_) {
      t_.baseN = 256, t_.baseK = 128 / ds_;
      t_.baseM = base_size(n_core, M, 128);
    } else if (!n256_) {
      t_.baseK = 128 / ds_;
      cal_base_mn(t_.baseM, t_.baseN);
    }
  } else if (c_.trans_a && !c_.trans_b) {
    if (!m256_ && !n256_) balance_base();
    else if (!m256_) t_.baseM = base_size(n_core, M, 128);
    else if (!n256_) t_.baseN = base_size(m_core, N, 256);
  } else if (!c_.trans_a && c_.trans_b) {
    calc_base_mn_by_k();
    if (!k256_) balance_base();
  } else {
    t_.baseN = base_size(m_core, N, 256);
    if (!m256_ && k256_) balance_base();
    else if (!m256_) cal_base_mn(t_.baseM, t_.baseN);
  }
}

// [V3] DoSmallShapeTiling, then its clamps: a 128 < dim < 256 side keeps the
// other base at 128; the fp32 accumulator block stays within 32768 elements.
void V3Tiler::small_shape() {
  formulaic_base();
  int64_t &bm = t_.baseM, &bn = t_.baseN;
  if (M < 256 && M > 128 && bn > 128) {
    bn = 128;
  } else if (N < 256 && N > 128 && bm > 128) {
    bm = 128;
  } else if (bm * bn > 32768) {
    if (bm > 128 && bm < 256) bm = 128;
    if (bn > 128 && bn < 256) bn = 128;
  }
  if (bm * bn > 32768) bm = 32768 / bn;
}

// [V3] UpdateL1TilingStepK: a partial-K copy of stepK x baseK is trimmed to a
// 512 B (or 256 B) multiple of K bytes.
void V3Tiler::update_step_k(int64_t& step) const {
  if (step * t_.baseK >= K) return;
  const int64_t kb = t_.baseK * ds_;
  for (int64_t a : {512, 256}) {
    if (step * kb > a) {
      if (step * kb % a && a % kb == 0)
        while (step * kb % a && step > 1) --step;
      return;
    }
  }
}

// [V3] CalL1Tiling: each operand gets half of L1 (+256 B), double-buffered
// (stepK = depth / 2); bias reserves 1 KiB of it.
void V3Tiler::l1_tiling() {
  const int64_t total = hw_.l1 + 256, reserve = c_.bias ? 256 * 4 : 0;
  t_.depthA1 = total / 2 / t_.baseM / t_.baseK / ds_;
  t_.depthB1 = total / 2 / t_.baseN / t_.baseK / ds_;
  if ((t_.depthA1 * t_.baseM + t_.depthB1 * t_.baseN) * t_.baseK * ds_ > total - reserve) {
    if (t_.baseM <= t_.baseN) t_.depthA1 /= 2;
    else t_.depthB1 /= 2;
  }
  t_.stepKa = std::max<int64_t>(t_.depthA1 / 2, 1);
  t_.stepKb = std::max<int64_t>(t_.depthB1 / 2, 1);
  update_step_k(t_.stepKa);
  update_step_k(t_.stepKb);
  if (t_.stepKa >= t_.stepKb) t_.stepKa = t_.stepKa / t_.stepKb * t_.stepKb;
  else t_.stepKb = t_.stepKb / t_.stepKa * t_.stepKa;
  t_.depthA1 = 2 * t_.stepKa, t_.depthB1 = 2 * t_.stepKb;
  t_.singleCoreM = t_.baseM, t_.singleCoreN = t_.baseN;
}

// [V3] OptimizeLoadBalanceBasicKernel (24-core parts, full 32768-element
// block, base template, A not transposed): round the block count up to a
// multiple of the cores by re-splitting M, or trim baseM while M's block
// count stays (128 < M <= 672).
void V3Tiler::load_balance() {
  const bool block = t_.baseM * t_.baseN == 32768 && t_.baseK == 128 / ds_;
  const bool common = full_ == kNoFullLoad && split_ == kBase && fix_ == 0 && hw_.aic == 24 && block && !c_.trans_a;
  if (!common) return;
  int64_t m_core = cdiv(M, t_.baseM);
  const int64_t n_core = cdiv(N, t_.baseN);
  const bool few = m_core * n_core < 4 * hw_.aic;
  if (few) {
    m_core = align(m_core * n_core, hw_.aic) / n_core;
    t_.baseM = align(cdiv(M, m_core), 16);
    t_.singleCoreM = t_.baseM;
  } else if (M <= 672 && M > 128) {
    while (t_.baseM > 16 && cdiv(M, t_.baseM - 16) == m_core) t_.baseM -= 16;
    t_.singleCoreM = t_.baseM;
  }
}

// [V3] OptimizeBasicKernelStepK: on 24-core parts, for some fp16/bf16 shapes,
// stepK 8 -> 4 (copies of 256 K elements instead of 512).
void V3Tiler::step_k_halving() {
  const bool block = t_.baseM * t_.baseN == 32768 && t_.baseK == 64;
  const bool aligned = M % 256 == 0 && N % 256 == 0 && K % 256 == 0 && M >= 768 && N >= 768 && (K & (K - 1)) != 0;
  auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  const bool mid_m = in(M, 10368, 18000) && in(N, 1280, 5120) && in(K, 1280, 5120);
  const bool mid_k = in(M, 1280, 5120) && in(N, 1280, 5120) && in(K, 13788, 19304);
  const bool big_m = in(M, 320000, 380000) && in(N, 960, 3500) && in(K, 1280, 3328);
  const bool ok = full_ == kNoFullLoad && split_ == kBase && fix_ == 0 && !mix_nd2nz() && block && M % 16384 &&
                  N % 16384 && !fp32_ && (aligned || mid_m || mid_k || big_m) && M * N > 32768 * hw_.aic && hw_.aic == 24;
  if (!ok) return;
  if (t_.stepKa == 8) t_.depthA1 = t_.depthA1 / 8 * 4, t_.stepKa = 4;
  if (t_.stepKb == 8) t_.depthB1 = t_.depthB1 / 8 * 4, t_.stepKb = 4;
}

// [V3] DoIncreTiling's condition: these shapes take the closed TBE cache tiling.
bool V3Tiler::incre_shape() const {
  return M <= 128 && !mix_nd2nz() && !fp32_ && !c_.b_nz && !c_.trans_a && c_.trans_b && !c_.bias;
}

// [V3] NeedSolveFixBound + DoBL1FullloadWithFixpipeTiling: N < 256 not
// aligned to the 256 B FixPipe burst, small K and a long M: B stays in L1,
// baseN = N, baseM from L0C and UB (multiples of 128), aligned write-out.
bool V3Tiler::bl1_fixpipe() {
  const int64_t cds = ds_, c0 = 32 / ds_;
  if (N >= 256) return false;
  const bool bound = K <= 256 && N % (256 / cds) != 0 && (256 / cds) % N != 0;
  if (!bound || M < hw_.aic * 512 || (N < c0 && K < c0)) return false;
  const bool not_mte2_bound = (k256_ || K < 256 / ds_) && !c_.trans_a;
  if (cds == 2 && !not_mte2_bound) return false;
  nd2nz_a_ = nd2nz_b_ = false;
  MatMulV3Tiling t = t_;
  t.baseN = align(N, 16);
  t.baseM = floor_align(std::min(hw_.l0c / (t.baseN * 4), hw_.ub / 256 / cds), 128);
  if (t.baseM == 0) return false;
  t.baseK = floor_align(std::min(hw_.l0a / 2 / ds_ / t.baseM, hw_.l0b / 2 / ds_ / t.baseN), 16);
  if (t.baseK == 0) return false;
  t.depthB1 = t.stepKb = cdiv(K, t.baseK);
  t.depthA1 = std::max<int64_t>(0, (hw_.l1 / ds_ - t.depthB1 * t.baseN * t.baseK) / (t.baseM * t.baseK));
  t.depthA1 = t.stepKa = std::min(t.depthA1, t.depthB1);
  if (t.depthA1 >= 8) t.stepKa = 4, t.depthA1 = 8;  // "K large: stepK 4, depth 8 is better"
  if (t.depthA1 == 0) return false;
  t.singleCoreM = t.baseM, t.singleCoreN = t.baseN;
  t_ = t;
  full_ = kBL1Full, split_ = kBase;
  fix_ = (fp32_ && K % c0 == 0 && N <= 192 && !nd2nz_a_ && !c_.trans_a) ? 2 : 1;
  return true;
}

// [V3] DoAL1FullLoadTiling: fp32 only, M <= 16, B transposed, long aligned K.
bool V3Tiler::al1_full_load() {
  if (!fp32_ || c_.trans_a || !c_.trans_b) return false;
  if (M <= 64 && N <= 64 && K >= 6144 && M >= 8) return false;  // ShouldUseDeterministicMultiCoreSplitKwithSmallMN
  const bool valid = M <= 16 && N > 16 && N <= 16 * hw_.aic && K >= 4096 && K % (512 / ds_) == 0;
  const int64_t al1 = align(M, 16) * align(K, 32 / ds_) * ds_, bl1 = 16 * 256 * ds_ * 2, bias = c_.bias ? 16 * 4 : 0;
  if (!valid || al1 > hw_.l1 - bl1 - bias) return false;
  t_.baseM = t_.baseN = 16, t_.baseK = 256, t_.stepM = t_.stepN = 1;
  t_.stepKa = t_.depthA1 = cdiv(K, t_.baseK), t_.stepKb = 1, t_.depthB1 = 2;
  t_.singleCoreM = M, t_.singleCoreN = t_.baseN;
  t_.dbL0C = 2;
  t_.l2MTileBlock = 1, t_.l2NTileBlock = cdiv(N, t_.singleCoreN), t_.l2IterateOrder = 1;
  full_ = kAL1Full, split_ = kBase;
  return true;
}

// [V3] DoBL1FullLoadTilingBase: all of B in L1, A streamed in 2 x baseM rows
// per task.  CANN sets the steps before it checks that a 16-row A block fits
// beside B, and a refusal keeps them (the UT's "not_fullLoad" golden).
bool V3Tiler::bl1_full_load_base() {
  const int64_t c0 = 32 / ds_;
  MatMulV3Tiling& t = t_;
  t.stepM = 1;
  t.baseN = std::min(N, t.baseN);
  t.baseN = c_.trans_b ? align(t.baseN, 16) : align(t.baseN, c0);
  t.stepN = cdiv(N, t.baseN);
  t.stepKb = t.stepKa = cdiv(K, t.baseK);
  t.depthA1 = 2 * t.stepKa, t.depthB1 = t.stepN * t.stepKb;
  int64_t load = t.baseK * (t.depthA1 * t.baseM + t.depthB1 * t.baseN) * ds_ + (c_.bias ? t.baseN * ds_ : 0);
  if (load - (t.baseM - 16) * t.baseK * t.depthA1 * ds_ > hw_.l1) return false;
  while (load > hw_.l1) {
    load -= t.depthA1 * t.baseM * t.baseK * ds_;
    t.baseM /= 2;
    load += t.depthA1 * t.baseM * t.baseK * ds_;
  }
  t.singleCoreM = 2 * t.baseM, t.singleCoreN = N;
  t.dbL0C = t.baseM * t.baseN * 4 * 2 <= hw_.l0c ? 2 : 1;
  t.l2MTileCnt = t.l2NTileCnt = 1, t.l2MTileBlock = cdiv(M, t.singleCoreM), t.l2NTileBlock = 1, t.l2IterateOrder = 1;
  full_ = kBL1Full, split_ = kBase;
  return true;
}

// [V3] DoBL1FullLoadTiling: a long M over a small B (K <= 256, M > 16 max(K, N))
// whose rows MTE2 converts on the fly; plus one N = K = 512 case split over 12 M-cores.
bool V3Tiler::bl1_full_load() {
  const int64_t c0 = 32 / ds_;
  const int64_t in_a = c_.trans_a ? M : K, out_a = c_.trans_a ? K : M;
  const bool vnchw_a = fp32_ && out_a >= 72368 && in_a <= c0 && in_a > 1;  // [V3] VNCHW_UP_THRES
  const bool fly = on_the_fly(N) && (!c_.trans_b || on_the_fly(K * ds_));
  const bool valid_mk = M > 16 * std::max(K, N) && K <= 256;
  const int64_t k_al = c_.trans_b ? align(K, 32 / ds_) : align(K, 16), n_al = c_.trans_b ? align(N, 16) : align(N, 32 / ds_);
  const bool bl1_fits = hw_.l1 / 2 - (c_.bias ? t_.baseN * 4 : 0) > k_al * n_al * ds_;
  const bool refused = !valid_mk || (!(fly && !nd2nz_b_) && !(vnchw_a && bl1_fits));
  if (!refused) return bl1_full_load_base();
  const int64_t mt = (M / 128) % 12;
  bool tail_ok = mt >= 1 && mt < 6;
  if (mt == 0) tail_ok = ((M + 127) / 128) % 12 == 1;
  if (mt == 6) tail_ok = ((M + 127) / 128) % 12 != 7;
  const bool core_split = !fp32_ && M >= 30848 && M <= 98048 && N == 512 && K == 512 && tail_ok && !c_.trans_a &&
                          c_.trans_b && !c_.b_nz && !c_.bias;
  if (!core_split) return false;
  t_.baseN = t_.singleCoreN = N / 2;
  t_.stepM = t_.stepN = 1;
  t_.stepKb = t_.stepKa = cdiv(K, t_.baseK);
  t_.depthA1 = 2 * t_.stepKa, t_.depthB1 = t_.stepKb;
  t_.baseM = 128;
  t_.singleCoreM = align(cdiv(M, 12), 128);
  t_.dbL0C = t_.baseM * t_.baseN * 8 <= hw_.l0c ? 2 : 1;
  t_.l2MTileCnt = t_.l2NTileCnt = 1, t_.l2MTileBlock = cdiv(M, t_.singleCoreM), t_.l2NTileBlock = 1;
  t_.l2IterateOrder = 1;
  full_ = kBL1Full, split_ = kBase;
  return true;
}

// [V3] CalcTile (with InitL2SplitParams, IsTailSmall): L2 tiles of the output
// whose A + B + C fit 100 MiB x (L2 / 192 MiB), avoiding small tail tiles.
// The "outer" axis is the one of the larger base (N when baseN >= baseM).
bool V3Tiler::calc_tile(bool n_outer, bool inner_bad, int64_t& out_split, int64_t& inner_split) const {
  const int64_t out_base = n_outer ? t_.baseN : t_.baseM, in_base = n_outer ? t_.baseM : t_.baseN;
  const int64_t out_val = n_outer ? N : M, in_val = n_outer ? M : N;
  const int64_t aic = hw_.aic;
  int64_t max_conf = std::min<int64_t>(aic, 6), min_conf = std::min<int64_t>(aic, 3);  // 24 cores: 6 / 3
  if (aic == 20) max_conf = 5, min_conf = 4;
  const int64_t in_conf = inner_bad ? min_conf : max_conf;
  const int64_t out_min = std::max<int64_t>(aic / max_conf, 1), in_min = std::max<int64_t>(aic / in_conf, 1);
  const double budget = double(hw_.l2) / double(192 * kMB) * 100.0 * kMB;
  const int64_t out_ori = out_split, in_ori = inner_split;
  int64_t out_c = 0, in_c = 0;
  bool found = false;
  for (int64_t ou = aic; ou >= out_min; --ou)
    for (int64_t iu = aic; iu >= in_min; --iu) {
      const int64_t ot = std::max<int64_t>(out_ori / (out_base * ou), 1), it = std::max<int64_t>(in_ori / (in_base * iu), 1);
      const int64_t os = align(cdiv(out_val, ot), out_base), is = align(cdiv(in_val, it), in_base);
      const double total = double(os * K + K * is + os * is) * double(ds_);
      if (total > budget) continue;
      const int64_t o_tail = cdiv((out_val + os - 1) % os + 1, out_base), i_tail = cdiv((in_val + is - 1) % is + 1, in_base);
      if (o_tail * max_conf < aic || i_tail * in_conf < aic) continue;
      const int64_t oc = cdiv(aic, o_tail), ic = cdiv(aic, i_tail);
      if (!found || (out_c >= oc && in_c >= ic)) {
        found = true;
        out_split = os, inner_split = is, out_c = oc, in_c = ic;
      }
    }
  return found;
}

// [V3] DoL2CacheTiling: L2 tiles when A + B + C overflow the L2 budget; else
// (or when no split fits) a swizzle of 4 x (cores / 4) blocks.
void V3Tiler::l2_tiling() {
  const double total = double(M * K + K * N + M * N) * double(ds_);
  int64_t m_split = M, n_split = N;
  const double budget = double(hw_.l2) / double(192 * kMB) * 100.0 * kMB;
  if (total > budget)
    enable_cache_ = t_.baseN >= t_.baseM ? calc_tile(true, c_.trans_a, n_split, m_split)
                                         : calc_tile(false, !c_.trans_b, m_split, n_split);
  int64_t mb = cdiv(m_split, t_.baseM), nb = cdiv(n_split, t_.baseN);
  if (!enable_cache_) {
    mb = std::min<int64_t>(4, cdiv(M, t_.baseM));
    nb = std::min<int64_t>(hw_.aic / 4, cdiv(N, t_.baseN));
  }
  t_.l2MTileBlock = mb, t_.l2NTileBlock = nb;
  t_.l2MTileCnt = cdiv(M, mb * t_.baseM), t_.l2NTileCnt = cdiv(N, nb * t_.baseN);
}

// [V3] SetBasicBlockOfMK33 / SetBasicBlockOfNK33: the split-K "3 x 3" block,
// 128 x 128 x (256 B of K), three base blocks of M (N) per L1 load.
void block_33(MatMulV3Tiling& t, int64_t ds, bool n_major, int64_t aic) {
  t.baseM = t.baseN = 128, t.baseK = 256 / ds, t.usedCoreNum = aic;
  if (n_major) {
    t.depthA1 = 6, t.depthB1 = 9, t.stepM = 1, t.stepN = 3, t.stepKa = 3, t.stepKb = 3, t.iterateOrder = 0;
  } else {
    t.depthA1 = 9, t.depthB1 = 6, t.stepM = 3, t.stepN = 1, t.stepKa = 3, t.stepKb = 3, t.iterateOrder = 1;
  }
}

// [V3] CalTileFactor: a tile count rounded up to a factor of the core count.
int64_t tile_factor(int64_t n, int64_t aic) {
  std::vector<int64_t> f = {1, 2, 4, 5, 10, 20};
  if (aic == 24) f = {1, 2, 3, 4, 6, 8, 12, 24};
  if (aic == 32) f = {1, 2, 4, 8, 16, 32};
  for (int64_t v : f)
    if (n <= v) { n = v; break; }
  if (n > aic) n = (n % aic > aic / 2 ? cdiv(n, aic) : n / aic) * aic;
  return n;
}

// [V3] IsSupportSingleCoreSplitK (with IsSupportSingleCoreSplitSmallK).
bool V3Tiler::single_core_split_k_supported() const {
  auto small_k = [&](int64_t x, int64_t y) {
    return K == 1536 && M % 128 == 0 && N % 128 == 0 && x >= 49152 && y == 384 &&
           double(N) * double(M) <= double(hw_.l2) * 0.65 / 4;
  };
  if (small_k(N, M) || small_k(M, N)) return true;
  if (K >= kSplitKThres) return true;
  const int64_t s = 384;  // 3 x 128: the 3 x 3 block's step
  const bool large = M * K >= 5 * s * s && N >= 1024 && M >= s && K >= s && M * N >= 1024 * s * hw_.aic;
  if (!enable_cache_ && large) return true;  // "L2 tiling failed, M/K/N large enough"
  const bool tlb = c_.trans_a && !c_.trans_b && n256_ && K >= 11000 &&
                   ((M % 8192 == 0 && N >= 6144) || (N % 8192 == 0 && M >= 6144));
  if (tlb) return true;
  const bool mata = !c_.trans_a && c_.trans_b && K % 16384 == 0 && M >= 1280 && M <= 8192 && N >= 1280 && N <= 8192 &&
                    !c_.b_nz && !fp32_ && hw_.aic == 24;
  return mata && !nd2nz_b_;
}

// [V3] CheckSingleTilingOk + CheckSingleCoreSplitKEdgeCases + IsGmToL1ByShape.
bool V3Tiler::single_core_split_k_ok(MatMulV3Tiling tmp) {
  auto small_k = [&](int64_t x, int64_t y) {
    return K == 1536 && M % 128 == 0 && N % 128 == 0 && x >= 49152 && y == 384 &&
           double(N) * double(M) <= double(hw_.l2) * 0.65 / 4;
  };
  const bool nkm = fp32_ && N <= 64 && M >= 1920 && K >= kSplitKThres && K < kOnTheFlyLimit && !c_.trans_a && c_.trans_b;
  const bool mkn_small = small_k(N, M), nkm_small = small_k(M, N);
  if (!nkm && !mkn_small && !nkm_small) {
    if (tmp.singleCoreN < 512) return false;  // "singleN too small"
    const double avg = double(M) * N / (double(tmp.singleCoreN) * tmp.singleCoreM * hw_.aic);
    if (avg < 0.7) return false;  // load imbalance
    if (n256_ && N >= 896 && N <= 2048 && (tmp.singleCoreN <= 640 || avg < 0.85)) return false;  // multi-core split-K is better
  }
  if (mkn_small || (tmp.singleCoreM > 256 && tmp.singleCoreM <= kMultiCoreSingleK && !(fp32_ && !n256_)))
    block_33(tmp, ds_, false, hw_.aic);
  else if (nkm_small)
    block_33(tmp, ds_, true, hw_.aic);
  tmp.singleCoreK = tmp.stepKa * tmp.baseK;
  tmp.dbL0C = 2;
  split_ = kSingleSplitK;
  if ((nkm || nkm_small) && !mix_nd2nz()) {
    split_ = kNkmSplitK;
  } else if (!fp32_ && N % 128 == 0 && !mkn_small) {
    const bool plain = !mix_nd2nz();
    const int64_t a = plain ? (c_.trans_a ? M : K) : (c_.trans_a ? K : M);
    const int64_t b = plain ? (c_.trans_b ? K : N) : (c_.trans_b ? N : K);
    if (!c_.bias && a <= kOnTheFlyLimit && b <= kOnTheFlyLimit && !(plain && c_.b_nz)) split_ = kSplitKGmToL1;
  }
  full_ = kNoFullLoad, fix_ = 0;
  tmp.l2IterateOrder = nkm_small ? 1 : 0;
  t_ = tmp;
  return true;
}

// [V3] DoSingleCoreSplitKTiling: each core one singleCoreM x singleCoreN
// rectangle over all of K, the cores' rectangles factored from the core count.
bool V3Tiler::single_core_split_k() {
  if (!single_core_split_k_supported()) return false;
  MatMulV3Tiling tmp = t_;
  block_33(tmp, ds_, false, hw_.aic);
  int64_t m_tile = cdiv(M, tmp.stepM * tmp.baseM), n_tile = cdiv(N, 3072);  // [V3] L2_TILE_LENGTH
  if (!c_.bias) {  // [V3] SetBasicBlockOf24
    if (m_tile * n_tile < hw_.aic) tmp.depthA1 = 8, tmp.depthB1 = 8, tmp.stepM = 2, tmp.stepN = 1, tmp.stepKa = 4, tmp.stepKb = 4;
    if (M < 384 || N < 384) tmp.depthA1 = 8, tmp.depthB1 = 8, tmp.stepM = 1, tmp.stepKa = 4, tmp.stepN = 1, tmp.stepKb = 4;
  }
  const int64_t m_al = (c_.trans_a ? 256 : 32) / ds_, n_al = 256 / ds_;
  m_tile = cdiv(M, tmp.stepM * tmp.baseM);
  n_tile = tile_factor(n_tile, hw_.aic);
  if (m_tile * n_tile >= hw_.aic) {
    m_tile = std::max<int64_t>(hw_.aic / n_tile, 1);
    tmp.singleCoreM = std::min(align(cdiv(M, m_tile), m_al), M);
    tmp.singleCoreN = align(cdiv(N, n_tile), n_al);
    tmp.usedCoreNum = std::min(cdiv(M, tmp.singleCoreM) * cdiv(N, tmp.singleCoreN), hw_.aic);
    if (tmp.usedCoreNum == hw_.aic) return single_core_split_k_ok(tmp);
  }
  n_tile = m_tile == 0 ? 1 : std::max<int64_t>(hw_.aic / m_tile, 1);
  int64_t total = 0, sn = N;
  while (n_tile <= hw_.aic && total < hw_.aic && sn >= 1024) {
    n_tile = tile_factor(n_tile, hw_.aic);
    const int64_t mt = hw_.aic / n_tile;
    sn = align(cdiv(N, n_tile), n_al);
    const int64_t sm = align(cdiv(M, mt), m_al);
    const int64_t cnt = cdiv(M, sm) * cdiv(N, sn);
    if (cnt > total) total = cnt, tmp.usedCoreNum = cnt, tmp.singleCoreM = std::min(sm, M), tmp.singleCoreN = std::min(sn, N);
    ++n_tile;
  }
  return single_core_split_k_ok(tmp);
}

// [V3] SupportMultiSplitK, IsNkOrder, DoDeterministicMultiCoreSplitKTiling,
// OptCoreNumsDeterministicMultiCoreSplitK: the cores split K in chunks of
// 3 base K steps; the other output axis is kept whole unless its tile
// overflows 70% of L2 over the cores.
bool V3Tiler::deterministic_split_k() {
  const int64_t m_cnt = cdiv(M, 128), n_cnt = cdiv(N, 128);
  const bool small_mn_fp32 = fp32_ && M <= 64 && N <= 64 && K >= 6144;
  bool ok = K >= hw_.aic * kMultiCoreSingleK && m_cnt * n_cnt < hw_.aic / 2 && !(!c_.trans_a && c_.trans_b);
  ok = ok || small_mn_fp32 || (K >= 1000 && K <= 4608 && M <= 256 && N <= 256 && c_.trans_a && !c_.trans_b);
  if (!ok) {
    if (K < kSplitKThres) return false;
    const bool in_a = c_.trans_a ? m256_ : k256_, in_b = c_.trans_b ? k256_ : n256_;
    const bool mte2_bound_fp32 = (!in_a || !in_b) && fp32_;
    const double fill = double(m_cnt * n_cnt) / double(align(m_cnt * n_cnt, hw_.aic));
    if (m_cnt >= 4 && n_cnt >= 4 && !n256_ && !mte2_bound_fp32 && fill > 0.8) return false;  // "fixpipe bound: L2 split"
  }
  split_ = kDeterministicSplitK, full_ = kNoFullLoad, fix_ = 0;
  const bool nk = M > N && N * ds_ % 32 == 0 && M >= 128 && !(n256_ && !m256_) && !(!m256_ && N * ds_ <= 256) &&
                  !(M >= 2048 && N == 16);
  const int64_t l2_70 = hw_.l2 * 7 / 10;
  block_33(t_, ds_, nk, hw_.aic);
  if (nk) {
    t_.singleCoreM = M, t_.singleCoreN = t_.stepN * t_.baseN, t_.singleCoreK = t_.stepKb * t_.baseK;
    const int64_t n = std::min(t_.singleCoreN, N);
    int64_t split = (l2_70 / hw_.aic - t_.singleCoreK * n * ds_) / (t_.singleCoreK * ds_ + n * 4);
    if (M > split) split = align(split, 128), t_.singleCoreM = align(cdiv(M, cdiv(M, split)), 128);
  } else {
    t_.singleCoreN = N, t_.singleCoreM = t_.stepM * t_.baseM, t_.singleCoreK = t_.stepKa * t_.baseK;
    const int64_t m = std::min(t_.singleCoreM, M);
    int64_t split = (l2_70 / hw_.aic - t_.singleCoreK * m * ds_) / (t_.singleCoreK * ds_ + m * 4);
    if (N > split) split = align(split, 128), t_.singleCoreN = align(cdiv(N, cdiv(N, split)), 128);
  }
  t_.usedCoreNum = std::min(cdiv(K, t_.singleCoreK), hw_.aic);
  t_.dbL0C = 2;
  if (N > 128 && M > 128 && N % 16) fix_ = 2;  // [V3] GetMoreMultiCoreSplitKArgs: NZ -> ND write-out
  if (small_mn_fp32)
    t_.usedCoreNum = std::min(hw_.aic, 8 + (K - 6144) / 1024 + cdiv(M, 16) + cdiv(N, 16));
  return true;
}

bool sc_split_k_al1_full_load(const MatMulV3Case& c, bool fp32) {  // [V3] IsSupportSingleCoreSplitKAL1FullLoad
  if (c.trans_a || c.b_nz || fp32 || c.k % 128 || c.n % 128 || c.m > 256) return false;
  return (c.k >= 9216 && c.k <= 20480 && c.n >= 6144 && c.n < 65536) ||
         (c.k >= 6144 && c.k < 65536 && c.n >= 6144 && c.n < 16384);
}

MatMulV3Tiling V3Tiler::run() {
  t_.singleCoreK = K;
  base_block();
  const bool few = (align(M, 128) / t_.baseM) * (align(N, 256) / t_.baseN) < t_.usedCoreNum;
  if (few || M < 256 || N < 256) small_shape();
  l1_tiling();
  if (incre_shape()) t_.exact = false, t_.note = "M <= 128 with B transposed: CANN takes the closed TBE cache tiling (DoIncreTiling)";
  load_balance();
  // [V3] DoSelectTiling: the first template that accepts wins; L2 tiling never accepts.
  bool done = bl1_fixpipe() || al1_full_load();
  if (!done && sc_split_k_al1_full_load(c_, fp32_))
    t_.exact = false, t_.note = "CANN takes its single-core split-K + AL1 full-load template (not modelled)";
  done = done || bl1_full_load();
  if (!done) {
    l2_tiling();
    done = single_core_split_k() || deterministic_split_k();
  }
  if (c_.bias) {  // [V3] DoBasicTiling: the bias table holds 256 fp32
    t_.baseN = std::min<int64_t>(256, t_.baseN);
    if (split_ == kBase && full_ != kBL1Full) t_.singleCoreN = t_.baseN;
  }
  step_k_halving();
  t_.tilingEnable = split_ + 10 * full_ + 1000 * fix_;
  return t_;
}

}  // namespace

MatMulV3Tiling matmul_v3_default_tiling(const MatMulV3Case& c, const MatMulV3Hw& hw) {
  auto bad = [](const std::string& m) { throw std::invalid_argument("matmul_v3_default_tiling: " + m); };
  if (c.m <= 0 || c.k <= 0 || c.n <= 0 || c.m > (int64_t(1) << 40) || c.k > (int64_t(1) << 40) || c.n > (int64_t(1) << 40))
    bad("M, K, N must be in 1..2^40, got " + std::to_string(c.m) + ", " + std::to_string(c.k) + ", " + std::to_string(c.n));
  if (c.dtype != "float16" && c.dtype != "bfloat16" && c.dtype != "float32")
    bad("dtype must be float16, bfloat16 or float32, got '" + c.dtype + "'");
  if (hw.aic <= 0 || hw.l1 <= 0 || hw.l0a <= 0 || hw.l0b <= 0 || hw.l0c <= 0 || hw.ub <= 0 || hw.l2 <= 0 || hw.bt <= 0)
    bad("every hardware size (aic, l1, l0a, l0b, l0c, ub, l2, bt) must be positive");
  return V3Tiler(c, hw).run();
}

}  // namespace aoe::ascend
