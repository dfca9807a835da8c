// Vector operators: elementwise (single and fused chains, with broadcasting),
// Cast, reductions, Softmax, LayerNorm, Transpose and data movement.  All follow the Ascend C
// vector pattern ([A] 多核Tiling.md, DoubleBuffer.md; docs/ascend_model.md §2.3):
// the work is split over `blockDim` cores; each core loops CopyIn (MTE2) ->
// Compute (Vector) -> CopyOut (MTE3) over UB tiles of `tileLen` elements,
// with `bufferNum` (1 or 2) buffers per queue.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "common.hpp"

namespace aoe::ascend::detail {
namespace {

enum P { kBlockDim, kTileLen, kBufferNum, kSplitR };

// What a vector stream that reads and writes reaches at HBM on A2 (910B), GB/s: the published GELU
// alone on 8192 x 8192 fp32 (shared/reference/ascend_measured_cases.md §5.5, A2, 48 AIV: 369.827 us,
// from asc-devkit examples/03_fusion_compute/matmul_gelu_high_performance) reads 268.4 MB and
// writes 268.4 MB, of which L2 (192 MB) keeps 268.4 x 201.3 / 536.9 = 100.6 MB (l2_absorbed):
// 436.2 MB / 369.827 us = 1179 GB/s, below the 1.6-1.8 TB/s the docs quote for GM (the same
// section's reads alone, §5.8 GM->UB, reach 1.46-1.49 TB/s).  910B2 and 910B1 share the HBM
// (64 GiB, ascend_model.md §1).
constexpr double kC220StreamGBps = 436.2e6 / 369.827 / 1e3;

// The 32-byte blocks of a tensor list (VecKernel::list_elems), each tensor's rounded up with
// list_block_align.
int64_t list_blocks(const VecKernel& k) {
  const int64_t epb = 32 / k.ds;
  int64_t blocks = 0, total = 0;
  for (int64_t n : k.list_elems) blocks += cdiv(n, epb), total += n;
  return k.list_block_align ? blocks : cdiv(total, epb);
}

// CANN's split of a tensor list over `cores` cores (hicann/ops-nn @ e5c3fa93,
// foreach/foreach_utils/op_host: foreach_tiling_class.h GetNeedCoreNum / AssignDataToEachCore,
// foreach_reduce_tiling_func.cpp the same with every tensor rounded up to whole 32-byte blocks):
// no more cores than blocks, core c takes blocks / cores blocks (one more while c < blocks % cores)
// of the list laid end to end, the last core the rest.  Returns each used core's part of every
// tensor it touches (cores whose share is padding alone: none).
std::vector<std::vector<int64_t>> list_shares(const VecKernel& k, int64_t cores) {
  const int64_t epb = 32 / k.ds, blocks = list_blocks(k);
  cores = list_cores(k, cores);
  const int64_t per = blocks / cores, rem = blocks % cores;
  std::vector<std::vector<int64_t>> parts(static_cast<size_t>(cores));
  int64_t c = 0, end = (per + (rem > 0)) * epb, off = 0;
  for (int64_t n : k.list_elems) {
    for (int64_t pos = off; pos < off + n;) {
      while (c < cores - 1 && pos >= end) ++c, end += (per + (c < rem)) * epb;
      const int64_t hi = c == cores - 1 ? off + n : std::min(off + n, end);
      parts[size_t(c)].push_back(hi - pos);
      pos = hi;
    }
    off += k.list_block_align ? cdiv(n, epb) * epb : n;
  }
  return parts;
}

}  // namespace

int64_t list_cores(const VecKernel& k, int64_t cores) {
  return std::max<int64_t>(1, std::min(cores, list_blocks(k)));
}

namespace {
class VecModel : public OpModel {
 public:
  VecModel(const VecKernel& k, const Platform& p) : k_(k), p_(p) {
    kind_ = k.kind;
    const double f = p.freq_mhz;
    // Per vector core share of the AI core's GM rate ([R] ddr_rate is per
    // AI core; on split SoCs its AIVs share it).
    // (vec_rate_share, when fitted, is the share one AIV reaches.)
    rate_ = p.vec_rate_share > 0 ? p.ddr_rate * p.vec_rate_share
            : p.split             ? p.ddr_rate * p.cube_cores / p.vector_cores
                                  : p.ddr_rate;
    // C220 (910B): a vector stream that writes as it reads reaches kC220StreamGBps at HBM, not the
    // datasheet's hbm_gbps (see l2_absorbed for the bytes that reach it).
    hbm_Bpus_ = (c220(p) ? std::min(p.hbm_gbps, kC220StreamGBps) : p.hbm_gbps) * 1e3;
    l2_Bpus_ = (p.l2_gbps > 0 ? p.l2_gbps * 1e3 : p.cube_cores * p.l2_rate * p.freq_mhz);
    cost_scale_ = p.vec_cost_scale * p.vec_op_cost(k.kind, k.dtype);
    const double cores_rate =
        p.vector_cores * rate_ * f + p.standalone_vector_cores * p.standalone_ddr_rate * p.vec_freq_mhz;
    // The roofline is a lower bound under the same memory system as evaluate(): every byte passes
    // the cores' copy engines, but writes that L2 keeps need not reach HBM during the kernel, so
    // only the rest is charged at HBM's rate (at most, every byte a write and no read before it).
    roofline_us_ = std::max(k.unique_bytes / cores_rate, (k.unique_bytes - l2_absorbed(0, k.unique_bytes)) / hbm_Bpus_);
    build_spec();
    finish_spec();
  }

  double evaluate(const int64_t* t, Breakdown* out) const override {
    const Platform& p = p_;
    const VecKernel& k = k_;
    const int64_t bd = t[kBlockDim], tile = t[kTileLen], db = t[kBufferNum];
    const bool splitR = k.split_rows && t[kSplitR] == 1;
    const int64_t vc = vc_index_ >= 0 ? t[vc_index_] : 0;
    // Every core takes whole rows, or (splitR) 1/bd of every row with the
    // partial results combined after a core sync.
    const int64_t row = splitR ? cdiv(k.unit_elems, bd) : k.unit_elems;
    const bool fits = row <= tile;  // a row (share) fits one UB tile: one GM sweep
    const int sweeps = fits ? 1 : k.sweeps_if_split;
    // With standalone Vector Cores (vcBlocks > 0, never with splitR) the rows are shared in
    // proportion to each core's GM rate, the bound of these kernels: an even share would
    // leave the AI cores waiting for the slower Vector Cores.
    int64_t units_vc = 0;
    if (vc > 0) {
      const double w_ai = double(bd) * rate_ * p.freq_mhz, w_vc = double(vc) * p.standalone_ddr_rate * p.vec_freq_mhz;
      units_vc = std::min<int64_t>(k.units - bd, int64_t(std::floor(double(k.units) * w_vc / (w_ai + w_vc))));
      units_vc = std::max<int64_t>(0, units_vc);
    }
    const int64_t units_ai = k.units - units_vc;
    int64_t cores = splitR ? bd : std::min<int64_t>(bd, units_ai);
    const int64_t vcores = std::min<int64_t>(vc, units_vc);
    int64_t units_core = splitR ? k.units : cdiv(units_ai, bd);
    if (!splitR && k.unit_group > 1 && cdiv(units_ai, k.unit_group) >= bd)
      units_core = cdiv(cdiv(units_ai, k.unit_group), bd) * k.unit_group;
    if (!splitR && k.whole_passes_per_core && fits && units_ai > 0) {
      // A core's rows are whole tiles of tile / row rows; the cores past the last pass stay idle.
      const int64_t per_pass = rows_per_tile(fits, tile, row);
      units_core = std::min(units_ai, cdiv(cdiv(units_ai, per_pass), bd) * per_pass);
      cores = cdiv(units_ai, units_core);
    }
    const RowTiling rt{row, splitR, fits, sweeps, tile, db};
    const CoreRun ai = k.list_elems.empty() ? run_core(units_core, rt, rate_, cores) : run_list(cores, tile, db);
    const CoreRun vr = vcores > 0 ? run_core(cdiv(units_vc, vcores), {row, false, fits, sweeps, tile, db},
                                             p.standalone_ddr_rate, vcores)
                                  : CoreRun{};
    double core_cycles = ai.cycles;
    if (splitR) core_cycles += k.syncs * mte2_head(int(cores), false);  // SyncAll, then combine partials
    const double f = p.freq_mhz;
    const int64_t launched = cores + vcores;
    const double head_us =
        (kOpHead + mte2_head(int(launched), ai.tile_bytes >= 25000) + kMte3Head + kVecHead + p.vec_launch_cycles) / f;
    // L2 is cleared before the kernel (the benchmark's set-up), so reads come from HBM; writes
    // that L2 holds stay there (write-back) and go at L2 speed.
    const double reads = ai.read_ch * cores + vr.read_ch * vcores, writes = ai.write_ch * cores + vr.write_ch * vcores;
    const double rereads = ai.reread_ch * cores + vr.reread_ch * vcores;
    const double absorbed = l2_absorbed(reads - rereads, writes);
    const double hbm_us = std::max((reads - rereads + writes - absorbed) / hbm_Bpus_, (absorbed + rereads) / l2_Bpus_);
    const double ai_us = core_cycles / f, vc_us = vcores > 0 ? vr.cycles / p.vec_freq_mhz : 0.0;
    const double core_us = std::max(ai_us, vc_us);
    const double time = std::max(core_us, hbm_us) + head_us + k.fixed_us;
    if (out) {
      // Per-pipe times of the slowest core.
      const CoreRun& w = vc_us > ai_us ? vr : ai;
      const double wf = vc_us > ai_us ? p.vec_freq_mhz : f;
      Breakdown& b = *out;
      b.time_us = time;
      b.mte2_us = std::max(w.mte2 / wf, hbm_us * w.read_ch / std::max(1.0, w.read_ch + w.write_ch));
      b.vector_us = w.vec / wf;
      b.mte3_us = w.mte3 / wf;
      b.head_us = head_us;
      b.gm_read_bytes = (ai.read + ai.bcast) * cores + (vr.read + vr.bcast) * vcores;
      b.hbm_read_bytes = b.gm_read_bytes;
      b.gm_write_bytes = ai.write * cores + vr.write * vcores;
      b.ub_bytes = (ai.read + ai.write) * cores + (vr.read + vr.write) * vcores;
      b.flops = k.flops;
      b.cores_used = int(launched);
      b.waves = 1;
      b.roofline_us = roofline_us_;
      if (head_us > 0.5 * time) b.bound = "latency";
      else if (w.vec >= std::max({w.mte2, w.mte3, w.port})) b.bound = "compute";
      else b.bound = "memory";
    }
    return time;
  }

 private:
  // One core's pipes, in its own cycles, for `units_core` rows of `row` elements.
  struct CoreRun {
    double mte2 = 0, vec = 0, mte3 = 0, port = 0, cycles = 0;
    double read = 0, write = 0, read_ch = 0, write_ch = 0, tile_bytes = 0;
    double reread_ch = 0;  // of read_ch: the 2nd and later sweeps over a row (L2 hits when the rows fit L2)
    double bcast = 0;      // GM bytes of the broadcast operands (bcast_reload_units: once per that many rows)
  };
  // How a core's rows meet the tiling: a row's elements (a share of it with splitR), whether it fits
  // one UB tile, GM sweeps over it, tileLen and bufferNum.
  struct RowTiling {
    int64_t row;
    bool splitR, fits;
    int sweeps;
    int64_t tile, db;
  };
  // Whole rows one UB tile holds: 1 when a row spans tiles (!fits) or the kernel takes a row a tile
  // (unit_per_tile).
  int64_t rows_per_tile(bool fits, int64_t tile, int64_t row) const {
    return fits && !k_.unit_per_tile ? tile / row : 1;
  }
  // A tensor-list kernel (VecKernel::list_elems): the slowest of the cores CANN's split gives
  // work to; `cores` becomes the number of cores the split uses.
  CoreRun run_list(int64_t& cores, int64_t tile, int64_t db) const {
    const auto shares = list_shares(k_, cores);
    cores = int64_t(shares.size());
    CoreRun worst;
    for (const auto& parts : shares) {
      if (parts.empty()) continue;
      int64_t elems = 0;
      for (int64_t e : parts) elems += e;
      const CoreRun c = run_core(elems, {1, false, true, 1, tile, db}, rate_, cores, &parts);
      if (c.cycles > worst.cycles) worst = c;
    }
    return worst;
  }

  // `parts` (tensor-list kernels): the core's part of each tensor it touches, tiled one by one.
  CoreRun run_core(int64_t units_core, const RowTiling& rt, double rate, int64_t cores,
                   const std::vector<int64_t>* parts = nullptr) const {
    const auto& [row, splitR, fits, sweeps, tile, db] = rt;
    const VecKernel& k = k_;
    CoreRun c;
    const int64_t rows_tile = rows_per_tile(fits, tile, row);
    int64_t tiles = fits ? cdiv(units_core, rows_tile) : units_core * cdiv(row, tile);
    if (parts) {
      tiles = 0;
      for (int64_t e : *parts) tiles += cdiv(e, tile);
    }
    const double elems_core = double(units_core) * row;
    const double tile_elems = std::min(double(tile), k.unit_per_tile ? double(row) : elems_core);
    c.tile_bytes = tile_elems * k.ds;
    const GmRuns runs = gm_runs(tile);
    charge_gm(c, units_core, rt, cores, runs);
    const double eff = small_transfer_eff(c.tile_bytes, int(cores));
    const double read_cycles = gm_read_cycles(c, runs.in, rate, eff, cores);
    // Per-run transfer costs (run_call_in / run_call_out): the runs a core's bytes make.
    const double run_in_cycles = k.run_call_in > 0 && runs.in > 0 ? c.read / runs.in * k.run_call_in : 0.0;
    const double run_out_cycles = k.run_call_out > 0 && runs.out > 0 ? c.write / runs.out * k.run_call_out : 0.0;
    c.mte2 = read_cycles + run_in_cycles + double(tiles) * k.in_streams * sweeps * kLoadCall;
    c.mte3 = c.write_ch / (rate * eff) + run_out_cycles + double(tiles) * kStoreCall;
    // MTE2 and MTE3 share the core's GM port, unless the kernel's stores have their own; a run
    // moved as a transfer of its own holds the port for its start as for its bytes.
    c.port = k.copy_only ? std::max(read_cycles, c.write_ch / (rate * eff))
                         : read_cycles + c.write_ch / (rate * eff) + run_in_cycles + run_out_cycles;
    c.vec = elem_cycles(units_core, rt, parts) * cost_scale_;
    add_row_cycles(c, units_core, rt, tiles);
    c.vec += double(tiles) * k.tile_cycles;
    overlap_pipes(c, tiles, db);
    c.cycles += double(units_core) * k.unit_cycles;
    if (parts && !parts->empty()) c.cycles += double(parts->size() - 1) * k.part_cycles;
    return c;
  }

  // Contiguous GM runs in bytes, in (in) and out (out) of UB (0: the whole tile).
  struct GmRuns {
    double in, out;
  };
  // A transposing kernel (transpose_side) moves square blocks, the largest of 16 x 2^i a side
  // that UB's tile holds four times over: no run is longer than a block's side.
  GmRuns gm_runs(int64_t tile) const {
    const VecKernel& k = k_;
    GmRuns r{k.run_in, k.run_out};
    if (k.transpose_side) {
      double side = 16;
      while (side * side * 4 <= tile) side *= 2;
      r.in = std::min(r.in, side * k.ds);
      r.out = std::min(r.out, side * k.ds);
    }
    return r;
  }

