"""Operator tuning of a whole model (OPAT, AOE's job_type 2).

Pipeline: import the ONNX graph -> partition it into kernels and distinct tasks -> look each
task up in the knowledge bank -> tune the rest with the cost model in parallel processes,
spending the budget where the model's time is -> store the winners in the bank -> report.

Scheduling follows Ansor's task scheduler (Zheng et al., OSDI 2020, §6): tuning proceeds in
rounds; after a first round for every task, each round goes to the tasks with the largest
estimated gradient of model time per evaluation, occurrences x (recent gain per evaluation,
and the remaining gap to the roofline bound per evaluation spent so far).  Rounds are
synchronous, so the allocation, and hence the result, depends only on the seed.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import time
import zlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np

from .bank import Bank, bank_dir, make_entry

if TYPE_CHECKING:  # onnx is imported only when a model is tuned, to keep `import aoe_native` light
    import onnx

    from .partition import Partition, Task

__all__ = ["ModelTuneResult", "TaskResult", "KernelResult", "tune_model", "tune_task", "default_parallel",
           "DEFAULT_LAUNCH_OVERHEAD_US"]

# Per-kernel launch cost added to model time when the platform table gives none.  An
# assumption of this tool (a few microseconds is the usual order for an accelerator
# kernel launch), not a measured Ascend figure; pass launch_overhead_us to change it.
DEFAULT_LAUNCH_OVERHEAD_US = 3.0


def default_parallel() -> int:
    """Worker processes: TE_PARALLEL_COMPILER if set (as AOE), else the usable cores."""
    env = os.environ.get("TE_PARALLEL_COMPILER")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"TE_PARALLEL_COMPILER={env!r} is not an integer") from None
        if n < 1:
            raise ValueError(f"TE_PARALLEL_COMPILER={n} must be >= 1")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def _repeat_tune() -> bool:
    return os.environ.get("REPEAT_TUNE", "False").strip().lower() in ("1", "true", "yes", "on")


# --------------------------------------------------------------------------- the tuning call
def _task_args(task: "Task") -> dict[str, Any]:
    return {"op_type": task.op_type, "inputs": task.inputs, "dtype": task.dtype, "attrs": task.attrs}


def tune_task(task: dict[str, Any], soc_version: str, max_evals: int, seed: int,
              initial_tilings: list[dict[str, int]] | None = None, time_limit: float | None = None) -> dict[str, Any]:
    """Tune one task with the cost model (runs in a worker process); plain-data result."""
    import aoe_native
    if initial_tilings:
        initial_tilings = nearest_valid_tilings(task, soc_version, initial_tilings)
    r = aoe_native.tune_op(task["op_type"], task["inputs"], dtype=task["dtype"], soc_version=soc_version,
                           attrs=task["attrs"] or None, max_evals=max_evals, time_limit=time_limit, seed=seed,
                           initial_tilings=initial_tilings or None)
    return {"tiling": {k: int(v) for k, v in r.tiling.items()}, "time_us": float(r.time_us),
            "baseline_tiling": {k: int(v) for k, v in r.baseline_tiling.items()},
            "baseline_us": float(r.baseline_us), "roofline_us": float(r.roofline_us),
            "evaluations": int(r.evaluations), "space_size": int(r.space_size),
            "trace": np.asarray(r.trace, dtype=np.float64)}


def nearest_valid_tilings(task: dict[str, Any], soc_version: str,
                          tilings: list[dict[str, int]]) -> list[dict[str, int]]:
    """Map tilings found for other shapes onto this task's space: each becomes the valid
    tiling closest to it (L1 distance of log2(1 + value) over the parameters), since a
    neighbour's block sizes often break this shape's limits by a step or two."""
    import aoe_native
    space = aoe_native.tiling_space(task["op_type"], task["inputs"], task["dtype"], soc_version,
                                    attrs=task["attrs"] or None)
    names = list(space.param_names)
    out: list[dict[str, int]] = []
    logs = None
    for t in tilings:
        if set(t) != set(names):
            continue  # a tiling of another parameterisation says nothing here
        if space.index(dict(t)) is not None:  # already valid: as is
            if t not in out:
                out.append(dict(t))
            continue
        if logs is None:  # materialise the space only when a tiling needs moving
            configs = space.configs()
            if len(configs) == 0:
                break
            logs = np.log2(1.0 + np.maximum(configs, 0).astype(np.float64))
        want = np.log2(1.0 + np.maximum(np.array([t[n] for n in names], dtype=np.float64), 0))
        row = configs[int(np.argmin(np.abs(logs - want).sum(axis=1)))]
        cfg = {n: int(v) for n, v in zip(names, row)}
        if cfg not in out:
            out.append(cfg)
    return out


def _round_job(args: tuple) -> tuple[int, dict[str, Any] | None, str | None]:
    index, task, soc, max_evals, seed, initial, time_limit = args
    try:
        return index, tune_task(task, soc, max_evals, seed, initial, time_limit), None
    except Exception as e:  # a task that cannot be tuned keeps its baseline; the run goes on
        return index, None, f"{type(e).__name__}: {e}"


def _baseline(task: "Task", soc: str) -> tuple[dict[str, int], float]:
    import aoe_native
    a = _task_args(task)
    tiling = aoe_native.baseline_tiling(a["op_type"], a["inputs"], a["dtype"], soc, attrs=a["attrs"] or None)
    est = aoe_native.estimate(a["op_type"], a["inputs"], a["dtype"], soc, tiling, attrs=a["attrs"] or None)
    return {k: int(v) for k, v in tiling.items()}, float(est.time_us)


def _estimate(task: "Task", soc: str, tiling: dict[str, int]) -> float:
    import aoe_native
    a = _task_args(task)
    return float(aoe_native.estimate(a["op_type"], a["inputs"], a["dtype"], soc, tiling,
                                     attrs=a["attrs"] or None).time_us)


# --------------------------------------------------------------------------- results
@dataclass
class TaskResult:
    """A distinct task: what it is, how often it occurs, and what tuning gave."""
    index: int
    key: str
    op_type: str
    inputs: list[list[int]]
    dtype: str
    formats: list[str]
    attrs: dict[str, Any]
    occurrences: int
    node_names: list[str]          # nodes of the task's first kernel
    baseline_tiling: dict[str, int] | None
    baseline_us: float
    tiling: dict[str, int] | None
    time_us: float                 # after tuning (never worse than the baseline)
    update_mode: str               # add / update / reserved / unsatisfied / skipped / failed
    bank_hit: bool
    tuned: bool
    warm_started: bool
    evaluations: int
    space_size: int
    roofline_us: float
    trace: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def improvement(self) -> float:
        """AOE's performance improvement: before / after - 1."""
        return self.baseline_us / self.time_us - 1.0 if self.time_us > 0 else 0.0


