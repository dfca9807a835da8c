"""Strategy quality on brute-forced search spaces, ours side by side with Kernel Tuner's.

Scoring follows Willemsen et al., "A methodology for comparing optimization
algorithms for auto-tuning", FGCS 2024 (doi 10.1016/j.future.2024.05.021;
summarised in shared/reference/autotuner_anchors.md §1.1):

* baseline: random search without replacement, computed exactly (expected
  best-so-far after t draws, from the order statistics of the recorded values);
* budget B: the number of evaluations that baseline needs to get 96% of the way
  from the median to the optimum;
* score: mean over t = 1..B of (f_rand(t) - f_s(t)) / (f_rand(t) - f_opt), averaged
  over repeats with different seeds (1 = optimum at once, 0 = as good as random,
  negative = worse than random);
* failed configurations count as the worst recorded value.

Every Kernel Tuner cache file (``*.json``) in the datasets folder is a space.
Our strategies replay it through ``aoe_native.replay``; Kernel Tuner 1.5.0
(``pip install .[bench]``) replays the same file in its simulation mode with
the same budget, and its trace is rebuilt from the order of its results.

Usage:  python bench/bench_strategies.py [--datasets DIR] [--repeats 30] [--no-kt]
Prints a table (strategy x file) and saves bench/results/strategies.png and
strategies.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import aoe_native

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASETS = REPO.parent / "shared" / "datasets"
OURS = ["auto", "bandit", "genetic", "local", "annealing", "random"]
KERNEL_TUNER = ["genetic_algorithm", "simulated_annealing", "dual_annealing", "greedy_ils", "pso", "diff_evo"]
CUTOFF = 0.96


# ---- the methodology ---------------------------------------------------------------

def with_failures_as_worst(values: np.ndarray) -> np.ndarray:
    """Replace failed (non-finite / NaN) values by the worst recorded value."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    if not finite.any():
        raise ValueError("every configuration failed: nothing to score")
    return np.where(finite, v, v[finite].max())


def random_search_curve(values: np.ndarray, t_max: int) -> np.ndarray:
    """Expected best value after t = 1..t_max uniform draws without replacement.

    With the N values sorted ascending, P(best has rank >= i) = C(N-i+1, t) / C(N, t)
    =: S_i, and S_{i+1} = S_i * (N-i+1-t) / (N-i+1); E[best] = sum_i v_i (S_i - S_{i+1}).
    """
    v = np.sort(with_failures_as_worst(values))
    n = len(v)
    i = np.arange(1, n + 1, dtype=float)
    out = np.empty(t_max)
    for t in range(1, t_max + 1):
        ratio = np.clip((n - i + 1 - t) / (n - i + 1), 0.0, None)
        s = np.concatenate(([1.0], np.cumprod(ratio)))
        out[t - 1] = float(np.dot(v, s[:-1] - s[1:]))
    return out


def budget(values: np.ndarray, cutoff: float = CUTOFF) -> int:
    """Evaluations random search needs to get `cutoff` of the way from the median to the optimum."""
    v = with_failures_as_worst(values)
    target = np.median(v) - cutoff * (np.median(v) - v.min())
    hi = 1
    while random_search_curve(v, hi)[-1] > target:
        if hi >= len(v):
            return len(v)
        hi = min(2 * hi, len(v))
    curve = random_search_curve(v, hi)
    return int(np.argmax(curve <= target)) + 1


def best_so_far(trace_values: np.ndarray, worst: float, length: int) -> np.ndarray:
    """Best-so-far after each evaluation, failures as `worst`, padded to `length`."""
    v = np.asarray(trace_values, dtype=float)[:length]
    v = np.where(np.isfinite(v), v, worst)
    if len(v) == 0:
        return np.full(length, worst)
    b = np.minimum.accumulate(v)
    if len(b) < length:
        b = np.concatenate([b, np.full(length - len(b), b[-1])])
    return b