  // A core's GM bytes (read, write, bcast) and what they are charged by burst (read_ch, write_ch,
  // and of read_ch the re-reads, reread_ch).
  void charge_gm(CoreRun& c, int64_t units_core, const RowTiling& rt, int64_t cores, const GmRuns& runs) const {
    const auto& [row, splitR, fits, sweeps, tile, db] = rt;
    const Platform& p = p_;
    const VecKernel& k = k_;
    const double elems_core = double(units_core) * row;
    // GM bytes per core, charged by burst.
    c.read = elems_core * k.in_bytes * sweeps;
    if (sweeps > 1) c.read += elems_core * k.split_ws_reads * (k.split_ws_bytes - k.in_bytes);
    // Split rows also write their partial results (and read them back).
    c.write = elems_core * k.out_bytes + units_core * k.out_bytes_per_unit * (splitR ? 2 : 1) +
              (splitR ? double(units_core) * 8 * k.syncs : 0) + (sweeps > 1 ? elems_core * k.split_ws_bytes : 0);
    // Charged bytes per byte moved, for contiguous runs of `run` bytes (0:
    // the whole tile).  Transposed runs start every other run (pitch 2x).
    auto rcharge = [&](double run_bytes) {
      const int64_t run = std::max<int64_t>(1, int64_t(run_bytes <= 0 ? c.tile_bytes : run_bytes));
      const int64_t pitch = k.transpose_side ? run * 2 : k.pitch_in > 0 ? int64_t(k.pitch_in) : run;
      return read_charge(run, pitch, run, p.gm_sector) / double(run);
    };
    auto wcharge = [&](double run_bytes) {
      const int64_t run = std::max<int64_t>(1, int64_t(run_bytes <= 0 ? c.tile_bytes : run_bytes));
      return write_charge(run, k.transpose_side ? run * 2 : run) / double(run);
    };
    c.bcast = k.bcast_bytes * double(k.bcast_reload_units > 0 ? cdiv(units_core, k.bcast_reload_units) : 1);
    c.read_ch = c.read * rcharge(runs.in) + c.bcast;
    // A row swept more than once (it does not fit a tile) is read again while every core's
    // row is in L2 (L2 is cleared before the kernel, so the first sweep comes from HBM).
    if (sweeps > 1 && double(cores) * double(row) * k.in_bytes <= p.l2)
      c.reread_ch = (c.read_ch - c.bcast) * (sweeps - 1) / sweeps;
    // Broadcast operands read again (bcast_reload_units) come from L2 after a core's first read.
    if (k.bcast_reload_units > 0) c.reread_ch += std::max(0.0, c.bcast - k.bcast_bytes);
    c.write_ch = c.write * wcharge(runs.out);
  }

  // MTE2 cycles of a core's charged reads (c.read_ch) at `rate` bytes a cycle (`eff`: the
  // small-transfer efficiency), runs of `rin` bytes.
  double gm_read_cycles(const CoreRun& c, double rin, double rate, double eff, int64_t cores) const {
    const Platform& p = p_;
    const VecKernel& k = k_;
    // The vec_reread_l2 share of the re-reads comes at the core's L2 hit rate (the cube's
    // l2_rate x mte2_eff), the rest at its GM rate.
    const double fast = c.reread_ch * p.vec_reread_l2;
    const double l2_rate = std::max(rate, p.l2_rate * p.mte2_eff);
    double read_cycles = (c.read_ch - fast) / (rate * eff) + fast / (l2_rate * eff);
    // Runs not 32-byte aligned in GM (unaligned_block_cycles): one 32-byte block per request, the
    // broadcast operands' too (rows of the same length).
    if (k.unaligned_block_cycles > 0 && rin > 0) {
      const double blocks = c.read / rin * std::ceil(rin / 32.0) + std::ceil(c.bcast / 32.0);
      read_cycles = std::max(read_cycles, blocks * k.unaligned_block_cycles);
    }
    // Broadcast operands read at the same addresses by every core at once (bcast_same_address): their
    // share of the read, as charged above, again times the factor less one; on C220 a few sharers
    // pay it in full, as cube.cpp's colliding() (ascend_measured_cases.md §1 case 12).
    if (k.bcast_same_address > 1 && c.bcast > 0 && cores > 1) {
      double bcast_cycles = c.bcast / (rate * eff);
      if (k.unaligned_block_cycles > 0 && rin > 0)
        bcast_cycles = std::max(bcast_cycles, std::ceil(c.bcast / 32.0) * k.unaligned_block_cycles);
      read_cycles += (k.bcast_same_address - 1) * bcast_cycles;
    }
    return read_cycles;
  }

  // Vector: elementwise APIs over each tile, in GE cycles (before cost_scale_).
  // A row swept more than once splits its recipe between the sweeps (Softmax: x - max and exp
  // with the sum, then the scaling): every element op runs once per element, not per sweep
  // (per sweep, a 950PR bf16 Softmax over [31, 67, 127, 257] dim 2 was 2x the measured time).
  // A tile is charged for the elements it holds: a core's last tile (a row's last, when rows
  // span tiles) is partial, and whole rows fill a tile only up to a multiple of the row.
  double elem_cycles(int64_t units_core, const RowTiling& rt, const std::vector<int64_t>* parts) const {
    const auto& [row, splitR, fits, sweeps, tile, db] = rt;
    const VecKernel& k = k_;
    const double row_elems = double(row);
    double cycles = 0;
    if (parts) {
      for (int64_t e : *parts)
        cycles += double(e / tile) * vec_cycles(k.elem_prog, double(tile)) +
                  (e % tile ? vec_cycles(k.elem_prog, double(e % tile)) : 0.0);
    } else if (units_core > 0 && fits) {
      const int64_t rows = std::min(rows_per_tile(fits, tile, row), units_core);
      const int64_t full = units_core / rows, rest = units_core % rows;
      cycles = double(full) * vec_cycles(k.elem_prog, double(rows) * row_elems) +
               (rest ? vec_cycles(k.elem_prog, double(rest) * row_elems) : 0.0);
    } else if (units_core > 0) {
      const int64_t pieces = cdiv(row, tile);
      cycles = double(units_core) * (double(pieces - 1) * vec_cycles(k.elem_prog, double(tile)) +
                                     vec_cycles(k.elem_prog, double(row - (pieces - 1) * tile)));
    }
    return cycles;
  }

  // Vector: reduce APIs per row (row_prog) with their waits, and the per-row calls (row_loop_prog,
  // row_scalar_cycles), added to c.vec.
  void add_row_cycles(CoreRun& c, int64_t units_core, const RowTiling& rt, int64_t tiles) const {
    const auto& [row, splitR, fits, sweeps, tile, db] = rt;
    const Platform& p = p_;
    const VecKernel& k = k_;
    const int64_t rows_tile = rows_per_tile(fits, tile, row);
    if (!k.row_prog.empty()) {
      const double rows_in_tile = fits ? double(std::min(rows_tile, units_core)) : 1.0;
      const double elems_in_call = fits ? double(row) : double(tile);
      for (const auto& s : k.row_prog) {
        const double epr = s.fp32 ? 64.0 : 128.0;
        double reps = rows_in_tile * std::ceil(elems_in_call / epr);
        if (elems_in_call > epr) reps += rows_in_tile * std::ceil(std::ceil(elems_in_call / epr) / epr);
        c.vec += double(tiles) * (reps * s.cost.per_repeat * cost_scale_ + s.cost.per_call);
      }
      // Each row's reductions end in a wait before the row's next step can use the result
      // (VecKernel::row_wait: Platform::vec_row_cycles, fitted per SoC, unless the kernel sets its own).
      // With rows_per_reduce_call > 1, a tile's rows share the calls, so the waits are per call (910B's
      // TBE Softmax, single-buffered as softmax_910b_tiling has it).
      double calls = double(units_core);
      if (k.rows_per_reduce_call > 1 && fits && units_core > 0) {
        const int64_t rt = std::min(rows_tile, units_core), per = k.rows_per_reduce_call;
        const int64_t rest = units_core % rt;
        calls = double(units_core / rt * cdiv(rt, per) + (rest ? cdiv(rest, per) : 0));
      }
      if (k.row_waits) c.vec += calls * double(k.row_prog.size()) * k.row_wait(p);
    }
    if (!k.row_loop_prog.empty() || k.row_scalar_cycles > 0) {
      // Calls per row (per piece of a row that does not fit a tile), and the row's scalar wait.
      const double pieces = fits ? double(units_core) : double(units_core) * double(cdiv(row, tile));
      const double piece_elems = fits ? double(row) : double(std::min(row, tile));
      c.vec += pieces * vec_cycles(k.row_loop_prog, piece_elems) * cost_scale_ +
               double(units_core) * sweeps * k.row_scalar_cycles;
    }
  }

  // The core's time (c.cycles) from its pipes' times, as bufferNum `db` lets them overlap.
  void overlap_pipes(CoreRun& c, int64_t tiles, int64_t db) const {
    const VecKernel& k = k_;
    const double per_tile_mte2 = c.mte2 / std::max<int64_t>(1, tiles), per_tile_mte3 = c.mte3 / std::max<int64_t>(1, tiles);
    if (k.tile_round_trip > 0) {
      // Small tiles wait on their copies' latency: each pipe takes at least half a round trip a
      // tile (bufferNum 2: two tiles' round trips overlap; 1: the load and the store alternate,
      // summing to one).  The fill stays the transfer's: the kernel head charges the first load's
      // and the last store's start.
      const double floor = double(tiles) * k.tile_round_trip / 2;
      c.mte2 = std::max(c.mte2, floor);
      c.mte3 = std::max(c.mte3, floor);
    }
    if (db == 2 && k.copy_only)  // tile i's store beside tile i + 1's load: n tiles take n + 1 steps
      c.cycles = std::max({c.mte2, c.vec, c.mte3, c.port}) + std::min(per_tile_mte2, per_tile_mte3);
    else if (db == 2)
      c.cycles = std::max({c.mte2, c.vec, c.mte3, c.port}) + per_tile_mte2 + per_tile_mte3;
    else if (k.store_beside_load)
      c.cycles = std::max(std::max(c.mte2, c.mte3) + c.vec, c.port) + per_tile_mte3;
    else
      c.cycles = std::max(c.mte2 + c.vec + c.mte3, c.port);
  }

  void build_spec() {
    const Platform& p = p_;
    const VecKernel& k = k_;
    auto& s = spec_;
    const int64_t ds = k.ds;
    const int64_t total = k.units * k.unit_elems;
    const int64_t align = 32 / ds;  // UB operands are 32 B aligned ([A] NPU架构版本2201.md)
    const UbFit fit = ub_fit(k, p);
    if (fit.tile(1) < std::max<int64_t>(align, 256 / ds))
      fail(k.kind + ": the operands do not fit the " + std::to_string(int64_t(p.ub)) + "-byte UB of " + p.name);
    s.names = {"blockDim", "tileLen", "bufferNum"};
    const int64_t max_units = k.split_rows ? std::max<int64_t>(k.units, p.vector_cores) : k.units;
    std::vector<int64_t> cores = core_counts(p.vector_cores, max_units);
    // With rows that could be split, max_units is all the cores; one core per row is a
    // candidate too (7 rows: blockDim 7 beats the 4 or 8 of the ladder; found by a QA check).
    if (k.split_rows && k.units < p.vector_cores) add_value(cores, k.units);
    s.values.push_back(cores);
    s.values.push_back(pow2_range(std::max<int64_t>(align, 256 / ds), fit.tile(1)));
    s.values.push_back({1, 2});
    auto& r = s.restrictions;
    r.push_back("blockDim >= 1 and blockDim <= " + std::to_string(p.vector_cores));
    r.push_back("tileLen % " + std::to_string(align) + " == 0 and tileLen > 0");
    r.push_back("bufferNum >= 1 and bufferNum <= 2");
    r.push_back("tileLen * (" + std::to_string(fit.per_buffer) + " * bufferNum + " + std::to_string(fit.fixed) +
                ") <= " + std::to_string(fit.ub));
    // Pruning: no more cores than rows (unless rows are split), no tile
    // beyond twice a core's share.
    const std::string share = "(" + std::to_string(total) + " + blockDim - 1) / blockDim";
    s.pruning.push_back("tileLen < 2 * " + share + " or tileLen == " + std::to_string(s.values[1].front()));
    if (k.split_rows) {
      s.names.push_back("splitR");
      s.values.push_back(k.unit_elems >= 2 * 256 / ds ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0});
      r.push_back("splitR == 0 or splitR == 1");
      s.pruning.push_back("splitR == 1 or blockDim <= " + std::to_string(k.units));
      s.pruning.push_back("splitR == 0 or " + std::to_string(k.units) + " < blockDim");
    } else {
      s.pruning.push_back("blockDim <= " + std::to_string(std::max<int64_t>(1, k.units)));
    }
    // Standalone Vector Cores (310P): vcBlocks of them join the AI cores (a
    // KERNEL_TYPE_MIX_VECTOR_CORE launch), worth it only once every AI core has work.
    if (p.standalone_vector_cores > 0 && p.standalone_ddr_rate > 0) {
      vc_index_ = int(s.names.size());
      const std::string nvc = std::to_string(p.standalone_vector_cores);
      s.names.push_back("vcBlocks");
      std::vector<int64_t> vcs{0};
      if (k.units > p.vector_cores)
        for (int64_t v = 1; v <= std::min<int64_t>(p.standalone_vector_cores, k.units - p.vector_cores); ++v)
          vcs.push_back(v);
      s.values.push_back(vcs);
      r.push_back("vcBlocks >= 0 and vcBlocks <= " + nvc);
      if (k.split_rows) r.push_back("splitR == 0 or vcBlocks == 0");
      s.pruning.push_back("vcBlocks == 0 or blockDim == " + std::to_string(p.vector_cores));
    }
    // Baseline: the Ascend C sample pattern - all cores (no more than rows),
    // BUFFER_NUM = 2, TILE_NUM = 8, i.e. tileLength = blockLength / 16,
    // capped by UB; reductions keep whole rows on a core, in one tile where UB holds one (a
    // 2049-element row in a 2048 tile swept three times: 2x the measured bf16 Softmax on
    // 910B2 and 950PR).  A transpose takes the largest
    // square tile UB holds (CANN's Transpose: 32x32 tiles wrote 64-byte runs, 3-8x the
    // measured time of 950PR's 2-D transposes).
    int64_t bd = std::min<int64_t>(p.vector_cores, std::max<int64_t>(1, k.units));
    if (k.baseline_block_dim > 0 && k.baseline_block_dim < bd) {
      // The operator's own core count (norm_quant.cpp), a candidate of the search too.
      bd = k.baseline_block_dim;
      add_value(s.values[0], bd);
    }
    int64_t bd_val = s.values[0].front();
    for (int64_t v : s.values[0]) if (v <= bd) bd_val = v;
    const int64_t block = cdiv(total, bd_val);
    int64_t tile = s.values[1].front();
    for (int64_t v : s.values[1])
      if (v <= fit.tile(2) &&
          (v <= std::max<int64_t>(block / 16, 1) || v < 2 * k.unit_elems || k.transpose_side ||
           (k.baseline_max_tile && v < 2 * block)))
        tile = v;
    if (k.baseline_tile > 0) {
      // The operator's own rule (norm_quant.cpp), as far as UB holds it with its bufferNum.  A kernel
      // whose every tile waits a copy round trip (tile_round_trip) keeps a tile under the search's
      // smallest: a larger one would pack the operator's tiles and hide the round trips it pays (and
      // so does one that asks for it, baseline_tile_exact).
      const int64_t held = fit.tile(k.baseline_buffer_num) / align * align;
      const int64_t least = k.tile_round_trip > 0 || k.baseline_tile_exact ? align : s.values[1].front();
      tile = std::max<int64_t>(least, std::min(k.baseline_tile / align * align, held));
      add_value(s.values[1], tile);
    }
    s.baseline = {bd_val, tile, k.baseline_tile > 0 ? k.baseline_buffer_num : 2};
    if (k.split_rows) s.baseline.push_back(0);
    if (vc_index_ >= 0) {
      s.baseline.push_back(0);  // the sample launches AI cores only
      s.added_defaults = {{"vcBlocks", 0}};  // tilings stored before the knob used the AI cores only
    }
  }

  // Bytes of a kernel's `writes` that are still in L2 when it ends (never reach HBM during it).
  // C220: every GM access is cached in L2 ([A] 基本架构.md), read or written, and the stream
  // evicts its oldest lines, so at the end L2 (192 MB, [R] Ascend910B2.ini) holds the stream's
  // last bytes, of which the written share is dirty: W x min(1, L2 / (R + W)), no fitted share.
  // A stream within L2 keeps all its writes; a 1 GB stream with a quarter of writes keeps 50 MB,
  // a 270 MB half-written one 100 MB (the fit half's 910B2 8192x8192 records: their bytes over
  // the measured time fall from 1.9 TB/s at 270 MB to 1.2 TB/s at 1 GB).  Elsewhere (950) the
  // model before: writes up to the fitted l2_absorb share of L2 stay there whatever the reads.
  double l2_absorbed(double reads, double writes) const {
    if (!c220(p_)) return std::min(writes, p_.l2 * p_.l2_absorb);
    return writes * std::min(1.0, p_.l2 / std::max(1.0, reads + writes));
  }

