"""How far the cost model is from CANN's measured kernels (issue 48).

Scores the single-kernel records of shared/reference/measured_ops/cann_bench_calibration.json
(CANN's operator benchmark on 910B2 and 950PR) at CANN's default tiling, per family x SoC:
n, median predicted/measured, share within +-25% and within 2x, Spearman rho, and over the
cases measured on both chips the cross-chip time ratio 950PR/910B2 (measured and model);
then the 10 worst records and the coverage (modelled / refused / unmodelled).

By default the held-out half (case id % 4 == 2; calibrate fits on case id % 4 == 0).

Run: python bench/bench_measured.py [--half held|fit|all] [--json] [--file PATH]
     [--soc-map Ascend950PR=Ascend950PR_9579]
     python bench/bench_measured.py --fit     (fit the vector constants on the fit half and print them)
     python bench/bench_measured.py --refit   (the same, and write them into socs.json; then rebuild:
                                               pip install --no-deps . compiles socs.json into the core)
     python bench/bench_measured.py --inner   (an inner split of the fit half, to choose how the fit is
                                               regularised without the held-out half: fit on case id
                                               % 8 == 0, predict % 8 == 4, and the reverse)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

import numpy as np

from aoe_native.ascend import records as rec

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FILE = os.path.join(HERE, "..", "..", "shared", "reference", "measured_ops", "cann_bench_calibration.json")


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rho (average ranks for ties); NaN below 3 points."""
    if len(a) < 3:
        return float("nan")

    def ranks(x):
        x = np.asarray(x, float)
        order = np.argsort(x, kind="mergesort")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for v in np.unique(x):  # ties: average rank
            m = x == v
            r[m] = r[m].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def score(records: list[dict], soc_map: dict[str, str] | None = None) -> dict:
    """Predicts every single-kernel record; returns rows, coverage counts and refusals."""
    rows, refused, unmodelled = [], [], []
    for r in records:
        if r.get("single_kernel") is not True:
            continue
        try:
            est = rec.predict_record(r, soc_map)
        except rec.UnmodelledOperator as e:
            unmodelled.append((r["id"], e.op))
            continue
        except ValueError as e:
            refused.append((r["id"], str(e)))
            continue
        rows.append({"id": r["id"], "op": r["op"], "family": r["family"], "soc": r["soc"],
                     "measured_us": float(r["time_us"]), "model_us": float(est.time_us),
                     "ratio": float(est.time_us) / float(r["time_us"]), "key": _case_key(r)})
    return {"rows": rows, "refused": refused, "unmodelled": unmodelled}


def _case_key(r: dict) -> str:
    return json.dumps([r["op"], r["inputs"], r["dtype"], r["attrs"]], sort_keys=True)


def _shares(ratios: list[float]) -> dict:
    """Shares of predicted / measured ratios within +-25% and within 2x (the issue's two bars)."""
    if not ratios:
        return {"within_25": float("nan"), "within_2x": float("nan")}
    return {"within_25": sum(abs(q - 1) <= 0.25 for q in ratios) / len(ratios),
            "within_2x": sum(0.5 <= q <= 2 for q in ratios) / len(ratios)}


def _stats(rows: list[dict]) -> dict:
    ratios = [x["ratio"] for x in rows]
    return {"n": len(rows), "median_ratio": statistics.median(ratios) if ratios else float("nan"), **_shares(ratios),
            "spearman": spearman([x["model_us"] for x in rows], [x["measured_us"] for x in rows])}


def cross_chip(rows: list[dict]) -> dict:
    """Median 950PR/910B2 time ratio, measured and model, over cases modelled on both chips."""
    by = defaultdict(dict)
    for x in rows:
        by[x["key"]][x["soc"]] = x
    pairs = [v for v in by.values() if "Ascend910B2" in v and "Ascend950PR" in v]
    meas = [v["Ascend950PR"]["measured_us"] / v["Ascend910B2"]["measured_us"] for v in pairs]
    model = [v["Ascend950PR"]["model_us"] / v["Ascend910B2"]["model_us"] for v in pairs]
    return {"n": len(pairs), "measured": statistics.median(meas) if meas else float("nan"),
            "model": statistics.median(model) if model else float("nan")}


