"""Two builds of the core side by side: estimate throughput and whether they estimate alike.

For a refactor that must keep the estimates (and the tuner's speed): copy the installed package
before the change (cp -r .../site-packages/aoe_native OLD/), rebuild, then compare OLD with the new
install.  Each repetition runs one subprocess per build, in alternating order, so a change of load
on a shared machine hits both alike; the figure to read is the median of the paired new/old rate
ratios.  Each case times estimate_batch over its whole tiling space (best of 3 passes per process).
--identity instead hashes, per case, the model's space (names, values, restrictions, pruning,
baselines) and its estimates of a sample of the space, and lists the cases that differ.

Run: python bench/bench_ab_builds.py OLD_DIR NEW_DIR [--pairs 20] [--identity]
     (a DIR holds an aoe_native package: a copy, or a venv's site-packages)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Callable

B2, B3, P = "Ascend910B2", "Ascend910B3", "Ascend950PR"
WQ8 = {"input_dtypes": ["float16", "int8", "float16"]}
GROUPS = {"group_list": [256, 512, 768, 1024, 1280, 1536, 1792, 2048]}
# (label, op, inputs, dtype, soc, attrs, check restrictions natively in the throughput run)
CASES = [
    ("MatMul 4096^3 910B3", "MatMul", [[4096, 4096], [4096, 4096]], "float16", B3, {}, False),
    ("same, with native check", "MatMul", [[4096, 4096], [4096, 4096]], "float16", B3, {}, True),
    ("MatMul 1000x3000x700 950PR", "MatMul", [[1000, 3000], [3000, 700]], "float16", P, {}, False),
    ("MatMul^T + Gelu 910B2", "MatMul", [[33, 4095], [777, 4095]], "bfloat16", B2,
     {"transpose_b": 1, "epilogue": ["Gelu"], "mix_ratio": 1}, False),
    ("BatchMatMul 910B2", "BatchMatMul", [[8, 256, 512], [8, 512, 384]], "float16", B2, {}, False),
    ("Conv 3x3 910B3", "Conv", [[1, 64, 56, 56], [64, 64, 3, 3]], "float16", B3, {"pads": [1, 1, 1, 1]}, False),
    ("WQBMM int8 16x4096x4096 910B2", "WeightQuantBatchMatmul", [[16, 4096], [4096, 4096], [4096]], "float16",
     B2, WQ8, False),
    ("WQBMM int8 decode 910B2", "WeightQuantBatchMatmul", [[1, 4096], [4096, 11008], [11008]], "float16", B2,
     WQ8, False),
    ("WQBMM int4 group 910B2", "WeightQuantBatchMatmul", [[256, 4096], [4096, 4096], [32, 4096]], "bfloat16", B2,
     {"input_dtypes": ["bfloat16", "int4", "bfloat16"], "antiquant_group_size": 128}, False),
    ("WQBMM int8 950PR", "WeightQuantBatchMatmul", [[64, 4096], [4096, 4096], [4096]], "float16", P, WQ8, False),
    ("QBMM per-token 910B2", "QuantBatchMatmulV3", [[512, 4096], [4096, 4096], [4096], [], [], [512]], "int8", B2,
     {"output_dtype": "bfloat16"}, False),
    ("QBMM 950PR", "QuantBatchMatmulV3", [[512, 4096], [4096, 4096], [4096]], "int8", P,
     {"output_dtype": "float16"}, False),
    ("GroupedMatmul 8 experts 910B2", "GroupedMatmul", [[2048, 1024], [8, 1024, 1024]], "float16", B2, GROUPS,
     False),
    ("GroupedMatmul fp32 950PR", "GroupedMatmul", [[3000, 1000], [4, 1000, 520]], "float32", P,
     {"group_list": [700, 1500, 2200, 3000]}, False),
    ("GroupedMatmul FullLoadK 910B2", "GroupedMatmul", [[4096, 330], [8, 330, 2560]], "bfloat16", B2,
     {"group_list": [512 * i for i in range(1, 9)]}, False),
    ("GroupedMatmul split K 910B2", "GroupedMatmul", [[333, 512], [333, 256]], "float16", B2,
     {"group_list": [100, 200, 333, 333], "group_type": 2}, False),
]
THROUGHPUT = ["MatMul 4096^3 910B3", "same, with native check", "MatMul 1000x3000x700 950PR",
              "WQBMM int8 16x4096x4096 910B2", "GroupedMatmul 8 experts 910B2"]


def child(identity: bool) -> None:
    """Runs in the subprocess, its build first on sys.path: prints {label: rate or hash}."""
    import hashlib
    import time

    import numpy as np

    import aoe_native as an
    from aoe_native.ascend import ops
    out = {}
    for label, op, inputs, dtype, soc, attrs, check in CASES:
        if not identity and label not in THROUGHPUT:
            continue
        rows = an.tiling_space(op, inputs, dtype, soc, attrs).configs()
        model = ops.op_model(op, inputs, dtype, soc, attrs)
        if identity:
            rows = rows[:: max(1, len(rows) // 40000)]
            est = np.asarray(model.estimate_batch(rows, True, "fast"), dtype=np.float64)
            base = an.estimate(op, inputs, dtype, soc, ops.baseline_tiling(op, inputs, dtype, soc, attrs), attrs)
            spec = [model.param_names, model.param_values, model.restrictions, model.pruning, model.baseline,
                    model.api_baseline, model.baseline_kind, model.added_defaults, base.time_us, base.breakdown]
            out[label] = hashlib.sha256(est.tobytes() + json.dumps(spec, sort_keys=True).encode()).hexdigest()
            continue
        model.estimate_batch(rows[:1000], check, "fast")
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            model.estimate_batch(rows, check, "fast")
            best.append(time.perf_counter() - t0)
        out[label] = len(rows) / min(best)
    print(json.dumps(out))


def run(path: str, identity: bool) -> dict:
    code = (f"import sys; sys.path.insert(0, {path!r}); sys.argv = ['x']\n"
            f"import runpy; runpy.run_path({__file__!r}, run_name='child').get('child')({identity})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{path}: {proc.stderr}")
    return json.loads(proc.stdout)


def paired_runs(run_one: Callable[[str], dict], old: str, new: str, pairs: int) -> dict[str, list[dict]]:
    """{"old": [...], "new": [...]}: `pairs` results of run_one(path) per build, which build goes first
    alternating, so that a change of load on the shared machine hits both alike."""
    results: dict[str, list[dict]] = {"old": [], "new": []}
    for i in range(pairs):
        order = [("old", old), ("new", new)]
        for key, path in order if i % 2 == 0 else order[::-1]:
            results[key].append(run_one(path))
    return results


def print_ratios(rates: dict[str, list[dict]], labels: list[str]) -> None:
    """Per label: each build's median rate and the median of the paired new/old ratios."""
    width = max(map(len, labels))
    for label in labels:
        o = [r[label] for r in rates["old"]]
        n = [r[label] for r in rates["new"]]
        ratio = statistics.median(b / a for a, b in zip(o, n))
        print(f"  {label:{width}s} old {statistics.median(o) / 1e6:6.2f} M, new {statistics.median(n) / 1e6:6.2f} M, "
              f"median paired new/old {ratio:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--identity", action="store_true", help="compare the estimates, not the speed")
    args = ap.parse_args()
    if args.identity:
        old, new = run(args.old, True), run(args.new, True)
        differ = [k for k in old if old[k] != new.get(k)]
        print(f"{len(old) - len(differ)} of {len(old)} cases estimate alike" +
              (f"; differ: {', '.join(differ)}" if differ else ""))
        return
    rates = paired_runs(lambda path: run(path, False), args.old, args.new, args.pairs)
    print(f"estimate_batch rows/s, {args.pairs} pairs of runs (old {args.old}, new {args.new})")
    print_ratios(rates, THROUGHPUT)


if __name__ == "__main__":
    main()
