"""Subgraph tuning (SGAT) benchmarks: `python bench/bench_sgat.py [--models ...] [--soc Ascend910B3]`.

1. Model time four ways, for the zoo models and the real exports of tests/data/exports (fresh banks,
   seed 0, the cost model): the fixed fusion rules with default tilings; operator tuning only
   (OPAT on the fixed fusion); subgraph tuning only (SGAT: fusion, split policies and tilings
   searched together); subgraph then operator tuning (OPAT on SGAT's fused kernels).
2. Wall time of SGAT from a cold bank and of a rerun served from the bank (targets on 2 cores:
   <= 60 s and <= 5 s for ResNet-50 and BERT-base), the kernel counts, the distinct subgraphs, how
   many of them changed (faster) and how many are fused differently from the fixed rules.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time
import warnings

import aoe_native as an
from aoe_native import zoo
from aoe_native.graph.onnx import load_graph

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTS = sorted(glob.glob(os.path.join(HERE, "..", "tests", "data", "exports", "*.onnx")))


def _pct(before: float, after: float) -> str:
    return f"{an.improvement(before, after) * 100:6.2f}%"


def run(name: str, source, soc: str, parallel: int, level: str, nonhomo: bool) -> None:
    graph = load_graph(source)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opat = an.tune_model(graph, soc, bank=os.path.join(tmp, "opat"), parallel=parallel)
        t = time.perf_counter()
        sg = an.tune_subgraphs(graph, soc, bank=os.path.join(tmp, "sgat"), parallel=parallel,
                               optimization_level=level, nonhomo_split=nonhomo)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        again = an.tune_subgraphs(graph, soc, bank=os.path.join(tmp, "sgat"), parallel=parallel,
                                  optimization_level=level, nonhomo_split=nonhomo)
        warm = time.perf_counter() - t
        both = an.tune_model(graph, soc, bank=os.path.join(tmp, "sgat"), parallel=parallel, kernels=sg.partition)
    assert abs(again.tuned_ms - sg.tuned_ms) < 1e-9
    changed = sum(1 for s in sg.subgraphs if s.changed)
    fused = sum(1 for s in sg.subgraphs if s.fusion_changed)
    print(f"{name:24s} {sg.baseline_ms:9.4f} {opat.tuned_ms:9.4f} {sg.tuned_ms:9.4f} {both.tuned_ms:9.4f}  "
          f"{_pct(sg.baseline_ms, opat.tuned_ms)} {_pct(sg.baseline_ms, sg.tuned_ms)} "
          f"{_pct(sg.baseline_ms, both.tuned_ms)} {_pct(opat.tuned_ms, both.tuned_ms)}  "
          f"{sg.baseline_kernels:4d}->{len(sg.kernels):<4d} {len(sg.subgraphs):4d} {changed:4d} {fused:4d}  "
          f"{cold:6.1f} {warm:5.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", help="zoo names or ONNX paths (default: the zoo and the exports)")
    ap.add_argument("--soc", default="Ascend910B3")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--level", default="O2", choices=["O1", "O2"])
    ap.add_argument("--nonhomo", action="store_true")
    args = ap.parse_args(argv)
    models = args.models or sorted(zoo.MODELS) + EXPORTS
    print(f"SoC {args.soc}, level {args.level}, nonhomo_split {args.nonhomo}, parallel {args.parallel}; "
          "model time in ms (cost model), improvement over the fixed rules with default tilings")
    print(f"{'model':24s} {'fixed':>9s} {'OPAT':>9s} {'SGAT':>9s} {'SGAT+OPAT':>9s}  {'OPAT':>7s} {'SGAT':>7s} "
          f"{'S+O':>7s} {'S+O/OPAT':>8s}  kernels   subg chgd fusd  cold_s warm_s")
    for m in models:
        source = zoo.build(m) if m in zoo.MODELS else m
        run(os.path.basename(m), source, args.soc, args.parallel, args.level, args.nonhomo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