@dataclass
class KernelResult:
    index: int
    nodes: list[str]
    onnx_types: list[str]
    op_type: str
    inputs: list[list[int]]
    attrs: dict[str, Any]
    output_shape: list[int]
    task: int
    baseline_us: float
    time_us: float
    tiling: dict[str, int] | None


@dataclass
class ModelTuneResult:
    """Outcome of :func:`tune_model`; `aoe_result()` gives AOE's result-file structure."""
    model_name: str
    model_path: str | None
    soc_version: str
    dtype: str
    job_type: int
    baseline_ms: float
    tuned_ms: float
    launch_overhead_us: float
    tuning_time_s: float
    tasks: list[TaskResult]
    kernels: list[KernelResult]
    unsupported: list[dict[str, Any]]
    repo_summary: dict[str, int]
    bank_directory: str
    n_nodes: int
    n_view_nodes: int
    parallel: int
    seed: int
    result_file: str | None = None
    plan_file: str | None = None
    report_file: str | None = None

    @property
    def improvement(self) -> float:
        """AOE's model performance improvement: baseline / tuned - 1."""
        return self.baseline_ms / self.tuned_ms - 1.0 if self.tuned_ms > 0 else 0.0

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.tuned_ms if self.tuned_ms > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["improvement"] = self.improvement
        return d

    def aoe_result(self) -> list[dict[str, Any]]:
        from .results import aoe_result
        return aoe_result(self)