  VecKernel k_;
  Platform p_;
  double rate_, hbm_Bpus_, l2_Bpus_;
  double cost_scale_;  // vector cycles per GE cycle: the chip's vec_cost_scale x this operator's vec_op_costs
  int vc_index_ = -1;  // position of vcBlocks in a tiling, -1: no standalone Vector Cores
};

}  // namespace

// A kernel named `kind` streaming op.dtype data, once the vector unit of `p`
// is known to support that dtype.
VecKernel start_kernel(const OpDesc& op, const Platform& p, const std::string& kind) {
  if (std::find(p.vector_dtypes.begin(), p.vector_dtypes.end(), op.dtype) == p.vector_dtypes.end()) {
    std::string v;
    for (auto& d : p.vector_dtypes) v += (v.empty() ? "" : ", ") + d;
    fail(kind + ": dtype " + op.dtype + " is not supported by the vector unit of " + p.name + " (supported: " + v + ")");
  }
  VecKernel k;
  k.kind = kind;
  k.dtype = op.dtype;
  k.ds = dtype_size(op.dtype);
  return k;
}

UbFit ub_fit(const VecKernel& k, const Platform& p) {
  const double resident = k.bcast_reload_units > 0 ? 0.0 : k.bcast_bytes;  // sliced operands: in ub_buffers
  return {int64_t(p.ub) - int64_t(std::ceil(resident / 32.0) * 32), k.ub_buffers * k.ds, k.temp_fp32 * 4};
}

std::shared_ptr<OpModel> make_vec_model(const VecKernel& k, const Platform& p) {
  return std::make_shared<VecModel>(k, p);
}

namespace {

// An input of `ins` broadcast along the output's last axis (its own last axis 1), where that
// axis is not a whole number of 32-byte blocks.  A scalar is not one: TBE takes it as the scalar
// operand of a vector-scalar instruction.
bool last_axis_broadcast(const std::vector<std::vector<int64_t>>& ins, const std::vector<int64_t>& out, int ds) {
  if (out.empty() || out.back() <= 1 || out.back() * ds % 32 == 0) return false;
  for (const auto& s : ins)
    if (!s.empty() && s.back() == 1 && numel(s) > 1) return true;
  return false;
}

// Byte-wide data (int8, uint8, bool) is computed in fp16 between casts.
bool byte_dtype(const std::string& d) { return d == "int8" || d == "uint8" || d == "bool"; }
std::string compute_dtype(const std::string& dtype) { return byte_dtype(dtype) ? "float16" : dtype; }

// Axis in [-rank, rank) -> [0, rank).
int64_t norm_axis(int64_t a, size_t rank, const std::string& kind) {
  const int64_t r = int64_t(rank);
  if (a < -r || a >= r) fail(kind + ": axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
  return a < 0 ? a + r : a;
}

// Element-wise ops fused around a vector kernel (attrs "prologue", "epilogue") run on its UB
// tiles: each binary one streams one more operand through its own UB queue, which shrinks
// the tile (the UB room fusion costs), and saves the launch and the GM round trip of the
// intermediate tensor.  The prologue runs on every input element, `ratio` of them per
// element of the kernel's work (a pool's window), the epilogue on every output element;
// both repeat on each GM sweep of a row that does not fit a tile.  An epilogue needs an
// output the size of the input (`epilogue_ok`); `which` names the ops that have one.
void fuse_elementwise(VecKernel& k, const OpDesc& op, const std::string& cd, double ratio, double in_elems,
                      double out_elems, bool epilogue_ok, const std::string& which) {
  double pro_extra = 0, epi_extra = 0;
  const auto pro = fused_program(op, "prologue", cd, pro_extra, false, k.ds);
  const auto epi = fused_program(op, "epilogue", cd, epi_extra, false, k.ds);
  if (!epi.empty() && !epilogue_ok)
    fail(op.kind + ": an epilogue needs an output the size of the input (" + which + "); this one has " +
         std::to_string(int64_t(out_elems)) + " outputs for " + std::to_string(int64_t(in_elems)) + " inputs");
  for (int64_t r = 0; r < std::max<int64_t>(1, std::llround(ratio)); ++r)
    k.elem_prog.insert(k.elem_prog.begin(), pro.begin(), pro.end());
  k.elem_prog.insert(k.elem_prog.end(), epi.begin(), epi.end());
  const int pro_streams = int(pro_extra / k.ds), epi_streams = int(epi_extra / k.ds);
  k.in_bytes += pro_extra * ratio + epi_extra;
  k.in_streams += pro_streams + epi_streams;
  k.ub_buffers += pro_streams * int(std::ceil(ratio)) + epi_streams;
  k.unique_bytes += pro_extra * in_elems + epi_extra * out_elems;
}

// 910B's element-wise Gelu, Mish, Sigmoid, Exp and Maximum are TBE DSL kernels (CANN 8.1.RC1 opp,
// op_impl/ai_core/tbe/impl/dynamic/<op>.py) under the DSL's elewise schedule; the nodes of each
// compute that coexist in UB (tbe/dsl/unify_schedule/vector/elewise/elewise_schedule.py
// _calc_storage_bound: the tensors still to be read when a node is computed, plus the node, at
// the worst node, plus one with two or more inputs), counted on each compute's graph:
//   Exp: x -> [muls, adds, muls] -> vexp: 2.          Sigmoid: one (a vector_dup for vdiv) stays
//   live while x -> muls -> vexp -> vadds, then vdiv: 3.   Gelu (gelu_compute_v2): x feeds x*x,
//   x^2*x and x + 0.044715 x^3, and the final vdiv: 3.     Mish (mish.py, the fp32 path): x feeds
//   both halves' vcmp, vmuls and vexp and the final vmul while e^-x, 2e^-x and a mask coexist: 6.
//   Maximum: x1, x2, vmax, plus the second input's node: 4.
// And whether the compute runs in fp32 (UB nodes of 4 bytes): Gelu casts fp16 up unless
// high_performance (impl_mode None), Mish casts fp16 up, Sigmoid in its default high_precision
// mode; Exp (default high_performance) and Maximum keep fp16; bf16 runs in fp32 (support_bfp16).
// (GE's default op_select_implmode, high_performance, as the benchmark's torchair-fused Exp takes it,
// reads opp tbe/impl_mode/high_performance.ini: Exp and Mish high_performance, Gelu and Sigmoid
// high_precision, as here.)  Exp's scalars add nodes in a chain, which stay 2 (exp_scalar_apis).
// 0: not such a kernel.
int tbe_elewise_nodes(const std::string& kind) {
  static const std::map<std::string, int> nodes = {
      {"Exp", 2}, {"Sigmoid", 3}, {"Gelu", 3}, {"Mish", 6}, {"Max", 4}};  // Max: CANN's Maximum (op_table alias)
  const auto it = nodes.find(kind);
  return it == nodes.end() ? 0 : it->second;
}

// The elements of node_bytes each a UB node holds in a TBE schedule whose `nodes` nodes share UB in
// `buffers` copies, 32-byte aligned (elewise and broadcast schedules alike: UB / buffers / nodes).
int64_t tbe_node_elems(const Platform& p, int64_t buffers, int nodes, int node_bytes) {
  return int64_t(p.ub) / buffers / nodes / 32 * 32 / node_bytes;
}

// The UB nodes of `op` as a 910B TBE kernel (tbe_elewise_nodes) on float data; 0: not one.
int tbe_kernel_nodes(const OpDesc& op) {
  const bool float_data = op.dtype == "float16" || op.dtype == "bfloat16" || op.dtype == "float32";
  return float_data ? tbe_elewise_nodes(op.kind) : 0;
}

// An operand broadcast along an unaligned last axis of `row` elements in 910B's broadcast schedule
// (BroadcastScheduleMl, _calc_ub_align): the broadcast's input is storage-aligned on axis -2, a 32-byte
// block a row, and the rows it fills are padded to whole blocks, so each row is an aligned last-axis
// broadcast.  TE's broadcast intrinsic for that case ("LFA", te/platform broadcast_last_axis_aligned,
// 2020; 8.1's emitting pass is compiled: ASSUMED alike) reads the row's value into a register
// (reg_mov) and vector_dup's the padded row: a call a row, costed as the scalar-operand class (Adds),
// spread over the row's elements.  When the UB axis is not the last (rows a pass), the padded rows of
// each of the `depads` broadcast tensors are then packed (_calc_real_remove_pad: a cache_read emitted
// as vector_reduce, a GatherMask over the tile), costed as Adds a repeat; and the inputs of those
// broadcasts, storage-aligned in UB, are copied in a row a burst: x2's one value a row, and in the
// unknown pattern (depads 2) x1's rows too, not whole 32-byte blocks: each burst pays a copy's start
// (kBurstCycles) and x1's rows move a 32-byte block at a time (kUnalignedBlockCycles).  The reg_mov
// is not charged.
void tbe_row_broadcast_steps(VecKernel& k, int64_t row, bool fp32, bool remove_pad, int depads) {
  const VecCost dup = vec_api_cost("Adds");
  const double epr = fp32 ? 64.0 : 128.0, padded = double(cdiv(row, 32 / k.ds) * (32 / k.ds));
  const double row_cycles = dup.per_call + std::ceil(padded / epr) * dup.per_repeat;
  k.elem_prog.push_back({{row_cycles * epr / double(row), 0.0, 0}, fp32});
  if (!remove_pad) return;
  for (int i = 0; i < depads; ++i) k.elem_prog.push_back({dup, fp32});
  k.run_in = double(row) * k.ds;  // a run a row: its bursts
  k.run_call_in = kBurstCycles * depads;
  if (depads > 1) k.unaligned_block_cycles = kUnalignedBlockCycles;
}

// 910B's TBE Mish compute instruction by instruction (CANN 8.1.RC1 opp tbe/impl/dynamic/mish.py
// mish_compute, the fp32 path: float16 is cast up whenever vmul takes float32, bfloat16 too):
// tanh(softplus x) as two masked halves, x > 0 from e^-x and e^-2x, x <= 0 from e^x and e^2x,
// each a vcmp, vmuls, vexp, vadds / vadd, vdiv and vsel, then their vadd and the vmul by x; each
// instruction costed as its class in vec_program's recipes (compares and selects as Add).  The
// model's recipe (Exp, Adds, Exp, Tanh, Mul) calls 7 instructions a tile where the kernel calls 23.
// (Sigmoid's compute, sigmoid.py: -x, vexp, + 1, vdiv of a vector_dup'd 1, in float32 in the
// default high_precision mode, scored worse on an inner split of the fit half than the model's
// Sigmoid API in the input's lanes, and is not taken.)  Returns false for the other ops.
bool tbe_elewise_program(const std::string& o, const std::string& cd, std::vector<VecStep>& prog) {
  if (o != "Mish") return false;
  if (cd != "float32") prog.push_back({vec_api_cost("CastUp"), false});
  for (const char* a : {"Add", "Muls", "Muls", "Exp", "Exp", "Muls", "Muls", "Adds", "Add", "Adds", "Div", "Add",
                        "Add", "Muls", "Exp", "Muls", "Exp", "Add", "Adds", "Div", "Add", "Add", "Mul"})
    prog.push_back({vec_api_cost(a), true});
  if (cd != "float32") prog.push_back({vec_api_cost("CastDown"), false});
  return true;
}

// Exp's scalars, y = exp((shift + scale x) ln(base)) with base -1 for e (CANN 8.1.RC1 opp
// tbe/impl/dynamic/exp.py): exp() refuses a base neither > 0 nor -1; exp_compute emits vmuls + vadds
// unless scale == 1 and shift == 0 (math.isclose, rel 1e-8), and a vmuls by ln(base) when base > 0,
// all before the vexp and in its lanes.  Returns those instructions; checks the attributes.
std::vector<const char*> exp_scalar_apis(const OpDesc& op) {
  const double base = attr_real(op, "base", -1.0), scale = attr_real(op, "scale", 1.0);
  const double shift = attr_real(op, "shift", 0.0);
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-8 * std::max(std::fabs(a), std::fabs(b)); };
  if (base <= 0 && !close(base, -1.0))
    fail("Exp: attribute 'base' must be strictly positive or -1 (for e), got " + std::to_string(base));
  std::vector<const char*> apis;
  if (!close(scale, 1.0) || !close(shift, 0.0)) apis = {"Muls", "Adds"};
  if (base > 0) apis.push_back("Muls");
  return apis;
}

// Exp's scalar instructions (exp_scalar_apis), its attributes checked on every SoC: 910B's TBE Exp runs
// them before its vexp (the last step but bf16's CastDown), in its lanes.  (The 950's Ascend C Exp,
// ops-math math/exp/op_kernel/arch35/exp_dag.h, is not transcribed: its chain stays the vexp.)
void add_exp_scalars(VecKernel& k, const OpDesc& op, const std::string& cd, const Platform& p) {
  const auto apis = exp_scalar_apis(op);
  if (!c220(p)) return;
  const size_t at = k.elem_prog.size() - (cd == "bfloat16" ? 2 : 1);
  std::vector<VecStep> steps;
  for (const char* a : apis) steps.push_back({vec_api_cost(a), k.elem_prog[at].fp32});
  k.elem_prog.insert(k.elem_prog.begin() + long(at), steps.begin(), steps.end());
}

// The shapes of two broadcast inputs after TBE's runtime fuses their continuous axes (canndev
// ops/built-in/op_tiling/broadcast_v3.cc, Broadcast::FusionContinuousAxis, public mirror
// dengguojie/vue-element-admin @ 7d77ce32 (2022; @ 0231fcc2 the same): axes where both are 1 drop out;
// an axis joins the previous one while both inputs keep the same relation (equal, or the same input
// still 1).  Inputs are right-aligned to the output's rank.
std::array<std::vector<int64_t>, 2> tbe_broadcast_fused(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                                        const std::vector<int64_t>& out) {
  const size_t r = out.size();
  std::vector<int64_t> x(r, 1), y(r, 1);
  std::copy(a.begin(), a.end(), x.end() - a.size());
  std::copy(b.begin(), b.end(), y.end() - b.size());
  std::vector<int64_t> fx = {x[0]}, fy = {y[0]};
  bool state = x[0] == y[0];
  size_t last = 0;
  for (size_t i = 1; i < r; ++i) {
    if (x[i] == 1 && y[i] == 1) continue;
    const bool same_one = (x[i] == 1 && x[last] == 1) || (y[i] == 1 && y[last] == 1);
    if ((state && x[i] == y[i]) || same_one) {
      fx.back() *= x[i];
      fy.back() *= y[i];
    } else {
      fx.push_back(x[i]);
      fy.push_back(y[i]);
    }
    state = x[i] == y[i];
    last = i;
  }
  return {fx, fy};
}

// Whether two fused inputs make one of the runtime's special patterns (broadcast_v3.cc,
// TrySwitchToPerfPattern: SPECIAL_PATTERN's keys 100, 120, 121, 200, 210, a digit an axis, 1 equal,
// 2 broadcast, at most 3 axes), which 910B's kernels compile a compute of their own for; other shapes
// take the "unknown" pattern's compute, every axis of both inputs a broadcast.
bool tbe_broadcast_special(const std::vector<int64_t>& fx, const std::vector<int64_t>& fy) {
  int key = 0;
  for (size_t i = 0; i < fx.size(); ++i) key = key * 10 + (fx[i] != fy[i] ? 2 : 1);
  return fx.size() <= 3 && (key == 1 || key == 12 || key == 121 || key == 2 || key == 21);
}

// 910B's TBE broadcast tiling of two inputs whose fused shapes are fx, fy: the fused output, whether it
// is one of the runtime's special patterns, double buffering, the UB axis and factor, the elements below
// the UB axis, the UB axis's chunks, a core's passes and the cores.
struct TbeBroadcastTiling {
  std::vector<int64_t> out;
  bool special = false, db = false;
  int64_t ub_axis = 0, ub_factor = 1, under = 1, chunks = 1, passes = 1, cores = 1;
};

// TBE's broadcast tiling of two fused inputs on 910B (broadcast_v3.cc @ 7d77ce32, whose MILAN soc is
// "Ascend910B"; CANN 8.1.RC1 compiles 910B's broadcast kernels with BroadcastScheduleMl,
// tbe/dsl/unify_schedule/vector/broadcast/broadcast_schedule_milan.py): CalcTiling (one core, one
// pass up to 2 x cores 32-byte blocks; "block_align" up to 64 x cores blocks), DoBlockTiling (the
// cores split the outer axes whole while they divide them, then the first axis longer than the cores
// left, or under block_align an axis taking more than half of them whole; one dimension: a block of
// 128-element groups), IsNeedDoubleBuffer (the [A, B] / [A, 1] pattern with B >= the UB room),
// MilanUbTiling (from the last axis, rounded up to a 32-byte block, inwards to the block axis: the UB
// room in elements, max_ub, divided by each axis it holds; the axis it does not hold is split by what
// is left), OptimizeUbTiling, then ModifyTiling: the passes (the axes before the UB axis x the UB
// axis's chunks) dealt to the cores in ceil(passes / cores) a core.
TbeBroadcastTiling tbe_broadcast_tiling(const std::vector<int64_t>& fx, const std::vector<int64_t>& fy, int ds,
                                        int64_t cores, int64_t max_ub, int64_t max_ub_db) {
  TbeBroadcastTiling t;
  const size_t r = fx.size();
  std::vector<int64_t> o(r);
  std::vector<bool> brc(r);
  for (size_t i = 0; i < r; ++i) {
    o[i] = std::max(fx[i], fy[i]);
    brc[i] = fx[i] != fy[i];
  }
  t.out = o;
  t.special = tbe_broadcast_special(fx, fy);
  const int64_t blk = 32 / ds, size = numel(o), half = cores / 2;
  if (size <= blk * cores * 2) {  // !need_tiling_cut: one core, the whole output a pass
    t.ub_factor = o[0];
    t.under = size / o[0];
    return t;
  }
  const bool align = size <= blk * 8 * 8 * cores;  // ONE_REPEAT_BLOCK_NUM x MAX_REPEAT_TIMES
  std::vector<int64_t> w = o;  // the shape a core's block sees
  int64_t cur = cores, dims = 1, block_axis = 0;
  for (size_t i = 0; i < r; ++i) {
    if (o[i] > cur) {
      int64_t use = cur;
      if (align) {  // CalcAlignCore
        int64_t c = cur;
        while (c > 0 && o[i] % c != 0) --c;
        use = dims * c > half ? c : cur;
      }
      block_axis = int64_t(i);
      w[i] = cdiv(o[i], use);
      break;
    }
    if (align && cur % o[i] != 0 && dims * o[i] > half) {
      block_axis = int64_t(i);
      if (r == 1) w[i] = 1;
      else block_axis = int64_t(i) + 1;
      break;
    }
    cur /= o[i];
    dims *= o[i];
  }
  if (r == 1) w[0] = cdiv(w[0], 128) * 128;  // ub_factor_align: ELEWISE_REPEATE_NUMS
  if (r == 2 && !brc[0] && brc[1] && w[1] >= max_ub) t.db = true, max_ub = max_ub_db;  // COMMON_BROADCAST
  int64_t limit = max_ub, ub_axis = int64_t(r) - 1;
  for (int64_t i = int64_t(r) - 1; i >= block_axis; --i) {
    const int64_t held = i == int64_t(r) - 1 ? cdiv(w[i], blk) * blk : w[i];
    ub_axis = i;
    t.ub_factor = std::min(w[i], limit);
    if (held >= limit) break;
    limit /= held;
  }
  if (block_axis < ub_axis && w[ub_axis - 1] >= blk / 2 && brc[ub_axis - 1] && !brc[ub_axis] &&
      t.ub_factor == w[ub_axis])
    --ub_axis, t.ub_factor = 1;  // OptimizeUbTiling
  t.ub_axis = ub_axis;
  int64_t before = 1;
  for (int64_t i = 0; i < ub_axis; ++i) before *= o[i];
  for (size_t i = size_t(ub_axis) + 1; i < r; ++i) t.under *= o[i];
  t.chunks = cdiv(o[ub_axis], t.ub_factor);
  const int64_t passes = before * t.chunks;
  t.passes = cdiv(passes, cores);
  t.cores = cdiv(passes, t.passes);
  return t;
}

// 910B's TBE kernels (tbe_elewise_nodes) over their n output elements: their UB nodes, cores, UB
// factor and double buffering.  Two inputs of different shapes take the broadcast schedule
// (BroadcastScheduleMl) and its tiling (tbe_broadcast_tiling); the model's tile is the mean of the UB
// axis's chunks x the elements below it (its tiles are flat: a core's last pass of each outer index is
// not apart).  Maximum's UB nodes there (broadcast_schedule_milan.py, _calc_storage_bound, over
// maximum_compute's x1, x2, broadcast(x1), broadcast(x2), vmax): 3 in a special pattern's compute
// (x2 alone broadcast), 4 in the unknown pattern's (both broadcast, a node more for the second's
// several broadcast axes).  An operand broadcast along an unaligned last axis adds the schedule's
// instructions (tbe_row_broadcast_steps).  Integer dtypes take other casts, not transcribed.
void apply_tbe_elewise(VecKernel& k, const OpDesc& op, const std::vector<int64_t>& out, const Platform& p) {
  const int64_t n = numel(out);
  const int nodes = tbe_kernel_nodes(op);
  bool same_shapes = true;
  for (const auto& s : op.inputs) same_shapes = same_shapes && numel(s) == n;
  const bool fp16_kept = op.dtype == "float16" && (op.kind == "Exp" || op.kind == "Max");
  const int node_bytes = fp16_kept ? 2 : 4;
  if (nodes > 0 && same_shapes) tbe_elewise_tiling(k, n, nodes, node_bytes, p);
  if (nodes == 0 || same_shapes || op.inputs.size() != 2) return;
  const auto f = tbe_broadcast_fused(op.inputs[0], op.inputs[1], out);
  const int brc_nodes = tbe_broadcast_special(f[0], f[1]) ? 3 : 4;
  const TbeBroadcastTiling t = tbe_broadcast_tiling(f[0], f[1], k.ds, p.vector_cores,
                                                    tbe_node_elems(p, 1, brc_nodes, node_bytes),
                                                    tbe_node_elems(p, 2, brc_nodes, node_bytes));
  k.ub_buffers = brc_nodes * node_bytes / k.ds;
  k.temp_fp32 = 0;
  k.baseline_block_dim = t.cores;
  k.baseline_buffer_num = t.db ? 2 : 1;
  const int64_t align = 32 / k.ds;  // a pass's UB buffers hold whole 32-byte blocks
  k.baseline_tile = cdiv(cdiv(t.out[size_t(t.ub_axis)], t.chunks) * t.under, align) * align;
  k.bcast_reload_units = n;  // the smaller input's slice is a UB node of each pass, not resident (read once)
  if (last_axis_broadcast(op.inputs, out, k.ds))
    tbe_row_broadcast_steps(k, out.back(), node_bytes == 4, t.ub_axis + 1 < int64_t(t.out.size()), brc_nodes - 2);
}

}  // namespace

