"""The command-line tools, and the only module that reads environment variables.

``aoe``: AOE-compatible tuning of an ONNX model::

    aoe --framework=5 --model=resnet50.onnx --job_type=2 --soc_version=Ascend910B3

writes aoe_result_opat_{timestamp}_{pid}.json to $ASCEND_WORK_PATH (else the working
directory), the tuned plan and an HTML report under --output, and the tuned tilings to
the knowledge bank (--bank PATH/<soc>, else $TUNE_BANK_PATH/<soc>).

Subgraph tuning (SGAT): how operators fuse into kernels and how each kernel is split;
``--job_type=1,2`` runs operator tuning on the fused kernels afterwards (Huawei's order)::

    aoe --framework=5 --model=bert.onnx --job_type=1 [--tune_optimization_level=O1] [--Fnonhomo_split=true]

writes aoe_result_sgat_{timestamp}_{pid}.json, the fused plan and its HTML report, and each
distinct subgraph's plan to the bank (entries Subgraph(...)).

Gradient-split tuning (GDAT, AOE_MODE 4) of a timeline file or an ONNX model (predicted
backward) on a cluster (default: the shipped Ascend 910B description, --servers N)::

    aoe --job_type=4 --timeline grads.json [--cluster cluster.json | --ranks 8 --alpha_us 20 --gbps 100]
    aoe --job_type=4 --framework=5 --model=resnet50.onnx --servers 2 --backend hccl --output out/

writes aoe_result_gdat_{timestamp}_{pid}.json to $ASCEND_WORK_PATH (else the working
directory) and the HTML report under --output.

``aoe-bank``: inspect and merge knowledge banks::

    aoe-bank merge SRC_DIR... -o DST_DIR     # same SoC only; the faster entry of a key wins
    aoe-bank show  [BANK_DIR | --soc_version S [--bank ROOT]] [--op OP]
    aoe-bank stats [BANK_DIR | --soc_version S [--bank ROOT]]
"""
from __future__ import annotations

import _thread
import argparse
import json
import os
import signal
import sys
import threading
import time
import warnings
from typing import Any, Mapping

from rich.console import Console

from .ascend.platforms import DEFAULT_SOC, soc_versions
from .bank.store import Bank, BankError, bank_dir, merge_banks, root_socs
from .cann import builtin_dir
from .cann import cli as cann_cli
from .cluster import Cluster
from .fileio import json_depth
from .gradients.buckets import BACKEND_MAX_SEGMENTS
from .gradients.timeline import GradientNameWarning
from .jobs.gdat import gdat_job
from .jobs.opat import TuneOpsWarning, tune_model
from .jobs.setup import CoverageWarning, usable_cores
from .jobs.sgat import LEVELS, tune_subgraphs
from .outputs.console import ProgressBar, subgraph_table, summary_table
from .results import JobResult, plural
from .tuning import improvement

__all__ = ["main", "bank_main", "build_parser", "bank_root", "cluster_from_args", "parallel_from_env",
           "repeat_tune_from_env", "read_tune_ops_file"]

_FRAMEWORKS = {0: "Caffe", 1: "MindSpore", 3: "TensorFlow", 5: "ONNX"}
_TRUE, _FALSE = ("on", "true", "1", "yes"), ("off", "false", "0", "no")


