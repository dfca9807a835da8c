// Attention on the AI Core: FusedInferAttentionScore (its prefill form PromptFlashAttention and
// its decode form IncreFlashAttention), SparseFlashAttention and the MLA prologue MlaProlog.
//
// The flash-attention kernel, as CANN's ops-transformer runs it on split SoCs (A2/A3/950:
// one AIC with two AIVs per AI core): each task is one (batch, head, query block).  Per
// key/value block the cube computes S = Q K^T into a GM workspace, the AIVs run the online
// softmax on S (scale, row max, exp, row sum, cast to P) and write P back, the cube computes
// P V, and the AIVs rescale the running output.  The stages are pipelined over the blocks
// (the kernel preloads the next block), so a block costs its slowest stage.  A causal mask
// skips the key blocks right of the diagonal; GQA lets the query heads of one KV head share
// K/V (IncreFlashAttention stacks them as the rows of one task, PromptFlashAttention runs one
// task per query head and re-reads K/V from L2).  Decode reads the KV cache once: memory
// bound, and when batch x KV heads leaves cores idle the KV length is split over cores
// (flash decoding) and the partial outputs combined.
//
// Where this is assumed rather than read from CANN: the workspace round trip of S and P
// through L2, the per-block and per-task scalar costs (fitted, below), the balancing of
// unequal causal tasks outside 910B (total work shared evenly, no task split; on 910B
// PromptFlashAttention's SplitNSNew and FIA MLA's SplitCore are transcribed), and the combine
// step of flash decoding.  docs/llm_operators.md "Attention" lists them.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include "common.hpp"