// The tiling of a TBE element-wise kernel over n elements whose `nodes` UB nodes take node_bytes
// each: its cores (tbe_elewise_cores), each core's block of ceil(n / cores) rounded up to 128
// elements (unit_group), UB as the schedule shares it (_do_storage_bound: UB / nodes, halved when
// double-buffered; ub_buffers, no separate fp32 temporaries), and the runtime's UB factor (canndev
// ops/built-in/op_tiling/elewise_v3.cc, Elewise::AllFuseTiling / DoUbTiling, public mirror
// dengguojie/vue-element-admin @ 692d1795; ASSUMED unchanged since): the whole block in one pass
// without double buffering while it fits min(UB / nodes, 32767 elements of 1- or 2-byte nodes, 16383
// of 4-byte, 8191 of 8-byte: SPLIT_FACTORS); else double-buffered, the block in the fewest passes that fit the
// halved room, of equal size rounded up to 128 (down, if that no longer fits).  One core below
// 2 x cores 32-byte blocks takes all n in one pass (AllFuseTiling, !need_multi_core).
void tbe_elewise_tiling(VecKernel& k, int64_t n, int nodes, int node_bytes, const Platform& p) {
  const int64_t align = 32 / k.ds, cores = tbe_elewise_cores(n, k.ds, p.vector_cores);
  k.ub_buffers = nodes * node_bytes / k.ds;
  k.temp_fp32 = 0;
  k.baseline_block_dim = cores;
  k.baseline_buffer_num = 1;
  if (cores == 1) {  // tbe_elewise_cores: below 2 x cores 32-byte blocks
    k.baseline_tile = cdiv(n, align) * align;
    return;
  }
  k.unit_group = 128;  // ELEWISE_REPEAT_NUMS, the schedule's ub_factor_align (4 x 32-byte blocks)
  const int64_t block = cdiv(cdiv(n, p.vector_cores), 128) * 128;
  const int64_t split = node_bytes <= 2 ? 32767 : node_bytes == 4 ? 16383 : 8191;  // SPLIT_FACTORS
  int64_t tile = block;
  if (block > std::min(tbe_node_elems(p, 1, nodes, node_bytes), split)) {
    k.baseline_buffer_num = 2;
    const int64_t limit = std::min(tbe_node_elems(p, 2, nodes, node_bytes), split);
    const int64_t even = cdiv(block, cdiv(block, limit));
    tile = cdiv(even, 128) * 128;
    if (tile > limit) tile = even / 128 * 128;
  }
  k.baseline_tile = tile;
}

namespace {
// A Cast of `dtype` data (to attrs "to"; none: the same dtype) in a chain: its steps appended to
// k.elem_prog.  Returns the bytes of an output element.
int cast_steps(VecKernel& k, const OpDesc& op, const std::string& dtype) {
  const auto to = attr_strs(op, "to");
  const std::string target = to.empty() ? dtype : canonical_dtype(to[0]);
  const int ts = dtype_size(target);
  // One Cast instruction per size step (int8 <-> fp16 <-> fp32); bf16 <->
  // fp16 goes through fp32.  GE's Cast costs are per element of the
  // 16-bit side, i.e. per 128-element repeat.
  int steps = 0;
  for (int s = std::min(ts, k.ds); s < std::max(ts, k.ds); s *= 2) ++steps;
  if (steps == 0 && target != dtype) steps = 2;
  for (int i = 0; i < steps; ++i)
    k.elem_prog.push_back({vec_api_cost(ts > k.ds || (steps == 2 && i == 0 && ts == k.ds) ? "CastUp" : "CastDown"), false});
  return ts;
}

// Operands the size of the output (`n` elements) stream through UB; small broadcast ones
// (per-channel scales, scalars) are read once per core and stay in UB.
void stream_operands(VecKernel& k, const OpDesc& op, int64_t n) {
  k.in_streams = 0;
  k.ub_buffers = 1;  // output queue
  for (const auto& s : op.inputs) {
    const double bytes = double(numel(s)) * k.ds;
    k.unique_bytes += bytes;
    if (numel(s) < n && bytes <= 16384) {
      k.bcast_bytes += bytes;
    } else {
      k.in_bytes += k.ds;
      k.in_streams += 1;
      k.ub_buffers += 1;
    }
  }
}
}  // namespace

std::shared_ptr<OpModel> make_elementwise_model(const OpDesc& op, const Platform& p) {
  VecKernel k = start_kernel(op, p, op.kind);
  const std::string dtype = op.dtype;
  std::vector<std::string> ops;
  if (op.kind == "FusedElementwise") {
    ops = attr_strs(op, "ops");
    if (ops.empty()) fail("FusedElementwise: attrs['ops'] must list the elementwise ops in order");
  } else {
    ops = {op.kind};
  }
  if (op.inputs.empty()) fail(op.kind + ": needs at least one input shape");
  std::vector<int64_t> out_shape = op.inputs[0];
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    check_shape(op.inputs[i], op.kind + " input " + std::to_string(i));
    out_shape = broadcast(out_shape, op.inputs[i], op.kind);
  }
  {
    double out = 1;
    for (auto d : out_shape) out *= double(d);
    check_fits(p, out, k.ds, op.kind + " output " + shape_str(out_shape));
  }
  const int64_t n = numel(out_shape);
  // How many operands the chain consumes: the first op takes its arity, each
  // later binary op one more.
  size_t consumed = 0;
  int temps = 0;  // temporaries of the hungriest API in the chain
  int out_size = k.ds;
  const std::string cd = compute_dtype(dtype);
  if (byte_dtype(dtype)) k.elem_prog.push_back({vec_api_cost("CastUp"), false});
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& o = ops[i];
    if (o == "Cast") {
      out_size = cast_steps(k, op, dtype);
      consumed += (i == 0) ? 1 : 0;
      continue;
    }
    if (!is_elementwise(o)) {
      std::string v;
      for (auto& e : elementwise_ops()) v += (v.empty() ? "" : ", ") + e;
      fail(op.kind + ": '" + o + "' is not an elementwise op (supported: " + v + ")");
    }
    const size_t first = k.elem_prog.size();
    // 910B's Gelu is the TBE one (CANN's opp, op_impl/ai_core/tbe/impl/dynamic/gelu.py): both
    // of its paths without a vtanh intrinsic (gelu_compute_v2, and gelu_compute's own) cast float16
    // to float32 when vexp takes float32, in the default high_precision mode, and back at the end:
    // fp16 runs as bf16 does (vec_program).  The 950's Ascend C Gelu (arch35) is not this one.
    const bool gelu_fp32 = c220(p) && o == "Gelu" && cd == "float16";
    const bool tbe = c220(p) && !is_integer_dtype(cd) && tbe_elewise_program(o, cd, k.elem_prog);
    const int arity = tbe ? 1 : vec_program(o, gelu_fp32 ? "bfloat16" : cd, k.elem_prog);  // TBE's: unary
    if (o == "Exp" && op.kind == "Exp") add_exp_scalars(k, op, cd, p);
    consumed += (i == 0) ? arity : arity - 1;
    for (size_t j = first; j < k.elem_prog.size(); ++j) temps = std::max(temps, k.elem_prog[j].cost.temps);
  }
  if (byte_dtype(dtype)) k.elem_prog.push_back({vec_api_cost("CastDown"), false});
  if (!regbase(p) && !(c220(p) && tbe_kernel_nodes(op) > 0) && last_axis_broadcast(op.inputs, out_shape, k.ds)) {
    // An operand broadcast along a last axis that is not a whole number of 32-byte blocks, in a
    // TBE broadcast schedule (910B's element-wise kernels; hicann/ops-math's Ascend C Maximum is
    // built for ascend950 only): a stand-in cost per output element, as the transposes' gathers
    // (the DEFAULT soc's schedule expands it by vnchwconv, broadcast_schedule.py _calc_storage_bound).
    // Not for 910B's transcribed TBE kernels (tbe_kernel_nodes), whose broadcast schedule
    // (BroadcastScheduleMl) apply_tbe_elewise prices instruction by instruction.
    k.elem_prog.push_back({vec_api_cost("Gather"), false});
  }
  k.temp_fp32 += temps;
  if (consumed != op.inputs.size())
    fail(op.kind + ": the ops " + [&] { std::string s; for (auto& o : ops) s += (s.empty() ? "" : ", ") + o; return s; }() +
         " take " + std::to_string(consumed) + " input(s), but " + std::to_string(op.inputs.size()) + " shapes were given");
  k.units = n;
  k.unit_elems = 1;
  stream_operands(k, op, n);
  k.ub_buffers += 1;  // one intermediate for the chain
  k.out_bytes = out_size;
  if (out_size > k.ds) k.temp_fp32 += 1;  // the wider output tile
  k.unique_bytes += double(n) * out_size;
  k.flops = double(n) * ops.size();
  if (cd != dtype || dtype == "bfloat16") k.temp_fp32 += 1;
  if (c220(p)) apply_tbe_elewise(k, op, out_shape, p);
  return std::make_shared<VecModel>(k, p);
}

