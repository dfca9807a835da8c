"""Run the fuzz targets of targets.py with atheris (coverage-guided, libFuzzer).

    python tests/fuzz/run.py                      # every target, 60 s each
    python tests/fuzz/run.py ops bank --seconds 600
    python tests/fuzz/run.py onnx --input crash-1234   # replay one input

Each target runs in its own process (libFuzzer ends the process when it is done), starting
from its seed corpus ``corpus/<target>/``; inputs that reach new coverage are written to a
scratch directory (``--workdir``), never to the seed corpus.  A finding (crash, hang past
``--timeout`` seconds, an exception outside the target's documented ones, a broken
invariant) is saved there as ``crash-*`` / ``timeout-*`` and the run fails.  The table at
the end gives the executions per target.  Needs ``pip install ".[fuzz]"`` (atheris).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["space", "ops", "onnx", "bank", "gdat"]
MAX_LEN = {"space": 4096, "ops": 4096, "onnx": 65536, "bank": 65536, "gdat": 16384}


def _child(target: str, libfuzzer_args: list[str]) -> None:
    import atheris
    sys.path.insert(0, HERE)
    with atheris.instrument_imports(include=["aoe_native", "targets"]):
        import targets
    fn, allowed = targets.TARGETS[target]

    def one_input(data: bytes) -> None:
        try:
            fn(data)
        except allowed:
            pass

    mutator = targets.MUTATORS.get(target)
    argv = [sys.argv[0]] + libfuzzer_args
    if mutator is None:
        atheris.Setup(argv, one_input)
    else:
        atheris.Setup(argv, one_input, custom_mutator=mutator)
    atheris.Fuzz()


def run_target(target: str, seconds: int, timeout: int, workdir: str, replay: str | None = None) -> dict:
    """Fuzz one target in a subprocess; returns its executions, time and outcome."""
    work = os.path.join(workdir, target)
    os.makedirs(work, exist_ok=True)
    args = [f"-timeout={timeout}", "-rss_limit_mb=3072", f"-max_len={MAX_LEN[target]}",
            f"-artifact_prefix={work}{os.sep}", "-print_final_stats=1"]
    if replay:
        args.append(replay)
    else:
        args += [f"-max_total_time={seconds}", work, os.path.join(HERE, "corpus", target)]
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", target, "--", *args],
                       capture_output=True, text=True)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", p.stderr)
    return {"target": target, "rc": p.returncode, "executions": int(runs[-1]) if runs else 0,
            "seconds": time.monotonic() - t0, "log": p.stdout + p.stderr, "workdir": work}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1], argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*", help=f"targets to run: {', '.join(NAMES)} (default: all)")
    ap.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    ap.add_argument("--timeout", type=int, default=20, help="seconds one input may take before it is a hang")
    ap.add_argument("--workdir", help="where new corpus entries and findings go (default: a temporary directory)")
    ap.add_argument("--input", help="replay this one input (a finding) instead of fuzzing")
    a = ap.parse_args(argv)
    unknown = [t for t in a.targets if t not in NAMES]
    if unknown:
        ap.error(f"unknown target(s) {', '.join(unknown)}; targets: {', '.join(NAMES)}")
    workdir = a.workdir or tempfile.mkdtemp(prefix="aoe-fuzz-")
    failed = False
    print(f"{'target':8} {'executions':>12} {'seconds':>8}  result")
    for t in a.targets or NAMES:
        r = run_target(t, a.seconds, a.timeout, workdir, a.input)
        ok = r["rc"] == 0
        failed |= not ok
        print(f"{t:8} {r['executions']:>12} {r['seconds']:>8.0f}  "
              f"{'ok' if ok else 'FINDING (exit ' + str(r['rc']) + '), see ' + r['workdir']}", flush=True)
        if not ok:
            print(r["log"][-6000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