def standardized_curve(bsf: np.ndarray, f_rand: np.ndarray, f_opt: float) -> np.ndarray:
    """P(t) = (f_rand(t) - f_s(t)) / (f_rand(t) - f_opt)."""
    return (f_rand - bsf) / (f_rand - f_opt)


# ---- running strategies -----------------------------------------------------------------

class Space:
    """One brute-forced cache file, with its baseline and budget."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem.replace("_kerneltuner", "")
        self.replay = aoe_native.replay.load(path)
        self.values = with_failures_as_worst(self.replay.values)
        self.worst = float(self.values.max())
        self.f_opt = float(self.values.min())
        self.budget = budget(self.values)
        self.f_rand = random_search_curve(self.values, self.budget)

    def curve(self, trace_values: np.ndarray) -> np.ndarray:
        return standardized_curve(best_so_far(trace_values, self.worst, self.budget), self.f_rand, self.f_opt)


def run_ours(space: Space, strategy: str, repeats: int) -> np.ndarray:
    curves = []
    for seed in range(repeats):
        res = aoe_native.tune(space.replay.space, space.replay.objective, strategy=strategy,
                              max_evals=space.budget, seed=seed)
        curves.append(space.curve(res.history_values))
    return np.array(curves)


def kt_trace(results: list[dict], keys: list[str]) -> list[float]:
    """Values of the unique configurations in the order Kernel Tuner first evaluated them."""
    seen: set[str] = set()
    trace = []
    for r in results:
        key = ",".join(str(r[k]) for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        ok = "__error__" not in r and isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
        trace.append(float(t) if ok else math.inf)
    return trace


def run_kernel_tuner(space: Space, strategy: str, repeats: int, workdir: Path) -> np.ndarray:
    from kernel_tuner.interface import tune_cache  # bench-only dependency

    # Kernel Tuner may touch the cache file it replays; give it a private copy.
    cache = workdir / space.path.name
    if not cache.exists():
        shutil.copyfile(space.path, cache)
    keys = list(space.replay.metadata["tune_params_keys"])
    curves = []
    for seed in range(repeats):
        # tune_kernel(seed=) alone does not make every strategy repeatable; the
        # SciPy-based ones draw from NumPy's global generator.
        random.seed(seed)
        np.random.seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _env = tune_cache(str(cache), strategy=strategy, strategy_options={"max_fevals": space.budget},
                                       quiet=True, verbose=False, seed=seed)
        curves.append(space.curve(np.array(kt_trace(results, keys))))
    return np.array(curves)


# ---- report ---------------------------------------------------------------------------

def plot(spaces: list[Space], curves: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(spaces), figsize=(6 * len(spaces), 4.5), squeeze=False)
    for ax, sp in zip(axes[0], spaces):
        t = np.arange(1, sp.budget + 1)
        for label, per_space in curves.items():
            c = per_space[sp.name].mean(axis=0)
            style = "-" if label.startswith("aoe:") else "--"
            ax.plot(t, c, style, label=f"{label} ({c.mean():.3f})", linewidth=1.2)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_title(f"{sp.name} (budget {sp.budget})")
        ax.set_xlabel("evaluations")
        ax.set_ylabel("(f_rand - f_s) / (f_rand - f_opt)")
        ax.set_ylim(-1, 1.05)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=Path, default=Path(os.environ.get("AOE_DATASETS", DEFAULT_DATASETS)))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--ours", nargs="*", default=OURS)
    ap.add_argument("--kt", nargs="*", default=KERNEL_TUNER, help="Kernel Tuner strategies (none: skip)")
    ap.add_argument("--no-kt", action="store_true", help="skip Kernel Tuner")
    ap.add_argument("--reuse-kt", type=Path, default=None,
                    help="take Kernel Tuner's curves from a previous run's strategies_curves.npz instead of rerunning")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = ap.parse_args(argv)
    if args.repeats < 30:
        print(f"note: {args.repeats} repeats (the methodology asks for at least 30)")

    files = sorted(args.datasets.glob("*.json")) if args.datasets.is_dir() else []
    if not files:
        print(f"skipped: no Kernel Tuner cache files in {args.datasets}")
        return 0
    spaces = [Space(f) for f in files]
    kt = [] if args.no_kt else list(args.kt)
    if kt:
        try:
            import kernel_tuner  # noqa: F401
        except ImportError:
            print("Kernel Tuner not installed (pip install .[bench]); running ours only")
            kt = []

    for sp in spaces:
        print(f"{sp.name}: {len(sp.values)} configs, optimum {sp.f_opt:.4g}, median {np.median(sp.values):.4g}, "
              f"budget {sp.budget} evaluations")

    curves: dict[str, dict[str, np.ndarray]] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in args.ours:
            label = f"aoe:{s}"
            t0 = time.perf_counter()
            curves[label] = {sp.name: run_ours(sp, s, args.repeats) for sp in spaces}
            seconds[label] = time.perf_counter() - t0
        reused = np.load(args.reuse_kt) if args.reuse_kt else None
        for s in kt:
            label = f"kt:{s}"
            if reused is not None:
                curves[label] = {sp.name: reused[f"{label}|{sp.name}"] for sp in spaces}
                seconds[label] = float("nan")
                continue
            t0 = time.perf_counter()
            curves[label] = {sp.name: run_kernel_tuner(sp, s, args.repeats, Path(tmp)) for sp in spaces}
            seconds[label] = time.perf_counter() - t0
            print(f"  {label} done in {seconds[label]:.0f} s", flush=True)

    # Table: mean score +- standard error over repeats.
    scores = {lab: {n: c.mean(axis=1) for n, c in per.items()} for lab, per in curves.items()}
    names = [sp.name for sp in spaces]
    width = max(len(n) for n in names) + 2
    print(f"\nscore over the budget window, mean ± s.e. over {args.repeats} seeds (1 = optimum at once, 0 = random)")
    print(f"{'strategy':26s}" + "".join(f"{n:>{max(width, 16)}s}" for n in names) + f"{'mean':>10s}{'time s':>9s}")
    for lab, per in scores.items():
        cells = "".join(f"{per[n].mean():>{max(width, 16) - 7}.3f} ± {per[n].std(ddof=1) / math.sqrt(len(per[n])):.3f}"
                        for n in names)
        print(f"{lab:26s}{cells}{np.mean([per[n].mean() for n in names]):>10.3f}{seconds[lab]:>9.1f}")

    verdict = {}
    kt_labels = [lab for lab in scores if lab.startswith("kt:")]
    if kt_labels and "aoe:auto" in scores:
        print("\nauto vs Kernel Tuner's best strategy per space:")
        for n in names:
            best_kt = max(kt_labels, key=lambda lab: scores[lab][n].mean())
            a, k = scores["aoe:auto"][n].mean(), scores[best_kt][n].mean()
            verdict[n] = {"auto": a, "kt_best": best_kt, "kt_score": k, "auto_wins": bool(a > k)}
            print(f"  {n}: auto {a:.3f} vs {best_kt} {k:.3f} -> {'auto wins' if a > k else 'KT wins'}")

    args.out.mkdir(parents=True, exist_ok=True)
    png = args.out / "strategies.png"
    plot(spaces, curves, png)
    summary = {
        "repeats": args.repeats,
        "spaces": {sp.name: {"configs": len(sp.values), "budget": sp.budget, "optimum": sp.f_opt} for sp in spaces},
        "scores": {lab: {n: float(per[n].mean()) for n in names} for lab, per in scores.items()},
        "seconds": seconds,
        "auto_vs_kt": verdict,
    }
    (args.out / "strategies.json").write_text(json.dumps(summary, indent=1))
    np.savez_compressed(args.out / "strategies_curves.npz",
                        **{f"{lab}|{n}": c for lab, per in curves.items() for n, c in per.items()})
    print(f"\nplot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
