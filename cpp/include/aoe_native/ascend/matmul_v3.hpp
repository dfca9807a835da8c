// CANN's MatMulV3 default ("basic") tiling heuristic on Atlas A2 (910B-class
// SoCs: L0C -> GM FixPipe, no L1 -> BT bf16), restated from hicann/ops-nn @
// e5c3fa93 matmul/mat_mul_v3/op_host/op_tiling/matmul_v3_base_tiling.cpp
// (cited as [V3] with the function name next to each rule), and checked
// against the 910B goldens of its unit test
// (tests/test_matmul_v3_default.py).  It is the cost model's MatMul baseline:
// what CANN runs when the knowledge bank has no entry for the shape.
#pragma once

#include <cstdint>
#include <string>

namespace aoe::ascend {

// One MatMul as MatMulV3's tiler sees it (after the batch is folded away).
struct MatMulV3Case {
  int64_t m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false, bias = false;
  std::string dtype = "float16";  // float16, bfloat16 or float32 (A, B and C alike)
  bool b_nz = false;              // B stored FRACTAL_NZ (a "weight NZ" MatMul)
};

// The hardware numbers the tiler reads (compile info), in bytes / cores.
struct MatMulV3Hw {
  int64_t aic = 24, l1 = 524288, l0a = 65536, l0b = 65536, l0c = 131072, ub = 196608, l2 = 201326592, bt = 1024;
};

// TCubeTiling fields MatMulV3 sets plus its L2 tiling and template code (the
// 23 fields of its knowledge-bank record, MatMulV3TunnerTiling).
struct MatMulV3Tiling {
  int64_t usedCoreNum = 0, singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
  int64_t baseM = 0, baseN = 0, baseK = 0, depthA1 = 0, depthB1 = 0, stepM = 1, stepN = 1, stepKa = 0, stepKb = 0;
  int64_t iterateOrder = 0, dbL0A = 2, dbL0B = 2, dbL0C = 1;
  int64_t l2MTileCnt = 1, l2NTileCnt = 1, l2MTileBlock = 1, l2NTileBlock = 1, l2IterateOrder = 0;
  // Template code, decimal digits: units split-core (0 base, 2 single-core
  // split-K, 3 deterministic multi-core split-K, 5 NKM split-K, 6 split-K GM->L1),
  // tens full load (1 AL1, 2 BL1), thousands FixPipe option.
  int64_t tilingEnable = 0;
  // False where CANN takes a path this restatement does not reproduce (the
  // closed TBE "incre" tiling for M <= 128 with B transposed, the single-core
  // split-K + AL1 full-load template); `note` names it.
  bool exact = true;
  std::string note;
};

// CANN MatMulV3's default tiling; std::invalid_argument for bad input.
MatMulV3Tiling matmul_v3_default_tiling(const MatMulV3Case& c, const MatMulV3Hw& hw);

}  // namespace aoe::ascend
