"""GDAT benchmarks (issue 13): run with `python bench/bench_gdat.py [--repeat N]`.

Median wall time of `tune_gradients` (the exact DP plus every baseline) and of the DP alone on synthetic
timelines of 161 gradients (ResNet-50's count) and 1,000 gradients, without a bucket limit
and with HCCL's 8 segments, on the shipped Ascend 910B cluster (one server, 8 ranks).
Targets: 1,000 gradients <= 1 s; 161 in milliseconds.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import aoe_native
from aoe_native.gradients.buckets import optimal_partition


def timeline(n: int, seed: int) -> list[tuple[str, int, float]]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1_000, 8 << 20, n)
    ready = np.cumsum(rng.uniform(5.0, 200.0, n))
    return [(f"g{i}", int(s), float(r)) for i, (s, r) in enumerate(zip(sizes, ready))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1 (times are medians of the repeats)")
    cluster = aoe_native.Cluster.ascend910b()
    print(f"{'gradients':>9} {'max_buckets':>11} {'all, s':>8} {'DP only, s':>10} {'buckets':>7} {'gain vs DDP':>11}")
    for n in (161, 1000):
        for limit in (None, 8):
            times, dp_times, plan = [], [], None
            for r in range(args.repeat):
                grads = timeline(n, r)
                t0 = time.perf_counter()
                plan = aoe_native.tune_gradients(grads, cluster, max_buckets=limit)
                times.append(time.perf_counter() - t0)
                sizes = np.array([g[1] for g in grads])
                ready = np.array([g[2] for g in grads])
                t0 = time.perf_counter()
                optimal_partition(sizes, ready, cluster, limit)
                dp_times.append(time.perf_counter() - t0)
            print(f"{n:>9} {str(limit):>11} {statistics.median(times):>8.4f} {statistics.median(dp_times):>10.4f} "
                  f"{len(plan.buckets):>7} {plan.gain['ddp_25mb'] * 100:>10.2f}%")


if __name__ == "__main__":
    main()
