"""Engine overhead: evaluations per second of the tuning loop.

* native objective (aoe_native.SyntheticObjective: the whole run stays in C++,
  without the GIL), on one core; target > 1 million evaluations/s for the
  engine itself (strategy "random": the loop, the no-duplicate record, the
  history), and reported for every other strategy as well;
* a trivial Python callable ``f(config) -> float`` (one call per evaluation,
  with a dict built per configuration);
* the same trivial function as a BatchObjective (numpy rows in, array out).

The space is the widened CLBlast GEMM space of bench_space.py (241,600 valid
configurations).  Reports the median of several runs.

Usage:  python bench/bench_overhead.py [--evals 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import aoe_native
from bench_space import PARAMS, RESTRICTIONS


def rate(space, objective, strategy: str, evals: int, runs: int) -> float:
    rates = []
    for seed in range(runs):
        t0 = time.perf_counter()
        res = aoe_native.tune(space, objective, strategy=strategy, max_evals=evals, seed=seed)
        dt = time.perf_counter() - t0
        assert res.evaluations == evals, (strategy, res.evaluations)
        rates.append(evals / dt)
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evals", type=int, default=200_000, help="evaluations per native run")
    ap.add_argument("--py-evals", type=int, default=20_000, help="evaluations per Python-callable run")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)

    space = aoe_native.SearchSpace(PARAMS, RESTRICTIONS)
    native = aoe_native.SyntheticObjective(seed=1)
    print(f"space: {len(space):,} valid configurations, {len(space.param_names)} parameters; "
          f"median of {args.runs} runs")
    print(f"{'objective':28s}{'strategy':12s}{'evaluations/s':>16s}")
    engine = rate(space, native, "random", args.evals, args.runs)
    print(f"{'native (SyntheticObjective)':28s}{'random':12s}{engine:>16,.0f}"
          f"   target > 1,000,000: {'met' if engine > 1e6 else 'NOT met'}")
    for s in [n for n in aoe_native.strategies() if n not in ("random",)]:
        if s in ("forest", "auto"):
            n = min(args.evals, 5000)
        else:
            n = args.evals if s in ("exhaustive", "local", "annealing") else max(args.evals // 10, 1000)
        r = rate(space, native, s, n, args.runs)
        print(f"{'native (SyntheticObjective)':28s}{s:12s}{r:>16,.0f}"
              f"   ({n:,} evaluations per run; {1e6 / r:,.1f} us per evaluation)")

    def trivial(config: dict) -> float:
        return float(config["MWG"] + config["NWG"])

    def trivial_batch(rows: np.ndarray) -> np.ndarray:
        return (rows[:, 0] + rows[:, 1]).astype(float)

    py = rate(space, trivial, "random", args.py_evals, args.runs)
    print(f"{'Python callable':28s}{'random':12s}{py:>16,.0f}")
    batch = rate(space, aoe_native.BatchObjective(trivial_batch, max_batch=1024), "random", args.evals, args.runs)
    print(f"{'Python BatchObjective(1024)':28s}{'random':12s}{batch:>16,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
