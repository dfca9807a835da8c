"""How the surrogate-guided search's model time grows with the space (issue 15).

Six parameters in every space (so the model's width is the same) with more values each,
from ~10^3 to 10^6 configurations; a native synthetic objective (microseconds), so the
wall time is the strategy's own.  Prints the median time per evaluation per size and
the ratio to the 10^4 space.

    python bench/bench_forest_scaling.py [--evals 400] [--repeats 3] [--strategy forest[:gp=1]]
"""
from __future__ import annotations

import argparse
import statistics
import time

import aoe_native as an
from bench_strategies import parse_ours

SIZES = {"1e3": [3, 3, 3, 3, 4, 4], "1e4": [5, 5, 5, 5, 4, 4], "1e5": [7, 7, 7, 7, 6, 6], "1e6": [10] * 6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--strategy", default="forest", help="name or name:key=value,... (strategy options)")
    args = ap.parse_args()
    name, options = parse_ours(args.strategy)
    per_eval = {}
    for label, counts in SIZES.items():
        space = an.SearchSpace({f"p{i}": list(range(1, n + 1)) for i, n in enumerate(counts)})
        times = []
        for seed in range(args.repeats):
            t0 = time.perf_counter()
            r = an.tune(space, an.SyntheticObjective(seed=seed), strategy=name, max_evals=args.evals, seed=seed,
                        strategy_options=options or None)
            times.append((time.perf_counter() - t0) / r.evaluations)
        per_eval[label] = statistics.median(times)
        print(f"{label}: {len(space):>9,} configurations, {per_eval[label] * 1e3:.3f} ms per evaluation "
              f"(median of {args.repeats}, {args.evals} evaluations)", flush=True)
    for label, t in per_eval.items():
        print(f"  {label} / 1e4: {t / per_eval['1e4']:.2f}x")


if __name__ == "__main__":
    main()
