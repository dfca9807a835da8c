"""OPAT benchmarks (issue 3, item 8): run with `python bench/bench_opat.py [--quick]`.

1. ResNet-50 end to end with the `aoe` command (fresh bank; target <= 10 s on 2 cores),
   then a second run served from the bank (target <= 2 s): wall-clock medians, side by side.
2. Model improvement for every zoo model (predicted by the cost model).
3. Per-task gap to the exhaustive optimum of its space (ResNet-50 tasks).
4. Warm start from nearest shapes: evaluations needed to come within 1% of the best tiling,
   cold versus seeded from a bank tuned on neighbouring shapes (BERT seq 128 -> seq 96/160).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import aoe_native
from aoe_native import zoo
from aoe_native.bank.store import Bank
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition
from aoe_native.jobs.evaluator import CostModelEvaluator

SOC = "Ascend910B3"


def _aoe(model: str, bank: str, cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "aoe_native.cli", "-f", "5", "-j", "2", "-m", model, "--soc_version", SOC,
                    "--bank", bank, "--progress_bar", "off"], cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t


def bench_resnet_cli(tmp: str, reps: int) -> None:
    model = os.path.join(tmp, "resnet50.onnx")
    zoo.save("resnet50", model)
    first, second = [], []
    for i in range(reps):
        bank = os.path.join(tmp, f"bank{i}")
        first.append(_aoe(model, bank, tmp))
        second.append(_aoe(model, bank, tmp))
    print(f"[1] ResNet-50 `aoe` end to end, {os.cpu_count()} cores, {reps} reps (median, min-max):")
    print(f"    first run (fresh bank):   {statistics.median(first):6.2f} s  ({min(first):.2f}-{max(first):.2f})"
          f"   target <= 10 s")
    print(f"    second run (from bank):   {statistics.median(second):6.2f} s  ({min(second):.2f}-{max(second):.2f})"
          f"   target <= 2 s")
    print(f"    ratio first/second: {statistics.median(first) / statistics.median(second):.1f}x")


def bench_zoo(tmp: str) -> None:
    print("[2] zoo models (fresh bank each; default budget):")
    print(f"    {'model':<11} {'kernels':>7} {'tasks':>5} {'unsup.':>6} {'before ms':>10} {'after ms':>9} "
          f"{'improved':>9} {'time s':>7}")
    for name in sorted(zoo.MODELS):
        t = time.perf_counter()
        r = aoe_native.tune_model(zoo.build(name), soc_version=SOC, bank=os.path.join(tmp, "zoo-" + name))
        el = time.perf_counter() - t
        unsup = sum(u["count"] for u in r.unsupported)
        print(f"    {name:<11} {len(r.kernels):>7} {len(r.tasks):>5} {unsup:>6} {r.baseline_ms:>10.4f} "
              f"{r.tuned_ms:>9.4f} {r.improvement * 100:>8.2f}% {el:>7.2f}")


def bench_gap(tmp: str, max_space: int) -> None:
    r = aoe_native.tune_model(zoo.build("resnet50"), soc_version=SOC, bank=os.path.join(tmp, "gap"))
    gaps, skipped = [], 0
    for t in r.tasks:
        if t.space_size > max_space or t.space_size == 0:
            skipped += 1
            continue
        ex = aoe_native.tune_op(t.op_type, t.inputs, dtype=t.dtype, soc_version=SOC, attrs=t.attrs or None,
                                strategy="exhaustive")
        gaps.append(t.time_us / ex.time_us - 1.0)
    g = np.array(gaps)
    print(f"[3] ResNet-50 per-task gap to the exhaustive optimum ({len(g)} tasks, {skipped} with spaces "
          f"> {max_space} skipped):")
    if len(g):
        print(f"    median {np.median(g) * 100:.2f}%, mean {g.mean() * 100:.2f}%, max {g.max() * 100:.2f}%, "
              f"at optimum {int((g <= 1e-9).sum())}/{len(g)}")


def _evals_to_within(trace: list[float], target: float) -> int:
    for i, v in enumerate(trace):
        if v <= target:
            return i + 1
    return len(trace) + 1


def bench_warm_start(tmp: str, budget: int) -> None:
    bank_root = os.path.join(tmp, "warm")
    aoe_native.tune_model(zoo.bert_base(seq=128), soc_version=SOC, bank=bank_root)
    bank = Bank.open(SOC, bank_root)
    evaluator = CostModelEvaluator(SOC)
    ratios, cold_n, warm_n, failures, final = [], [], [], [], []
    for seq in (96, 160):
        p = partition(load_graph(zoo.bert_base(seq=seq)), aoe_native.supported_ops(), ub_bytes=192 * 1024)
        for task in p.tasks:
            warm = [e["tiling"] for e in bank.nearest(task.op_type, task.inputs, task.dtype, task.attrs)]
            if not warm:
                continue
            try:
                cold = evaluator.tune(task, budget, 1)
                hot = evaluator.tune(task, budget, 1, initial=warm)
            except Exception as e:  # a cost-model error on one shape: report, go on
                failures.append(f"{task.op_type} {task.inputs}: {e}")
                continue
            target = min(cold.time_us, hot.time_us) * 1.01
            c, w = _evals_to_within(list(cold.trace), target), _evals_to_within(list(hot.trace), target)
            final.append(hot.time_us / cold.time_us)
            cold_n.append(c)
            warm_n.append(w)
            ratios.append(c / w)
    print(f"[4] warm start (BERT seq 128 bank -> seq 96/160 tasks, {len(ratios)} tasks, budget {budget}):")
    if ratios:
        print(f"    evaluations to within 1% of the best: cold median {statistics.median(cold_n)}, "
              f"warm median {statistics.median(warm_n)}; speed-up median {statistics.median(ratios):.1f}x, "
              f"geomean {float(np.exp(np.mean(np.log(ratios)))):.1f}x")
        print(f"    best time after {budget} evaluations, warm / cold: geomean "
              f"{float(np.exp(np.mean(np.log(final)))):.4f}, worst {max(final):.4f}")
    for f in failures:
        print(f"    tuning failed: {f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller budgets")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_resnet_cli(tmp, 1 if args.quick else 3)
        bench_zoo(tmp)
        bench_gap(tmp, 20000 if args.quick else 200000)
        bench_warm_start(tmp, 64 if args.quick else 192)


if __name__ == "__main__":
    main()