namespace aoe::ascend::detail {

namespace {

// ---- fitted constants ---------------------------------------------------------------------
// Fitted on the calibration file's fit half only (records.fit_half; GQA, MHA, MLA, SparseFlashAttention
// records of 910B2 and 950PR), by hand on the log ratio; docs/llm_operators.md has the held-out
// accuracy.  Physical meaning: cycles of scalar and synchronisation work the pipes do not hide.
// Both are the AIV side's issue and wait time, so they scale with the SoC's fitted vector issue cost
// (Platform::vec_cost_scale: 1.1 on 910B2, 0.5 on 950PR); without that scaling the fit half's mean
// |log ratio| is 0.144 at best, with it 0.134.  A grid over 600..2000 x 1500..4000 cycles moves it
// only between 0.133 and 0.150: weakly determined, the structure carries the estimate.
constexpr double kBlockSyncCycles = 1200;  // per key/value block: AIC<->AIV flags, Matmul API set-up of mm1 and mm2
constexpr double kTaskCycles = 2500;       // per task: tiling offsets, first loads, softmax state init
// SparseFlashAttention: issue cost of one gathered K/V row (a DataCopy per selected token).  Not
// fitted (two fit-half records): assumed half GE's per-call cost of a GM->UB load (kLoadCall).
constexpr double kGatherRowCycles = kLoadCall / 2;
// MlaProlog: the cube's efficiency on the projections' T x K x N tiles (fit half: 8 of 8 within
// 25% at 0.6; 0.45 and 0.8 give 7 of 8).
constexpr double kMlaCubeEff = 0.6;
// MlaProlog on 910B: token rows per step, stepBatchSize = min(128, T) (ops-transformer
// attention/mla_prolog/op_host/mla_prolog_tiling.cpp ProcessBaseInputs).
constexpr int64_t kMlaStepBatch = 128;
// MLA decode on 910B (FIA's FiaTilingNonQuantMla): query rows (G x S1) per block, mBaseSize_ = 256
// (ops-transformer attention/common/op_host/arch32/fia_tiling_nonquant_mla.h).
constexpr int64_t kMlaMBase = 256;

// Softmax of a block of scores in fp32 (ops-transformer's online softmax, Ascend C SoftmaxFlashV2):
// scale (Muls), minus the row max (Sub: Add class), Exp, cast to the P dtype (CastDown); the row max
// and row sum first fold the row's 64-wide repeats pairwise (Max/Add: Add class), then reduce the
// last repeat (WholeReduceSum class): per element one Add-class pass each, per row one whole reduce each.
double softmax_cycles(double rows, double cols, bool masked, const Platform& p) {
  static const std::vector<VecStep> elem = {{vec_api_cost("Muls"), true}, {vec_api_cost("Add"), true},
                                            {vec_api_cost("Exp"), true},  {vec_api_cost("CastDown"), true},
                                            {vec_api_cost("Add"), true},  {vec_api_cost("Add"), true}};
  static const std::vector<VecStep> mask = {{vec_api_cost("Add"), true}};  // Select by the mask: Add class
  static const VecCost whole = vec_api_cost("WholeReduceSum");
  double c = vec_cycles(elem, rows * cols) + (masked ? vec_cycles(mask, rows * cols) : 0.0);
  c += 2 * (rows * whole.per_repeat + whole.per_call);  // one repeat per row, max and sum
  return c * p.vec_cost_scale;
}

std::string layout_of(const OpDesc& op) {
  auto v = attr_strs(op, "input_layout");
  if (v.empty()) return "BSND";
  if (v.size() != 1 || (v[0] != "BSND" && v[0] != "BNSD" && v[0] != "BSH" && v[0] != "TND"))
    fail(op.kind + ": input_layout must be one of BSND, BNSD, BSH, TND, got " + (v.empty() ? "" : v[0]));
  return v[0];
}

// One group of batches with the same query and key/value lengths.
struct SeqGroup {
  int64_t s1, s2, count;
};

struct AttnProblem {
  std::string kind;
  int64_t B = 1, N = 1, Nkv = 1, G = 1, Dk = 0, Dv = 0;
  int64_t S1max = 0, S2max = 0;
  std::vector<SeqGroup> groups;
  bool causal = false, mask = false;
  int e = 2;          // bytes per query/key/value element
  int64_t topk = 0;   // SparseFlashAttention: key/value rows each query attends to (0: dense)
  bool mla = false;   // MLA form (head dim above 256, e.g. 512 + 64 rope): IncreFlashAttention's rope path
  bool bf16 = false;
  bool tnd = false;   // layout TND (per-batch lengths)
};

// Shape of one of query/key/value as (batch, seq, heads, dim) for the dense layouts.
struct Bsnd {
  int64_t b, s, n, d;
};

Bsnd read_bsnd(const OpDesc& op, size_t i, const char* name, const std::string& layout, int64_t heads) {
  const auto& s = op.inputs[i];
  const size_t want = layout == "BSH" ? 3 : 4;
  if (s.size() != want)
    fail(op.kind + ": " + name + " must have rank " + std::to_string(want) + " in layout " + layout + ", got " +
         shape_str(s));
  if (layout == "BSND") return {s[0], s[1], s[2], s[3]};
  if (layout == "BNSD") return {s[0], s[2], s[1], s[3]};
  if (s[2] % heads != 0)
    fail(op.kind + ": " + name + " hidden size " + std::to_string(s[2]) + " is not a multiple of its " +
         std::to_string(heads) + " heads (layout BSH)");
  return {s[0], s[1], heads, s[2] / heads};
}

// TND: per-batch lengths from the cumulative lists, grouped by (s1, s2).
std::vector<SeqGroup> tnd_groups(const OpDesc& op, int64_t T, int64_t Tkv) {
  const auto q = attr_ints(op, "actual_seq_lengths", {});
  const auto kv = attr_ints(op, "actual_seq_lengths_kv", {});
  if (q.empty() || kv.empty())
    fail(op.kind + ": layout TND needs actual_seq_lengths and actual_seq_lengths_kv (cumulative, one per batch)");
  if (q.size() != kv.size())
    fail(op.kind + ": actual_seq_lengths has " + std::to_string(q.size()) + " batches, actual_seq_lengths_kv " +
         std::to_string(kv.size()));
  if (q.back() != T)
    fail(op.kind + ": actual_seq_lengths end at " + std::to_string(q.back()) + ", but query has T = " +
         std::to_string(T) + " tokens (the cumulative lengths must sum to T)");
  if (kv.back() != Tkv)
    fail(op.kind + ": actual_seq_lengths_kv end at " + std::to_string(kv.back()) + ", but key has T = " +
         std::to_string(Tkv) + " tokens (the cumulative lengths must sum to T)");
  std::map<std::pair<int64_t, int64_t>, int64_t> count;
  for (size_t b = 0; b < q.size(); ++b) {
    const int64_t s1 = q[b] - (b ? q[b - 1] : 0), s2 = kv[b] - (b ? kv[b - 1] : 0);
    if (s1 < 0 || s2 < 0) fail(op.kind + ": actual_seq_lengths must be cumulative (non-decreasing)");
    if (s1 > 0) count[{s1, s2}] += 1;
  }
  std::vector<SeqGroup> g;
  for (const auto& [k, c] : count) g.push_back({k.first, k.second, c});
  if (g.empty()) fail(op.kind + ": actual_seq_lengths hold no query token");
  return g;
}

void check_mask(const OpDesc& op, const AttnProblem& q, const std::vector<int64_t>& m) {
  // CANN's masks: [S1, S2], [B, S1, S2], [B or 1, N or 1, S1, S2]; decode also [B, S2].
  bool ok = m.size() >= 2 && m.size() <= 4 && m.back() == q.S2max &&
            (m[m.size() - 2] == q.S1max || (m.size() == 2 && q.S1max == 1 && m[0] == q.B));
  if (ok && m.size() >= 3) ok = m[0] == 1 || m[0] == q.B;
  if (ok && m.size() == 4) ok = m[1] == 1 || m[1] == q.N;
  if (!ok)
    fail(op.kind + ": atten_mask has shape " + shape_str(m) + "; expected [S1, S2], [B, S1, S2] or [B, 1, S1, S2] "
         "with S1 = " + std::to_string(q.S1max) + ", S2 = " + std::to_string(q.S2max) + ", B = " + std::to_string(q.B));
}

void check_heads(const OpDesc& op, AttnProblem& q, int64_t nq, int64_t nk) {
  const int64_t want_n = attr_int(op, "num_heads", nq), want_kv = attr_int(op, "num_key_value_heads", nk);
  if (want_n != nq)
    fail(op.kind + ": num_heads is " + std::to_string(want_n) + " but query has " + std::to_string(nq) + " heads");
  if (want_kv != nk && want_kv != 0)
    fail(op.kind + ": num_key_value_heads is " + std::to_string(want_kv) + " but key has " + std::to_string(nk) +
         " heads");
  if (nk <= 0 || nq % nk != 0)
    fail(op.kind + ": key has " + std::to_string(nk) + " heads, which does not divide the query's " +
         std::to_string(nq) + " (num_key_value_heads)");
  q.N = nq;
  q.Nkv = nk;
  q.G = nq / nk;
}

// Query/key/value of FusedInferAttentionScore and SparseFlashAttention in every layout.
AttnProblem read_attention(const OpDesc& op) {
  AttnProblem q;
  q.kind = op.kind;
  const std::string layout = layout_of(op);
  q.tnd = layout == "TND";
  if (op.inputs.size() < 3) fail(op.kind + ": takes query, key, value (and optional inputs), got " +
                                 std::to_string(op.inputs.size()) + " inputs");
  if (op.dtype != "float16" && op.dtype != "bfloat16")
    fail(op.kind + ": query/key/value dtype must be float16 or bfloat16, got " + op.dtype);
  q.e = dtype_size(op.dtype);
  q.bf16 = op.dtype == "bfloat16";
  q.causal = attr_flag(op, "causal");
  const auto &qs = op.inputs[0], &ks = op.inputs[1], &vs = op.inputs[2];
  if (layout == "TND") {
    for (size_t i = 0; i < 3; ++i)
      if (op.inputs[i].size() != 3)
        fail(op.kind + ": " + std::string(i == 0 ? "query" : i == 1 ? "key" : "value") +
             " must be [T, N, D] in layout TND, got " + shape_str(op.inputs[i]));
    if (vs[0] != ks[0] || vs[1] != ks[1])
      fail(op.kind + ": value has shape " + shape_str(vs) + ", which disagrees with key's " + shape_str(ks) +
           " (tokens and heads must match)");
    check_heads(op, q, qs[1], ks[1]);
    q.Dk = qs[2];
    if (ks[2] != q.Dk) fail(op.kind + ": key head dim " + std::to_string(ks[2]) + " differs from the query's " +
                            std::to_string(q.Dk));
    q.Dv = vs[2];
    q.groups = tnd_groups(op, qs[0], ks[0]);
    q.B = 0;
    for (const auto& g : q.groups) {
      q.B += g.count;
      q.S1max = std::max(q.S1max, g.s1);
      q.S2max = std::max(q.S2max, g.s2);
    }
  } else {
    const int64_t n_attr = attr_int(op, "num_heads", 0), kv_attr = attr_int(op, "num_key_value_heads", 0);
    if (layout == "BSH" && n_attr <= 0) fail(op.kind + ": layout BSH needs num_heads");
    const Bsnd Q = read_bsnd(op, 0, "query", layout, n_attr);
    // BSH without num_key_value_heads: the key's hidden size over the query's head dim (GQA/MQA).
    int64_t kv_heads = kv_attr;
    if (layout == "BSH" && kv_heads <= 0) {
      if (ks.size() != 3 || ks[2] % Q.d != 0)
        fail(op.kind + ": key has shape " + shape_str(ks) + ", whose hidden size is not a multiple of the query's "
             "head dim " + std::to_string(Q.d) + " (layout BSH; give num_key_value_heads)");
      kv_heads = ks[2] / Q.d;
    }
    const Bsnd K = read_bsnd(op, 1, "key", layout, kv_heads);
    const Bsnd V = read_bsnd(op, 2, "value", layout, kv_heads);
    if (V.b != K.b || V.s != K.s || V.n != K.n)
      fail(op.kind + ": value has shape " + shape_str(vs) + ", which disagrees with key's " + shape_str(ks) +
           " (batch, sequence and heads must match)");
    if (K.b != Q.b)
      fail(op.kind + ": key has batch " + std::to_string(K.b) + ", the query " + std::to_string(Q.b));
    check_heads(op, q, Q.n, K.n);
    if (K.d != Q.d) fail(op.kind + ": key head dim " + std::to_string(K.d) + " differs from the query's " +
                         std::to_string(Q.d));
    q.B = Q.b;
    q.Dk = Q.d;
    q.Dv = V.d;
    q.S1max = Q.s;
    q.S2max = K.s;
    q.groups = {{Q.s, K.s, Q.b}};
  }
  for (const auto& g : q.groups)
    if (q.causal && g.s2 < g.s1)
      fail(op.kind + ": key/value hold " + std::to_string(g.s2) + " positions, fewer than the query's " +
           std::to_string(g.s1) + " (a causal KV cache shorter than the query)");
  q.mla = q.Dk > 256;
  return q;
}

// Which 910B kernel runs a packed (IncreFlashAttention-routed) problem: FIA's MLA decode kernel
// (FiaTilingNonQuantMla) for MLA, IncreFlashAttention's own, whose tasks go to the AIVs (SetCoreNum),
// for the rest; SparseFlashAttention (topk) has a kernel of its own, neither of these.
bool fia_mla_910b(const AttnProblem& q, const Platform& p) { return c220(p) && q.mla && q.topk == 0; }
bool ifa_on_aivs_910b(const AttnProblem& q, const Platform& p) { return c220(p) && !q.mla && q.topk == 0; }

// IncreFlashAttention's flash-decoding test (incre_flash_attention_tiling_check.cpp IsFlashDecode,
// CheckCoreOkFlag): fewer (batch, KV head) tasks than ratio x `cores`, and with GQA `s2`, the
// longest KV length, at least 2048.  The ratio is 0.4, 0.5 for 910B's all-vector template
// (`on_aivs`: fp16 with G = 1, BMM_ALL_BY_VEC).  The split itself may then still come out as 1
// (SplitBNS's 512-key floor).
bool flash_decode(const AttnProblem& q, int64_t s2, int64_t cores, bool on_aivs) {
  const double ratio = on_aivs && q.G == 1 && !q.bf16 ? 0.5 : 0.4;
  return double(q.B * q.Nkv) < ratio * cores && (q.G == 1 || s2 >= 2048);
}

// ---- the flash-attention model ---------------------------------------------------------

class FlashModel : public OpModel {
 public:
  FlashModel(const AttnProblem& q, const Platform& p) : q_(q), p_(p) {
    kind_ = q.kind;
    vpc_ = p.split ? double(p.vector_cores) / p.cube_cores : 1.0;
    hbm_Bpus_ = p.hbm_gbps * 1e3;
    l2_Bpus_ = p.l2_gbps > 0 ? p.l2_gbps * 1e3 : p.cube_cores * p.l2_rate * p.freq_mhz;
    vec_l2_rate_ = p.l2_rate * (p.vec_rate_share > 0 ? p.vec_rate_share : 1.0 / vpc_);
    resc_ = {{vec_api_cost("Mul"), true}, {vec_api_cost("Add"), true}};
    // Unique bytes: each of Q, K, V, the output (and the mask) once.
    double q_elems = 0, kv_rows = 0, mask = 0;
    for (const auto& g : q.groups) {
      q_elems += double(g.count) * g.s1 * q.N;
      kv_rows += double(g.count) * kv_len(g) * q.Nkv;
      mask += q.mask ? double(g.count) * g.s1 * g.s2 : 0;
    }
    unique_kv_ = kv_rows * (q.Dk + q.Dv) * q.e;
    out_bytes_ = q_elems * q.Dv * q.e;
    unique_bytes_ = q_elems * q.Dk * q.e + unique_kv_ + mask + out_bytes_;
    flops_ = 0;
    for (const auto& g : q.groups)
      flops_ += 2.0 * g.count * q.N * g.s1 * kv_len(g) * (q.Dk + q.Dv) * (q.causal && !q.topk ? 0.5 : 1.0);
    const double peak = double(p.cube_cores) * 16 * 16 * 16 * 2 * p.freq_mhz;  // fp16/bf16 fractal per cycle (DtypeMKN)
    roofline_us_ = std::max(flops_ / peak, unique_bytes_ / hbm_Bpus_);
    build_spec();
    finish_spec();
  }

  double evaluate(const int64_t* t, Breakdown* out) const override;