# --------------------------------------------------------------------------- scheduling
@dataclass
class _State:
    task: "Task"
    warm: list[dict[str, int]]
    bank_entry: dict[str, Any] | None
    bank_us: float | None
    best_tiling: dict[str, int] | None = None
    best_us: float = float("inf")
    baseline_tiling: dict[str, int] | None = None
    baseline_us: float = float("inf")
    roofline_us: float = 0.0
    evaluations: int = 0
    space_size: int = 0
    trace: list[float] = field(default_factory=list)
    last_gain: float = 0.0
    last_evals: int = 1
    stagnant: int = 0
    rounds: int = 0
    done: bool = False
    error: str | None = None

    def priority(self) -> float:
        if self.done or self.rounds == 0:
            return 0.0
        backward = self.last_gain / max(self.last_evals, 1)
        forward = max(self.best_us - self.roofline_us, 0.0) / max(self.evaluations, 1)
        return self.task.occurrences * (0.5 * backward + 0.5 * forward)


def _apply_round(st: _State, res: dict[str, Any] | None, err: str | None) -> None:
    st.rounds += 1
    if res is None:
        st.error, st.done = err, True
        return
    if st.baseline_tiling is None:
        st.baseline_tiling, st.baseline_us = res["baseline_tiling"], res["baseline_us"]
    st.roofline_us = res["roofline_us"]
    st.space_size = res["space_size"]
    prev = st.best_us
    if res["time_us"] < st.best_us:
        st.best_us, st.best_tiling = res["time_us"], res["tiling"]
    trace = np.minimum.accumulate(np.minimum(np.asarray(res["trace"], dtype=np.float64), prev))
    st.trace.extend(trace.tolist())
    st.evaluations += res["evaluations"]
    st.last_evals = max(res["evaluations"], 1)
    st.last_gain = max((prev if prev != float("inf") else st.baseline_us) - st.best_us, 0.0)
    st.stagnant = st.stagnant + 1 if st.last_gain <= 1e-9 * max(st.best_us, 1.0) else 0
    if res["evaluations"] >= st.space_size or st.stagnant >= 2 or st.best_us <= st.roofline_us * 1.0001:
        st.done = True


def _seed_for(seed: int, key: str, round_no: int) -> int:
    return (zlib.crc32(f"{seed}|{round_no}|{key}".encode()) & 0x7FFFFFFF)


