"""How good a search must be to reach a score at a small budget: idealised rules on the shared spaces.

A rule here takes, at every evaluation after a blind design of `d` uniform draws, the truly best of `k`
uniform draws (a perfect model ranking a pool of k).  Its 10th-percentile and mean score, by
bench_strategies.py's methodology over a fixed window (`Space.at_budget`), say how well a strategy's model
must rank to clear a bar such as issue 51's (auto's 10th percentile >= Kernel Tuner's best mean at 25, 50
and 100 evaluations): see docs/operator_tuning.md, "How far is the bar at 25?".

    python bench/bench_small_budget_bound.py --budget 25 --rules 0:4 9:16 9:32 --runs 1000
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_strategies as bs  # noqa: E402  (the methodology and the spaces)


def idealised_scores(space: bs.Space, design: int, pool: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """Scores of `runs` runs: `design` uniform draws, then the truly best of `pool` uniform draws each time."""
    n = len(space.values)
    scores = np.empty(runs)
    for r in range(runs):
        trace = []
        for t in range(space.budget):
            drawn = rng.choice(n, 1 if t < design else min(pool, n), replace=False)
            trace.append(drawn[np.argmin(space.values[drawn])])
        scores[r] = space.curve(space.raw_values[np.array(trace)]).mean()
    return scores


def parse_rule(text: str) -> tuple[int, int]:
    """'d:k' -> (design, pool)."""
    try:
        design, pool = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"rule {text!r}: expected DESIGN:POOL, e.g. 9:16") from None
    if design < 0 or pool < 1:
        raise argparse.ArgumentTypeError(f"rule {text!r}: design must be >= 0 and pool >= 1")
    return design, pool


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=25, help="evaluations scored (the window)")
    ap.add_argument("--rules", type=parse_rule, nargs="+", default=[(0, 3), (0, 4), (9, 16), (9, 32)],
                    help="DESIGN:POOL pairs: uniform design points, then the best of POOL draws")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--datasets", type=Path, default=Path(os.environ.get("AOE_DATASETS", bs.DEFAULT_DATASETS)))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for path in sorted(args.datasets.glob("*.json")):
        space = bs.Space.from_cache(path).at_budget(args.budget)
        cells = []
        for design, pool in args.rules:
            s = idealised_scores(space, design, pool, args.runs, rng)
            cells.append(f"d={design} k={pool}: {np.percentile(s, 10):.3f} / {s.mean():.3f}")
        print(f"{space.name:32s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