 private:
  // Key/value rows one query row of group g may see (all, or the sparse top-k).
  int64_t kv_len(const SeqGroup& g) const { return q_.topk > 0 ? std::min(q_.topk, g.s2) : g.s2; }
  void build_spec();
  std::vector<int64_t> cann_default() const;
  // FIA's MLA query block on 910B (fia_tiling_nonquant_mla.cpp CalcMBaseSize): 256 rows, lowered to
  // G x S1 / k when B x Nkv does not divide the AICs, where k = lcm(B x Nkv, AICs) / (B x Nkv) cuts
  // G x S1 evenly into blocks of 128..256 rows (then every AIC gets whole blocks without flash
  // decoding); the model keeps it when it is a power of two (its s1Base knob).
  int64_t mla_m_base() const;
  // The cores `n_tasks` tasks (gqaPack `pack`) keep busy and the waves of the busiest.
  std::pair<int64_t, double> task_waves(double n_tasks, bool pack) const;
  // 910B PromptFlashAttention: whether the cube-split template (two AIVs' rows per AIC task, K/V
  // loaded once for both) runs for an AIC query block of `s1b` rows.
  bool pfa_l1_reuse(int64_t s1b) const;
  // One batch's query blocks of a group as 910B PromptFlashAttention balances them: the model's
  // cycles of each and CANN's weight (key blocks; the block index + 1 when causal with S1 = S2).
  struct PfaBlock {
    double cycles;
    int64_t weight;
  };
  struct CoreLoad {
    int64_t cores;
    double waves, cycles;  // tasks and cycles of the busiest AIC
  };
  CoreLoad pfa_core_load(const std::vector<std::vector<PfaBlock>>& blocks, int64_t heads, int64_t ks, bool aiv) const;
  struct Stage {
    double cube, vec, mte2;
  };
  // One key/value block of `c` columns for `m` query rows (`pack`: the gqaPack knob; with it FIA's MLA
  // decode kernel runs an MLA problem on 910B, charged its L1 copies; `last`: a row's last key block).
  Stage block(int64_t m, int64_t c, bool masked, double hbm_share, bool pack, bool last) const;
  // GM bytes MTE2 is charged per key (K and V) and per query row (Q) by the 910B FIA MLA kernel's L1 copies.
  std::pair<double, double> mla_copy_charge() const;
  // One query block (row of G x S1 rows) of FIA's MLA decode kernel: the model's cost of its set-up
  // (`fixed`), of its full and last key blocks, and its shape (rows, key blocks, the last one's keys).
  struct MlaRow {
    double fixed;
    Stage full, last;
    int64_t m, nb, tail;
  };
  // 910B FIA MLA's SplitCore over the AICs for `batches` x `rows`; adds the flash-decode combine's
  // bytes of the rows it cuts to *comb_bytes.
  CoreLoad mla_core_load(const std::vector<MlaRow>& rows, int64_t batches, int64_t s2b, double sync,
                         double task, double* comb_bytes) const;
  // What evaluate() derives from a tiling once, for all its tasks.
  struct Plan {
    int64_t s1b, s2b, ks, rpp, heads, tb;  // knobs; rows per query position, tasks per batch, rows per task
    bool pack, queue, aiv_tasks, mla_split;
    double aiv_share, sync, task_cycles, kv_reads, hbm_share;
  };
  Plan plan(const int64_t* t) const;
  int64_t needed_keys(const SeqGroup& g, int64_t r0, int64_t m, int64_t rpp, int64_t* span) const;
  // evaluate()'s sums over its tasks (cycles times task count), and what the core-load splits take.
  struct TaskSums {
    double total = 0, max_task = 0, n_tasks = 0, fill = 0, ws_bytes = 0, comb_bytes = 0;
    double cube = 0, vec = 0, mte2 = 0;
    std::vector<std::vector<PfaBlock>> pfa_blocks;
    std::vector<MlaRow> mla_rows;
  };
  void add_task(const Plan& pl, size_t gi, int64_t r0, int64_t m, TaskSums* s) const;
  void fill_breakdown(const TaskSums& s, double kv_reads, int64_t cores, double waves, double head_us, double hbm_us,
                      double core_us, double time, Breakdown* out) const;
  // A task's `nb` pipelined blocks (`nb - 1` full ones `f`, the tail `tl`), each costing its slowest stage.
  static double stream(const Stage& f, const Stage& tl, int64_t nb, bool queue, double sync, double task) {
    if (queue)  // the AIV's sync and task set-up are part of its stage (see `queue` in evaluate)
      return (nb - 1) * std::max({f.cube, f.vec + sync, f.mte2}) + std::max({tl.cube, tl.vec + sync + task, tl.mte2});
    return (nb - 1) * (std::max({f.cube, f.vec, f.mte2}) + sync) + std::max({tl.cube, tl.vec, tl.mte2}) + sync;
  }

