"""Two builds side by side on restriction-heavy work: the bytecode evaluator (Expr::eval) alone.

bench_ab_builds.py times estimate_batch, where restrictions are a share of the work; this times
what is all restrictions: building a Kernel-Tuner-like SearchSpace (6 parameters, 9.9 M Cartesian
points, 8 restrictions with chains, and/or/not, //, %, **) and eval_restriction of one long
restriction over 2 M random rows.  Same method: one subprocess per build and repetition, in
alternating order, best of 3 passes per process; read the median of the paired new/old ratios.
Both builds must also agree on the space's size and the restriction's values (asserted).

Run: python bench/bench_ab_restrictions.py OLD_DIR NEW_DIR [--pairs 20]
     (a DIR holds an aoe_native package: a copy, or a venv's site-packages)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from bench_ab_builds import paired_runs, print_ratios  # same folder (on sys.path when run as a script)

CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from aoe_native._core import space as S
P = {"bx": [1, 2, 4, 8, 16, 32, 64, 128], "by": [1, 2, 4, 8, 16, 32, 64, 128], "tx": [1, 2, 3, 4, 6, 8, 12, 16],
     "ty": [1, 2, 3, 4, 6, 8, 12, 16], "u": [1, 2, 3, 4, 5, 6, 7, 8], "v": list(range(0, 6000, 20)) + [599, 1001]}
R = ["32 <= bx * by <= 1024", "bx * tx % 32 == 0 or bx * tx < 32", "by * ty * u <= 512",
     "(bx * tx) // 4 + (by * ty) // 8 < v + 300", "u != 7 and not (tx == 3 and ty == 3)",
     "v % 40 == 0 or v == 599", "2 ** (u - 1) * tx <= 256", "bx * by * tx * ty * 4 * (u + 1) <= 49152 * 4"]
TEXT = "0 < a <= b < 3000 and (a * b) % 128 != 0 or (a // 7 + c ** 2 > d - 11 and not a == b) or c % 32 == d % 32"
rows = np.random.default_rng(0).integers(-50, 3000, size=(2000000, 4), dtype=np.int64)
out, best = {}, []
for _ in range(3):
    t0 = time.perf_counter(); s = S.SearchSpace(P, R); best.append(time.perf_counter() - t0)
out["space build (Cartesian points/s)"] = s.cartesian_size / min(best)
best = []
for _ in range(3):
    t0 = time.perf_counter()
    vals = S.eval_restriction(TEXT, ["a", "b", "c", "d"], rows)
    best.append(time.perf_counter() - t0)
out["eval_restriction (rows/s)"] = len(rows) / min(best)
out["_result"] = [len(s), int(vals[0].sum()), int(vals[1].sum())]
print(json.dumps(out))
'''


def run(path: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{path}: {proc.stderr}")
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=20)
    args = ap.parse_args()
    rates = paired_runs(run, args.old, args.new, args.pairs)
    results = {json.dumps(r["_result"]) for r in rates["old"] + rates["new"]}
    if len(results) != 1:
        sys.exit(f"the builds disagree (space size, sum of values, undefined rows): {sorted(results)}")
    print(f"restriction-heavy work, {args.pairs} pairs of runs (old {args.old}, new {args.new}); "
          f"space size, sum of values, undefined rows {results.pop()}")
    print_ratios(rates, [k for k in rates["old"][0] if not k.startswith("_")])


if __name__ == "__main__":
    main()