namespace {
// The NORM schedule cases 910B's TBE SoftmaxV2 over the last axis ([rows, row]) runs, as canndev 2021
// op_tiling/norm.cc CalcNormInfo picks them at run time (IsNeedWorkspace, IsNeedReduceTranspose,
// IsNeedAlignedInUb; the 8.1.RC1 runtime tiling ships compiled), and the fp32 elements a UB pass of each
// holds per live tensor (norm_tilingcase.py NormInfo._calc_coexisting_quantities_and_temp_buffer_size, one
// mode each, run on softmax_v2_compute's dynamic graph): (UB - temps) / tensors, 32-byte aligned.
enum class NormCase { kNormal, kWorkspace, kReduceTranspose, kAlignedInUb };
// A NORM case's fp32 elements a tensor: (UB - temps bytes) / tensors, 32-byte aligned.
int64_t norm_pass_elems(const Platform& p, int64_t temps, int64_t tensors) {
  return (int64_t(p.ub) - temps) / tensors / 32 * 32 / 4;
}
struct NormPass {
  NormCase norm_case;
  int64_t elems;    // fp32 elements a pass holds per tensor (the runtime's ub_size for the case)
  int64_t tensors;  // coexisting tensors the case's UB holds
};
NormPass softmax_910b_case(int64_t rows, int64_t row, const std::string& dtype, int ds, const Platform& p) {
  const int64_t blk = 32, block = blk / ds;  // block_size: elements a block of the smallest dtype
  const bool half = dtype == "float16";
  const int64_t reduce_temps = (8 + (half ? 8 : 10)) * blk;  // reduce_sum; reduce_max fp16 / fp32
  const int64_t bcast_temp = (256 + 1) * blk;                 // the fp32 sum's vnchwconv broadcast
  auto elems = [&](int64_t temps, int64_t tensors) { return norm_pass_elems(p, temps, tensors); };
  // COMMON_MODE: 3 tensors, 4 for fp16 (its fp16 row max is broadcast by vnchwconv, one node more).
  const NormPass common{NormCase::kNormal, elems(reduce_temps + bcast_temp, half ? 4 : 3), half ? 4 : 3};
  const int64_t row_al = align_up(row, block);
  if (row_al > common.elems)  // WORKSPACE_MODE: 3 tensors, a block per reduce for its one-element result
    return {NormCase::kWorkspace, elems(reduce_temps + 2 * blk, 3), 3};
  if (rows < 2 || row < 2) return common;  // a 1-D shape after EliminateOne: not the AR pattern
  // REDUCE_TRANS_MODE: each reduce 2 nodes more (REDUCE_TRANSPOSE_EXTRA_NODES), no broadcast temp: 5
  // tensors, 9800 elements; PAD_MODE: the input 2 + 1 nodes more (ALIGN_AND_REMOVE_PAD_EXTRA_NODES), 32
  // blocks more temp: 4 tensors, 11672 elements.  The row's limit in either is the pass over
  // transpose_max_entire_size, 128 elements of fp32 (16 blocks of 32 bytes of the widest dtype): 76 and 91.
  const NormPass trans{NormCase::kReduceTranspose, elems(reduce_temps, 5), 5};
  const NormPass pad{NormCase::kAlignedInUb, elems(reduce_temps + bcast_temp + 32 * blk, 4), 4};
  // exist_vc_unsupported_type: a last-axis reduce_max in fp32 (fp32 and bf16 inputs) takes the transpose
  // however the row is aligned (norm.cc: NORM_ALIGN_REDUCE_TRANSPOSE_SCH_TYPE when it is).
  const bool fp32_max = !half;
  if (row <= std::min<int64_t>(trans.elems / 128, 128) && (fp32_max || row % block != 0)) return trans;
  if (row % block != 0 && row_al <= pad.elems / 128) return pad;
  return common;
}

// The short-row cases' work a pass (norm_schedule.py), beside the normal case's:
// - reduce transpose: no storage_align (_calc_storage_align returns early), so x, y and the element-wise
//   work are on the pass's rows back to back, row x ds bytes a row in UB too; its reductions are emitted
//   with the "trans" attr (__handle_special_reduce_insn), no "entire_reduce": the pass's rows are
//   transposed (the 2 extra nodes a reduce) and reduced across them element-wise, no per-row reduce calls
//   and no per-row waits.  The kernel that attr emits is in the compiled backend: ASSUMED one vnchwconv
//   pass and one vmax / vadd pass over the elements a reduction, each costed as an Add-class pass.  With
//   the row aligned (fp32 / bf16, norm.cc NORM_ALIGN_REDUCE_TRANSPOSE_SCH_TYPE) only reduce_max takes the
//   transpose; reduce_sum is a plain reduce, a call a row (no "entire_reduce" either).
// - aligned in UB: the pass's rows are copied as one run and padded in UB ("align_pad" after the
//   cache_read, _do_align_pad) and unpadded before the copy out ("remove_pad", _do_remove_pad); the rest as
//   the normal case.  ASSUMED: each an Add-class pass over the padded elements (backend emit, compiled).
// `pass_rows`: the rows a pass holds (the tile, rows x row elements, 32-byte aligned, in the transpose).
void softmax_910b_short_rows(VecKernel& k, NormCase c, int64_t row, int64_t pass_rows, bool half) {
  if (c != NormCase::kReduceTranspose && c != NormCase::kAlignedInUb) return;
  const bool f32 = k.row_prog.front().fp32;
  const VecStep pass{vec_api_cost("Add"), f32};
  if (c == NormCase::kAlignedInUb) {
    k.elem_prog.insert(k.elem_prog.end(), 2, pass);
    return;
  }
  const bool aligned = row == k.unit_elems;
  k.unit_elems = row;
  k.in_bytes = k.out_bytes = k.ds;
  k.baseline_tile = align_up(pass_rows * row, 32 / k.ds);
  k.elem_prog.insert(k.elem_prog.end(), aligned && !half ? 2 : 4, pass);
  k.row_prog.resize(aligned && !half ? 1 : 0);  // the sum's row reduce stays when the row is aligned
  k.rows_per_reduce_call = 1;
}

// 910B runs SoftmaxV2 over the last axis as a TBE NORM-pattern kernel (CANN 8.1.RC1 opp,
// tbe/impl/dynamic/softmax_v2.py softmax_v2_compute: reduce_max, sub, exp, reduce_sum, div in fp32;
// bf16 cast to fp32 first, fp16 after the sub).  Its default tiling, as the NORM schedule's "normal"
// case (every row in UB; longer rows: the workspace case; short rows: softmax_910b_case's):
// - the fp32 elements a UB pass holds per live tensor (softmax_910b_case, COMMON_MODE): temps
//   reduce_sum 8 blocks, reduce_max 10 blocks in fp32 / 8 in fp16 (_correct_ub_size_by_reduce), the fp32
//   sum's last-axis broadcast by vnchwconv 256 + 1 blocks (__handle_unified_broadcast): 15648 fp32, 11736
//   fp16 elements of 192 KB;
// - the rows over the cores (canndev 2021 op_tiling/norm.cc GetBlockTilingInfo, JudgeCurDimSplitBlock):
//   ceil(rows / cores) a core, at least a 32-byte block of output, one row a core when rows are fewer
//   than cores and longer than a block;
// - a core's rows over UB passes (norm.cc JudgeNormalCurDimSplitUb): as many as a pass holds, then
//   evened out over the passes (ub_loop = ceil(rows / held), rows a pass = ceil(rows / ub_loop));
// - its reductions ("entire_reduce", norm_schedule.py _calc_emit_insn) are called on a pass's rows at
//   once: one call, and one wait, steps over up to 255 rows (the 8-bit repeat count) when a row is at
//   most 255 blocks apart (the 8-bit repeat stride), else a call a row.
// UB is counted as those tensors take it (4 bytes an element each, single-buffered): the input and
// output queue buffers and the rest as fp32 temporaries (ub_fit at bufferNum 1).
// - single-buffered: the binary kernels aclnn launches are built for dynamic shapes (opp tbe/kernel/
//   config/ascend910b/softmax_v2.json: "opMode": "dynamic", shape [-2]), and the NORM tiling cases of a
//   dynamic build never enable double buffering (norm_tilingcase.py: is_enable_db is set only by
//   _gen_const_tiling_case); a pass's vector work waits for its load, its store goes beside the next
//   load (store_beside_load).  (With it and the per-call waits, the round-9 refit on the fit half took
//   the per-row wait vec_row_cycles to ~0: the wait had stood for the copies a single-buffered pass
//   does not overlap.)
void softmax_910b_tiling(VecKernel& k, int64_t rows, int64_t row, const std::string& dtype, const Platform& p) {
  const int64_t blk = 32;
  const bool half = dtype == "float16";
  const int64_t row_al = k.unit_elems;  // the row in 32-byte blocks of the input dtype
  const NormPass np = softmax_910b_case(rows, row, dtype, k.ds, p);
  k.ub_buffers = 2;
  k.temp_fp32 = int(np.tensors) - k.ds / 2;  // ub_buffers x ds + 4 x temp_fp32 = 4 x tensors bytes
  if (rows < 1) return;
  k.baseline_buffer_num = 1;
  k.store_beside_load = true;
  const int64_t cores = p.vector_cores;
  int64_t per_core = 1;
  if (rows * row < blk / k.ds) per_core = rows;
  else if (row <= blk / k.ds && rows < cores) per_core = std::min(rows, cdiv(blk / k.ds, row));
  else if (row <= blk / k.ds || rows >= cores) per_core = std::max(cdiv(rows, cores), cdiv(blk / k.ds, row));
  k.baseline_block_dim = cdiv(rows, per_core);
  if (np.norm_case == NormCase::kWorkspace) {
    // The workspace case (norm.cc IsNeedWorkspace: the aligned row over the pass), the same core split
    // (GetWorkspaceBlockTilingInfo).  The row goes through UB in even chunks of what a pass holds
    // (JudgeWorkspaceCurDimSplitUb; WORKSPACE_MODE's UB: 3 tensors, no broadcast temp, a block per
    // reduce).  exp(x - max), read by reduce_sum and by the div, has a reduce among its producers and is
    // kept in a GM workspace in fp32 (norm_tilingcase.py find_workspace_tensor,
    // _judge_workspace_or_cache_clone); the schedule's sub-graphs end at the reductions and the
    // workspace, so a row takes 4 GM passes: x for the max, x for exp (written), the workspace for the
    // sum, the workspace for the div.  A chunk as long as the row is taken as two: the model sweeps a
    // row only when it spans tiles.
    const int64_t chunks = std::max<int64_t>(2, cdiv(row, np.elems));
    k.baseline_tile = align_up(cdiv(row, chunks), blk / k.ds);
    k.sweeps_if_split = 4;
    k.split_ws_bytes = 4;
    k.split_ws_reads = 2;
    return;
  }
  // A core's rows over UB passes (JudgeNormalCurDimSplitUb, every non-workspace case): as many aligned
  // rows as the case's pass holds, evened out over the passes.
  const int64_t passes = cdiv(per_core, np.elems / row_al);
  const int64_t pass_rows = cdiv(per_core, passes);
  k.baseline_tile = pass_rows * row_al;
  k.rows_per_reduce_call = row_al * 4 <= 255 * blk ? 255 : 1;
  // A row not a whole number of 32-byte blocks is padded in UB, not in GM: x and y are [rows, row]
  // tensors, so a pass moves row x ds bytes a row.  (Before: the padded row was read and written, 1.9x
  // the bytes of a row of 17 fp16 elements.)
  k.in_bytes = double(k.ds) * double(row) / double(row_al);
  k.out_bytes = k.in_bytes;
  softmax_910b_short_rows(k, np.norm_case, row, pass_rows, half);
}

// The reduced axes of a Softmax (attrs "axis"), LayerNormalization ("axis" and the axes after it) or
// Reduce* (attrs "axes"; none: all) over a rank-`rank` input.
std::vector<bool> reduced_axes(const OpDesc& op, size_t rank, bool sm, bool ln) {
  std::vector<bool> red(rank, false);
  if (sm) {
    red[norm_axis(attr_int(op, "axis", -1), rank, op.kind)] = true;
  } else if (ln) {
    const int64_t a = norm_axis(attr_int(op, "axis", -1), rank, op.kind);
    for (size_t i = a; i < rank; ++i) red[i] = true;
  } else {
    auto axes = attr_ints(op, "axes", {});
    if (op.inputs.size() > 1) fail(op.kind + ": give the axes as attrs['axes'], not as an input");
    if (axes.empty()) red.assign(rank, true);  // ONNX: no axes = all axes
    for (auto a : axes) {
      const int64_t n = norm_axis(a, rank, op.kind);
      if (red[n] && axes.size() > 1 && std::count(axes.begin(), axes.end(), a) > 1)
        fail(op.kind + ": axis " + std::to_string(a) + " is listed twice");
      red[n] = true;
    }
  }
  return red;
}

// Reduction along the innermost axis ([outer, R]): a row of R elements a unit, reduced by
// WholeReduce calls (`f32`: the steps run on fp32 data).
void last_axis_rows(VecKernel& k, int64_t outer, int64_t R, bool sm, bool ln, bool f32) {
  auto api = [&](const char* name) { return VecStep{vec_api_cost(name), f32}; };
  const int64_t elem_align = 32 / k.ds;
  k.units = outer;
  k.unit_elems = align_up(R, elem_align);
  if (sm) {
    k.row_prog = {api("WholeReduceSum"), api("WholeReduceSum")};  // max, then sum (WholeReduceMax: same class)
    for (auto* a : {"Add", "Exp", "Mul"}) k.elem_prog.push_back(api(a));  // x - max, exp, * 1/sum
    k.sweeps_if_split = 3;
    k.split_rows = true;
    k.syncs = 2;
  } else if (ln) {
    k.row_prog = {api("WholeReduceSum"), api("WholeReduceSum")};  // mean, variance
    for (auto* a : {"Add", "Mul", "Muls", "Mul", "Add"}) k.elem_prog.push_back(api(a));
    k.sweeps_if_split = 2;
    k.split_rows = true;
  } else {
    k.row_prog = {api("WholeReduceSum")};
    k.split_rows = true;
  }
  k.out_bytes_per_unit = (sm || ln) ? 0 : k.ds;
  k.out_bytes = (sm || ln) ? k.ds : 0;
}

// Reduction along a non-innermost axis ([outer, R, inner]): vector Adds of rows over a block
// of the inner axis per unit, as CANN's SoftmaxV2 ARA templates tile it (hicann/ops-nn
// activation/softmax_v2/op_host/arch35/softmax_v2_ara_recompute_tiling.cpp, DoOpTiling):
// the inner axis in 32-byte blocks, as many per unit as spread the units over every core
// (a0Inner = ceil(outer x blocks / cores)), at most the inner axis and what UB holds for R
// in chunks of 128 rows (binAddRFactor) double-buffered in the input dtype and fp32, with
// 11 + cache fp32 rows of work space (UB_COMPUTE_FACTOR, binAddCacheBufferCount).
// (The blocks were 512 B, halved while cores idled but not below a GM sector: a 950PR fp16
// Softmax over dim 0 of [512, 2049] ran on 17 of 64 cores, 3.8x the measured time.)
// 910B runs SoftmaxV2 as a TBE NORM-pattern kernel (CANN 8.1.RC1 opp tbe/impl/dynamic/softmax_v2.py),
// whose block split is its own (softmax_910b_columns, below), and which takes NORM's workspace case when R
// does not fit a pass (softmax_910b_nlast).
// The columns of the inner axis a core takes in 910B's TBE SoftmaxV2 over a non-last axis ([outer, R,
// inner]; outer 1: the RA pattern), as canndev 2021 op_tiling/norm.cc GetBlockTilingInfo splits the A axes
// (normal case): the outer axis when it alone fills the cores (JudgeCurDimSplitBlock: ceil(outer / cores)
// a core; returned as 0: whole inner axes), else the inner axis over cores / outer cores
// (ceil(inner / block_dim) columns), the block_dim lowered until the last core's columns fill a 32-byte
// block; with fewer outer x inner than cores, a block of columns a core (JudgeCurDimSplitBlock by
// right_product).  `block`: elements a 32-byte block.
int64_t softmax_910b_columns(int64_t outer, int64_t R, int64_t inner, int64_t block, int64_t cores) {
  if (outer * R * inner < block) return inner;
  if (outer > 1 && (outer >= cores || R * inner <= block)) return 0;
  auto tail = [&](int64_t f) { return inner % f == 0 ? f : inner % f; };
  if (outer * inner < cores) {
    for (int64_t f = block; f < inner; ++f)
      if (tail(f) >= block) return f;
    return inner;
  }
  for (int64_t tcn = cores; tcn <= outer * inner; tcn += cores) {
    if (outer > tcn) continue;
    for (int64_t bd = tcn / outer; bd >= 1; --bd)
      if (tail(cdiv(inner, bd)) >= block) return cdiv(inner, bd);
  }
  return 1;
}

// 910B's TBE SoftmaxV2 over a non-last axis ([outer, R, inner]) when the reduced axis does not fit a UB pass:
// NORM's workspace case (canndev 2021 op_tiling/norm.cc IsNeedWorkspace: R x min(inner in 32-byte blocks,
// 8 blocks) over COMMON_MODE's pass, 16336 fp32 elements a tensor here: 3 tensors, reduce temps 8 + 8
// blocks, no vnchwconv broadcast; norm_tilingcase.py run on softmax_v2_compute's ARA / RA graphs).  Its
// tiling:
// - cores: GetWorkspaceBlockTilingInfo splits as GetBlockTilingInfo does (softmax_910b_columns), each
//   core's columns capped by the pass (max_block_factor); a core that takes whole outer indices takes the
//   whole inner axis (not transcribed: an inner axis past a pass with outer >= cores, which norm.cc then
//   splits instead);
// - UB: JudgeWorkspaceCurDimSplitUb splits R: as many rows of the core's columns (32-byte aligned) as
//   WORKSPACE_MODE's pass holds (12272 fp32 elements a tensor, 4 tensors: the smallest of its sub-graphs),
//   the last chunk's columns at least a block, evened out over the chunks (ub_loop);
// - GM: exp(x - max) goes to an fp32 workspace as in the last-axis case (find_workspace_tensor): x read
//   for the max and for exp, the workspace written, read for the sum and the div; single-buffered (a
//   dynamic build).  A chunk as long as R is taken as two: the model sweeps a unit only when it spans tiles.
// The normal case over a non-last axis (its UB split over the columns, its buffering) is not transcribed.
void softmax_910b_nlast(VecKernel& k, int64_t outer, int64_t R, int64_t inner, const Platform& p) {
  const int64_t blk = 32, block = blk / k.ds;
  const int64_t common = norm_pass_elems(p, 16 * blk, 3);
  if (R * std::min(align_up(inner, block), 8 * block) <= common) return;
  const int64_t ws = norm_pass_elems(p, 8 * blk, 4);
  int64_t cols = softmax_910b_columns(outer, R, inner, block, p.vector_cores);
  if (cols == 0) cols = inner;
  cols = std::min(cols, ws / block * block);
  int64_t f = std::max<int64_t>(1, ws / align_up(cols, block));
  while (f > 1 && (R % f ? R % f : f) * cols < block) --f;
  int64_t factor = cdiv(R, cdiv(R, f));
  if (factor * cols < block) factor = std::min(f, R);
  factor = std::min(factor, std::max<int64_t>(1, cdiv(R, 2)));
  k.units = outer * cdiv(inner, cols);
  k.unit_elems = R * cols;
  k.ub_buffers = 2;
  k.temp_fp32 = 4 - k.ds / 2;  // ub_buffers x ds + 4 x temp_fp32 = 4 x 4 tensors bytes
  k.baseline_tile = align_up(factor * cols, block);
  k.baseline_buffer_num = 1;
  k.store_beside_load = true;
  k.sweeps_if_split = 4;
  k.split_ws_bytes = 4;
  k.split_ws_reads = 2;
}

void other_axis_rows(VecKernel& k, int64_t outer, int64_t R, int64_t inner, bool sm, bool ln, bool f32,
                     const Platform& p) {
  auto api = [&](const char* name) { return VecStep{vec_api_cost(name), f32}; };
  const int64_t elem_align = 32 / k.ds;
  const int64_t blocks = cdiv(inner, elem_align);
  const int64_t r_loops = cdiv(R, 128);
  int64_t cache = 1;  // binary-add partials kept: the bit width of the largest power of two < r_loops
  if (r_loops > 1) {
    int64_t basic = 1;
    while (basic * 2 < r_loops) basic *= 2;
    for (cache = 0; basic > 0; basic >>= 1) ++cache;
  }
  const int64_t ub_blocks = int64_t(p.ub) / elem_align / (128 * 2 * (4 + k.ds) + 4 * (11 + cache));
  const int64_t per_unit = std::max<int64_t>(
      1, std::min({cdiv(outer * blocks, int64_t(p.vector_cores)), ub_blocks, blocks}));
  int64_t blk = per_unit * elem_align;
  // 910B: TBE's block split (softmax_910b_columns), within what UB holds as above.  (The ARA rule above
  // put a [512, 2049] fp16 Softmax over dim 0 on 43 cores of 48 columns; TBE takes 48 of 43.)
  if (sm && c220(p)) {
    const int64_t cols = softmax_910b_columns(outer, R, inner, elem_align, p.vector_cores);
    if (cols > 0) blk = std::min(cols, ub_blocks * elem_align);
  }
  k.units = outer * cdiv(inner, blk);
  k.unit_elems = R * blk;
  // A unit's GM runs (blk elements a row, rows `inner` apart) are contiguous with the next
  // unit's, which the next core reads at the same time (or this core next): together they
  // read and write whole sectors and L2 lines, so the runs are charged as contiguous.
  k.run_in = 0;
  k.run_out = 0;
  if (sm) {
    for (auto* a : {"Add", "Add", "Exp", "Add", "Mul"}) k.elem_prog.push_back(api(a));
    k.sweeps_if_split = 3;
    k.out_bytes = k.ds;
  } else if (ln) {
    for (auto* a : {"Add", "Add", "Mul", "Add", "Mul", "Mul", "Add"}) k.elem_prog.push_back(api(a));
    k.sweeps_if_split = 2;
    k.out_bytes = k.ds;
  } else {
    k.elem_prog.push_back(api("Add"));
    k.out_bytes_per_unit = double(blk) * k.ds;
    k.split_rows = true;
  }
}
}  // namespace

