"""Distributed measurement on a local Ray (issue 14, part 1): 200 evaluations of an objective
that sleeps 50 ms, on 1 and on 2 workers, batches of 8 proposed by the strategy.

    python bench/bench_ray.py [--evals 200] [--sleep 0.05] [--repeats 3]

Prints the median wall time per setting, the throughput ratio (2 workers / 1 worker) and
the overhead per evaluation (wall time minus the ideal evals x sleep / workers, divided by
the evaluations).  Needs `pip install '.[ray]'`.
"""
from __future__ import annotations

import argparse
import statistics
import time

import ray

import aoe_native as an
from aoe_native.runners import RayObjective


def sleepy(config, seconds):
    time.sleep(seconds)
    return float(sum(config.values()))


class Sleep:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, config):
        return sleepy(config, self.seconds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=200)
    ap.add_argument("--sleep", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--strategy", default="random", help="random isolates the runner; forest adds its model time")
    args = ap.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    space = an.SearchSpace({"a": list(range(64)), "b": list(range(64))})
    walls = {}
    for workers in (1, 2):
        with RayObjective(Sleep(args.sleep), space.param_names, workers=workers, batch=8) as obj:
            opts = {"batch": 8} if args.strategy == "forest" else None
            an.tune(space, obj, strategy=args.strategy, strategy_options=opts, max_evals=8, seed=0)  # warm the workers
            times = []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                res = an.tune(space, obj, strategy=args.strategy, strategy_options=opts, max_evals=args.evals, seed=r)
                times.append(time.perf_counter() - t0)
                assert res.evaluations == args.evals and not res.failed
            walls[workers] = statistics.median(times)
        ideal = args.evals * args.sleep / workers
        print(f"{workers} worker(s): median {walls[workers]:.2f} s for {args.evals} evaluations "
              f"({args.evals / walls[workers]:.1f}/s); overhead {(walls[workers] - ideal) / args.evals * 1e3:.2f} ms "
              f"per evaluation over the ideal {ideal:.3g} s")
    print(f"throughput ratio 2 workers / 1 worker: {walls[1] / walls[2]:.2f}x")
    ray.shutdown()


if __name__ == "__main__":
    main()
