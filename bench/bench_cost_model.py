"""Bench report for the Ascend cost model (issue 4).

Prints (1) the grounding table: published figure, model figure, ratio;
(2) the calibration on the published Matmul cases (data/ascend_measured_cases.json):
every case the model can express, published / model before / model after fitting,
for the fitted and the held-out half, and the held-out error; (3) native estimate
throughput; (4) tune_op wall time and its gap to the exhaustive optimum of the
tiling space, for several shapes.

Run: python bench/bench_cost_model.py [--quick] [--throughput]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import aoe_native as an
from aoe_native.ascend import calibration, ops

B3 = "Ascend910B3"
B1 = "Ascend910B1"  # the A2 part of the 24-AIC measured cases (ascend_measured_cases.md §0)
CASE = dict(inputs=[[4096, 4096], [4096, 5120]], dtype="float16", soc_version=B3, attrs={"out_dtype": "float32"})


def mm_tiling(sm, sn, base, step_k=1, db_c=1):
    bm, bn, bk = base
    return dict(singleCoreM=sm, singleCoreN=sn, baseM=bm, baseN=bn, baseK=bk, stepM=1, stepN=1, stepKa=step_k,
                stepKb=step_k, depthA1=2 * step_k, depthB1=2 * step_k, dbL0A=2, dbL0B=2, dbL0C=db_c, iterateOrder=0)


def case(tiling):
    return an.estimate("MatMul", CASE["inputs"], CASE["dtype"], CASE["soc_version"], tiling, attrs=CASE["attrs"])


def grounding_rows():
    rows = []
    # Peak FP16 (docs/ascend_model.md §1; 910A published 256 TFLOPS, 310P3 from 140 TOPS int8 per chip / 2).
    peaks = {"Ascend910A": (256, "Hot Chips 2019"), "Ascend310P3": (70, "300I Duo 280 TOPS int8 / 2 chips / 2"),
             "Ascend910ProB": (283, "[D] §1"), "Ascend910B1": (364, "[D] §1"), "Ascend910B2": (354, "[D] §1"),
             "Ascend910B3": (295, "[D] §1"), "Ascend910B4": (246, "[D] §1"), "Ascend910_9392": (364, "[D] §1"),
             "Ascend310B1": (10.0, "[D] §1")}
    for soc, (pub, src) in peaks.items():
        p = an.platform(soc)
        model = p["cube_cores"] * 4096 * 2 * p["freq_mhz"] * 1e6 / 1e12
        rows.append((f"peak fp16 TFLOPS {soc} ({src})", pub, model))
    # Published Matmul tuning case ([A] Matmul算子优化Tiling策略.md), modelled on 910B3.
    s1_4 = case(mm_tiling(2048, 2560, (64, 64, 256), db_c=2))
    s1 = case(mm_tiling(1024, 1024, (64, 64, 256), db_c=2))
    s2 = case(mm_tiling(1024, 1024, (128, 256, 64)))
    s3 = case(mm_tiling(1024, 1024, (128, 256, 64), step_k=4))
    rows += [
        ("matmul case: 4 cores, base [64,64,256], op us", 12045, s1_4.time_us),
        ("matmul case: 20 cores, same base, op us", 2532, s1.time_us),
        ("matmul case: speed-up 4 -> 20 cores", 4.76, s1_4.time_us / s1.time_us),
        ("matmul case: 20 cores MTE2 us", 2452, s1.breakdown["mte2_us"]),
        ("matmul case: base [128,256,64] MTE2 us", 808, s2.breakdown["mte2_us"]),
        ("matmul case: MTE2 gain of the base change", 3.03, s1.breakdown["mte2_us"] / s2.breakdown["mte2_us"]),
        ("matmul case: + large-packet (stepKa=stepKb=4) MTE2 us", 591, s3.breakdown["mte2_us"]),
        ("matmul case: cube utilisation after step 3 (> 0.80)", 0.80, s3.breakdown["cube_us"] / s3.time_us),
    ]
    # Tuned large GEMM vs cube peak (requirement: >= 80%).
    p = an.platform(B3)
    peak = p["cube_cores"] * 4096 * 2 * p["freq_mhz"] * 1e6
    for n in (4096, 8192, 65536):  # 65536^3: A and B overflow L2, K slabs (splitK) are searched
        r = an.tune_op("MatMul", [[n, n], [n, n]])
        rows.append((f"tuned {n}^3 GEMM fraction of cube peak (>= 0.80)", 0.80, 2 * n**3 / (r.time_us * 1e-6) / peak))
    # Large elementwise Add vs HBM (1.6 TB/s, [A] L2-Cache切分.md).
    n = 64 * 1024 * 1024
    r = an.tune_op("Add", [[n], [n]])
    rows.append(("Add 64M fp16: achieved GB/s vs HBM 1600 GB/s", 1600, 3 * n * 2 / r.time_us / 1e3))
    # GE fitted per-API vector costs ([G] §3d), cycles = k*n + b, one core, one tile.
    ge = {"Add": (0.0103, 22.2), "Mul": (0.0110, 23.1), "Exp": (0.0311, 28.0)}
    f = p["freq_mhz"]
    for op, (k, b) in ge.items():
        for size in (256, 2000, 16384):
            ins = [[size], [size]] if op != "Exp" else [[size]]
            e = an.estimate(op, ins, "float16", B3, {"blockDim": 1, "tileLen": 16384, "bufferNum": 1})
            rows.append((f"GE vector cycles {op} n={size}", k * size + b, e.breakdown["vector_us"] * f))
    for size in (256, 1024, 4096):
        e = an.estimate("ReduceSum", [[1, size]], "float16", B3, {"blockDim": 1, "tileLen": 8192, "bufferNum": 1,
                                                                  "splitR": 0}, attrs={"axes": [1]})
        rows.append((f"GE vector cycles WholeReduceSum n={size}", 0.0547 * size + 35.0, e.breakdown["vector_us"] * f))
    return rows


def calibration_report() -> None:
    fit, held = calibration.published_cases()
    n_fit = len({r["case"] for r in fit})
    n_held = len({r["case"] for r in held} - {r["case"] for r in fit})  # cases with no fitted record
    t0 = time.perf_counter()
    res = an.calibrate(calibration.uncalibrated(B1), fit, held_out=held)
    print(f"fitted {', '.join(res.params)} on {n_fit} of {n_fit + n_held} cases ({len(res.fitted_rows)} quantities), "
          f"predicting {n_held} ({len(res.held_out_rows)} quantities), in {time.perf_counter() - t0:.1f} s; "
          f"'before' = the hand-fitted model (field defaults), 'model' = fitted (the A2 entries of socs.json ship it)")
    print(res.table())
    print(f"held-out error (mean |model/published - 1|): {res.held_out_error * 100:.1f}%")
    # Records that contradict another: no model whose time grows at most with the work fits both within 20%.
    found = calibration.contradictions(fit + held, tolerance=0.2)
    print("published pairs no model fits within 20% together (the slow run does at most 'work' times the fast "
          "one's work in every pipe, copy count, block count and GM byte count, yet takes 'time' times as long):")
    for c in found:
        print(f"  {c.slow:10s} vs {c.fast:10s}  work <= {c.work_ratio:.2f}x  time {c.time_ratio:.2f}x "
              f"(> {c.work_ratio * 1.2 / 0.8:.2f}x)")
    slow = {c.slow for c in found}
    rows = [r for r in res.held_out_rows if r.name not in slow]
    print(f"held-out quantities apart from the contradicted records ({', '.join(sorted(slow))}): "
          f"{sum(abs(r.ratio - 1) <= 0.2 for r in rows)}/{len(rows)} within 20%, "
          f"mean |ratio-1| {sum(abs(r.ratio - 1) for r in rows) / max(1, len(rows)) * 100:.1f}%")


def throughput(reps: int) -> None:
    """Rows per second of estimate_batch on every tiling of a MatMul 4096^3 space (one thread):
    estimates alone, then with the per-row restriction check done natively ("fast", the default),
    by the restrictions' bytecode, and by their tree interpreter (what every row ran before).
    The ways take turns in each repetition, so a change of load on a shared machine hits them alike."""
    shape = [[4096, 4096], [4096, 4096]]
    rows = an.tiling_space("MatMul", shape).configs()
    model = ops.op_model("MatMul", shape, "float16", B3)
    ways = {"none": ("estimates only", False, "fast"), "fast": ("with check, fast (default)", True, "fast"),
            "compiled": ("with check, compiled restrictions", True, "compiled"),
            "reference": ("with check, restriction interpreter", True, "reference")}
    times: dict[str, list[float]] = {k: [] for k in ways}
    for _, check, how in ways.values():
        model.estimate_batch(rows[:1000], check, how)
    for _ in range(reps):
        for key, (_, check, how) in ways.items():
            t0 = time.perf_counter()
            model.estimate_batch(rows, check, how)
            times[key].append(time.perf_counter() - t0)
    rates = {k: len(rows) / statistics.median(t) for k, t in times.items()}
    for key, (label, _, _) in ways.items():
        print(f"MatMul 4096^3 estimate_batch, {label:36s}: {rates[key] / 1e6:6.2f} M rows/s "
              f"({len(rows)} tilings, median of {reps})")
    print(f"checked throughput vs the interpreter: fast {rates['fast'] / rates['reference']:.1f}x, "
          f"compiled {rates['compiled'] / rates['reference']:.1f}x")


def tune_report(quick: bool) -> None:
    shapes = [
        ("MatMul", [[4096, 4096], [4096, 4096]], None),
        ("MatMul", [[8192, 8192], [8192, 8192]], None),
        ("MatMul", [[1024, 1024], [1024, 1024]], None),
        ("MatMul", [[4096, 4096], [4096, 5120]], {"out_dtype": "float32"}),
        ("MatMul", [[8, 512, 768], [768, 3072]], None),
        ("MatMul", [[1, 4096], [4096, 4096]], None),
        ("BatchMatMul", [[16, 12, 512, 64], [16, 12, 64, 512]], None),
        ("Conv", [[32, 64, 56, 56], [64, 64, 3, 3]], {"pads": [1, 1, 1, 1]}),
        ("Conv", [[32, 256, 56, 56], [512, 256, 1, 1]], {"strides": [2, 2]}),
        ("Softmax", [[32, 16, 512, 512]], None),
        ("LayerNormalization", [[32, 512, 1024], [1024], [1024]], None),
        ("ReduceSum", [[1 << 24]], None),
    ]
    if quick:
        shapes = shapes[:3]
    print(f"{'op':12s} {'inputs':44s} {'space':>7s} {'tune_op s':>9s} {'evals':>7s} {'time us':>9s} "
          f"{'optimum':>9s} {'gap %':>6s} {'vs base':>7s} {'budget 10k gap %':>16s}")
    for op, inputs, attrs in shapes:
        ops.clear_caches()
        t0 = time.perf_counter()
        r = an.tune_op(op, inputs, attrs=attrs)
        cold = time.perf_counter() - t0
        space = an.tiling_space(op, inputs, attrs=attrs)
        opt = float(an.estimate_batch(op, inputs, "float16", B3, space.configs(), attrs=attrs).min())
        gaps = []
        for seed in range(3):
            rb = an.tune_op(op, inputs, attrs=attrs, max_evals=10000, seed=seed)
            gaps.append((rb.time_us / opt - 1) * 100)
        print(f"{op:12s} {str(inputs)[:44]:44s} {len(space):7d} {cold:9.3f} {r.evaluations:7d} {r.time_us:9.1f} "
              f"{opt:9.1f} {(r.time_us / opt - 1) * 100:6.2f} {r.improvement * 100:6.1f}% "
              f"{statistics.median(gaps):7.2f} (max {max(gaps):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--throughput", action="store_true", help="only the estimate_batch throughput")
    args = ap.parse_args()
    if args.throughput:
        throughput(3 if args.quick else 9)
        return
    print("== Grounding (published / model / ratio) ==")
    rows = grounding_rows()
    # Rows against a floor ("(>=") or a peak ("GB/s" vs HBM) are bounds, not measurements to match.
    bounds = [r for r in rows if "(>" in r[0] or "GB/s" in r[0]]
    figures = [r for r in rows if r not in bounds]
    for name, pub, model in figures:
        ratio = model / pub
        print(f"{name:58s} {pub:10.2f} {model:10.2f} {ratio:6.2f}{'' if abs(ratio - 1) <= 0.2 else '  <-- off by >20%'}")
    print("-- bounds: the model must stay above a published floor or below a peak (ratio is the share) --")
    for name, pub, model in bounds:
        print(f"{name:58s} {pub:10.2f} {model:10.2f} {model / pub:6.2f}")
    worst = max(abs(model / pub - 1) for _, pub, model in figures)
    print(f"(largest miss among the published figures above the bounds: {worst * 100:.1f}%)")
    print("\n== Calibration on the published Matmul cases (ascend_measured_cases.md §1, §5.5) ==")
    calibration_report()
    print("\n== Estimate throughput ==")
    throughput(3 if args.quick else 7)
    print("\n== tune_op (default: exhaustive when the space is small enough) ==")
    tune_report(args.quick)


if __name__ == "__main__":
    main()