std::shared_ptr<OpModel> make_rows_model(const OpDesc& op, const Platform& p) {
  VecKernel k = start_kernel(op, p, op.kind);
  const std::string dtype = op.dtype;
  const bool ln = op.kind == "LayerNormalization", sm = op.kind == "Softmax";
  if (op.inputs.empty()) fail(op.kind + ": needs the input shape");
  const auto& x = op.inputs[0];
  check_shape(x, op.kind + " input");
  if (x.empty()) fail(op.kind + ": the input must have at least one dimension");
  const size_t rank = x.size();
  const std::vector<bool> red = reduced_axes(op, rank, sm, ln);
  // [outer, R, inner]: reduced extent R, non-reduced dims before the first
  // reduced axis, and after it (interleaved axes are approximated).
  int64_t outer = 1, R = 1, inner = 1;
  size_t first = rank;
  for (size_t i = 0; i < rank; ++i) if (red[i] && first == rank) first = i;
  for (size_t i = 0; i < rank; ++i) {
    if (red[i]) R *= x[i];
    else if (i < first) outer *= x[i];
    else inner *= x[i];
  }
  const std::string cd = compute_dtype(dtype);
  if ((sm || ln) && is_integer_dtype(dtype) && !byte_dtype(dtype))  // bytes: fp16 between casts, as before
    fail(op.kind + ": " + dtype + " input is not modelled (an exp/normalisation of integers; CANN takes floats)");
  const bool up = cd == "float16" && (sm || ln);  // fp16 softmax/layernorm compute in fp32
  const bool f32 = up || dtype_size(cd) >= 4 || cd == "bfloat16";  // 64 elements per repeat
  if (up) k.elem_prog.push_back({vec_api_cost("CastUp"), false});
  if (inner == 1)
    last_axis_rows(k, outer, R, sm, ln, f32);
  else
    other_axis_rows(k, outer, R, inner, sm, ln, f32, p);
  if (up) k.elem_prog.push_back({vec_api_cost("CastDown"), false});
  if (cd == "int64") {  // pairs of int32 lanes (vec_program): every step twice
    const auto e = k.elem_prog, r = k.row_prog;
    k.elem_prog.insert(k.elem_prog.end(), e.begin(), e.end());
    k.row_prog.insert(k.row_prog.end(), r.begin(), r.end());
  }
  if (ln) {
    for (size_t i = 1; i < op.inputs.size() && i < 3; ++i) {
      check_shape(op.inputs[i], "LayerNormalization input " + std::to_string(i));
      if (numel(op.inputs[i]) != R)
        fail("LayerNormalization: scale/bias " + shape_str(op.inputs[i]) + " must have " + std::to_string(R) +
             " elements (the normalized extent)");
      k.bcast_bytes += double(R) * k.ds;
    }
  }
  k.in_bytes = k.ds;
  k.ub_buffers = 2;
  k.temp_fp32 = f32 && k.ds != 4 ? 2 : 1;
  if (sm && inner == 1 && c220(p)) softmax_910b_tiling(k, outer, R, dtype, p);
  if (sm && inner > 1 && c220(p)) softmax_910b_nlast(k, outer, R, inner, p);
  const double n = double(numel(x));
  k.unique_bytes = n * k.ds + (k.out_bytes > 0 ? n * k.out_bytes : double(outer) * inner * k.ds) + k.bcast_bytes;
  fuse_elementwise(k, op, cd, 1.0, n, k.out_bytes > 0 ? n : double(outer) * inner, k.out_bytes > 0,
                   "Softmax, LayerNormalization");
  k.flops = n * (k.elem_prog.size() + k.row_prog.size());
  return std::make_shared<VecModel>(k, p);
}

