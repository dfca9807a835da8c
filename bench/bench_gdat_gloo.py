"""GDAT on real PyTorch data parallelism (issue 13, item 7): does the timeline model rank
gradient partitions as they rank when measured?  Run with `python bench/bench_gdat_gloo.py`
(needs torch; 2 processes, gloo on loopback).

1. Calibrates α and the bandwidth of a 2-rank gloo all-reduce on this machine
   (Cluster.calibrate over 4 KiB .. 16 MiB messages, medians) and prints the fit quality.
2. Measures the model's gradient timeline (post-accumulate-grad hooks, no communication).
3. For the tuned plan, every baseline and a few random contiguous partitions, measures the
   step time (backward + waiting for the last bucket) with the plan applied through
   post-accumulate-grad hooks (aoe_native.torch_ddp.PlannedAllReduce), medians over steps.
4. Prints predicted (timeline model; and the no-overlap bound: backward, then every
   all-reduce) and measured times, and Spearman's ρ of each prediction with the measurement.

On CPU the all-reduce runs on the same cores as backward (gloo's threads, 2 processes on
2 cores), so communication slows compute and compute slows communication; the timeline
model assumes they overlap for free.  The check is of the ranking, not of the times.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from aoe_native import Cluster, tune_gradients
from aoe_native.gradients.buckets import simulate
from aoe_native.torch_ddp import PlannedAllReduce, measure_timeline


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    widths = [256, 1024, 1024, 512, 1024, 256, 512, 128, 10]
    layers: list[torch.nn.Module] = []
    for a, b in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's ρ with average ranks for ties (one formula: not worth a scipy dependency)."""
    def ranks(x):
        x = np.asarray(x)
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for v in np.unique(x):
            r[x == v] = r[x == v].mean()
        return r
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def calibrate(reps: int) -> list[tuple[int, float]]:
    sizes = [1 << k for k in range(12, 25, 2)]
    ts: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(reps):  # round robin over sizes, as the steps below
        for n in sizes:
            t = torch.ones(n // 4)
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            ts[n].append((time.perf_counter() - t0) * 1e6)
    return [(n, statistics.median(ts[n])) for n in sizes]


def worker(rank: int, port: int, steps: int, reps: int, n_random: int) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    pairs = calibrate(reps)
    m = model()
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def loss():
        return torch.nn.functional.cross_entropy(m(x), y)

    box = [(measure_timeline(m, loss, steps=steps), pairs) if rank == 0 else None]
    dist.broadcast_object_list(box)  # every rank plans from rank 0's timeline and calibration
    timeline, pairs = box[0]
    fit = Cluster.calibrate(pairs, ranks=2, source="gloo on loopback, this machine")
    plan = tune_gradients(timeline, fit.cluster)
    parts = {"tuned": plan.ends, **plan.baseline_buckets}
    rng = np.random.default_rng(0)
    L = len(plan.names)
    for k in range(n_random):
        cuts = sorted(rng.choice(np.arange(1, L), size=rng.integers(1, L - 1), replace=False).tolist())
        parts[f"random_{k}"] = cuts + [L]
    unique: dict[tuple[int, ...], str] = {}
    for name, ends in parts.items():
        unique.setdefault(tuple(ends), name)
    sizes, ready = np.array(plan.gradient_bytes), np.array(plan.gradient_ready_us)
    times: dict[tuple[int, ...], list[float]] = {e: [] for e in unique}
    for s in range(steps + 1):  # round robin, so that load from elsewhere hits every partition alike
        for ends in unique:
            buckets = [plan.names[a:b] for a, b in zip((0,) + ends[:-1], ends)]
            sync = PlannedAllReduce(m, dataclasses.replace(plan, buckets=buckets))
            m.zero_grad(set_to_none=True)
            out = loss()
            dist.barrier()
            t0 = time.perf_counter()
            out.backward()
            sync.finish()
            if s:
                times[ends].append((time.perf_counter() - t0) * 1e6)
            sync.remove()
    # besides the timeline model (free overlap), the opposite bound: no overlap at all, the
    # all-reduces after backward (what full contention for the cores would give)
    rows = [(name, len(ends), float(simulate(list(ends), sizes, ready, fit.cluster)[1][-1]),
             statistics.median(times[ends]),
             float(ready[-1] + sum(fit.cluster.allreduce_us(float(sizes[a:b].sum()))
                                   for a, b in zip((0,) + ends[:-1], ends))))
            for ends, name in unique.items()]
    if rank == 0:
        print(f"gloo all-reduce, 2 ranks: alpha {fit.alpha_us:.1f} us, {fit.gbps:.3f} GB/s, R^2 {fit.r2:.4f}, "
              f"max relative error {fit.max_rel_error * 100:.1f}% over {fit.n_points} sizes")
        print(f"timeline: {L} gradients, {sum(plan.gradient_bytes) / 1e6:.1f} MB, backward "
              f"{plan.backward_us:.0f} us (median of {steps} steps, no communication)")
        print(f"{'partition':<15} {'buckets':>7} {'predicted us':>12} {'no overlap us':>13} {'measured us':>12}")
        for r in sorted(rows, key=lambda r: r[3]):
            print(f"{r[0]:<15} {r[1]:>7} {r[2]:>12.0f} {r[4]:>13.0f} {r[3]:>12.0f}")
        measured = [r[3] for r in rows]
        print(f"Spearman rho vs measured, {len(rows)} partitions: timeline model "
              f"{spearman([r[2] for r in rows], measured):.3f}, no-overlap bound "
              f"{spearman([r[4] for r in rows], measured):.3f}")
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--random", type=int, default=6, help="random contiguous partitions to add")
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(worker, args=(port, args.steps, args.reps, args.random), nprocs=2)


if __name__ == "__main__":
    main()