  AttnProblem q_;
  Platform p_;
  double vpc_, hbm_Bpus_, l2_Bpus_, vec_l2_rate_, unique_kv_ = 0, out_bytes_ = 0, unique_bytes_ = 0, flops_ = 0;
  int64_t s1_limit_ = 0, s1_limit_pack_ = 0, s2_limit0_ = 0, s2_limit1_ = 0;
  std::vector<VecStep> resc_;  // rescale of the running output: O = O * exp(m_old - m_new) + P V (fp32)
};

// FIA's MLA decode cube on 910B (ops-transformer @ c29bc10 attention/common/op_kernel/arch32/
// fia_block_cube_nonquant_mla.h) copies K/V into a ring of 3 L1 buffers (l1KVTensor, mte21KVIds) in
// ND rows, each row one GM burst (CopyGmToL1/DataCopyGmNDToL1 ND2NZ): ComputeMm1 (:340-604) takes a
// 128-key tile (N_L1_SPLIT_SIZE :119) in two 288-dim halves (MM1_K_L1_SPLIT_SIZE :121, kL1 :378), each
// 256 nope dims (:437, :447) and 32 of the 64 rope dims (:440, :444); ComputeMm2 (:607-840) takes V in
// 256-key x 128-dim tiles (kL1Size 256, N_L1_SPLIT_SIZE; :639-705).  Q is copied again for every
// key block (the nL1 == 0 branch, :484-502: CopyInMm1AToL1 per half, CopyInMm1ARopeToL1's rows of
// 64 rope dims back to back).  A burst shorter than a GM sector costs a sector (read_charge): the
// 64-byte rope halves cost 256 bytes each, so a key costs 2560 bytes of MTE2 for its 2176 of data.
std::pair<double, double> FlashModel::mla_copy_charge() const {
  const int64_t e = q_.e, dr = std::max<int64_t>(0, q_.Dk - q_.Dv), dn = q_.Dk - dr, half = dn / 2, S = p_.gm_sector;
  const double key = 2 * (read_charge(half * e, dn * e, dn * e, S) + read_charge(dr / 2 * e, dr * e, dr * e, S)) +
                     double(cdiv(q_.Dv, 128)) * read_charge(std::min<int64_t>(128, q_.Dv) * e, q_.Dv * e, q_.Dv * e, S);
  const double row = 2 * read_charge(half * e, dn * e, dn * e, S) + double(dr * e);
  return {key, row};
}

FlashModel::Stage FlashModel::block(int64_t m, int64_t c, bool masked, double hbm_share, bool pack,
                                    bool last) const {
  const Platform& p = p_;
  const bool mla = pack && fia_mla_910b(q_, p);
  const int64_t mf = cdiv(m, 16);
  // Cube: S = Q K^T (m x c x Dk), O += P V (m x Dv x c), 16 x 16 x 16 fractals per cycle.
  double cube = double(mf) * cdiv(c, 16) * cdiv(q_.Dk, 16) + double(mf) * cdiv(q_.Dv, 16) * cdiv(c, 16);
  // FixPipe writes S (fp32) and the P V partial to the workspace, beside the cube.
  cube = std::max(cube, double(m) * (c + q_.Dv) * 4 / p.l2_write_rate);
  // MTE2 of the AIC: the K and V rows (HBM on first touch, else L2), and P back from the workspace.
  const auto [key_charge, row_charge] = mla ? mla_copy_charge() : std::pair<double, double>{0.0, 0.0};
  const double kv_bytes = double(c) * (mla ? key_charge : double(q_.Dk + q_.Dv) * q_.e);
  const double l2r = p.l2_rate * p.mte2_eff;
  // On 910B a block's K/V requests are in flight together: its HBM misses take the core's share of
  // HBM (ddr_rate) while its L2 hits stream through the same MTE2 port at the L2 rate, so the block
  // costs the slower of the two, not their sum.  PromptFlashAttention re-reads K/V once per query
  // head (prompt_flash_attention_s1s2_bns1_x910.h ComputeEachCore :2331, one task per query head
  // batchNOffset, its K/V at batchNOffset / headNumRatio :414, :723; no GQA folding into the rows),
  // and SplitNSNew orders the tasks head-major in contiguous ranges, so the G query heads of one KV
  // head run on neighbouring AIVs at about the same time and their re-reads hit L2.  Fit half: GQA
  // M0213 (G = 4, 2 query rows, 4x the K/V reads of MHA M0200 over the same unique bytes and task
  // count) takes 443 us against M0200's 439 us: the re-reads hide under the misses.
  const double kv_mte2 = c220(p) ? std::max(kv_bytes * hbm_share / p.ddr_rate, kv_bytes / l2r)
                                 : kv_bytes * (hbm_share / p.ddr_rate + (1 - hbm_share) / l2r);
  double mte2 = kv_mte2 + double(m) * c * q_.e / l2r;
  if (mla) mte2 += double(m) * row_charge / l2r;  // Q again per block, from L2
  if (q_.topk > 0) mte2 += 2.0 * c * kGatherRowCycles;  // one copy per gathered K row and V row
  // AIVs: each takes m / vpc rows; softmax on m x c, rescale on m x Dv, S in and P out through L2.
  const double rows = std::ceil(double(m) / vpc_);
  // FIA's MLA decode AIVs (fia_block_vec_nonquant_mla.h @ c29bc10) do not rescale O per block: ComputeMm2's
  // Fixpipe adds each block's P V into the GM accumulator (SetAtomicAdd), AMLA's per-row factor an int32
  // atomically added to its exponents (ProcessAmlaNupdate :898-950: Brcb to 128 columns, rows x Dv int32
  // out, the move charged below), and ProcessVec2SingleBuf (:1055-1066) normalises only on the last block.
  const bool rescale = !mla || last;
  const double vcomp = softmax_cycles(rows, double(c), masked, p) +
                       (rescale ? vec_cycles(resc_, rows * q_.Dv) * p.vec_cost_scale : 0.0);
  const double vmove = rows * (c * (4.0 + q_.e + (masked && q_.mask ? 1.0 : 0.0)) + q_.Dv * 4.0) / vec_l2_rate_;
  return {cube, std::max(vcomp, vmove), mte2};
}

void FlashModel::build_spec() {
  const Platform& p = p_;
  spec_.names = {"s1Base", "s2Base", "kvSplit", "gqaPack"};
  spec_.values.push_back(pow2_range(16, 512));
  spec_.values.push_back(pow2_range(128, 8192));
  // KV splits: up to one per AI core; on 910B up to one per AIV, as IncreFlashAttention splits over
  // the AIVs there (see cann_default).
  const int64_t max_split = c220(p) ? p.vector_cores : p.cube_cores;
  std::vector<int64_t> splits;
  for (int64_t s = 1; s <= max_split; ++s)
    if (s <= 8 || s % 4 == 0 || s == max_split) splits.push_back(s);
  spec_.values.push_back(splits);
  spec_.values.push_back({0, 1});
  // The query block stays in L1 (half of it; the other half double-buffers K/V base tiles).  On 910B
  // the MLA decode kernel (FIA's FiaTilingNonQuantMla, gqaPack) takes mBaseSize_ = 256 query rows of
  // 576 dims (attention/common/op_host/arch32/fia_tiling_nonquant_mla.h), over half of L1: its K/V
  // come in smaller sub-tiles, so that block is allowed there (not for SparseFlashAttention).
  s1_limit_ = int64_t(p.l1 / 2) / (q_.Dk * q_.e);
  s1_limit_pack_ = fia_mla_910b(q_, p) ? std::max<int64_t>(s1_limit_, kMlaMBase) : s1_limit_;
  spec_.restrictions.push_back("(gqaPack == 0 and s1Base <= " + std::to_string(s1_limit_) +
                               ") or (gqaPack == 1 and s1Base <= " + std::to_string(s1_limit_pack_) + ")");
  // The AIV's UB holds a strip of up to 8 rows of the fp32 score block.
  s2_limit0_ = int64_t(p.ub) / (4 * std::min<int64_t>(8, q_.S1max));
  s2_limit1_ = int64_t(p.ub) / (4 * std::min<int64_t>(8, q_.G * q_.S1max));
  spec_.restrictions.push_back("(gqaPack == 0 and s2Base <= " + std::to_string(s2_limit0_) +
                               ") or (gqaPack == 1 and s2Base <= " + std::to_string(s2_limit1_) + ")");
  // Pruning: blocks no larger than the rows/keys they cover; each KV split at least one block of keys.
  const int64_t r0 = std::max<int64_t>(16, align_up(q_.S1max, 16)), r1 = std::max<int64_t>(16, align_up(q_.G * q_.S1max, 16));
  spec_.pruning.push_back("(gqaPack == 0 and s1Base < " + std::to_string(2 * r0) + ") or (gqaPack == 1 and s1Base < " +
                          std::to_string(2 * r1) + ")");
  int64_t kv = 0;
  for (const auto& g : q_.groups) kv = std::max(kv, kv_len(g));
  spec_.pruning.push_back("s2Base < " + std::to_string(2 * std::max<int64_t>(128, kv)));
  spec_.pruning.push_back("kvSplit == 1 or kvSplit * s2Base <= " + std::to_string(align_up(kv, 128)));
  spec_.baseline = cann_default();
  spec_.baseline_kind = "approximate CANN default";
  // CANN's split (cores / tasks, lowered for 512 keys each) may fall between the values.
  add_value(spec_.values[2], spec_.baseline[2]);
}

// ops-transformer's defaults (hicann/ops-transformer @ c29bc10):
// - Routing (fused_infer_attention_score_tiling.cpp IsUsingIFA, :687-732): IncreFlashAttention for
//   a query length of 1, and for MLA (head dim 512 + rope) up to 16; layout TND only with head dim
//   512.  A GQA query of 2..16 goes to IFA only with a paged (5-dim) KV cache (isGQAMtp), which the
//   model does not take, so on 910B it runs as PFA, one task per query head (the model's 950 keeps
//   the query-length rule and packs it).
// - IncreFlashAttention (query length 1; MLA up to 16): the query heads of a KV head stacked as
//   rows (G x S1, split at gMax 128; 256 for MLA on 910B, kMlaMBase); sInnerSize 8192/4096/2048 by G / 5
//   (incre_flash_attention_tiling.cpp CalcInnerSize), 512 for MLA (ropeFlag); flash decoding
//   (SplitBNS) when B x Nkv < ratio x coreNum and, with GQA, a KV length of at least 2048
//   (incre_flash_attention_tiling_check.cpp IsFlashDecode/CheckCoreOkFlag): kvSplit = coreNum /
//   (B x Nkv), lowered until each split holds 512 keys.  On 910B coreNum is the AIV count for the
//   non-MLA templates (SetCoreNum: NORMAL and the all-vector BMM_ALL_BY_VEC of fp16 G = 1) with
//   ratio 0.4, 0.5 for the all-vector one; elsewhere the model uses the AI cores and 0.4.
// - PromptFlashAttention (AdjustCVTilingCVDiff): S1 base 128 per AIV, x2 per AIC (CV_RATIO), 64
//   for bf16 with D >= 200, 16 for S1 <= 16; S2 base 1024, 512 when the KV length is <= 1024 or
//   bf16; 2048 for S1 <= 16 without a mask when the KV length exceeds 2048 (on 910B; elsewhere the
//   model takes 2048 for any KV length).  A causal FIA call carries a mask (sparse mode 2/3).
int64_t FlashModel::mla_m_base() const {
  const int64_t bn = q_.B * q_.Nkv, aic = p_.cube_cores, s1g = q_.S1max * q_.G;
  if (bn <= 0 || bn % aic == 0 || q_.groups.size() != 1) return kMlaMBase;
  const int64_t split = std::lcm(bn, aic) / bn;
  if (s1g % split != 0) return kMlaMBase;
  const int64_t m = s1g / split;
  return m >= 128 && m <= kMlaMBase && (m & (m - 1)) == 0 ? m : kMlaMBase;
}

std::vector<int64_t> FlashModel::cann_default() const {
  const int64_t S1 = q_.S1max, S2 = q_.topk > 0 ? std::min(q_.topk, q_.S2max) : q_.S2max;
  const bool c220p = c220(p_);
  const bool ifa = q_.topk > 0 || (c220p ? (q_.tnd ? q_.mla : (S1 == 1 || (S1 <= 16 && q_.mla)))
                                          : (S1 == 1 || (S1 <= 16 && (q_.G > 1 || q_.mla))));
  int64_t s1, s2, split = 1, pack = ifa ? 1 : 0;
  if (ifa) {
    s1 = std::min<int64_t>(fia_mla_910b(q_, p_) ? mla_m_base() : 128, std::max<int64_t>(16, align_up(q_.G * S1, 16)));
    const int64_t inner[3] = {8192, 4096, 2048};
    s2 = q_.mla ? 512 : inner[std::min<int64_t>(q_.G / 5, 2)];
    const int64_t bn = q_.B * q_.Nkv;
    const bool aiv_split = ifa_on_aivs_910b(q_, p_);
    const int64_t cores = aiv_split ? p_.vector_cores : p_.cube_cores;
    // FIA's MLA kernel on 910B balances its blocks itself (mla_core_load): kvSplit 1.
    if (S1 == 1 && !fia_mla_910b(q_, p_) && flash_decode(q_, S2, cores, aiv_split) && (aiv_split || q_.groups.size() == 1)) {
      split = cores / bn;
      while (split > 1 && S2 / split < 512) --split;
    }
  } else {
    s1 = 2 * (S1 <= 16 ? 16 : ((q_.Dk >= 200 && q_.bf16) ? 64 : 128));
    const bool masked = q_.mask || (c220p && q_.causal);
    s2 = (S1 <= 16 && !masked && (S2 > 2048 || !c220p)) ? 2048 : ((S2 <= 1024 || q_.bf16) ? 512 : 1024);
  }
  // No larger than what the keys of one split fill (CANN sets sInnerSize to the length when shorter).
  while (s2 > 128 && s2 / 2 >= cdiv(S2, split)) s2 /= 2;
  std::vector<int64_t> t = {s1, s2, split, pack};
  // Shrink to the buffers (a large head dim, a small UB).
  while (t[0] > 16 && t[0] > (pack ? s1_limit_pack_ : s1_limit_)) t[0] /= 2;
  while (t[1] > 128 && t[1] > (pack ? s2_limit1_ : s2_limit0_)) t[1] /= 2;
  return t;
}

// The knobs of tiling `t` and what follows from them for every task (see evaluate).
FlashModel::Plan FlashModel::plan(const int64_t* t) const {
  const Platform& p = p_;
  Plan pl;
  pl.s1b = t[0];
  pl.s2b = t[1];
  pl.ks = t[2];
  pl.pack = t[3] != 0;
  pl.rpp = pl.pack ? q_.G : 1;
  pl.heads = pl.pack ? q_.Nkv : q_.N;
  // PromptFlashAttention on 910B (prompt_flash_attention_s1s2_bns1_x910.h @ c29bc10): each core
  // queues the (task, key block) items of its whole range of (head, batch, query block) tasks
  // (pfaParamsQueue, PFA_PARAMS_QUEUE_CAPBABILITY 4 in ..._x910_base.h:182; items join in
  // SInnerLoopFunc, :2212-2240), and ComputeEachCoreSInnerLoop (:2253-2283) issues the next item's
  // Q K^T before the AIV's softmax and P V of the current one, also across task boundaries.
  // The AIV's block sync and task set-up are then part of its stage and hide behind an MTE2- or
  // cube-bound stream (stream()); elsewhere they are charged in series.
  pl.queue = !pl.pack && c220(p) && q_.topk == 0;
  // Its tasks are the AIVs' (sOuter = s1Base / 2 rows each, SplitNSNew over coreNum = aivNum), each
  // AIV's matmuls loading their own K/V on the shared AIC, unless the cube-split template runs
  // (pfa_l1_reuse): then a task is the AIC's s1Base rows, its K/V shared by both AIVs.
  pl.aiv_tasks = pl.queue && !pfa_l1_reuse(pl.s1b);
  pl.tb = pl.aiv_tasks ? std::max<int64_t>(16, pl.s1b / 2) : pl.s1b;
  // The AIC's two AIVs then run their own tasks side by side: per AIC, a task's AIV-side work (its
  // rows' softmax, as block() already halves, its block syncs, set-up and output copy) costs half.
  pl.aiv_share = pl.aiv_tasks ? 1.0 / vpc_ : 1.0;
  pl.sync = kBlockSyncCycles * p.vec_cost_scale * pl.aiv_share;
  pl.task_cycles = kTaskCycles * p.vec_cost_scale * pl.aiv_share;
  // First pass: K/V bytes read by all tasks; the share HBM serves (first touch), the rest hits L2.
  double kv_reads = 0;
  for (const auto& g : q_.groups) {
    const int64_t rows = g.s1 * pl.rpp;
    for (int64_t r0 = 0, span = 0; r0 < rows; r0 += pl.tb)
      kv_reads += double(g.count) * pl.heads * needed_keys(g, r0, std::min(pl.tb, rows - r0), pl.rpp, &span);
  }
  pl.kv_reads = kv_reads * (double(q_.Dk + q_.Dv) * q_.e);
  pl.hbm_share = pl.kv_reads > 0 ? std::min(1.0, unique_kv_ / pl.kv_reads) : 1.0;
  // FIA's MLA decode on 910B balances (batch, query block, key block) blocks over the AICs itself
  // (mla_core_load); the model's uniform kvSplit stays as the alternative a tuner may pick.
  pl.mla_split = pl.pack && fia_mla_910b(q_, p) && pl.ks == 1 && q_.groups.size() == 1;
  return pl;
}

// Keys the row block [r0, r0 + m) of group g needs (causal: up to its last position, bottom-right
// aligned); *span: the query positions it covers.
int64_t FlashModel::needed_keys(const SeqGroup& g, int64_t r0, int64_t m, int64_t rpp, int64_t* span) const {
  const int64_t first = r0 / rpp, last = (r0 + m - 1) / rpp;
  *span = last - first + 1;
  if (!q_.causal || q_.topk > 0) return kv_len(g);
  return std::clamp<int64_t>(last + 1 + g.s2 - g.s1, 0, g.s2);
}

// One task: query rows [r0, r0 + m) of group gi (one of its KV splits), added to the sums.
void FlashModel::add_task(const Plan& pl, size_t gi, int64_t r0, int64_t m, TaskSums* s) const {
  const Platform& p = p_;
  const SeqGroup& g = q_.groups[gi];
  const int64_t s2b = pl.s2b, ks = pl.ks;
  int64_t span = 0;
  const int64_t L = needed_keys(g, r0, m, pl.rpp, &span), Ls = cdiv(L, ks);
  const int64_t nb = Ls > 0 ? cdiv(Ls, s2b) : 0, tail = Ls - (nb - 1) * s2b;
  // Share of blocks the mask touches: the diagonal ones (causal), all (an explicit mask).
  const double mfrac = q_.mask ? 1.0 : (q_.causal && nb > 0 ? std::min(1.0, double(cdiv(span, s2b) + 1) / (nb * ks)) : 0.0);
  auto stage = [&](int64_t c, bool last) {
    const Stage a = block(m, c, false, pl.hbm_share, pl.pack, last), b = block(m, c, true, pl.hbm_share, pl.pack, last);
    return Stage{a.cube, (1 - mfrac) * a.vec + mfrac * b.vec, a.mte2};
  };
  double w = (pl.queue ? 0.0 : pl.task_cycles) + double(m) * q_.Dk * q_.e / p.ddr_rate +
             pl.aiv_share * double(m) * q_.Dv * q_.e / vec_l2_rate_;
  const double cnt = double(g.count) * pl.heads * ks;
  if (nb > 0) {
    const Stage f = stage(s2b, false), tl = stage(tail, true);
    if (pl.mla_split) s->mla_rows.push_back({w, f, tl, m, nb, tail});
    w += stream(f, tl, nb, pl.queue, pl.sync, pl.task_cycles);
    s->fill = std::max(s->fill, tl.cube + tl.vec + tl.mte2 - std::max({tl.cube, tl.vec, tl.mte2}));
    s->cube += cnt * ((nb - 1) * f.cube + tl.cube);
    s->vec += cnt * ((nb - 1) * f.vec + tl.vec);
    s->mte2 += cnt * ((nb - 1) * f.mte2 + tl.mte2);
    // Workspace round trips through L2: S (fp32) out and in, P out and in, the P V partial out and in.
    s->ws_bytes += cnt * 2.0 * m * (double(Ls) * (4 + q_.e) + double(nb) * q_.Dv * 4);
  }
  s->total += w * cnt;
  s->n_tasks += cnt;
  s->max_task = std::max(s->max_task, w);
  if (pl.queue)
    s->pfa_blocks[gi].push_back({w, q_.causal && g.s1 == g.s2 ? r0 / pl.tb + 1 : cdiv(kv_len(g), s2b)});
  if (ks > 1) s->comb_bytes += double(g.count) * pl.heads * m * (ks * (q_.Dv * 4.0 + 8) * 2 + q_.Dv * q_.e);
}

double FlashModel::evaluate(const int64_t* t, Breakdown* out) const {
  const Platform& p = p_;
  const Plan pl = plan(t);
  TaskSums s;
  s.pfa_blocks.resize(pl.queue ? q_.groups.size() : 0);
  for (size_t gi = 0; gi < q_.groups.size(); ++gi) {
    const int64_t rows = q_.groups[gi].s1 * pl.rpp;
    for (int64_t r0 = 0; r0 < rows; r0 += pl.tb) add_task(pl, gi, r0, std::min(pl.tb, rows - r0), &s);
  }
  auto [cores, waves] = task_waves(s.n_tasks, pl.pack);
  double core_cycles = std::max(waves * s.total / std::max(1.0, s.n_tasks), s.max_task) + s.fill;
  if (pl.queue) {  // 910B PromptFlashAttention: CANN's own split, the busiest AIC's tasks
    const CoreLoad load = pfa_core_load(s.pfa_blocks, pl.heads, pl.ks, pl.aiv_tasks);
    cores = load.cores;
    waves = load.waves;
    core_cycles = load.cycles + s.fill;
  }
  if (pl.mla_split && !s.mla_rows.empty()) {
    const CoreLoad load = mla_core_load(s.mla_rows, q_.B * q_.Nkv, pl.s2b, pl.sync, pl.task_cycles, &s.comb_bytes);
    cores = load.cores;
    waves = load.waves;
    core_cycles = load.cycles + s.fill;
  }
  const double f = p.freq_mhz;
  // Flash decoding: the partial outputs (fp32 O, max and sum) combined by the AIVs after a SyncAll.
  const double comb_us =
      s.comb_bytes > 0 ? (s.comb_bytes / (p.vector_cores * vec_l2_rate_) + mte2_head(int(cores), false)) / f : 0;
  const double head_us = (kOpHead + mte2_head(int(cores), true) + kMte3Head + kVecHead + p.scalar_start_cycles +
                          p.vec_launch_cycles) / f;
  // The S/P workspace round trip is charged per core (block()), not against the chip's L2 rate: it
  // stays in each core's slice of L2, and charging it there gives twice the measured time of long
  // prefills on 950PR (fit half: GQA M1124, MHA M1143).
  const double hbm_us = unique_bytes_ / hbm_Bpus_, l2_us = pl.kv_reads / l2_Bpus_;
  const double core_us = core_cycles / f;
  const double time = std::max({core_us, hbm_us, l2_us}) + head_us + comb_us;
  if (out) fill_breakdown(s, pl.kv_reads, cores, waves, head_us + comb_us, hbm_us, core_us, time, out);
  return time;
}

void FlashModel::fill_breakdown(const TaskSums& s, double kv_reads, int64_t cores, double waves, double head_us,
                                double hbm_us, double core_us, double time, Breakdown* out) const {
  const double f = p_.freq_mhz;
  Breakdown& b = *out;
  b.time_us = time;
  b.cube_us = s.cube / cores / f;
  b.vector_us = s.vec / cores / f;
  b.mte2_us = s.mte2 / cores / f;
  b.head_us = head_us;
  b.gm_read_bytes = kv_reads + unique_bytes_ - unique_kv_ - out_bytes_;  // Q and the mask once, K/V per task
  b.hbm_read_bytes = unique_bytes_ - out_bytes_;
  b.gm_write_bytes = out_bytes_;
  b.ub_bytes = s.ws_bytes;
  b.flops = flops_;
  b.cores_used = int(cores);
  b.waves = int(waves);
  b.roofline_us = roofline_us_;
  if (b.head_us > 0.5 * time) b.bound = "latency";
  else if (hbm_us >= core_us || b.mte2_us >= std::max(b.cube_us, b.vector_us)) b.bound = "memory";
  else b.bound = "compute";
}

// The AI cores take a task each a wave.  IncreFlashAttention on 910B deals its (batch, KV head, KV
// split) tasks to the AIVs in contiguous ranges, the first tasks % aivNum AIVs one more
// (incre_flash_attention_tiling.cpp SplitBN_V0, SplitBNS), and launches one AIC per two AIVs
// (CalcBlockDim: aicNum = ceil(aivNum / 2)): AIC 0 carries the tasks of AIVs 0 and 1.  With at most
// half the AIVs busy, no KV split and a cube template (not fp16 G = 1's all-vector one), AIC and AIV
// pair 1:1 (EnableC1V1): a task per AIC.
std::pair<int64_t, double> FlashModel::task_waves(double n_tasks, bool pack) const {
  const Platform& p = p_;
  if (!(pack && ifa_on_aivs_910b(q_, p))) {
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(p.cube_cores, int64_t(n_tasks)));
    return {cores, std::ceil(n_tasks / cores)};
  }
  const int64_t nt = int64_t(n_tasks), aiv = p.vector_cores, base = nt / aiv, former = nt % aiv;
  const bool c1v1 = (q_.G > 1 || q_.bf16) && 2 * nt <= aiv && !(q_.S1max == 1 && flash_decode(q_, q_.S2max, aiv, true));
  return {std::max<int64_t>(1, c1v1 ? nt : cdiv(std::min(nt, aiv), 2)),
          c1v1 ? 1.0 : double(2 * base + (former > 0) + (former > 1))};
}

// 910B PromptFlashAttention's cube-split templates (prompt_flash_attention_tiling.cpp SetSplitCoreMode,
// :1003-1045): head dim 128, fp16/bf16, no actual lengths (not TND), S1 = S2, and either S1 >= 16K
// with B x N >= 12 (SPLIT_ONEN_CUBE) or S1 >= 3K with B x N x ceil(S1 / (2 sOuter)) >= coreNum (the
// AIVs) and GQA, several batches or (8K and no mask) (SPLIT_NBS_CUBE).  Only these enable the
// matmul's L1 sharing of K/V between the AIC's two AIVs (MM_IBSHARE_NORM, tiling key +2000000 in
// TilingGetTilingKeyAttentionAscendC :653); the others run one matmul per AIV.
bool FlashModel::pfa_l1_reuse(int64_t s1b) const {
  if (q_.tnd || q_.Dk != 128 || q_.Dv != 128 || q_.groups.size() != 1 || q_.S1max != q_.S2max) return false;
  const int64_t s = q_.S1max, bn = q_.B * q_.N;
  const bool masked = q_.mask || q_.causal;
  const bool one_n = s >= 16384 && bn >= 12;
  const bool nbs = s >= 3072 && bn * cdiv(s, s1b) >= p_.vector_cores && (q_.G != 1 || q_.B != 1 || (s >= 8192 && !masked));
  return one_n || nbs;
}

// PromptFlashAttentionSplitNSNew (prompt_flash_attention_tiling.cpp :841-984): the tasks in (head,
// batch, query block) order are cut into contiguous ranges, one per core, a new range starting where
// the next task would overshoot the running target (total weight / cores x ranges so far) by more
// than it falls short; the first range can stay empty.  Over the AIVs (`aiv`), AIV 2k and 2k + 1
// share AIC k, except that with at most half the AIVs + 1 ranges the kernel's skip-core remap
// (prompt_flash_attention_s1s2_bns1_x910_base.h Init :1698-1706) puts range k on AIC k (k < AICs).
// The cube-split template cuts over the AICs (SPLIT_NBS_CUBE: curCoreNum / CV_RATIO); SPLIT_ONEN_CUBE
// balances each head's blocks over all AICs instead, which the same cut approximates.
FlashModel::CoreLoad FlashModel::pfa_core_load(const std::vector<std::vector<PfaBlock>>& blocks, int64_t heads,
                                               int64_t ks, bool aiv) const {
  const int64_t units = aiv ? p_.vector_cores : p_.cube_cores, aic = p_.cube_cores;
  int64_t total = 0;
  for (size_t gi = 0; gi < blocks.size(); ++gi)
    for (const auto& b : blocks[gi]) total += b.weight * q_.groups[gi].count;
  const float target = float(total * heads * ks) / float(units);  // float as CANN's coreWightTarget
  std::vector<double> range_cycles(1, 0.0);
  std::vector<int64_t> range_tasks(1, 0);
  int64_t cur = 0, core = 0;
  for (int64_t h = 0; h < heads; ++h)
    for (size_t gi = 0; gi < blocks.size(); ++gi)
      for (int64_t c = 0; c < q_.groups[gi].count * ks; ++c)
        for (const auto& b : blocks[gi]) {
          const int64_t dif = int64_t(target * float(core + 1)) - cur;
          if (b.weight - dif > dif && core + 1 < units) {  // (CANN has no cap; the target keeps it below)
            ++core;
            range_cycles.push_back(0);
            range_tasks.push_back(0);
          }
          range_cycles[core] += b.cycles;
          range_tasks[core] += 1;
          cur += b.weight;
        }
  const int64_t used = core + 1;
  std::vector<double> cyc(aic, 0.0), tasks(aic, 0.0);
  for (int64_t r = 0; r < used; ++r) {
    const int64_t a = !aiv ? r : (used <= units / 2 + 1 ? r % aic : r / 2);
    cyc[a] += range_cycles[r];
    tasks[a] += range_tasks[r];
  }
  CoreLoad load{0, 0, 0};
  for (int64_t a = 0; a < aic; ++a) {
    load.cores += tasks[a] > 0;
    load.waves = std::max(load.waves, tasks[a]);
    load.cycles = std::max(load.cycles, cyc[a]);
  }
  load.cores = std::max<int64_t>(1, load.cores);
  return load;
}

// FIA's MLA decode split on 910B (attention/common/op_host/split_core.h SplitCore, called by
// arch32/fia_tiling_nonquant_mla.cpp Split): the (batch, query block, key block) blocks in that order,
// each costing 6 per 16 rows + 10 per 64 keys (CalBasicCost; all 10 when there are no more blocks than
// cores), are dealt out in contiguous ranges for every core count from round(sqrt(blocks)) to
// min(AICs, blocks), and the count whose busiest core costs least wins (the first on a tie).  Each
// core, with a limit of the unassigned cost over the cores left, takes whole batches, then whole
// query blocks (not a batch's last), then single key blocks, each while it overshoots the limit by
// at most half its last block (GetBlockNumOnCore: AssignByBatch, AssignByRow, AssignByBlock), and
// at least one block.  A query block cut between cores is combined afterwards (flash decoding,
// SplitFD).  Returns the busiest AIC's blocks and its model cycles (per segment of a query block:
// set-up plus its pipelined key blocks).
FlashModel::CoreLoad FlashModel::mla_core_load(const std::vector<MlaRow>& rows, int64_t batches, int64_t s2b,
                                               double sync, double task, double* comb_bytes) const {
  struct Blk {
    int64_t unit, row, col, cost;  // unit: batch (x KV head), row: index into rows
  };
  std::vector<Blk> blk;
  for (int64_t b = 0; b < batches; ++b)
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t c = 0; c < rows[r].nb; ++c) blk.push_back({b, int64_t(r), c, 10});
  const int64_t n = int64_t(blk.size()), aic = p_.cube_cores;
  if (n > aic)
    for (auto& x : blk) {
      const int64_t keys = x.col + 1 == rows[x.row].nb ? rows[x.row].tail : s2b;
      x.cost = 6 * cdiv(rows[x.row].m, 16) + 10 * cdiv(keys, 64);
    }
  auto run_end = [&](int64_t i, bool same_row) {  // end of the batch (or query block) block i is in
    int64_t j = i;
    while (j < n && blk[j].unit == blk[i].unit && (!same_row || blk[j].row == blk[i].row)) ++j;
    return j;
  };
  auto assign = [&](int64_t cores, std::vector<int64_t>* first) {  // returns the busiest core's cost
    int64_t total = 0, i = 0, worst = 0;
    for (const auto& x : blk) total += x.cost;
    first->clear();
    for (int64_t core = 0; total > 0 && core < cores; ++core) {
      const int64_t limit = total / (cores - core);
      int64_t cur = 0, cnt = 0;
      first->push_back(i);
      for (bool by_row : {false, true})
        while (i < n && (!by_row || blk[i].row + 1 < int64_t(rows.size()))) {
          const int64_t j = run_end(i, by_row);
          int64_t left = 0;
          for (int64_t k = i; k < j; ++k) left += blk[k].cost;
          if (limit + blk[j - 1].cost / 2 < cur + left) break;
          cur += left, cnt += j - i, i = j;
        }
      while (i < n && (limit + blk[i].cost / 2 >= cur + blk[i].cost || cnt == 0)) {
        cur += blk[i].cost, ++cnt, ++i;
        if (i < n && (blk[i].unit != blk[i - 1].unit || blk[i].row != blk[i - 1].row)) break;
      }
      worst = std::max(worst, cur);
      total = std::max<int64_t>(0, total - cur);
    }
    first->push_back(i);
    return worst;
  };
  const int64_t max_cores = std::min(aic, n);
  const int64_t min_cores = std::min(max_cores, int64_t(std::sqrt(float(n) + 0.25f) + 0.5f));
  std::vector<int64_t> best, trial;
  int64_t best_cost = -1;
  for (int64_t c = min_cores; c <= max_cores; ++c) {
    const int64_t cost = assign(c, &trial);
    if (best_cost < 0 || cost < best_cost) best_cost = cost, best = trial;
  }
  CoreLoad load{0, 0, 0};
  std::map<std::pair<int64_t, int64_t>, int64_t> parts;  // cores on each (batch, query block)
  for (size_t c = 0; c + 1 < best.size(); ++c) {
    double cyc = 0;
    for (int64_t i = best[c]; i < best[c + 1];) {
      const int64_t j = std::min(best[c + 1], run_end(i, true));
      const MlaRow& r = rows[blk[i].row];
      cyc += r.fixed + stream(r.full, blk[j - 1].col + 1 == r.nb ? r.last : r.full, j - i, false, sync, task);
      parts[{blk[i].unit, blk[i].row}] += 1;
      i = j;
    }
    load.cores += best[c + 1] > best[c];
    load.waves = std::max(load.waves, double(best[c + 1] - best[c]));
    load.cycles = std::max(load.cycles, cyc);
  }
  for (const auto& [key, k] : parts)
    if (k > 1) *comb_bytes += double(rows[key.second].m) * (k * (q_.Dv * 4.0 + 8) * 2 + q_.Dv * q_.e);
  load.cores = std::max<int64_t>(1, load.cores);
  return load;
}

