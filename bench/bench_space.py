"""Search-space construction time: aoe_native.SearchSpace vs Kernel Tuner's Searchspace.

The space is CLBlast's Xgemm tuning space (the parameter set and the seven
restrictions of shared/datasets' GEMM file, see shared/datasets/README.md),
widened to KWG in {16, 32}, KWI in {2, 8}, STRM, STRN in {0, 1}: 14 parameters,
1,327,104 Cartesian points, 241,600 valid configurations.  Both libraries get
the same restriction strings; Kernel Tuner uses its default constraint solver
(python-constraint2, "PythonConstraint").  Target: at least 50x faster.

Usage:  python bench/bench_space.py [--runs 5] [--kt-runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import aoe_native

PARAMS = {
    "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [16, 32],
    "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
    "KWI": [2, 8], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8],
    "STRM": [0, 1], "STRN": [0, 1], "SA": [0, 1], "SB": [0, 1],
}
RESTRICTIONS = [
    "KWG % KWI == 0",
    "MWG % (MDIMC * VWM) == 0",
    "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0",
    "NWG % (NDIMB * VWN) == 0",
    "KWG % ((MDIMC * NDIMC) / MDIMA) == 0",
    "KWG % ((MDIMC * NDIMC) / NDIMB) == 0",
]
CARTESIAN = 1_327_104
VALID = 241_600


def time_ours() -> float:
    t0 = time.perf_counter()
    space = aoe_native.SearchSpace(PARAMS, RESTRICTIONS)
    dt = time.perf_counter() - t0
    assert len(space) == VALID, f"aoe_native built {len(space)} configurations, expected {VALID}"
    return dt


def time_kernel_tuner() -> float:
    from kernel_tuner.searchspace import Searchspace  # bench-only dependency

    t0 = time.perf_counter()
    space = Searchspace(PARAMS, RESTRICTIONS, max_threads=1024)
    dt = time.perf_counter() - t0
    assert space.size == VALID, f"Kernel Tuner built {space.size} configurations, expected {VALID}"
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="timed constructions with aoe_native")
    ap.add_argument("--kt-runs", type=int, default=3, help="timed constructions with Kernel Tuner")
    args = ap.parse_args(argv)

    cartesian = 1
    for values in PARAMS.values():
        cartesian *= len(values)
    assert cartesian == CARTESIAN and len(PARAMS) == 14 and len(RESTRICTIONS) == 7

    time_ours()  # warm-up (page faults, allocator)
    ours = [time_ours() for _ in range(args.runs)]
    print(f"space: {len(PARAMS)} parameters, {len(RESTRICTIONS)} restrictions, "
          f"{CARTESIAN:,} Cartesian points, {VALID:,} valid")
    print(f"aoe_native.SearchSpace     median {statistics.median(ours) * 1e3:9.1f} ms  "
          f"(runs: {', '.join(f'{t * 1e3:.1f}' for t in ours)})")
    try:
        import kernel_tuner  # noqa: F401
    except ImportError:
        print("Kernel Tuner not installed (pip install .[bench]): no comparison")
        return 0
    kt = [time_kernel_tuner() for _ in range(args.kt_runs)]
    print(f"kernel_tuner Searchspace   median {statistics.median(kt) * 1e3:9.1f} ms  "
          f"(runs: {', '.join(f'{t * 1e3:.1f}' for t in kt)})")
    ratio = statistics.median(kt) / statistics.median(ours)
    print(f"ratio (Kernel Tuner / aoe_native): {ratio:.1f}x  (target >= 50x: {'met' if ratio >= 50 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