def translated_families(records: list[dict]) -> set[tuple[str, str]]:
    """(family, soc) of every single-kernel record whose operator predict_record translates."""
    ops = set(rec.translated_ops())
    return {(r["family"], r["soc"]) for r in records if r.get("single_kernel") is True and r.get("op") in ops}


def coverage(result: dict) -> dict:
    return {"modelled": len(result["rows"]), "refused": len(result["refused"]),
            "unmodelled": len(result["unmodelled"])}


def report(result: dict, families: set[tuple[str, str]] = frozenset(), overall: dict | None = None) -> dict:
    """The numbers of a scored half: per family x SoC (every one of ``families`` too, modelled
    or not), per SoC and overall; the cross-chip ratio, the worst records, the coverage of the
    half and ``overall`` (the coverage of the whole file)."""
    rows = result["rows"]
    groups = defaultdict(list, {k: [] for k in families})
    for x in rows:
        groups[(x["family"], x["soc"])].append(x)
    table = [{"family": f, "soc": s, **_stats(g)} for (f, s), g in sorted(groups.items())]
    per_soc = [{"family": "all", "soc": s, **_stats([x for x in rows if x["soc"] == s])}
               for s in sorted({x["soc"] for x in rows})]
    worst = sorted(rows, key=lambda x: -abs(math.log(x["ratio"])))[:10]
    return {"table": table + per_soc, "all": _stats(rows), "cross_chip": cross_chip(rows),
            "worst": [{k: x[k] for k in ("id", "op", "soc", "measured_us", "model_us", "ratio")} for x in worst],
            "coverage": coverage(result), "coverage_overall": overall or coverage(result),
            "refused": result["refused"],
            "unmodelled_ops": sorted({op for _, op in result["unmodelled"]})}


def print_report(rep: dict, half: str) -> None:
    print(f"CANN measured kernels, single-kernel records, {half} half, default tiling")
    print(f"{'family':26s} {'soc':12s} {'n':>4s} {'med p/m':>8s} {'±25%':>6s} {'2x':>6s} {'rho':>6s}")
    for t in rep["table"]:
        if not t["n"]:
            print(f"{t['family']:26s} {t['soc']:12s} {0:4d} {'-':>8s} {'-':>6s} {'-':>6s} {'-':>6s}")
            continue
        print(f"{t['family']:26s} {t['soc']:12s} {t['n']:4d} {t['median_ratio']:8.2f} {t['within_25'] * 100:5.0f}% "
              f"{t['within_2x'] * 100:5.0f}% {t['spearman']:6.2f}")
    a = rep["all"]
    print(f"{'all':26s} {'':12s} {a['n']:4d} {a['median_ratio']:8.2f} {a['within_25'] * 100:5.0f}% "
          f"{a['within_2x'] * 100:5.0f}% {a['spearman']:6.2f}")
    c = rep["cross_chip"]
    print(f"cross-chip 950PR/910B2 on {c['n']} cases measured on both: measured {c['measured']:.2f}, "
          f"model {c['model']:.2f}")
    cov, allc = rep["coverage"], rep["coverage_overall"]
    print(f"coverage (modelled / single-kernel records): {half} half {cov['modelled']}/{sum(cov.values())} "
          f"({cov['refused']} refused, {cov['unmodelled']} unmodelled); whole file {allc['modelled']}/"
          f"{sum(allc.values())} ({allc['refused']} refused, {allc['unmodelled']} unmodelled)")
    print("worst 10:")
    for w in rep["worst"]:
        print(f"  {w['id']} {w['op']:16s} {w['soc']:12s} measured {w['measured_us']:9.2f} us  model "
              f"{w['model_us']:9.2f} us  ratio {w['ratio']:.2f}")
    for rid, why in rep["refused"][:10]:
        print(f"  refused {rid}: {why[:140]}")


SOCS_JSON = os.path.join(HERE, "..", "python", "aoe_native", "data", "socs.json")