// ---- MlaProlog ------------------------------------------------------------------------------
// DeepSeek's MLA prologue as one kernel (ops-transformer attention/mla_prolog): for T = B x S
// tokens, cq = RmsNorm(x W_dq); q = cq W_uq_qr (per head 128 nope + 64 rope); q_nope W_uk per
// head (the absorbed key up-projection, to the 512-wide latent); ckv_kr = x W_dkv_kr; RmsNorm of
// the 512 latent, RoPE of the 64 rope dims of q and k, and the KV cache write.  Modelled as its
// matmuls on the AICs and the vector work on the AIVs: on 910B in the kernel's token steps, the AIVs'
// stages overlapping the AICs' as its cross-core flags allow (c220_schedule); elsewhere serial.
class MlaPrologModel : public OpModel {
 public:
  MlaPrologModel(const OpDesc& op, const Platform& p) : p_(p) {
    kind_ = op.kind;
    const auto& in = op.inputs;
    if (in.size() < 7) fail(op.kind + ": takes token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, "
                            "rmsnorm_gamma_cq, rmsnorm_gamma_ckv (, rope_sin, rope_cos), got " +
                            std::to_string(in.size()) + " inputs");
    const auto &x = in[0], &wdq = in[1], &wuq = in[2], &wuk = in[3], &wdkv = in[4];
    if (x.size() < 2) fail(op.kind + ": token_x must be [B, S, He] or [T, He], got " + shape_str(x));
    const int64_t He = x.back(), T = numel(x) / He;
    auto need = [&](bool ok, const char* name, const std::vector<int64_t>& s, const std::string& want) {
      if (!ok) fail(op.kind + ": " + name + " has shape " + shape_str(s) + ", expected " + want);
    };
    need(wdq.size() == 2 && wdq[0] == He, "weight_dq", wdq, "[" + std::to_string(He) + ", Hcq]");
    const int64_t Hcq = wdq[1];
    need(wuk.size() == 3, "weight_uk", wuk, "[N, D_nope, D_latent]");
    const int64_t N = wuk[0], Dn = wuk[1], Dl = wuk[2];
    if (attr_int(op, "num_heads", N) != N)
      fail(op.kind + ": num_heads is " + std::to_string(attr_int(op, "num_heads", N)) + " but weight_uk has " +
           std::to_string(N) + " heads");
    need(wuq.size() == 2 && wuq[0] == Hcq && wuq[1] % N == 0 && wuq[1] / N > Dn, "weight_uq_qr", wuq,
         "[" + std::to_string(Hcq) + ", N x (D_nope + D_rope)]");
    const int64_t Dr = wuq[1] / N - Dn;
    need(wdkv.size() == 2 && wdkv[0] == He && wdkv[1] == Dl + Dr, "weight_dkv_kr", wdkv,
         "[" + std::to_string(He) + ", " + std::to_string(Dl + Dr) + "]");
    // The projections stream their weights over the cores (per-core MTE2 rate, capped by HBM) and
    // run the cube on the token rows (fractal-padded to 16).  The cube model's standalone
    // MatMul tilings are not the fused kernel's (it splits N over every core even for 4 tokens),
    // so the projections are costed here; the measured times grow linearly with T from the
    // smallest batch, so streaming and cube work are added, not overlapped (an assumption).
    const int e = dtype_size(op.dtype);
    const double f = p.freq_mhz;
    // Weights of mm1 (W_dq), mm3 (W_uq_qr), mm4 (W_uk), mm2 (W_dkv_kr), in elements.
    const double kn[4] = {double(He) * Hcq, double(Hcq) * wuq[1], double(N) * Dn * Dl, double(He) * (Dl + Dr)};
    // Weight elements of the busiest AIC in each matmul.  910B (mla_prolog_tiling.cpp
    // FillMatmul1..4Tiling): mm1 (W_dq) and mm3 (W_uq_qr) split N over the AICs in 32-byte
    // multiples (CalcSingleCoreN), mm2 (W_dkv_kr) gives 64 columns to each of (Dl + Dr) / 64 AICs
    // once there are at least 9 (9 for DeepSeek's 576: the other AICs wait), mm4 (W_uk) gives
    // ceil(N / aicNum) heads to each AIC.  The stages run one after another on the AICs
    // (kernel_mla_prolog_split_n.h AicProcess), so the busiest core of each sets its time.
    // Elsewhere: an even split over all cores.
    double slice[4];
    const int64_t aic = p.cube_cores, al = 32 / e;
    auto single_n = [](int64_t n, int64_t cores, int64_t a) { return cdiv(n, a * cores) * a; };
    if (c220(p)) {
      slice[0] = double(single_n(Hcq, aic, al)) * He;                       // mm1
      slice[1] = double(single_n(wuq[1], aic, al)) * Hcq;                   // mm3
      slice[2] = double(cdiv(N, aic)) * Dn * Dl;                            // mm4
      slice[3] = double(aic >= 9 ? 64 : single_n(Dl + Dr, aic, al)) * He;  // mm2
    } else {
      for (int k = 0; k < 4; ++k) slice[k] = kn[k] / aic;
    }
    cost_matmuls(kn, slice, T, N, Dl, e);
    hcq_ = double(Hcq);
    dl_ = double(Dl);
    dr_ = double(Dr);
    heads_ = double(N);
    elem_ = e;
    // RopeQr's copy-in: N bursts of Dr elements, one per head's (Dn + Dr) row of MatmulQcQr's output.
    qr_in_bytes_ = double(N) * read_charge(Dr * e, N * (Dn + Dr) * e, (Dn + Dr) * e, p.gm_sector);
    head_us_ = (kOpHead + mte2_head(p.cube_cores, true) + kMte3Head + kVecHead + p.scalar_start_cycles +
                p.vec_launch_cycles) / f;
    // Bytes each token writes from the AIVs outside 910B: query (N x (Dl + Dr)) and both caches.
    tok_out_bytes_ = double(N * (Dl + Dr) + Dl + Dr) * e;
    out_bytes_ = double(T) * tok_out_bytes_;
    bytes_ += out_bytes_ + double(T) * He * e;
    roofline_us_ = std::max(flops_ / (double(p.cube_cores) * 16 * 16 * 16 * 2 * p.freq_mhz), bytes_ / (p.hbm_gbps * 1e3));
    const int64_t vpc = p.split ? std::max<int64_t>(1, p.vector_cores / p.cube_cores) : 1;
    spec_.names = {"mixRatio"};
    std::vector<int64_t> r;
    for (int64_t v = 1; v <= vpc; ++v) r.push_back(v);
    spec_.values = {r};
    spec_.baseline = {vpc};  // the kernel runs as a mix kernel with every AIV (C1V2 on A2/A3)
    spec_.baseline_kind = "approximate CANN default";
    finish_spec();
  }