class _Runner:
    """Runs rounds of task tuning in this process or a pool of worker processes."""

    def __init__(self, parallel: int):
        self.parallel = parallel
        self.pool: cf.ProcessPoolExecutor | None = None

    def run(self, jobs: list[tuple]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
        """Yield each job's result as soon as it is finished (completion order)."""
        if self.parallel <= 1 or len(jobs) <= 1:
            for j in jobs:
                yield _round_job(j)
            return
        if self.pool is None:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
            self.pool = cf.ProcessPoolExecutor(max_workers=self.parallel, mp_context=ctx)
        futures = [self.pool.submit(_round_job, j) for j in jobs]
        try:
            for f in cf.as_completed(futures):
                yield f.result()
        except cf.process.BrokenProcessPool as e:
            raise RuntimeError(f"a tuning worker process died ({e}); results stored so far are in the bank") from None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


# --------------------------------------------------------------------------- the job
def _read_tune_ops(path: str) -> set[str]:
    """--tune_ops_file: JSON {"tune_ops_name": [...], "tune_ops_type": [...]} (AOE's config
    file) or plain text, one op name or type per line (# comments allowed)."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"--tune_ops_file {path}: cannot read ({e.strerror})") from None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ValueError(f"--tune_ops_file {path}: invalid JSON ({e})") from None
        names = list(doc.get("tune_ops_name", [])) + list(doc.get("tune_ops_type", []))
        if not isinstance(doc, dict) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"--tune_ops_file {path}: expected string lists tune_ops_name / tune_ops_type")
    else:
        names = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    out = {n for n in names if n}
    if not out:
        raise ValueError(f"--tune_ops_file {path}: lists no operator")
    return out


def _launch_overhead(soc: str) -> float:
    import aoe_native
    try:
        plat = aoe_native.platform(soc)
    except Exception:
        return DEFAULT_LAUNCH_OVERHEAD_US
    v = plat.get("launch_overhead_us") if isinstance(plat, dict) else None
    return float(v) if v is not None else DEFAULT_LAUNCH_OVERHEAD_US


def _ub_bytes(soc: str) -> int:
    import aoe_native
    plat = aoe_native.platform(soc)
    for k in ("ub_size", "ub_bytes", "UB", "ub"):
        if k in plat:
            return int(plat[k])
    raise KeyError(f"platform({soc!r}) has no UB size")


def _schedule(to_tune: list[_State], states: list[_State], runner: _Runner, the_bank: Bank, soc_version: str,
              seed: int, budget: int, round_evals: int, deadline: float | None,
              notify: Callable[[str, list[_State]], None]) -> None:
    """Ansor-style rounds: every task once (heaviest first), then the tasks with the largest
    priority (see _State.priority), `runner.parallel` at a time, until the evaluation budget,
    the deadline or every task is spent.  Each finished job's winner is stored at once."""
    try:
        round_no = 0
        # First round: every task, heaviest first (occurrences x default time), so that a
        # time limit cuts the light ones.
        pending = sorted(to_tune, key=lambda s: (-s.task.occurrences * (s.baseline_us if s.baseline_tiling
                                                                          else 0.0), s.task.index))
        while True:
            if round_no == 0:
                batch = pending[:]
            else:
                cands = sorted((s for s in to_tune if not s.done and s.priority() > 0),
                               key=lambda s: (-s.priority(), s.task.index))
                batch = cands[:runner.parallel]
            if not batch or (round_no > 0 and budget <= 0):
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if round_no > 0 and remaining is not None and remaining <= 0:
                break
            per_job_time = None
            if remaining is not None:
                waves = -(-len(batch) // runner.parallel)
                per_job_time = max(remaining / waves, 0.05)
            jobs = [(s.task.index, _task_args(s.task), soc_version, round_evals,
                     _seed_for(seed, s.task.key, round_no),
                     (s.warm if round_no == 0 else [s.best_tiling] if s.best_tiling else []), per_job_time)
                    for s in batch]
            running = list(batch)
            notify("tuning", running)
            for index, res, err in runner.run(jobs):
                _apply_round(states[index], res, err)
                budget -= res["evaluations"] if res else 0
                _store(the_bank, states[index])  # at once: a kill loses only the tasks still running
                running.remove(states[index])
                notify("tuning", running)
            round_no += 1
    finally:
        runner.close()


def tune_model(model_or_path: "str | os.PathLike | onnx.ModelProto", soc_version: str = "Ascend910B3",
               job_type: int = 2, input_shape: str | dict | None = None, dtype: str = "float16",
               bank: str | os.PathLike | None = None, parallel: int | None = None,
               tuning_time_limit: float | None = None, tune_ops: Iterable[str] | str | None = None,
               seed: int = 0, evals_per_task: int = 100_000, round_evals: int = 25_000,
               launch_overhead_us: float | None = None, repeat_tune: bool | None = None,
               output: str | os.PathLike | None = None, result_dir: str | os.PathLike | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None) -> ModelTuneResult:
    """Tune every operator of an ONNX model (AOE OPAT) and keep the results in the bank.

    model_or_path: ONNX file path or ModelProto.  input_shape: AOE syntax "name:1,3,224,224;..."
    or {name: dims}.  bank: bank root (the SoC's bank is bank/<soc_version>); default from
    $TUNE_BANK_PATH or ~/.cache/aoe_native/bank.  parallel: worker processes (default
    $TE_PARALLEL_COMPILER or the cores).  tuning_time_limit: seconds for the tuning phase.
    tune_ops: op names/types to tune (or a --tune_ops_file path); others keep their baseline.
    evals_per_task: average evaluation budget per task (the scheduler moves it between tasks).
    repeat_tune: re-tune bank hits (default: $REPEAT_TUNE).  output: directory for the tuned
    plan JSON and the HTML report.  result_dir: where to write aoe_result_opat_*.json
    (None: not written).  progress: called with a dict after each round.
    """
    if job_type == 1:
        raise NotImplementedError("job_type 1 (subgraph tuning, SGAT) is planned but not implemented yet; "
                                  "use job_type 2 (operator tuning)")
    if job_type != 2:
        raise ValueError(f"job_type must be 2 (operator tuning) or 1 (subgraph tuning), got {job_type!r}")
    import aoe_native

    from .onnx_import import load_graph
    from .partition import partition
    if soc_version not in aoe_native.soc_versions():
        raise ValueError(f"unknown soc_version {soc_version!r}; known: {', '.join(aoe_native.soc_versions())}")
    if tuning_time_limit is not None and not tuning_time_limit > 0:
        raise ValueError(f"tuning_time_limit must be > 0 seconds, got {tuning_time_limit}")
    if launch_overhead_us is not None and not launch_overhead_us >= 0:
        raise ValueError(f"launch_overhead_us must be >= 0, got {launch_overhead_us}")
    if evals_per_task < 1 or round_evals < 1:
        raise ValueError("evals_per_task and round_evals must be >= 1")
    parallel = default_parallel() if parallel is None else int(parallel)
    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, got {parallel}")
    repeat = _repeat_tune() if repeat_tune is None else bool(repeat_tune)
    selected: set[str] | None
    if isinstance(tune_ops, (str, os.PathLike)):
        selected = _read_tune_ops(os.fspath(tune_ops))
    else:
        selected = None if tune_ops is None else set(tune_ops)
    t0 = time.monotonic()

    graph = load_graph(model_or_path, input_shape)
    part = partition(graph, aoe_native.supported_ops(), dtype=dtype, ub_bytes=_ub_bytes(soc_version))
    the_bank = Bank(bank_dir(soc_version, bank), soc_version).load()  # a damaged bank stops here, untouched
    overhead = _launch_overhead(soc_version) if launch_overhead_us is None else float(launch_overhead_us)

    def is_selected(task: "Task") -> bool:
        if selected is None:
            return True
        for ki in task.kernels:
            k = part.kernels[ki]
            if selected & (set(k.nodes) | set(k.onnx_types) | {k.op_type}):
                return True
        return False

    states: list[_State] = []
    for task in part.tasks:
        entry = the_bank.get(task.key)  # also for tasks not selected: a compiler would use it
        bank_us = None
        if entry is not None:
            try:
                bank_us = _estimate(task, soc_version, entry["tiling"])
            except Exception:
                entry = None  # a tiling the cost model no longer accepts counts as a miss
        warm = [] if entry is not None else [e["tiling"] for e in the_bank.nearest(
            task.op_type, task.inputs, task.dtype, task.attrs, exclude=task.key)]
        if entry is not None:
            warm = [entry["tiling"]]
        states.append(_State(task, warm, entry, bank_us))

    to_tune = [st for st in states if is_selected(st.task) and (st.bank_entry is None or repeat)]
    for st in states:
        if st not in to_tune:
            st.done = True
        try:  # cheap (one estimate); tells the scheduler where the model's time is
            st.baseline_tiling, st.baseline_us = _baseline(st.task, soc_version)
        except Exception as e:
            if st not in to_tune:
                raise
            st.error = f"{type(e).__name__}: {e}"

    def notify(stage: str, current: list[_State]) -> None:
        if progress is None:
            return
        known = [s for s in states if s.baseline_tiling is not None]
        launches = overhead * sum(s.task.occurrences for s in known)
        before = launches + sum(s.task.occurrences * s.baseline_us for s in known)
        after = launches + sum(s.task.occurrences * _final_time(s) for s in known)
        progress({"stage": stage, "tasks_total": len(to_tune),
                  "tasks_done": sum(1 for s in to_tune if s.rounds > 0),
                  "current": [f"{s.task.op_type} {'x'.join(map(str, s.task.inputs[0]))}" for s in current],
                  "gain": before / after - 1.0 if after > 0 else 0.0,
                  "elapsed_s": time.monotonic() - t0})

    deadline = None if tuning_time_limit is None else time.monotonic() + tuning_time_limit
    _schedule(to_tune, states, _Runner(min(parallel, max(len(to_tune), 1))), the_bank, soc_version, seed,
              evals_per_task * len(to_tune), round_evals, deadline, notify)

    for st in to_tune:  # tasks whose tuning failed keep the default tiling
        if st.baseline_tiling is None:
            try:
                st.baseline_tiling, st.baseline_us = _baseline(st.task, soc_version)
            except Exception as e:
                st.error = st.error or f"{type(e).__name__}: {e}"
                st.baseline_tiling, st.baseline_us = None, 0.0
    notify("done", [])
    result = _assemble(graph, part, states, to_tune, soc_version, dtype, overhead, the_bank, parallel, seed,
                       time.monotonic() - t0, is_selected)
    from .results import write_outputs
    write_outputs(result, output=output, result_dir=result_dir)
    return result


def _final_time(st: _State) -> float:
    """Time of a task after tuning: the best of bank, tuning and baseline."""
    times = [st.baseline_us]
    if st.best_tiling is not None:
        times.append(st.best_us)
    if st.bank_us is not None:
        times.append(st.bank_us)
    return min(times)


def _beats_bank(st: _State) -> bool:
    return st.best_tiling is not None and st.best_us < st.baseline_us and \
        (st.bank_us is None or st.best_us < st.bank_us)


def _store(the_bank: Bank, st: _State) -> None:
    """Store a task's best tiling if it beats the baseline and the bank's entry."""
    if _beats_bank(st):
        t = st.task
        the_bank.store([(t.key, make_entry(t.op_type, t.inputs, t.dtype, t.formats, t.attrs, st.best_tiling,
                                           st.baseline_us, st.best_us, evaluations=st.evaluations))])


def _assemble(graph, part: "Partition", states: list[_State], to_tune: list[_State], soc: str, dtype: str,
              overhead: float, the_bank: Bank, parallel: int, seed: int, elapsed: float,
              is_selected: Callable[["Task"], bool]) -> ModelTuneResult:
    tuned_set = {id(s) for s in to_tune}
    tasks: list[TaskResult] = []
    summary = {"repo_add_num": 0, "repo_hit_num": 0, "repo_reserved_num": 0, "repo_unsatisfied_num": 0,
               "repo_update_num": 0, "total_num": 0}
    for st in states:
        t = st.task
        selected = is_selected(t)
        hit = st.bank_entry is not None
        tuned = id(st) in tuned_set
        final = _final_time(st)
        if not selected:  # not tuned; runs with the bank's tiling if it has a faster one
            mode = "skipped"
            tiling = st.bank_entry["tiling"] if hit and st.bank_us < st.baseline_us else st.baseline_tiling
        elif st.error is not None and st.best_tiling is None and not hit:
            mode, tiling = "failed", st.baseline_tiling
        elif hit:
            # AOE: a hit is "update" when re-tuning (REPEAT_TUNE) replaced the entry, else "reserved".
            mode = "update" if tuned and _beats_bank(st) else "reserved"
            if mode == "update":
                tiling = st.best_tiling
            elif st.bank_us <= st.baseline_us:
                tiling = st.bank_entry["tiling"]
            else:  # the cost model now prefers the default tiling over the kept entry
                tiling = st.baseline_tiling
        elif _beats_bank(st):
            mode, tiling = "add", st.best_tiling
        else:
            mode, tiling = "unsatisfied", st.baseline_tiling
        if tiling == st.baseline_tiling:
            final = st.baseline_us
        if selected and mode != "failed":
            summary["total_num"] += 1
            summary["repo_hit_num"] += hit
            key = {"add": "repo_add_num", "update": "repo_update_num", "reserved": "repo_reserved_num",
                   "unsatisfied": "repo_unsatisfied_num"}[mode]
            summary[key] += 1
        first = part.kernels[t.kernels[0]]
        tasks.append(TaskResult(t.index, t.key, t.op_type, t.inputs, t.dtype, t.formats, t.attrs, t.occurrences,
                                first.nodes, st.baseline_tiling, st.baseline_us, tiling, final, mode, hit, tuned,
                                bool(st.warm) and not hit and tuned, st.evaluations, st.space_size, st.roofline_us,
                                st.trace, st.error))
    kernels = [KernelResult(k.index, k.nodes, k.onnx_types, k.op_type, k.inputs, k.attrs, k.output_shape, k.task,
                            tasks[k.task].baseline_us, tasks[k.task].time_us, tasks[k.task].tiling)
               for k in part.kernels]
    n = len(kernels)
    baseline_ms = (sum(k.baseline_us for k in kernels) + n * overhead) / 1000.0
    tuned_ms = (sum(k.time_us for k in kernels) + n * overhead) / 1000.0
    unsupported = [{"op_type": u.onnx_type, "count": u.count, "share": u.share, "reason": u.reason,
                    "nodes": u.nodes} for u in part.unsupported]
    return ModelTuneResult(graph.name, graph.path, soc, dtype, 2, baseline_ms, tuned_ms, overhead, elapsed, tasks,
                           kernels, unsupported, summary, the_bank.directory, part.n_nodes, part.n_view_nodes,
                           parallel, seed)