def fit_report(records: list[dict], as_json: bool, write: bool = False) -> None:
    """calibrate_measured on the fit half (case id % 4 == 0): per SoC the chosen SKU, the
    constants (start -> fitted) and the mean |ratio - 1| on the fitted and held-out records;
    with ``write`` the fitted constants go into the source tree's socs.json."""
    from aoe_native.ascend.calibration import calibrate_measured, write_fitted

    cals = calibrate_measured(records)
    if write:
        names = write_fitted(cals, SOCS_JSON)
        print(f"wrote the fitted vector constants of {', '.join(names)} into {os.path.normpath(SOCS_JSON)}; "
              f"rebuild (pip install --no-deps .) to compile them into the built-in table", file=sys.stderr)
    out = {soc: {"sku": c.platform.name, "start": c.start, "params": c.params,
                 "n_fit": len(c.fitted_rows), "n_held": len(c.held_out_rows),
                 "fit_error": c.fit_error, "held_out_error": c.held_out_error} for soc, c in cals.items()}
    if as_json:
        print(json.dumps(out, indent=1))
        return
    for soc, o in out.items():
        print(f"{soc} -> {o['sku']}: fitted on {o['n_fit']}, held out {o['n_held']}; mean |ratio-1| fit "
              f"{o['fit_error'] * 100:.1f}%, held-out {o['held_out_error'] * 100:.1f}%")
        for k, v in o["params"].items():
            print(f"  {k:34s} {o['start'][k]:10.4g} -> {v:10.4g}")


def inner_report(records: list[dict], as_json: bool) -> None:
    """calibrate_measured fitted on the case ids % 8 == 0 of the fit half and scored on those
    % 8 == 4, and the reverse; per SoC x family of the records calibrate_measured predicts
    (the vector kernels outside FUSED_FAMILIES, and KERNEL_FACTOR_FAMILIES'): n, share within
    +-25% and 2x, mean |log ratio|.  The held-out half takes no part."""
    from aoe_native.ascend.calibration import calibrate_measured

    by_id = {str(r["id"]): r for r in records}
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for a, b in ((0, 4), (4, 0)):
        cals = calibrate_measured(records, fit_half=lambda r, a=a: rec.case_id(r) % 8 == a)
        for soc, c in cals.items():
            for row in c.held_out_rows:
                r = by_id[row.name]
                if rec.case_id(r) % 8 == b:  # (the held-out half, % 4 == 2, is left out)
                    groups[(soc, r["family"])].append(row.ratio)
                    groups[(soc, "all")].append(row.ratio)
    out = [{"soc": s, "family": f, "n": len(q), **_shares(q), "mean_abs_log": sum(abs(math.log(x)) for x in q) / len(q)}
           for (s, f), q in sorted(groups.items())]
    if as_json:
        print(json.dumps(out, indent=1))
        return
    print("inner split of the fit half: fit case id % 8 == 0 -> predict % 8 == 4, and the reverse")
    for o in out:
        print(f"{o['family']:26s} {o['soc']:12s} {o['n']:4d} {o['within_25'] * 100:5.0f}% {o['within_2x'] * 100:5.0f}% "
              f"mean |log| {o['mean_abs_log']:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=DEFAULT_FILE)
    ap.add_argument("--half", choices=("held", "fit", "all"), default="held")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--soc-map", action="append", default=[], metavar="RECORD_SOC=SOC_VERSION")
    ap.add_argument("--fit", action="store_true",
                    help="fit the vector constants on the fit half (calibrate_measured) and print them")
    ap.add_argument("--refit", action="store_true",
                    help="as --fit, and write the fitted constants into socs.json (rebuild afterwards)")
    ap.add_argument("--inner", action="store_true",
                    help="fit on half of the fit half and score the other half (choosing the fit's regularisation)")
    args = ap.parse_args(argv)
    if not os.path.exists(args.file):
        print(f"bench_measured: {args.file} not found (shared/reference/measured_ops)", file=sys.stderr)
        return 2
    records = rec.load_records(args.file)
    if args.inner:
        inner_report(records, args.json)
        return 0
    if args.fit or args.refit:
        fit_report(records, args.json, write=args.refit)
        return 0
    soc_map = dict(s.split("=", 1) for s in args.soc_map)
    whole = score(records, soc_map)
    if args.half != "all":
        records = [r for r in records if rec.fit_half(r) == (args.half == "fit")]
    rep = report(score(records, soc_map), translated_families(records), coverage(whole))
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        print_report(rep, args.half)
    return 0


if __name__ == "__main__":
    sys.exit(main())