  double evaluate(const int64_t* t, Breakdown* out) const override {
    const Platform& p = p_;
    const double aivs = double(p.cube_cores) * t[0];
    double vec_us = 0, span_us = 0;
    if (c220(p)) {
      span_us = c220_schedule(aivs, &vec_us);
    } else {
      // Outside 910B: all rows spread evenly over the AIVs, after the matmuls.
      const double tok = double(steps_[0]) / aivs;
      const double vcyc = (vec_cycles(rms_prog(), std::ceil(tok * (hcq_ + dl_))) +
                           vec_cycles(rope_prog(), std::ceil(tok * (heads_ + 1) * dr_))) * p.vec_cost_scale;
      vec_us = std::max(vcyc, tok * tok_out_bytes_ / vec_rate()) / p.vec_freq_mhz;
      span_us = mm_us_ + vec_us;
    }
    const double time = span_us + head_us_;
    if (out) {
      out->time_us = time;
      out->head_us = head_us_;
      out->cube_us = mm_us_;
      out->vector_us = vec_us;
      out->flops = flops_;
      out->hbm_read_bytes = out->gm_read_bytes = bytes_ - out_bytes_;
      out->gm_write_bytes = out_bytes_;
      out->cores_used = p.cube_cores;
      out->waves = int64_t(steps_.size());  // token steps (910B) or one pass
      out->roofline_us = roofline_us_;
      out->bound = mm_us_ > vec_us ? "memory" : "compute";
    }
    return time;
  }