namespace {
// The transpose as the kernel sees it: axes of 1 dropped, and input axes that stay adjacent and
// in order in the output merged into one ([3, 7, 13, 4001] by [0, 3, 1, 2] is [3, 91, 4001] by
// [0, 2, 1]: 364-byte output runs, not 52).
void merge_transpose_axes(std::vector<int64_t>& x, std::vector<int64_t>& perm) {
  std::vector<int64_t> kept;  // output order, size-1 axes dropped
  for (auto a : perm) if (x[a] > 1) kept.push_back(a);
  std::vector<std::vector<int64_t>> groups;  // runs of consecutive input axes, in output order
  auto adjacent = [&](int64_t a, int64_t b) {  // b follows a in the input, only axes of 1 between
    if (b <= a) return false;
    for (int64_t j = a + 1; j < b; ++j) if (x[j] > 1) return false;
    return true;
  };
  for (auto a : kept) {
    if (!groups.empty() && adjacent(groups.back().back(), a)) groups.back().push_back(a);
    else groups.push_back({a});
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> nx(groups.size()), rank_of(groups.size());
  for (size_t i = 0; i < order.size(); ++i) {
    int64_t d = 1;
    for (auto a : groups[order[i]]) d *= x[a];
    nx[i] = d;
    rank_of[order[i]] = int64_t(i);
  }
  if (nx.empty()) nx = {1}, rank_of = {0};
  x = nx;
  perm = rank_of;
}

// 910B's TBE Transpose moves a kept last axis of whole 32-byte blocks, at least 4 of them, by
// strided copies alone (its scenario 9: op_tiling/transpose.cc IsScenario9, the kernel's
// _move_data_s9 in CANN 8.1.RC1 tbe/impl/dynamic/transpose.py): one side is read or written
// contiguously, `repeat` rows of the block at a time, the other in bursts of one block, with no
// reordering in UB.  `src` mode repeats the input's second-last axis, `dst` mode the output's;
// each needs the axes before it to give every core a share, repeat <= 4095 bursts (NBURST_BOUNDARY),
// 16 <= repeat * blocks <= the UB's blocks, and a burst stride below 65535 blocks.  Returns the
// contiguous side's run in bytes (0: not this scenario) and sets `src`.
double tbe_repeat_copy_run(const std::vector<int64_t>& x, const std::vector<int64_t>& perm, int ds,
                           const Platform& p, bool& src) {
  const size_t r = x.size();
  if (r < 3 || perm[r - 1] != int64_t(r - 1) || (x[r - 1] * ds) % 32 != 0) return 0;
  const int64_t blocks = x[r - 1] * ds / 32;
  if (blocks < 4) return 0;  // "if burstlen < 4, borrow axis is better than using repeat"
  const int64_t ub_blocks = int64_t(p.ub) / 32 - 128;  // ubSizeCouldUse: 4 KB reserved
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) out[i] = x[perm[i]];
  auto lead = [&](const std::vector<int64_t>& s) {
    int64_t v = 1;
    for (size_t i = 0; i + 2 < r; ++i) v *= s[i];
    return v;
  };
  auto stride_ok = [&](const std::vector<int64_t>& s, size_t from) {  // (vol - 1) * blocks <= 65535
    int64_t v = 1;
    for (size_t i = from; i + 1 < r; ++i) v *= s[i];
    return (v - 1) * blocks <= 65535;
  };
  auto fits = [&](int64_t repeat, const std::vector<int64_t>& s) {
    return lead(s) >= p.vector_cores && repeat <= 4095 && repeat * blocks <= ub_blocks && repeat * blocks >= 16;
  };
  const int64_t rep_src = x[r - 2], rep_dst = out[r - 2];
  size_t at = 0;  // the output position of the input's second-last axis
  while (perm[at] != int64_t(r - 2)) ++at;
  const bool src_ok = fits(rep_src, x) && stride_ok(out, at + 1);
  const bool dst_ok = fits(rep_dst, out) && stride_ok(x, size_t(perm[r - 2]) + 1);
  if (!src_ok && !dst_ok) return 0;
  src = rep_dst > rep_src ? !dst_ok : src_ok;
  return double((src ? rep_src : rep_dst) * x[r - 1] * ds);
}

// The blocks a side of 910B's TBE borrow-axis transpose moves at once, for a kept block of `kept`
// elements (op_tiling/transpose.cc CalcLeftVol): UB room in 2-byte units, 32768 for a block of
// whole 32-byte blocks (LAST_AXIS_N_TRANS_MAX_SIZE_B16), else (6144 * 32 - 4096) / 32 / 2 = 3008
// (CalcVnchwconvPartialUbSize: 1/16 of the UB); the square of `vol` blocks, each padded to a
// 32-byte block, must fit it; the side is vol - 1.
int64_t tbe_borrow_side(int64_t kept, int ds) {
  const int64_t epb = 32 / ds, fp16_times = (ds + 1) / 2;
  const int64_t ub = kept % epb == 0 ? 32768 : (6144 * 32 - 4096) / 32 / 2;
  const int64_t left = std::max<int64_t>(1, ub / (kept * fp16_times));
  for (int i = 0; i < 10; ++i) {  // LOOP_FOR_UB_PADDING
    const int64_t vol = int64_t(std::sqrt(double(left))) - i;
    if (vol < 1) break;
    if (vol * (cdiv(vol * kept, epb) * epb) * fp16_times <= ub) return std::max<int64_t>(1, vol - 1);
  }
  return 1;
}

// 910B's TBE Transpose with its last axis transposed (op_tiling/transpose.cc SetScenario, canndev
// 2021; the kernel's _move_data_s11 / _move_data_s7_university in CANN 8.1.RC1 tbe/impl/dynamic/
// transpose.py) moves tiles of `cols` input-contiguous elements by `rows` output-contiguous ones:
// a GM->UB copy of `rows` bursts of `run_in` bytes (`in_copies` copy instructions), vnchwconv in
// UB, a UB->GM copy of bursts of `run_out` bytes; `cores` of the split have work.  One UB buffer
// (ub_input's halves): the next tile's load waits the reorder, beside the last tile's store.  The
// 4- and 8-byte reorders (_reorder_s7_b32 / _b64: 16 vnchwconv lanes of 8 rows, 2 x 4 of 4 rows)
// convert ROW_UNIT = 128 rows whatever the tile holds (`reorder_rows`); the 2-byte one its rows.
struct TbeTile {
  int64_t cols = 0, rows = 0, reorder_rows = 0, in_copies = 1, cores = 0;
  double run_in = 0, run_out = 0;
};

// Scenario 11 (IsScenario11 / TilingDataScenario11): a 2-D transpose of 2- or 4-byte elements,
// both axes whole 32-byte blocks: tiles of GetColUnit (176 columns, 192 KB UB; 240 at 248-256 KB)
// by ROW_UNIT 128 rows, the cores split over columns x rows by CalcCRFactor (the factors whose
// ratio is nearest the units').
bool tbe_s11_tile(const std::vector<int64_t>& x, const std::vector<int64_t>& perm, int ds, const Platform& p,
                  TbeTile& t) {
  const int64_t epb = 32 / ds;
  if (x.size() != 2 || perm[0] != 1 || (ds != 2 && ds != 4) || x[0] % epb || x[1] % epb ||
      x[0] / epb >= 65535 || x[1] / epb >= 65535)
    return false;
  t.cols = std::min<int64_t>(int64_t(p.ub) / 32 >= 7936 ? 240 : 176, x[1]);
  t.rows = std::min<int64_t>(128, x[0]);
  const int64_t cu = x[1] / t.cols, ru = x[0] / t.rows, cr = p.vector_cores;
  int64_t cf = cr, rf = 1;  // CalcCRFactor
  double best = std::abs(double(cr) - double(cu) / ru);
  for (int64_t i = cr / 2; i >= 1; --i) {
    const int64_t j = cr / i;
    if (std::abs(double(i) / j - double(cu) / ru) <= best) best = std::abs(double(i) / j - double(cu) / ru), cf = i, rf = j;
  }
  t.cores = std::min(cf, cu) * std::min(rf, ru);
  t.reorder_rows = ds == 4 ? 128 : t.rows;
  t.run_in = double(t.cols) * ds;
  t.run_out = double(t.rows) * ds;
  return true;
}

// One of scenario 7's tiling models (transpose.cc Model001..008 for 4-byte elements, _b16 for
// 2-byte ones, Model002_b64 for 8-byte ones; MakeNCRDecision keeps the lowest priority over the
// splits DispatchNCR offers): the input's trailing axes (col, cVol), the output's axes after the
// last of them (row, rVol) and the rest (n, nVol), split over cores by the factors (nf, cf, rf).
// f2t / t2f: a thin row (col) side moved whole, the other side as UB holds it
// (CalcVnchwconvPartialUbSize: 3008 2-byte units, Align16).  Returns the priority, 0: none fits.
struct TbeNcr {
  int64_t nv = 1, cv = 1, rv = 1, ncols = 0, nrows = 0, last_row = 1;  // last_row: the output's last axis
  int64_t nf = 1, cf = 1, rf = 1, max_col = 0, max_row = 128;
  bool f2t = false, t2f = false;
};
int tbe_s7_model(TbeNcr& m, int ds, int64_t cores, bool t2f_valid) {
  const int64_t t = (ds + 1) / 2, full = 256 / std::min<int64_t>(t, 2);  // CalcVnchwconvFullColSize 256, / 2 for b32
  auto align16 = [](int64_t v, int64_t f) {  // Align16(3008, f, 3008)
    int64_t r = align_up(v / f, 16);
    while (r > 0 && r * f > v) r -= 16;
    return r;
  };
  auto set = [&](int64_t a, int64_t b, int64_t c) { m.nf = a, m.cf = b, m.rf = c; };
  m.max_col = full, m.max_row = 128, m.f2t = m.t2f = false;
  if (t == 4) {
    if (m.cv >= 16 && m.rv >= 16 * cores) return m.max_col = 64, set(1, 1, cores), 2;
    return 0;
  }
  const int64_t thin = 64 / t, fat = 256 / t, area = 4096 / t;  // F2T_THRESHOLD_B16 / _B32
  if (m.nv >= cores && m.cv >= 64 && m.rv >= 64) return set(cores, 1, 1), 1;
  if (m.cv >= 64 && m.rv >= 64 * cores) return set(1, 1, cores), 2;
  if (m.cv >= 64 * cores && m.rv >= 64) return set(1, cores, 1), 3;
  auto split_n = [&](bool cols) {
    if (m.nv > cores) set(cores, 1, 1);
    else cols ? set(m.nv, cores / m.nv, 1) : set(m.nv, 1, cores / m.nv);
  };
  if (m.ncols == 1 && m.rv < thin && m.cv >= fat) {  // Model004: fat to thin
    m.f2t = true, m.max_col = align16(3008, m.rv) / std::min<int64_t>(t, 2);
    if (m.cv >= fat * cores) set(1, cores, 1);
    else split_n(true);
    return 4;
  }
  if (m.nrows == 1 && t2f_valid && m.cv < thin && m.rv >= fat) {  // Model005: thin to fat
    m.t2f = true, m.max_row = align16(3008, m.cv) / std::min<int64_t>(t, 2);
    if (m.rv >= fat * cores) set(1, 1, cores);
    else split_n(false);
    return 5;
  }
  const int64_t lo = t == 1 ? 32 : 24, lo_few = t == 1 ? 48 : 24;  // Model006
  if (m.nv >= cores && m.cv >= lo && m.rv >= lo) return set(cores, 1, 1), 6;
  if (m.nv < cores && m.cv >= lo_few && m.rv >= lo_few) {
    m.cv > m.rv ? set(m.nv, cores / m.nv, 1) : set(m.nv, 1, cores / m.nv);
    return 6;
  }
  if (m.ncols == 1 && m.rv < thin && m.cv * m.rv >= area)
    return m.f2t = true, m.max_col = align16(3008, m.rv) / std::min<int64_t>(t, 2), set(cores, 1, 1), 7;
  if (m.nrows == 1 && t2f_valid && m.cv < thin && m.rv * m.cv >= area)
    return m.t2f = true, m.max_row = align16(3008, m.cv) / std::min<int64_t>(t, 2), set(cores, 1, 1), 8;
  return 0;
}

// Scenario 7 (TilingDataScenario7): DispatchNCR's splits, the chosen model's factors, and the
// tile a core moves (Split: a core's columns and rows rounded up to whole blocks;
// SplitColByFactor / SplitRowByFactor: at most max_col x max_row, whole blocks, else the
// scenario fails to scenario 5).  The kernel's copies on 910B (data_move_pad, _copy_in_pad_loop_*
// _s7) read the tile's rows in one instruction per run of the output's last axis.
bool tbe_s7_tile(const std::vector<int64_t>& x, const std::vector<int64_t>& perm, int ds, const Platform& p,
                 TbeTile& t) {
  const int64_t dim = int64_t(x.size()), epb = 32 / ds, cores = p.vector_cores;
  std::vector<int64_t> pos(dim);
  for (int64_t i = 0; i < dim; ++i) pos[perm[i]] = i;
  TbeNcr best;
  int best_pri = 0;
  for (int64_t i = 1; i < dim; ++i) {  // col: the input's axes i..dim-1
    int64_t re = -1;
    for (int64_t a = i; a < dim; ++a) re = std::max(re, pos[a]);
    if (re >= dim - 1) continue;
    TbeNcr m;
    m.ncols = dim - i, m.nrows = dim - 1 - re, m.last_row = x[perm[dim - 1]];
    for (int64_t a = 0; a < dim; ++a) {
      if (a >= i) m.cv *= x[a];
      else if (pos[a] > re) m.rv *= x[a];
      else m.nv *= x[a];
    }
    const bool t2f_valid = m.nrows == 1 && perm[dim - 1] + m.ncols == dim - 1;  // Model005 / 008 IsValid
    const int pri = tbe_s7_model(m, ds, cores, t2f_valid);
    if (pri > 0 && (best_pri == 0 || pri < best_pri)) best = m, best_pri = pri;
  }
  if (best_pri == 0) return false;
  const TbeNcr& m = best;
  auto share = [&](int64_t v, int64_t f) { return f <= 1 ? v : align_up(cdiv(v, f), epb); };
  const int64_t col = share(m.cv, m.cf), row = share(m.rv, m.rf);
  t.cols = m.t2f ? col : std::min(m.max_col, col / epb * epb);
  t.rows = m.f2t ? row : std::min(m.max_row, row / epb * epb);
  if (t.cols == 0 || t.rows == 0) return false;
  t.cores = std::min(cores, m.nf * m.cf * m.rf);
  t.reorder_rows = ds >= 4 && !m.f2t && !m.t2f ? 128 : t.rows;  // the thin kernels reorder otherwise
  t.run_in = double(m.t2f ? t.rows * t.cols : t.cols) * ds;
  t.run_out = double(m.f2t ? t.rows * t.cols : t.rows) * ds;
  t.in_copies = m.t2f || t.rows < m.last_row ? 1 : cdiv(t.rows, m.last_row);
  return true;
}

// 910B's TBE kernel, last axis transposed: its tile, bursts, copies and cores (tbe_last_axis_tile).
// Its one UB buffer is not charged: with the reorder between each load and the next
// (bufferNum 1, store_beside_load) the 910B2 refit on the fit half fell into other constants,
// mean |log| 0.065 -> 0.088 (inner split 0.112 -> 0.110); the reorder's per-element cost
// (Gather, fitted) stands for more than vnchwconv's work, so its overlap is the pipelined one.
// Nor is each tile's load head (mte2_head) charged to the reorder: inner split 0.110 -> 0.120.
void take_tbe_tile(VecKernel& k, const TbeTile& t, const Platform& p) {
  k.run_in = t.run_in, k.run_out = t.run_out;
  k.baseline_tile = t.cols * t.rows;
  k.in_streams = int(t.in_copies);
  if (t.cores < p.vector_cores) k.baseline_block_dim = t.cores;
}

// The TBE tile of a transposed last axis on 910B, or false where the kernel takes another
// scenario (not transcribed: the model's square-tile gather stands for it): under 1 KB (scenario 6),
// 1-byte elements (their b8 scenarios), 2-byte ones whose last two axes swap in small aligned
// blocks (scenario 10, IsLastTwoAlignedAndTrans), and the splits no model of scenario 7 takes
// (scenario 5).
bool tbe_last_axis_tile(const std::vector<int64_t>& x, const std::vector<int64_t>& perm, int ds, const Platform& p,
                        TbeTile& t) {
  const size_t r = x.size();
  if (ds == 1 || r < 2 || numel(x) * ds < 1024) return false;
  if (ds == 2 && r >= 3 && perm[r - 1] == int64_t(r - 2) && perm[r - 2] == int64_t(r - 1) && x[r - 1] % 16 == 0 &&
      x[r - 2] % 16 == 0 && x[r - 1] * x[r - 2] < 255 * 16 * 16 && x[r - 2] <= 128)
    return false;
  return tbe_s11_tile(x, perm, ds, p, t) || tbe_s7_tile(x, perm, ds, p, t);
}
}  // namespace

std::shared_ptr<OpModel> make_transpose_model(const OpDesc& op, const Platform& p) {
  VecKernel k = start_kernel(op, p, "Transpose");
  if (op.inputs.size() != 1) fail("Transpose: expected one input shape, got " + std::to_string(op.inputs.size()));
  std::vector<int64_t> x = op.inputs[0];
  check_shape(x, "Transpose input");
  size_t rank = x.size();
  std::vector<int64_t> perm = attr_ints(op, "perm", {});
  if (perm.empty()) for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(rank - 1 - i));
  if (perm.size() != rank) fail("Transpose: perm " + shape_str(perm) + " must have " + std::to_string(rank) + " entries");
  std::set<int64_t> seen;
  for (auto a : perm) {
    if (a < 0 || a >= int64_t(rank) || !seen.insert(a).second)
      fail("Transpose: perm " + shape_str(perm) + " is not a permutation of 0.." + std::to_string(rank - 1));
  }
  const int64_t n = numel(x);
  k.units = n;
  k.unit_elems = 1;
  k.in_bytes = k.ds;
  k.out_bytes = k.ds;
  // The regrouping in UB below: one gather pass per 4-byte lane (int64: two).  910B's Transpose
  // is CANN's TBE kernel (ops-math's Ascend C Transpose, conversion/transpose/op_host/
  // transpose_def.cpp, is built for ascend950 only), which reorders in 2-byte units with
  // vnchwconv: fp16Times = (bytes + 1) / 2, "fp32/int32:2 fp16/int16:1" (CANN 8.1.RC1 opp,
  // op_impl/ai_core/tbe/impl/dynamic/transpose.py; the tiling's op_tiling/transpose.cc, whose
  // 8.1.RC1 build ships compiled: its 2021 canndev source, ops/built-in/op_tiling/transpose.cc, the
  // one cited below, sets the same info.fp16Times and sizes its vnchwconv tiles by it).  _reorder_s7_b16 is one vnchwconv
  // pass, _reorder_s7_b32 two with a UB copy between, over fp16Times halves: the work follows
  // the bytes, so a 2-byte element takes half a 4-byte pass there.  (int8 goes to its own b8 scenarios, not
  // audited: left at one pass.)
  VecCost gather = vec_api_cost("Gather");
  if (c220(p) && k.ds == 2) gather.per_repeat *= 0.5;
  auto regroup = [&] {
    for (int i = 0; i < std::max(1, k.ds / 4); ++i) k.elem_prog.push_back({gather, false});
  };
  merge_transpose_axes(x, perm);
  rank = x.size();
  // Contiguous runs: trailing input axes kept in order at the end of the output.
  int64_t kept = 1;
  size_t j = rank;
  while (j > 0 && perm[j - 1] == int64_t(j - 1)) { kept *= x[j - 1]; --j; }
  bool src = false;
  const double repeat_run = c220(p) && j > 0 ? tbe_repeat_copy_run(x, perm, k.ds, p, src) : 0.0;
  // 910B's TBE kernel copies a kept block longer than 256 bytes that is not whole 32-byte blocks
  // row by row, no reordering in UB (scenario 1: transpose.cc SetScenario,
  // LAST_AXIS_NOT_BLOCK_ALIGN_LARGE_THRESHOLD; 8.1.RC1 _move_data_s1).
  const bool row_copies = c220(p) && j > 0 && kept * k.ds > 256 && (kept * k.ds) % 32 != 0;
  if (j == 0) {  // identity
    k.run_in = k.run_out = 0;
  } else if (kept * k.ds >= p.gm_align || repeat_run > 0 || row_copies) {
    // The innermost block moves as a whole (DataCopy with strides, no vector work); 910B's
    // repeat copies read or write `repeat` blocks in one run.
    k.run_in = k.run_out = double(kept) * k.ds;
    if (repeat_run > 0) (src ? k.run_in : k.run_out) = repeat_run;
  } else if (kept * k.ds >= 32) {
    // Blocks shorter than a full-rate burst are regrouped element by element in UB: CANN's
    // Transpose runs ~1 cycle per element and core whatever its runs (fit half: 950PR's
    // 2-D and [0, 3, 1, 2] transposes, 910B2's 2-D and 5-D ones), so copies of short blocks
    // are no cheaper.
    k.run_in = k.run_out = double(kept) * k.ds;
    if (c220(p)) {
      // 910B's TBE kernel borrows the axes before the block on each side (its borrow-axis
      // scenarios: op_tiling/transpose.cc CalcSrcBorrowAxisIndex / CalcDstBorrowAxisIndex, up to
      // two axes a side): a copy moves up to `side` blocks of the input's, or the output's,
      // trailing axes at once, and vnchwconv reorders them in UB.
      const double side = double(tbe_borrow_side(kept, k.ds));
      auto run = [&](int64_t a, int64_t b) { return std::min(double(a) * double(b), side) * double(kept) * k.ds; };
      k.run_in = run(x[rank - 2], rank >= 3 ? x[rank - 3] : 1);
      k.run_out = run(x[perm[rank - 2]], rank >= 3 ? x[perm[rank - 3]] : 1);
    }
    regroup();
  } else if (TbeTile t; c220(p) && tbe_last_axis_tile(x, perm, k.ds, p, t)) {
    gather.per_repeat *= double(t.reorder_rows) / double(t.rows);
    regroup();
    take_tbe_tile(k, t, p);
  } else {
    // The last axis changes: a gather of every element in UB (per-element offsets; int64 as
    // two 4-byte lanes), on square tiles.
    regroup();
    k.run_in = double(x[rank - 1]) * kept * k.ds;
    k.run_out = double(x[perm[rank - 1]]) * kept * k.ds;
    k.transpose_side = 1;
    // An output row shorter than a 32-byte block (perm [0, 2, 3, 1] of 9 channels) is
    // assembled in UB with the output axes before it: the tile writes that whole slab in one
    // run (a 950PR int16 NCHW->NHWC of 9 channels ran at 6x the measured time with 18-byte runs).
    if (k.run_out < 32) {
      for (size_t i = rank - 1; i-- > 0 && k.run_out < 512;) k.run_out *= double(x[perm[i]]);
      k.run_out = std::min(k.run_out, double(n) * k.ds);
      k.transpose_side = 0;
    }
  }
  k.ub_buffers = 2;
  k.temp_fp32 = k.transpose_side ? 1 : 0;
  k.unique_bytes = 2.0 * n * k.ds;
  return std::make_shared<VecModel>(k, p);
}