# --------------------------------------------------------------------------- environment
def bank_root(flag: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The bank root: --bank, else $TUNE_BANK_PATH (which must exist, as AOE requires), else
    $XDG_CACHE_HOME/aoe_native/bank, else None (the library's default, ~/.cache/aoe_native/bank)."""
    if flag:
        return flag
    tbp = env.get("TUNE_BANK_PATH")
    if tbp:
        if not os.path.isdir(tbp):
            raise BankError(f"TUNE_BANK_PATH={tbp}: directory does not exist (create it first, as AOE requires)")
        return tbp
    xdg = env.get("XDG_CACHE_HOME")
    return os.path.join(xdg, "aoe_native", "bank") if xdg else None


def parallel_from_env(flag: int | None, env: Mapping[str, str] = os.environ) -> int:
    """Worker processes: --parallel, else $TE_PARALLEL_COMPILER (as AOE), else the usable cores."""
    if flag is not None:
        return flag
    value = env.get("TE_PARALLEL_COMPILER")
    if not value:
        return usable_cores()
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"TE_PARALLEL_COMPILER={value!r} is not an integer") from None
    if n < 1:
        raise ValueError(f"TE_PARALLEL_COMPILER={n} must be >= 1")
    return n


def repeat_tune_from_env(env: Mapping[str, str] = os.environ) -> bool:
    """REPEAT_TUNE=True re-tunes bank hits (AOE)."""
    return env.get("REPEAT_TUNE", "False").strip().lower() in _TRUE


def read_tune_ops_file(path: str) -> set[str]:
    """--tune_ops_file: JSON {"tune_ops_name": [...], "tune_ops_type": [...]} (AOE's config
    file) or plain text, one op name or type per line (# comments allowed)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"--tune_ops_file {path}: cannot read ({e.strerror})") from None
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        if json_depth(stripped.encode()) > 8:  # the file nests 2 levels; json recurses per level
            raise ValueError(f"--tune_ops_file {path}: JSON nested deeper than 8 levels")
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ValueError(f"--tune_ops_file {path}: invalid JSON ({e})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"--tune_ops_file {path}: expected a JSON object with tune_ops_name / tune_ops_type")
        unknown = sorted(set(doc) - {"tune_ops_name", "tune_ops_type"})
        if unknown:
            raise ValueError(f"--tune_ops_file {path}: unknown field(s) {', '.join(unknown)} "
                             "(expected tune_ops_name, tune_ops_type)")
        names = []
        for field in ("tune_ops_name", "tune_ops_type"):
            value = doc.get(field, [])
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                raise ValueError(f"--tune_ops_file {path}: {field} must be a list of strings, got {value!r}")
            names += value
    else:
        names = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    out = {n for n in names if n}
    if not out:
        raise ValueError(f"--tune_ops_file {path}: lists no operator")
    return out


# --------------------------------------------------------------------------- aoe
def _on_off(v: str) -> bool:
    s = v.strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected on, off, true or false, got {v!r}")


_JOB_TYPES = {"1": (1,), "2": (2,), "4": (4,), "1,2": (1, 2)}


def _job_type(v: str) -> tuple[int, ...]:
    jt = _JOB_TYPES.get(v.replace(" ", ""))
    if jt is None:
        raise argparse.ArgumentTypeError(f"expected 1, 2, 1,2 or 4, got {v!r}")
    return jt


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="aoe", description="Auto-tuning of an ONNX model for Ascend NPUs, AOE-compatible flags: operator tuning "
        "(--job_type=2), subgraph tuning (1, or 1,2 then operators) and gradient-split tuning (4).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="environment: TUNE_BANK_PATH (bank root, must exist), REPEAT_TUNE=True (re-tune bank hits),\n"
               "TE_PARALLEL_COMPILER (default --parallel), ASCEND_WORK_PATH (where aoe_result_opat_*.json\n"
               "is written; default: the working directory), XDG_CACHE_HOME (default bank under it).")
    ap.add_argument("--model", "-m", help="ONNX model file (required except for --job_type=4 --timeline)")
    ap.add_argument("--framework", "-f", type=int,
                    help="model framework: 5 = ONNX (the only one supported; required with --model)")
    ap.add_argument("--job_type", "-j", type=_job_type, required=True, metavar="{1|2|1,2|4}",
                    help="1 = subgraph tuning (SGAT); 2 = operator tuning (OPAT); 1,2 = subgraph then operator "
                    "tuning; 4 = gradient-split tuning (GDAT)")
    ap.add_argument("--soc_version", help=f"target SoC (default {DEFAULT_SOC})")
    ap.add_argument("--input_shape", help='fix input shapes, e.g. "input_ids:1,128;attention_mask:1,128"')
    ap.add_argument("--output", help="directory for the tuned plan JSON and the HTML report")
    ap.add_argument("--tuning_time_limit", type=float, help="seconds for the tuning phase")
    ap.add_argument("--tune_ops_file", help="tune only the listed op names/types (text, one per line, or JSON "
                    '{"tune_ops_name": [...], "tune_ops_type": [...]})')
    ap.add_argument("--progress_bar", type=_on_off, default=True, metavar="on|off",
                    help="live progress bar (on/off or true/false; default on)")
    ap.add_argument("--bank", help="knowledge bank root (bank in PATH/<soc_version>); "
                    "overrides $TUNE_BANK_PATH and the default ~/.cache/aoe_native/bank")
    ap.add_argument("--builtin_bank", metavar="DIR",
                    help="CANN's built-in bank root (default $ASCEND_OPP_PATH/built-in/data/op): a MatMul found "
                         "there is what CANN runs untuned, its baseline and a bank hit")
    ap.add_argument("--parallel", type=int, help="worker processes (default $TE_PARALLEL_COMPILER, else the cores)")
    ap.add_argument("--dtype", help="compute data type of the kernels (default float16)")
    ap.add_argument("--seed", type=int, help="random seed (default 0; results are deterministic per seed)")
    ap.add_argument("--launch_overhead_us", type=float,
                    help="per-kernel launch cost added to model time (default: the SoC's, 3 us, an assumption)")
    s = ap.add_argument_group("subgraph tuning (--job_type=1)")
    s.add_argument("--tune_optimization_level", choices=sorted(LEVELS),
                   help="O1: high performance (searches harder, also the cube:vector core ratio); O2: normal (default)")
    s.add_argument("--Fnonhomo_split", type=_on_off, metavar="on|off",
                   help="allow non-uniform splits of a last partial wave over the cores (default off)")
    g = ap.add_argument_group("gradient-split tuning (--job_type=4)")
    g.add_argument("--timeline", help='gradient timeline JSON {"gradients": [{"name", "bytes", "ready_us"}, ...]} '
                   "in ready order (instead of predicting it from --model)")
    g.add_argument("--cluster", help="cluster description JSON (levels with ranks, alpha_us, gbps, source)")
    g.add_argument("--ranks", type=int, help="one-level ring of this many ranks (default 8)")
    g.add_argument("--alpha_us", type=float, help="one-level ring: start-up per step in us (default 20)")
    g.add_argument("--gbps", type=float, help="one-level ring: bandwidth in GB/s, 1 GB = 1e9 bytes (default 100)")
    g.add_argument("--servers", type=int,
                   help="without --cluster/--ranks: Ascend 910B servers of 8 NPUs (default 1)")
    g.add_argument("--max_buckets", type=int, help="at most this many buckets")
    g.add_argument("--backend", choices=sorted(BACKEND_MAX_SEGMENTS),
                   help="the plan must fit this backend (hccl: at most 8 segments)")
    return ap


# Options that apply to some job types only (dest: job types); given elsewhere, they are an error
# rather than silently ignored.  --soc_version, --input_shape and --dtype describe a model, so
# they do not go with --timeline either.
_OPTION_JOBS = {
    "tune_ops_file": {2}, "tune_optimization_level": {1}, "Fnonhomo_split": {1}, "builtin_bank": {1, 2},
    "tuning_time_limit": {1, 2}, "bank": {1, 2, 4}, "parallel": {1, 2}, "seed": {1, 2, 4}, "launch_overhead_us": {1, 2},
    "timeline": {4}, "cluster": {4}, "ranks": {4}, "alpha_us": {4}, "gbps": {4}, "servers": {4},
    "max_buckets": {4}, "backend": {4},
}
_DEFAULTS = {"soc_version": DEFAULT_SOC, "dtype": "float16", "seed": 0, "tune_optimization_level": "O2",
             "Fnonhomo_split": False}


def _check_options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject options the job type does not use, then fill in the defaults.  Every flag is
    --<dest>."""
    jobs = set(args.job_type)
    for dest, where in _OPTION_JOBS.items():
        if getattr(args, dest) is not None and not jobs & where:
            ap.error(f"--{dest} applies to --job_type={' or '.join(map(str, sorted(where)))}, "
                     f"not {','.join(map(str, args.job_type))}")
    if args.tune_ops_file is not None and args.job_type != (2,):  # with 1,2 the kernels are the fused ones
        ap.error("--tune_ops_file applies to operator tuning of the model's own kernels (--job_type=2) only")
    if args.timeline is not None:
        for dest in ("soc_version", "input_shape", "dtype"):
            if getattr(args, dest) is not None:
                ap.error(f"--{dest} describes a model; with --timeline there is none")
    for dest, value in _DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)