 private:
  // RmsNorm per element: square, sum, rsqrt scale, gamma, with the casts to and from fp32
  // (service_rms_norm.h RmsNormNormal); RoPE: two multiplies and an add on the rotated halves.
  static const std::vector<VecStep>& rms_prog() {
    static const std::vector<VecStep> rms = {{vec_api_cost("Mul"), true},    {vec_api_cost("WholeReduceSum"), true},
                                             {vec_api_cost("Mul"), true},    {vec_api_cost("Mul"), true},
                                             {vec_api_cost("CastUp"), true}, {vec_api_cost("CastDown"), true}};
    return rms;
  }
  static const std::vector<VecStep>& rope_prog() {
    static const std::vector<VecStep> rope = {{vec_api_cost("Mul"), true}, {vec_api_cost("Mul"), true},
                                              {vec_api_cost("Add"), true}, {vec_api_cost("CastUp"), true},
                                              {vec_api_cost("CastDown"), true}};
    return rope;
  }
  // One AIV's GM rate (bytes per cycle).
  double vec_rate() const {
    return p_.ddr_rate * (p_.vec_rate_share > 0 ? p_.vec_rate_share : double(p_.cube_cores) / p_.vector_cores);
  }
  // One AIV's time (us) on `tok` tokens of a 910B vector stage: per token, the kernel copies the token's
  // rows in (`loads` DataCopy calls, `in` bytes charged), runs `rms` RmsNorm and `rope` RoPE elements and
  // copies `out` bytes back in `stores` calls, each hand-off waited out by a SetFlag/WaitFlag pair
  // (MTE2_V, V_MTE3, MTE3_V, MTE3_MTE2 in RmsNormCq, RmsNormRopeScatterCkvKr, RopeQr): nothing overlaps.
  double vec_token_us(double tok, double rms, double rope, double in, double out, int loads, int stores) const {
    const double cyc = ((rms > 0 ? vec_cycles(rms_prog(), rms) : 0.0) +
                        (rope > 0 ? vec_cycles(rope_prog(), rope) : 0.0)) * p_.vec_cost_scale;
    return tok * (cyc + (in + out) / vec_rate() + loads * kLoadCall + stores * kStoreCall) / p_.vec_freq_mhz;
  }