namespace {
// LRN (ONNX LRN-13: y = x / (bias + alpha / size * sum of x^2 over `size` neighbouring
// channels)^beta) on the vector unit, in the pooling pattern above with the window along the
// channels: each element is squared, summed over its size-1 neighbours' squares in UB (one Add
// each, as a pool's window), scaled, offset, raised to -beta (exp(beta * ln), Ln costed as
// Exp as in Pow's recipe) and divided into x.  GM traffic is the input read once and the
// output written once (neighbouring channels' rows shared between tiles are neglected, as a
// pool's halo is).
std::shared_ptr<OpModel> make_lrn_model(const OpDesc& op, const Platform& p) {
  VecKernel k = start_kernel(op, p, op.kind);
  if (op.inputs.size() != 1) fail("LRN: expected one input shape, got " + std::to_string(op.inputs.size()));
  const auto& x = op.inputs[0];
  check_shape(x, "LRN input");
  if (x.size() < 3) fail("LRN: the input must be [N, C, D1, ...] (got " + shape_str(x) + ")");
  const int64_t size = attr_int(op, "size", 0);
  if (size <= 0 || size > kMaxPoolWindow)
    fail("LRN: attrs['size'] must be in [1, " + std::to_string(kMaxPoolWindow) + "], got " + std::to_string(size));
  const std::string cd = compute_dtype(op.dtype);
  const bool f32 = cd == "float32";
  auto api = [&](const char* name) { k.elem_prog.push_back({vec_api_cost(name), f32}); };
  api("Mul");
  for (int64_t w = 1; w < size; ++w) api("Add");
  for (const char* a : {"Muls", "Adds", "Exp", "Muls", "Exp", "Div"}) api(a);
  const double n = double(numel(x));
  k.units = numel(x);
  k.unit_elems = 1;
  k.in_bytes = k.ds;
  k.out_bytes = k.ds;
  k.in_streams = 1;
  k.ub_buffers = 3;  // input, output, the running sum of squares
  k.unique_bytes = 2 * n * k.ds;
  fuse_elementwise(k, op, cd, 1.0, n, n, true, "LRN");
  k.flops = n * double(size + 6);
  return std::make_shared<VecModel>(k, p);
}
}  // namespace

std::shared_ptr<OpModel> make_pool_model(const OpDesc& op, const Platform& p) {
  if (op.kind == "LRN") return make_lrn_model(op, p);
  // MaxPool / AveragePool over NCHW with ONNX attributes.  On the vector unit
  // a window is kh*kw - 1 Max (or Add) calls over a tile of outputs whose
  // input rows sit in UB; padding is filled in UB (Duplicate), so GM traffic
  // is the input read once (halo rows shared by adjacent tiles are
  // neglected) plus the output.
  VecKernel k = start_kernel(op, p, op.kind);
  if (op.inputs.size() != 1) fail(op.kind + ": expected one input shape, got " + std::to_string(op.inputs.size()));
  const auto& x = op.inputs[0];
  check_shape(x, op.kind + " input");
  if (x.size() != 4) fail(op.kind + ": only 2-D pooling over NCHW is modelled (input " + shape_str(x) + ")");
  const auto ks = attr_ints(op, "kernel_shape", {});
  if (ks.size() != 2 || ks[0] <= 0 || ks[1] <= 0)
    fail(op.kind + ": attrs['kernel_shape'] must be two positive sizes, got " + shape_str(ks));
  const auto st = attr_ints(op, "strides", {1, 1});
  const auto pads = attr_ints(op, "pads", {0, 0, 0, 0});
  const auto dil = attr_ints(op, "dilations", {1, 1});
  if (st.size() != 2 || st[0] <= 0 || st[1] <= 0) fail(op.kind + ": strides must be two positive values");
  if (pads.size() != 4) fail(op.kind + ": pads must be [top, left, bottom, right]");
  if (dil.size() != 2 || dil[0] <= 0 || dil[1] <= 0) fail(op.kind + ": dilations must be two positive values");
  if (ks[0] * ks[1] > kMaxPoolWindow)
    fail(op.kind + ": kernel_shape " + shape_str(ks) + " has " + std::to_string(ks[0] * ks[1]) +
         " elements, more than the limit of " + std::to_string(kMaxPoolWindow));
  const bool ceil_mode = attr_flag(op, "ceil_mode");
  int64_t out_hw[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t span = x[2 + i] + pads[i] + pads[i + 2] - ((ks[i] - 1) * dil[i] + 1);
    if (span < 0) fail(op.kind + ": the window is larger than the padded input " + shape_str(x));
    out_hw[i] = (ceil_mode ? cdiv(span, st[i]) : span / st[i]) + 1;
  }
  check_fits(p, double(x[0]) * double(x[1]) * double(out_hw[0]) * double(out_hw[1]), k.ds,
             op.kind + " output " + shape_str({x[0], x[1], out_hw[0], out_hw[1]}));
  const int64_t out = x[0] * x[1] * out_hw[0] * out_hw[1];
  const double ratio = double(numel(x)) / double(out);  // input elements per output element
  const std::string cd = compute_dtype(op.dtype);
  const bool avg = op.kind == "AveragePool";
  for (int64_t w = 1; w < ks[0] * ks[1]; ++w) vec_program(avg ? "Add" : "Max", cd, k.elem_prog);
  if (avg) k.elem_prog.push_back({vec_api_cost("Muls"), cd == "float32"});
  k.units = out;
  k.unit_elems = 1;
  k.in_bytes = k.ds * ratio;
  k.out_bytes = k.ds;
  k.in_streams = 1;
  k.ub_buffers = 2 + int(std::ceil(ratio));  // output, accumulator, input rows
  k.unique_bytes = double(numel(x)) * k.ds + double(out) * k.ds;
  fuse_elementwise(k, op, cd, ratio, double(numel(x)), double(out), out == numel(x), "a stride-1 pool");
  k.flops = double(out) * ks[0] * ks[1];
  return std::make_shared<VecModel>(k, p);
}

namespace {
// A strided Slice (attrs "steps", StridedSlice's strides): a step on an outer axis cuts the
// contiguous run to the axes inside it; a step on the last axis reads the rows' whole span
// and picks the kept elements in UB (GatherMask: one pass).
void slice_steps(VecKernel& k, const OpDesc& op, const std::vector<int64_t>& x, const std::vector<int64_t>& out,
                 double& read_elems, int64_t& run_in) {
  const auto steps = attr_ints(op, "steps", {});
  if (steps.empty()) return;
  const size_t rank = x.size();
  if (steps.size() != rank) fail("Slice: steps " + shape_str(steps) + " must have one entry per axis of " + shape_str(x));
  for (size_t j = 0; j < rank; ++j) {
    if (steps[j] < 1) fail("Slice: steps " + shape_str(steps) + ": only positive steps are modelled");
    if (steps[j] > 1 && j + 1 < rank) {
      int64_t in_run = 1;
      for (size_t i = j + 1; i < rank; ++i) in_run *= out[i];
      run_in = std::min(run_in, in_run);
    }
  }
  const int64_t last = steps[rank - 1];
  if (last > 1) {
    read_elems = std::min(double(numel(x)), double(numel(out)) * double(last));
    run_in = std::min(x[rank - 1], out[rank - 1] * last);
    k.elem_prog.push_back({vec_api_cost("Adds"), false});
  }
}

// Elements of `s` from axis `from` on (all of them for from <= 0).
int64_t inner_elems(const std::vector<int64_t>& s, int64_t from) {
  int64_t n = 1;
  for (size_t i = size_t(std::max<int64_t>(from, 0)); i < s.size(); ++i) n *= s[i];
  return n;
}

// A Concat along `axis` of op.inputs (of the output's rank) into `out`: the elements read and the
// shortest contiguous input run.
void concat_reads(const OpDesc& op, const std::vector<int64_t>& out, int64_t axis, double& read_elems,
                  int64_t& run_in) {
  read_elems = 0;
  int64_t along = 0;
  run_in = numel(out);
  for (const auto& s : op.inputs) {
    read_elems += double(numel(s));
    along += s[axis];
    run_in = std::min(run_in, inner_elems(s, axis));
  }
  if (along != out[axis])
    fail("Concat: the inputs add up to " + std::to_string(along) + " along axis " + std::to_string(axis) +
         ", output_shape has " + std::to_string(out[axis]));
}

// A GatherElements of `x` along `axis` into `out`: the elements and index bytes read, the input's
// contiguous runs and the gathers in UB.
void gather_elements_reads(VecKernel& k, const std::vector<int64_t>& x, const std::vector<int64_t>& out,
                           int64_t axis, const Platform& p, double& read_elems, double& index_bytes,
                           int64_t& run_in) {
  const int64_t n_out = numel(out);
  // 910B's GatherElementsV2 (Ascend C, hicann/ops-nn index/gather_elements_v2/op_host/
  // gather_elements_v2_def.cpp) takes int32 indices only (aclnnGather casts int64 ones to int32
  // in a kernel of its own first, op_host/op_api/aclnn_gather.cpp CalGather): 4 bytes an index.
  index_bytes = double(n_out) * (c220(p) ? 4 : 8);
  const int64_t slab = inner_elems(x, axis);  // input elements under one index of the axes before `axis`
  // Each output slice reads its slab once and gathers in UB (per-element offsets: Gather);
  // scattered 32-byte reads were 4x the measured time of a 950PR gather along an 8 KB last
  // axis.  A slab UB cannot hold (with double-buffered index and output tiles) is read in
  // column chunks of the axes after `axis`, all of `axis` at once: shorter runs, still once.
  read_elems = double(n_out / std::max<int64_t>(1, inner_elems(out, axis))) * double(slab);
  run_in = slab;
  if (double(slab) * k.ds * 4 > p.ub) {
    const int64_t cols = std::max<int64_t>(1, int64_t(p.ub / (4.0 * k.ds * double(x[axis]))));
    run_in = std::max<int64_t>(std::max<int64_t>(1, 32 / k.ds), std::min(inner_elems(x, axis + 1), cols));
  }
  for (int i = 0; i < std::max(1, k.ds / 4); ++i) k.elem_prog.push_back({vec_api_cost("Gather"), false});
}

// A Resize's vector work in UB: nearest, one broadcast copy; linear, three lerps (a Mul and an Add each).
void resize_prog(VecKernel& k, const std::string& mode) {
  if (mode == "nearest") {
    k.elem_prog.push_back({vec_api_cost("Adds"), false});
  } else if (mode == "linear") {
    for (auto* a : {"Mul", "Add", "Mul", "Add", "Mul", "Add"}) k.elem_prog.push_back({vec_api_cost(a), false});
  } else {
    fail("Resize: mode '" + mode + "' is not modelled (nearest and linear are)");
  }
}
}  // namespace

std::shared_ptr<OpModel> make_movement_model(const OpDesc& op, const Platform& p) {
  // Data movement (Concat, Split, Slice, Gather, Pad, Expand, Tile, Resize,
  // DepthToSpace): memory-bound kernels of the vector pattern above
  // (docs/ascend_model.md §2.3: [A] 多核Tiling.md, DoubleBuffer.md).  Each core
  // copies its share of the output through UB (CopyIn -> CopyOut); what differs
  // between ops is how many bytes are read per byte written and the contiguous
  // GM runs: the burst charging of common.hpp (§2.3 bandwidth rules, [A]
  // 尽量一次搬运较大的数据块.md, GM地址尽量512B对齐.md) makes short runs, e.g.
  // a Gather of short rows or a channel interleave, expensive.
  // Vector work only where data is rearranged inside UB: broadcast copies
  // (Expand, Tile, nearest Resize: one scalar-operand pass) and bilinear
  // interpolation (three lerps, a Mul and an Add each).  No FLOPs are counted.
  VecKernel k = start_kernel(op, p, op.kind);
  const std::string& kd = op.kind;
  if (op.inputs.empty()) fail(kd + ": needs the shape of its data input(s)");
  for (size_t i = 0; i < op.inputs.size(); ++i) check_shape(op.inputs[i], kd + " input " + std::to_string(i));
  const auto out = attr_ints(op, "output_shape", {});
  if (out.empty())
    fail(kd + ": attrs['output_shape'] must give the output shape (the first output's, for Split)");
  check_shape(out, kd + " output_shape");
  const size_t rank = out.size();
  const auto& x = op.inputs[0];
  const int64_t axis = norm_axis(attr_int(op, "axis", int64_t(rank) - 1), rank, kd);
  auto need_rank = [&](const std::vector<int64_t>& s, const std::string& what) {
    if (s.size() != rank)
      fail(kd + ": " + what + " " + shape_str(s) + " must have the rank of the output " + shape_str(out));
  };
  const int64_t n_out = numel(out);
  double read_elems = double(numel(x)), index_bytes = 0;
  int64_t run_in = 0, run_out = 0;  // contiguous GM runs in elements (0: the whole tile)
  int64_t written = n_out;
  if (kd == "Concat") {
    for (const auto& s : op.inputs) need_rank(s, "input");
    concat_reads(op, out, axis, read_elems, run_in);
    run_out = run_in;
  } else if (kd == "Split") {
    need_rank(x, "input");
    written = numel(x);
    run_in = run_out = inner_elems(out, axis);
  } else if (kd == "Slice" || kd == "Pad") {
    need_rank(x, "input");
    run_in = std::min(inner_elems(x, axis), inner_elems(out, axis));
    if (kd == "Slice") {
      read_elems = double(n_out);  // only the kept elements are read
      slice_steps(k, op, x, out, read_elems, run_in);
    }
  } else if (kd == "Gather") {
    // data [.., V, rows..] gathered along `axis` by op.inputs[1] (indices, int64).
    if (op.inputs.size() < 2) fail("Gather: give the data and the indices shapes");
    const int64_t row = inner_elems(x, axis + 1);
    read_elems = double(n_out);
    index_bytes = double(numel(op.inputs[1])) * 8;
    run_in = row;
  } else if (kd == "GatherElements") {
    gather_elements_reads(k, x, out, axis, p, read_elems, index_bytes, run_in);
  } else if (kd == "Expand" || kd == "Tile") {
    run_in = inner_elems(x, std::max<int64_t>(0, int64_t(x.size()) - 1));
    k.elem_prog.push_back({vec_api_cost("Adds"), false});  // broadcast copy in UB
  } else if (kd == "Resize") {
    need_rank(x, "input");
    const auto mode = attr_strs(op, "mode");
    const std::string m = mode.empty() ? "nearest" : mode[0];
    run_in = x[rank - 1];
    resize_prog(k, m);
  } else if (kd == "DepthToSpace" || kd == "SpaceToDepth") {
    const int64_t bs = attr_int(op, "blocksize", 0);
    if (bs < 1) fail(kd + ": attrs['blocksize'] must be >= 1");
    run_in = run_out = bs;  // channels interleave into rows of `blocksize` elements
  } else {
    fail("internal: no movement model for " + kd);
  }
  k.units = written;
  k.unit_elems = 1;
  k.in_bytes = (read_elems * k.ds + index_bytes) / double(written);
  k.out_bytes = k.ds;
  k.run_in = double(run_in) * k.ds;
  k.run_out = double(run_out) * k.ds;
  k.in_streams = 1;
  k.ub_buffers = 2;
  k.unique_bytes = read_elems * k.ds + index_bytes + double(written) * k.ds;
  k.flops = 0;
  return std::make_shared<VecModel>(k, p);
}

}  // namespace aoe::ascend::detail