def cluster_from_args(args: argparse.Namespace) -> Cluster:
    """--cluster FILE, else a one-level ring from --ranks/--alpha_us/--gbps (Cluster's defaults
    for the missing ones), else the shipped Ascend 910B cluster of --servers servers."""
    ring = (args.ranks, args.alpha_us, args.gbps)
    if args.servers is not None and (args.cluster or any(v is not None for v in ring)):
        raise ValueError("--servers sizes the shipped Ascend 910B cluster; with --cluster or --ranks/--alpha_us/"
                         "--gbps the ranks are given there, not both")
    if args.cluster:
        if any(v is not None for v in ring):
            raise ValueError("give --cluster or --ranks/--alpha_us/--gbps, not both")
        return Cluster.load(args.cluster)
    if any(v is not None for v in ring):
        d = Cluster()
        return Cluster(ranks=d.ranks if args.ranks is None else args.ranks,
                       alpha_us=d.levels[0].alpha_us if args.alpha_us is None else args.alpha_us,
                       gbps=d.levels[0].gbps if args.gbps is None else args.gbps)
    return Cluster.ascend910b(servers=1 if args.servers is None else args.servers)


def _gdat_main(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.timeline is None and args.model is None:
        ap.error("--job_type=4 needs --timeline FILE or --model (with --framework=5)")
    if args.timeline is not None and args.model is not None:
        ap.error("--job_type=4: give --timeline or --model, not both")
    if args.model is not None and args.framework is None:
        ap.error("--job_type=4 --model needs --framework=5 (ONNX)")
    if args.model is not None and args.framework != 5:
        print(f"aoe: error: --framework={args.framework} is not supported with --model; only 5 (ONNX) is",
              file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", GradientNameWarning)
            plan = gdat_job(cluster_from_args(args), timeline=args.timeline, model=args.model,
                            max_buckets=args.max_buckets, backend=args.backend, soc_version=args.soc_version,
                            input_shape=args.input_shape, dtype=args.dtype, output=args.output,
                            bank=bank_root(args.bank), repeat_tune=repeat_tune_from_env(), seed=args.seed,
                            result_dir=os.environ.get("ASCEND_WORK_PATH") or os.getcwd())
    except (ValueError, KeyError, OSError, BankError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"aoe: error: {msg}", file=sys.stderr)
        return 1
    for w in caught:
        print(f"aoe: warning: {w.message}", file=sys.stderr)
    ref = plan.reference_baseline
    print(f"{len(plan.names)} gradients, {sum(plan.gradient_bytes)} bytes; cluster: {plan.cluster['name']} "
          f"({plan.cluster['ranks']} ranks)")
    if plan.bank_hit:
        print(f"plan served from the knowledge bank {plan.bank_directory}")
    print(f"backward {plan.backward_us:.1f} us; tuned: {plural(len(plan.buckets), 'bucket')}, step end "
          f"{plan.time_us:.1f} us, exposed communication {plan.exposed_us:.1f} us")
    for k, t in plan.ordered_baselines():  # the platform's (or backend's) default first
        print(f"  {k + (' (default)' if k == ref else ''):<25} {plural(len(plan.baseline_buckets[k]), 'bucket'):>12}  "
              f"{t:>12.1f} us  tuned faster by {plan.gain[k] * 100:.2f}%")
    print(f"HCCL set_split_strategy_by_idx({plan.hccl_split_idx})")
    print(f"MindSpore all_reduce_fusion_config={plan.mindspore_fusion_config}")
    for path in (plan.result_file, plan.report_file):
        if path:
            print(f"wrote {path}")
    print(f"GDAT process finished. Performance improved by {plan.improvement * 100:.2f}% (over {ref})")
    return 0


_sigterm = {"received": False}


def _on_sigterm(signum: int, frame: Any) -> None:
    # SIGTERM stops a run the way Ctrl-C does (what is finished is kept and written); only the
    # exit status tells them apart.
    _sigterm["received"] = True
    raise KeyboardInterrupt


# A stop (Ctrl-C, or SIGTERM through _on_sigterm) that Python dropped, waiting to be delivered again.
_lost: dict[str, Any] = {"signum": None, "at": 0.0, "watcher": None, "done": threading.Event()}
_REDELIVER_AFTER_S = 0.01   # first delivery, once the finalizer has returned
_RETRY_AFTER_S = 0.2        # again, if the run has not taken it (it landed somewhere it was dropped)


def _redeliver_lost_interrupt(unraisable: Any, fallback: Any) -> None:
    # A KeyboardInterrupt raised while a finalizer runs (a lock's __del__, a weakref callback) is
    # printed and dropped by Python, and the run would go on as if never stopped.  A watcher thread
    # delivers the signal again, outside the finalizer, until main() has taken it.  The hook itself
    # only records the signal, last: a delivery that landed inside the hook would be dropped too.
    if not issubclass(unraisable.exc_type, KeyboardInterrupt):
        fallback(unraisable)
        return
    watcher = _lost["watcher"]
    if watcher is None or not watcher.is_alive():
        watcher = threading.Thread(target=_redeliver, args=(_lost["done"],), daemon=True)
        _lost["watcher"] = watcher
        watcher.start()
    _lost["at"] = time.monotonic() - _RETRY_AFTER_S + _REDELIVER_AFTER_S
    _lost["signum"] = signal.SIGTERM if _sigterm["received"] else signal.SIGINT


def _redeliver(done: threading.Event) -> None:
    while not done.wait(_REDELIVER_AFTER_S):
        signum = _lost["signum"]
        if signum is not None and time.monotonic() - _lost["at"] >= _RETRY_AFTER_S:
            _lost["at"] = time.monotonic()
            _thread.interrupt_main(signum)


def main(argv: list[str] | None = None) -> int:
    """``aoe``: exit status 0 on success, 1 on an error in the input, 2 on a usage error,
    130 when Ctrl-C stopped the run (what was finished is kept and written), 143 when SIGTERM did."""
    _sigterm["received"] = False
    _lost.update(signum=None, done=threading.Event(), watcher=None)  # a watcher of an earlier run stops by itself
    previous = None
    hook = sys.unraisablehook
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        sys.unraisablehook = lambda u: _redeliver_lost_interrupt(u, hook)
    try:
        status = _aoe(argv)
    except KeyboardInterrupt:
        _lost["signum"] = None  # taken: the watcher stops delivering it
        print("aoe: interrupted; tilings tuned so far are kept in the knowledge bank (run again to resume)",
              file=sys.stderr)
        status = 130
    except BrokenPipeError:
        return _closed_stdout()
    finally:
        _lost["done"].set()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
            sys.unraisablehook = hook
    return 143 if status == 130 and _sigterm["received"] else status


def _closed_stdout() -> int:
    """The reader of our output went away (``aoe ... | head``): stop quietly, as Unix tools do,
    and keep Python from failing again when it flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the closed pipe


def _aoe(argv: list[str] | None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    _check_options(ap, args)
    err = Console(stderr=True, highlight=False)
    if args.job_type == (4,):
        return _gdat_main(ap, args)
    missing = [flag for flag, v in (("--model/-m", args.model), ("--framework/-f", args.framework)) if v is None]
    if missing:
        ap.error(f"the following arguments are required: {', '.join(missing)}")
    if args.framework != 5:
        name = _FRAMEWORKS.get(args.framework, "unknown")
        print(f"aoe: error: --framework={args.framework} ({name}) is not supported; only 5 (ONNX) is",
              file=sys.stderr)
        return 2
    sg = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CoverageWarning)
            warnings.simplefilter("always", TuneOpsWarning)
            common = dict(soc_version=args.soc_version, input_shape=args.input_shape, dtype=args.dtype,
                          bank=bank_root(args.bank), parallel=parallel_from_env(args.parallel),
                          tuning_time_limit=args.tuning_time_limit, seed=args.seed,
                          repeat_tune=repeat_tune_from_env(), output=args.output,
                          result_dir=os.environ.get("ASCEND_WORK_PATH") or os.getcwd(),
                          launch_overhead_us=args.launch_overhead_us,
                          builtin_bank=builtin_dir(args.builtin_bank, os.environ.get("ASCEND_OPP_PATH")),
                          progress=ProgressBar(err) if args.progress_bar else None)
            if args.job_type[0] == 1:
                sg = tune_subgraphs(args.model, optimization_level=args.tune_optimization_level,
                                    nonhomo_split=args.Fnonhomo_split, then_tune_ops=args.job_type == (1, 2),
                                    **common)
                r = sg.opat
            else:
                r = tune_model(args.model, job_type=2,
                               tune_ops=read_tune_ops_file(args.tune_ops_file) if args.tune_ops_file else None,
                               **common)
    except (ValueError, KeyError, OSError, BankError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"aoe: error: {msg}", file=sys.stderr)
        return 1
    shown = set()
    for w in caught:
        if str(w.message) not in shown:  # subgraph then operator tuning warn of the same model
            print(f"aoe: warning: {w.message}", file=sys.stderr)
        shown.add(str(w.message))
    out = Console(highlight=False)
    if sg is not None:
        _print_sgat(out, sg)
    if r is not None:
        _print_opat(out, r)
    if sg is not None and r is not None:
        print(f"{sg.model_name} SGAT + OPAT finished. Performance improved by "
              f"{improvement(sg.baseline_ms, r.tuned_ms) * 100:.2f}% over the fixed fusion rules with default "
              f"tilings ({sg.baseline_ms:.4f} ms -> {r.tuned_ms:.4f} ms)")
    if (sg is not None and sg.interrupted) or (r is not None and r.interrupted):
        print("aoe: interrupted: the results above use what was tuned before Ctrl-C (unfinished tasks keep the "
              "best tiling of their finished rounds, else the default); run again to resume from the knowledge bank",
              file=sys.stderr)
        return 130
    return 0


def _print_outcome(r: JobResult, units: list, what: str) -> None:
    """Model time, bank summary and files written: the same lines for every model-tuning job."""
    s = r.repo_summary
    print(f"model time ({r.times_are}) {r.baseline_ms:.4f} ms -> {r.tuned_ms:.4f} ms")
    print(f"repo summary: total {s['total_num']}, hit {s['repo_hit_num']} (reserved {s['repo_reserved_num']}, "
          f"update {s['repo_update_num']}), add {s['repo_add_num']}, unsatisfied {s['repo_unsatisfied_num']}; "
          f"bank {r.bank_directory}")
    unreached = sum(1 for u in units if u.update_mode == "not reached")
    if unreached:
        print(f"not reached: {unreached} {what} (the run stopped before they were tuned; not in the repo summary)")
    for path in (r.result_file, r.plan_file, r.report_file):
        if path:
            print(f"wrote {path}")


def _ended(r) -> str:
    return "interrupted" if r.interrupted else "finished"


def _print_sgat(out: Console, r) -> None:
    if any(g.changed for g in r.subgraphs):
        out.print(subgraph_table(r, narrow=out.width < 80))
    print(f"model {r.model_name}: {r.baseline_kernels} kernels -> {len(r.kernels)} kernels, "
          f"{len(r.subgraphs)} distinct subgraphs, {r.candidate_kernels} candidate kernels tuned")
    _print_outcome(r, r.subgraphs, "subgraphs")
    print(f"{r.model_name} SGAT process {_ended(r)}. Performance improved by {r.improvement * 100:.2f}%")


def _print_opat(out: Console, r) -> None:
    for t in r.tasks:
        if t.update_mode == "failed":
            print(f"aoe: warning: task {t.key} kept its default tiling: {t.error}", file=sys.stderr)
    if any(t.update_mode in ("add", "update", "reserved") for t in r.tasks):
        out.print(summary_table(r, narrow=out.width < 80))
    print(f"model {r.model_name}: {len(r.kernels)} kernels, {len(r.tasks)} distinct tasks; {r.coverage_text()}")
    print(r.basis_text())
    _print_outcome(r, r.tasks, "tasks")
    if r.start_ms is not None:
        print(f"operator tuning's own gain: {r.stage_improvement * 100:.2f}% (from subgraph tuning's "
              f"{r.start_ms:.4f} ms); the line below is over the fused kernels at their default tilings")
    cov = r.coverage
    print(f"{r.model_name} OPAT process {_ended(r)}. Performance improved by {r.improvement * 100:.2f}% "
          f"(of the modelled part: {cov.get('flops_share', 0) * 100:.1f}% of FLOPs, "
          f"{cov.get('bytes_share', 0) * 100:.1f}% of bytes)")


# --------------------------------------------------------------------------- aoe-bank
def _subgraph_plan_text(kernels: list) -> str:
    """"MatMul workspace_slots=4 | Softmax" for the kernels of a subgraph entry (read defensively:
    a bank may come from elsewhere)."""
    parts = []
    for k in kernels:
        if not isinstance(k, dict):
            continue
        op = str(k.get("task_key", "")).split("(")[0] or "unmodelled"
        policy = k.get("policy") if isinstance(k.get("policy"), dict) else {}
        parts.append(op + "".join(f" {a}={v}" for a, v in sorted(policy.items())))
    return " | ".join(parts)


def _open_bank(args: argparse.Namespace) -> Bank:
    """The bank a show/stats command names: BANK_DIR (whose files must be of --soc_version
    when both are given), or --soc_version under the bank root."""
    if args.bank_dir:
        if not os.path.isdir(args.bank_dir):
            raise BankError(f"{args.bank_dir}: not a bank directory")
        if args.bank:
            raise ValueError("give a bank directory, or --soc_version with --bank ROOT; not both")
        socs = root_socs(args.bank_dir)
        if socs:
            raise BankError(f"{args.bank_dir} is a bank root (banks of {', '.join(socs)}), not one SoC's bank; "
                            f"give {os.path.join(args.bank_dir, socs[0])} or --soc_version {socs[0]} "
                            f"--bank {args.bank_dir}")
        return Bank(args.bank_dir, args.soc_version).load()  # a file of another SoC is an error
    if not args.soc_version:
        raise ValueError("give a bank directory or --soc_version")
    directory = bank_dir(args.soc_version, bank_root(args.bank))
    if args.soc_version not in soc_versions() and not os.path.isdir(directory):
        raise ValueError(f"unknown --soc_version {args.soc_version!r} and no bank at {directory}; "
                         f"known SoCs: {', '.join(soc_versions())}")
    return Bank(directory, args.soc_version).load()


def bank_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="aoe-bank", description="Inspect and merge aoe-native knowledge banks.")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge banks of one SoC into DST")
    m.add_argument("sources", nargs="+", metavar="SRC")
    m.add_argument("-o", "--output", required=True, metavar="DST")
    helps = {"show": "list a bank's entries", "stats": "summarise a bank: entries and gains per operator type"}
    for name in ("show", "stats"):
        p = sub.add_parser(name, help=helps[name])
        p.add_argument("bank_dir", nargs="?", help="bank directory (one SoC)")
        p.add_argument("--soc_version", help="use the configured bank of this SoC")
        p.add_argument("--bank", help="bank root (as aoe --bank)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "show":
            p.add_argument("--op", help="only entries of this op type")
    cann_cli.add_parsers(sub)
    args = ap.parse_args(argv)
    try:
        return _bank_command(args)
    except BrokenPipeError:  # before OSError, which it is
        return _closed_stdout()
    except (BankError, ValueError, OSError) as e:
        print(f"aoe-bank: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _bank_command(args: argparse.Namespace) -> int:
    if args.command in cann_cli.COMMANDS:
        return cann_cli.run(args, bank_root(args.bank))
    if args.command == "merge":
        c = merge_banks(args.sources, args.output)
        print(f"merged {c['source_entries']} entries from {c['sources']} bank(s) into {args.output}: "
              f"{c['stored']} stored, {c['new_keys']} new keys, {c['entries']} entries now")
        return 0
    b = _open_bank(args)
    if args.command == "stats":
        st = b.stats()
        if args.json:
            print(json.dumps(st, indent=1, sort_keys=True))
        else:
            print(f"bank {st['directory']} (SoC {st['soc_version']}): {st['entries']} entries")
            for op, v in st["op_types"].items():
                print(f"  {op:<20} {v['entries']:>6} entries  mean improvement {v['mean_improvement'] * 100:.2f}%")
        return 0
    rows = sorted((k, e) for k, e in b.entries.items() if not args.op or e["op_type"] == args.op)
    if args.json:
        print(json.dumps(dict(rows), indent=1, sort_keys=True))
    else:
        print(f"bank {b.directory} (SoC {b.soc_version}): {len(rows)} entries")
        for k, e in rows:
            tiling = " ".join(f"{n}={v}" for n, v in sorted(e["tiling"].items()))
            if isinstance(e.get("kernels"), list):  # a subgraph plan: its kernels and split policies
                tiling = _subgraph_plan_text(e["kernels"])
            print(f"{k}\n    {e['time_before_us']:.3f} us -> {e['time_after_us']:.3f} us  [{tiling}]  "
                  f"v{e['tool_version']} {e['date']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