  // 910B: the token steps as the kernel's cross-core flags order them (kernel_mla_prolog_split_n.h
  // Process, AicProcess, AivProcess and the flow chart above Process).  Per step, the AIC runs
  // MatmulCq, MatmulCkvKr, [waits FINISH_VEC_RMSNORM_CQ], MatmulQcQr, the W_uk preload, raises
  // FINISH_MM_QCQR, [WaitAllCore of the AICs], MatmulQn, then goes on to the next step's MatmulCq
  // without waiting for the AIVs.  The AIV, per step, [waits FINISH_MM_CQ + all AIVs] RmsNorm(cq)
  // (raises FINISH_VEC_RMSNORM_CQ), [waits FINISH_MM_CKVKR] RmsNorm(ckv) + RoPE(kr) + both cache
  // scatters, [waits FINISH_MM_QCQR] RoPE(qr).  So RmsNorm(cq) runs under MatmulCkvKr, the ckv/kr
  // work under MatmulQcQr, RoPE(qr) under MatmulQn and the next step's MatmulCq: an overlapped pair
  // costs its max, a stage waiting on the other side starts at the later of the two.  The AIVs split
  // a step's rows by whole tokens: vectorBlockNum = min(step rows, aivNum), ceil(rows /
  // vectorBlockNum) tokens on the busiest (mla_prolog_tiling.cpp ProcessBaseInputs, ComputeAivOffset).
  // Flag latencies are not charged (no published figure).  Returns the span (us); AIV busy time in *vec_us.
  double c220_schedule(double aivs, double* vec_us) const {
    const double e = elem_;
    double aic = 0, aiv = 0;  // when each side is free
    *vec_us = 0;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const double m = double(steps_[i]), tok = std::ceil(m / std::min(m, aivs));
      const auto& mm = stage_mm_[i];  // mm1 (W_dq), mm3 (W_uq_qr), mm4 (W_uk), mm2 (W_dkv_kr)
      // CopyInSinCos: the step's sin and cos rows, two DataCopy calls, before the wait for MatmulCq.
      const double v_sc = vec_token_us(1, 0, 0, 2 * tok * dr_ * e, 0, 2, 0);
      // RmsNorm(cq) reads the token's Hcq row of MatmulCq and writes it to the workspace MatmulQcQr reads.
      const double v_cq = vec_token_us(tok, hcq_, 0, hcq_ * e, hcq_ * e, 1, 1);
      // RmsNorm(ckv) then RoPE(kr), each read and scattered to its cache on its own.
      const double v_kv = vec_token_us(tok, dl_, dr_, (dl_ + dr_) * e, (dl_ + dr_) * e, 2, 2);
      // RoPE(qr): one strided copy of the token's N rope rows (a Dr x e burst per head), one copy out.
      const double v_qr = vec_token_us(tok, 0, heads_ * dr_, qr_in_bytes_, heads_ * dr_ * e, 1, 1);
      const double cq_done = aic + mm[0];
      const double norm_done = std::max(aiv + v_sc, cq_done) + v_cq;
      const double ckvkr_done = cq_done + mm[3];
      const double qcqr_done = std::max(ckvkr_done, norm_done) + mm[1] + stage_pre_[i];
      const double kv_done = std::max(norm_done, ckvkr_done) + v_kv;
      aic = qcqr_done + mm[2] - stage_pre_[i];
      aiv = std::max(kv_done, qcqr_done) + v_qr;
      *vec_us += v_sc + v_cq + v_kv + v_qr;
    }
    return std::max(aic, aiv);
  }

  // Each matmul stage's time per token step on its busiest AIC: the weight slice streamed (the
  // whole weight at the chip's rate if that is longer), then the cube on the step's rows.
  void cost_matmuls(const double kn[4], const double slice[4], int64_t T, int64_t N, int64_t Dl, int e) {
    const Platform& p = p_;
    const double f = p.freq_mhz;
    const int64_t aic = p.cube_cores;
    // 910B: the kernel walks the T tokens in steps of stepBatchSize = min(128, T) rows
    // (mla_prolog_tiling.cpp ProcessBaseInputs; kernel_mla_prolog_split_n.h Process's batchOffset
    // loop), every step running all four matmuls on its rows with each AIC re-reading its N slice
    // of every weight (MatmulSplitN per step, offsets fixed per core).  So the weights stream once
    // per step and the cube's M is the step's rows, padded to 16.  Elsewhere: one pass of all T.
    steps_.clear();
    if (c220(p)) {
      for (int64_t done = 0; done < T; done += kMlaStepBatch) steps_.push_back(std::min(kMlaStepBatch, T - done));
    } else {
      steps_.push_back(T);
    }
    // A stage's stream: its slice at the per-core MTE2 rate, or all its weight at the chip's rate.
    // From the second step on, the weights the L2 holds (hit share min(1, L2 / weight bytes), as the
    // cube model's re-reads) come at the per-core L2 rate (cube.cpp's MTE2 cycles per byte).
    const double hit = std::min(1.0, p.l2 / ((kn[0] + kn[1] + kn[2] + kn[3]) * e));
    const double l2_chip = p.l2_gbps > 0 ? p.l2_gbps * 1e3 : 1e30;
    const double peak = 16 * 16 * 16 * 2 * f;  // one AIC, fp16/bf16 fractal per cycle (DtypeMKN)
    // 910B: the busiest AIC preloads the first two of its ceil(N / aicNum) heads' W_uk slices into L1
    // before it raises FINISH_MM_QCQR (PreloadQnAndSync, MatmulQnWeightPreload); the rest of
    // MatmulQn follows.
    const double heads_per_aic = double(cdiv(N, aic));
    const double preload = std::min(2.0, heads_per_aic) / heads_per_aic;
    stage_mm_.assign(steps_.size(), {0, 0, 0, 0});
    stage_pre_.assign(steps_.size(), 0);
    for (int k = 0; k < 4; ++k) {
      const double w = kn[k], sl = slice[k] * e;
      const double first = std::max(w * e / (p.hbm_gbps * 1e3), sl / (p.ddr_rate * f));
      const double reread = (1 - hit) * first + hit * std::max(w * e / l2_chip, sl / (p.mte2_eff * p.l2_rate * f));
      for (size_t i = 0; i < steps_.size(); ++i) {
        const double stream = i == 0 ? first : reread;
        double cube = 2 * double(align_up(steps_[i], 16)) * slice[k] / (peak * kMlaCubeEff);
        if (k == 2 && c220(p)) {
          stage_pre_[i] = preload * stream;
          // MatmulQn's Fixpipe writes query_out itself (Init: mmQnResGm_ is queryOut without the int8
          // KV cache), the busiest AIC its heads of the step's rows; the two L0C buffers (FIX_M flags
          // in service_matmul.h MatmulFullLoad) let it drain one block while the cube fills the next.
          cube = std::max(cube, double(steps_[i]) * heads_per_aic * Dl * e / (p.ddr_rate * f));
        }
        stage_mm_[i][k] = stream + cube;
        mm_us_ += stage_mm_[i][k];
      }
      flops_ += 2.0 * T * w;
      bytes_ += w * e;
    }
  }

  Platform p_;
  double mm_us_ = 0, head_us_ = 0, flops_ = 0, bytes_ = 0, out_bytes_ = 0, tok_out_bytes_ = 0;
  double hcq_ = 0, dl_ = 0, dr_ = 0, heads_ = 0, elem_ = 2;  // Hcq, latent, rope dims, heads, bytes per element
  double qr_in_bytes_ = 0;                                     // RopeQr's charged copy-in bytes per token
  std::vector<int64_t> steps_;                   // rows of each token step
  std::vector<std::array<double, 4>> stage_mm_;  // per step: mm1, mm3, mm4, mm2 on the busiest AIC (us)
  std::vector<double> stage_pre_;                // per step: the W_uk preload inside mm4 (910B)
};

}  // namespace

std::shared_ptr<OpModel> make_attention_model(const OpDesc& op, const Platform& p) {
  if (op.kind == "MlaProlog") {
    if (op.dtype != "float16" && op.dtype != "bfloat16")
      fail(op.kind + ": token_x dtype must be float16 or bfloat16, got " + op.dtype);
    return std::make_shared<MlaPrologModel>(op, p);
  }
  AttnProblem q = read_attention(op);
  if (op.kind == "SparseFlashAttention") {
    if (op.inputs.size() < 4 || op.inputs[3].empty())
      fail(op.kind + ": needs sparse_indices (input 3: [B, S1, Nkv, top_k] in BSND, [B, Nkv, S1, top_k] in BNSD)");
    const auto& idx = op.inputs[3];
    const bool tnd = layout_of(op) == "TND";  // [T, Nkv, top_k]
    if (idx.size() != (tnd ? 3u : 4u) || (!tnd && idx[0] != q.B))
      fail(op.kind + ": sparse_indices has shape " + shape_str(idx) + ", expected " +
           (tnd ? std::string("[T, Nkv, top_k]") : "[B, S1, Nkv, top_k] with B = " + std::to_string(q.B)));
    q.topk = idx.back();
  } else if (op.inputs.size() > 3 && !op.inputs[3].empty()) {
    q.mask = true;
    check_mask(op, q, op.inputs[3]);
  }
  if (op.inputs.size() > 4)
    fail(op.kind + ": takes at most 4 inputs (query, key, value, " +
         (op.kind == "SparseFlashAttention" ? "sparse_indices" : "atten_mask") + "), got " +
         std::to_string(op.inputs.size()));
  return std::make_shared<FlashModel>(q, p);
}

}  // namespace aoe::ascend::detail
