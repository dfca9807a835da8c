"""The ``aoe`` command: AOE-compatible operator tuning of an ONNX model.

    aoe --framework=5 --model=resnet50.onnx --job_type=2 --soc_version=Ascend910B3

Writes aoe_result_opat_{timestamp}_{pid}.json to $ASCEND_WORK_PATH (else the working
directory), the tuned plan and an HTML report under --output, and the tuned tilings to
the knowledge bank ($TUNE_BANK_PATH/<soc>, or --bank PATH/<soc>).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

__all__ = ["main", "build_parser"]

_FRAMEWORKS = {0: "Caffe", 1: "MindSpore", 3: "TensorFlow", 5: "ONNX"}


def _on_off(v: str) -> bool:
    s = v.strip().lower()
    if s in ("on", "true", "1", "yes"):
        return True
    if s in ("off", "false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {v!r}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="aoe", description="Operator auto-tuning of a whole ONNX model for Ascend NPUs (AOE-compatible flags).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="environment: TUNE_BANK_PATH (bank root, must exist), REPEAT_TUNE=True (re-tune bank hits),\n"
               "TE_PARALLEL_COMPILER (default --parallel), ASCEND_WORK_PATH (where aoe_result_opat_*.json\n"
               "is written; default: the working directory).")
    ap.add_argument("--model", "-m", required=True, help="ONNX model file")
    ap.add_argument("--framework", "-f", type=int, required=True,
                    help="model framework: 5 = ONNX (the only one supported)")
    ap.add_argument("--job_type", "-j", type=int, required=True, help="2 = operator tuning (OPAT); "
                    "1 = subgraph tuning (planned)")
    ap.add_argument("--soc_version", default="Ascend910B3", help="target SoC (default Ascend910B3)")
    ap.add_argument("--input_shape", help='fix input shapes, e.g. "input_ids:1,128;attention_mask:1,128"')
    ap.add_argument("--output", help="directory for the tuned plan JSON and the HTML report")
    ap.add_argument("--tuning_time_limit", type=float, help="seconds for the tuning phase")
    ap.add_argument("--tune_ops_file", help="tune only the listed op names/types (text, one per line, or JSON "
                    '{"tune_ops_name": [...], "tune_ops_type": [...]})')
    ap.add_argument("--progress_bar", type=_on_off, default=True, metavar="on|off",
                    help="live progress bar (default on)")
    ap.add_argument("--bank", help="knowledge bank root (bank in PATH/<soc_version>); "
                    "overrides $TUNE_BANK_PATH and the default ~/.cache/aoe_native/bank")
    ap.add_argument("--parallel", type=int, help="worker processes (default $TE_PARALLEL_COMPILER, else the cores)")
    ap.add_argument("--dtype", default="float16", help="compute data type of the kernels (default float16)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (results are deterministic per seed)")
    ap.add_argument("--launch_overhead_us", type=float,
                    help="per-kernel launch cost added to model time (default 3 us, an assumption)")
    return ap


class _ProgressBar:
    """One status line on stderr: tasks done, what is running, best gain so far."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = 0.0
        self.width = 0

    def __call__(self, ev: dict[str, Any]) -> None:
        total = max(ev["tasks_total"], 1)
        done = ev["tasks_done"] if ev["stage"] != "done" else ev["tasks_total"]
        filled = int(24 * done / total)
        bar = "=" * filled + (">" if filled < 24 else "") + " " * max(23 - filled, 0)
        cur = ", ".join(ev["current"][:2]) + (" ..." if len(ev["current"]) > 2 else "")
        if ev["tasks_total"] == 0:
            if ev["stage"] == "done":
                self.stream.write(f"all tasks served from the knowledge bank | gain {ev['gain'] * 100:.2f}%\n")
            return
        line = (f"[{bar}] {done}/{ev['tasks_total']} tasks | best gain {ev['gain'] * 100:.2f}% | "
                f"{ev['elapsed_s']:.1f}s" + (f" | tuning {cur}" if cur and ev["stage"] != "done" else ""))
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(self.width))
            self.width = min(len(line), 150)
            if ev["stage"] == "done":
                self.stream.write("\n")
        elif ev["stage"] == "done" or time.monotonic() - self.last > 2.0:
            self.stream.write(line + "\n")
            self.last = time.monotonic()
        self.stream.flush()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.framework != 5:
        name = _FRAMEWORKS.get(args.framework, "unknown")
        print(f"aoe: error: --framework={args.framework} ({name}) is not supported; only 5 (ONNX) is",
              file=sys.stderr)
        return 2
    if args.job_type == 1:
        print("aoe: error: --job_type=1 (subgraph tuning) is planned but not implemented yet; "
              "use --job_type=2 (operator tuning)", file=sys.stderr)
        return 2
    if args.job_type != 2:
        print(f"aoe: error: --job_type={args.job_type} is not a job type (2 = operator tuning)", file=sys.stderr)
        return 2
    from .bank import BankError
    from .opat import tune_model
    result_dir = os.environ.get("ASCEND_WORK_PATH") or os.getcwd()
    try:
        r = tune_model(args.model, soc_version=args.soc_version, job_type=2, input_shape=args.input_shape,
                       dtype=args.dtype, bank=args.bank, parallel=args.parallel,
                       tuning_time_limit=args.tuning_time_limit, tune_ops=args.tune_ops_file, seed=args.seed,
                       output=args.output, result_dir=result_dir, launch_overhead_us=args.launch_overhead_us,
                       progress=_ProgressBar() if args.progress_bar else None)
    except (ValueError, KeyError, OSError, BankError, NotImplementedError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"aoe: error: {msg}", file=sys.stderr)
        return 1
    for t in r.tasks:
        if t.update_mode == "failed":
            print(f"aoe: warning: task {t.key} kept its default tiling: {t.error}", file=sys.stderr)
    s = r.repo_summary
    print(f"model {r.model_name}: {len(r.kernels)} kernels, {len(r.tasks)} distinct tasks, "
          f"{sum(u['count'] for u in r.unsupported)} unsupported nodes")
    print(f"model time {r.baseline_ms:.4f} ms -> {r.tuned_ms:.4f} ms")
    print(f"repo summary: total {s['total_num']}, hit {s['repo_hit_num']} (reserved {s['repo_reserved_num']}, "
          f"update {s['repo_update_num']}), add {s['repo_add_num']}, unsatisfied {s['repo_unsatisfied_num']}; "
          f"bank {r.bank_directory}")
    for path in (r.result_file, r.plan_file, r.report_file):
        if path:
            print(f"wrote {path}")
    print(f"{r.model_name} OPAT process finished. Performance improved by {r.improvement * 100:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
