"""Operator tuning of a whole model (OPAT, AOE's job_type 2).

Pipeline: import the model into the graph IR -> partition it into kernels and distinct
tasks -> look each task up in the knowledge bank -> tune the rest through the evaluator
(cost model or measurements), the scheduler spending the budget where the model's time
is -> store each winner in the bank as it comes -> write the outputs.
"""
from __future__ import annotations

import math
import numbers
import os
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..ascend.ops import supported_ops
from ..ascend.platforms import Platform, check_compute_dtype
from ..bank.policy import beats_bank, repo_summary, serves, update_mode
from ..bank.store import Bank, bank_dir, make_entry
from ..graph.ir import Graph
from ..graph import load_graph
from ..graph.partition import Partition, Task, partition
from ..outputs import check_job_dirs, write_model_outputs
from ..tuning import improvement
from .evaluator import CostModelEvaluator, TaskEvaluator, Tiling
from .results import KernelResult, ModelTuneResult, TaskResult
from .scheduler import TaskState, WorkerPool, schedule

if TYPE_CHECKING:  # onnx is a dependency, but only a model file is needed to call this
    import onnx

__all__ = ["tune_model", "tune_torch", "usable_cores", "warn_coverage", "check_device_memory", "CoverageWarning",
           "TuneOpsWarning", "MIN_FLOPS_SHARE"]

# Below this share of the model's FLOPs or bytes in modelled kernels, the job warns.
MIN_FLOPS_SHARE = 0.9


class CoverageWarning(UserWarning):
    """The cost model sees less than MIN_FLOPS_SHARE of the model's FLOPs or bytes."""


class TuneOpsWarning(UserWarning):
    """Some names of tune_ops match no operator of the model (the others are tuned)."""


def check_device_memory(graph: Graph, plat: Platform) -> None:
    """ValueError when a tensor of the model is larger than the SoC's device memory."""
    largest = graph.largest_tensor()
    if largest is not None and plat.hbm_bytes > 0 and largest[1] > plat.hbm_bytes:
        t, size = largest
        raise ValueError(f"{graph.path or graph.name}: tensor {t.name!r} {list(t.shape or ())} ({t.dtype or '?'}) "
                         f"needs {size / 2**30:.3g} GiB, more than the {plat.hbm_bytes / 2**30:.3g} GiB of device "
                         f"memory of {plat.name}")


def warn_coverage(graph: Graph, part: Partition) -> None:
    """Warn (:class:`CoverageWarning`) when the modelled kernels hold too little of the model's FLOPs,
    or when there is no kernel at all (a model of views only: nothing to tune, 0 ms)."""
    if not part.kernels:
        warnings.warn(f"{graph.name}: no kernel to tune (its {part.n_nodes} node(s) are views or unsupported); "
                      "the model time is 0", CoverageWarning, stacklevel=3)
        return
    why = part.coverage.shortfall(MIN_FLOPS_SHARE) if part.coverage is not None else None
    if why is not None:
        warnings.warn(f"{graph.name}: {why}; the improvement is that of the modelled part", CoverageWarning,
                      stacklevel=3)


def check_launch_overhead(launch_overhead_us: float | None) -> None:
    """A launch overhead given by the user must be a finite number of microseconds >= 0 (an
    infinite one would make every plan's time infinite, found only when storing results)."""
    if launch_overhead_us is not None and not (isinstance(launch_overhead_us, numbers.Real)
                                               and math.isfinite(launch_overhead_us) and launch_overhead_us >= 0):
        raise ValueError(f"launch_overhead_us must be a finite number of microseconds >= 0, got {launch_overhead_us!r}")


def usable_cores() -> int:
    """The cores this process may run on (the default number of worker processes)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def tune_model(model: "str | os.PathLike | onnx.ModelProto | Graph", soc_version: str | Platform = "Ascend910B3",
               job_type: int = 2, input_shape: str | dict | None = None, dtype: str = "float16",
               bank: str | os.PathLike | None = None, parallel: int | None = None,
               tuning_time_limit: float | None = None, tune_ops: Iterable[str] | None = None,
               seed: int = 0, evals_per_task: int = 100_000, round_evals: int = 25_000,
               launch_overhead_us: float | None = None, repeat_tune: bool = False,
               output: str | os.PathLike | None = None, result_dir: str | os.PathLike | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None,
               evaluator: TaskEvaluator | None = None, kernels: Partition | None = None,
               start_tilings: Mapping[str, Tiling] | None = None) -> ModelTuneResult:
    """Tune every operator of a model (AOE OPAT) and keep the results in the bank.

    model: ONNX file path, ModelProto, or an already imported :class:`~aoe_native.graph.ir.Graph`.
    soc_version: SoC name or :class:`Platform`.  input_shape: AOE syntax
    "name:1,3,224,224;..." or {name: dims}.  bank: bank root (the SoC's bank is
    bank/<soc>; default ``~/.cache/aoe_native/bank``).  parallel: worker processes
    (default: the usable cores).  tuning_time_limit: seconds for the tuning phase.
    tune_ops: op names/types to tune; others keep their baseline.  evals_per_task: average
    evaluation budget per task (the scheduler moves it between tasks).  repeat_tune:
    re-tune bank hits.  output: directory for the tuned plan JSON and the HTML report.
    result_dir: where to write aoe_result_opat_*.json (None: not written).  progress:
    called with a dict after each finished round.  evaluator: how tasks are measured
    (default: the cost model of `soc_version`; a given evaluator brings its own platform).
    kernels: the graph's kernels and tasks, e.g. ``tune_subgraphs(...).partition`` to tune the
    operators of a subgraph-tuned fusion (default: the fixed fusion rules of graph.partition).
    start_tilings: {task key: tiling} found earlier (subgraph tuning's): tuning starts there, and
    no task ends slower than its start tiling (one faster than the bank's entry re-tunes a hit).

    Ctrl-C stops tuning without losing what is finished: the result (and its files) uses
    each task's best tiling so far, the default for the rest, and ``interrupted`` is True;
    tasks that never started are marked "not reached" (not counted in the repo summary), as
    under a time limit.
    """
    if job_type == 1:
        raise ValueError("job_type 1 (subgraph tuning) is aoe_native.tune_subgraphs(); tune_model runs "
                         "operator tuning (job_type 2)")
    if job_type != 2:
        raise ValueError(f"job_type must be 2 (operator tuning) or 1 (subgraph tuning), got {job_type!r}")
    if evaluator is None:
        evaluator = CostModelEvaluator(soc_version)
    plat = evaluator.platform
    if tuning_time_limit is not None and not tuning_time_limit > 0:
        raise ValueError(f"tuning_time_limit must be > 0 seconds, got {tuning_time_limit}")
    check_launch_overhead(launch_overhead_us)
    if evals_per_task < 1 or round_evals < 1:
        raise ValueError("evals_per_task and round_evals must be >= 1")
    parallel = usable_cores() if parallel is None else int(parallel)
    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, got {parallel}")
    if isinstance(tune_ops, str):
        raise ValueError(f"tune_ops must be a list of op names or types, got the string {tune_ops!r}")
    selected = None if tune_ops is None else set(tune_ops)
    if selected is not None and not all(isinstance(n, str) and n for n in selected):
        raise ValueError(f"tune_ops must hold op names or types (non-empty strings), got {sorted(map(repr, selected))}")
    check_compute_dtype(dtype, plat)
    check_job_dirs(output, result_dir)
    t0 = time.monotonic()

    graph = model if isinstance(model, Graph) else load_graph(model, input_shape)
    check_device_memory(graph, plat)
    part = kernels if kernels is not None else partition(graph, supported_ops(), dtype=dtype, ub_bytes=int(plat.ub))
    warn_coverage(graph, part)
    the_bank = Bank(bank_dir(plat.name, bank), plat.name).load()  # a damaged bank stops here, untouched
    overhead = float(plat.launch_overhead_us) if launch_overhead_us is None else float(launch_overhead_us)

    def is_selected(task: Task) -> bool:
        if selected is None:
            return True
        for ki in task.kernels:
            k = part.kernels[ki]
            if selected & (set(k.nodes) | set(k.onnx_types) | {k.op_type}):
                return True
        return False

    if selected is not None:
        _check_tune_ops(selected, part)

    states: list[TaskState] = []
    # Bank entries as read, by key: a stored result replaces its entry when it beats the entry's
    # time re-estimated now (or the entry no longer helps: stale), not only its recorded time.
    judged: dict[str, dict[str, Any]] = {}
    failed: dict[int, Exception] = {}
    for task in part.tasks:
        st = TaskState(task, [])
        try:  # cheap (one estimate); tells the scheduler where the model's time is
            st.baseline_tiling, st.baseline_us = evaluator.baseline(task)
        except Exception as e:
            st.error = f"{type(e).__name__}: {e}"
            failed[task.index] = e
        entry = the_bank.get(task.key)  # also for tasks not selected: a compiler would use it
        if entry is not None:
            judged[task.key] = entry
            try:  # an entry stored before a knob was added reads it at its default
                entry = {**entry, "tiling": evaluator.complete_tiling(task, entry["tiling"])}
                st.bank_us = evaluator.estimate(task, entry["tiling"])
                st.bank_entry = entry
            except Exception:
                pass  # a tiling the evaluator no longer accepts counts as a miss
            if st.bank_entry is None or (st.baseline_tiling is not None and not serves(st.bank_us, st.baseline_us)):
                st.bank_entry, st.bank_us = None, None
        if entry is not None:  # its tiling is completed above (when the task's model builds)
            st.warm = [entry["tiling"]]
        else:
            st.warm = [e["tiling"] for e in the_bank.nearest(task.op_type, task.inputs, task.dtype, task.attrs,
                                                             exclude=task.key)]
            if st.error is None:
                st.warm = [evaluator.complete_tiling(task, t) for t in st.warm]
        start = (start_tilings or {}).get(task.key)
        if start is not None and st.error is None:
            start = evaluator.complete_tiling(task, start)
            st.warm = [start, *st.warm]
            st.best_tiling, st.best_us = start, evaluator.estimate(task, start)
        states.append(st)

    def wanted(st: TaskState) -> bool:
        if st.bank_entry is None or repeat_tune:
            return True
        return st.best_tiling is not None and st.best_us < st.bank_us  # a start tiling beats the bank's
    to_tune = [st for st in states if is_selected(st.task) and wanted(st)]
    if to_tune:  # results will be stored: a bank that cannot take them is an error now, not after tuning
        the_bank.check_writable()
    for st in states:
        if st not in to_tune:
            st.done = True
            if st.task.index in failed:  # a task nobody tunes must at least be costed
                raise failed[st.task.index]

    def notify(running: list[TaskState], stage: str = "tuning") -> None:
        if progress is None:
            return
        known = [s for s in states if s.baseline_tiling is not None]
        launches = overhead * sum(s.task.occurrences for s in known)
        before = launches + sum(s.task.occurrences * s.baseline_us for s in known)
        after = launches + sum(s.task.occurrences * _fastest(s)[0] for s in known)
        progress({"stage": stage,
                  "tasks_total": len(to_tune),
                  "tasks_started": sum(1 for s in to_tune if s.rounds > 0),
                  "tasks_done": sum(1 for s in to_tune if s.done),
                  "evaluations": sum(s.evaluations for s in to_tune),
                  "current": [f"{s.task.op_type} {'x'.join(map(str, s.task.inputs[0]))}" for s in running],
                  "gain": improvement(before, after),
                  "elapsed_s": time.monotonic() - t0})

    stored: set[str] = set()  # keys this run put into the bank

    def store(st: TaskState) -> None:
        """Keep a task's best tiling if it beats the default and the bank's entry."""
        if beats_bank(st.best_us if st.best_tiling else None, st.baseline_us, st.bank_us):
            t = st.task
            out = the_bank.store([(t.key, make_entry(t.op_type, t.inputs, t.dtype, t.formats, t.attrs,
                                                     st.best_tiling, st.baseline_us, st.best_us,
                                                     evaluations=st.evaluations))],
                                 replace={t.key: judged[t.key]} if t.key in judged else None)
            if out[0].stored:
                stored.add(t.key)

    deadline = None if tuning_time_limit is None else time.monotonic() + tuning_time_limit
    interrupted = schedule(to_tune, evaluator, WorkerPool(min(parallel, max(len(to_tune), 1))), seed,
                           evals_per_task * len(to_tune), round_evals, deadline, store, notify)

    for st in to_tune:  # tasks whose tuning failed keep the default tiling
        st.done = True
        if st.baseline_tiling is None:
            try:
                st.baseline_tiling, st.baseline_us = evaluator.baseline(st.task)
            except Exception as e:
                st.error = st.error or f"{type(e).__name__}: {e}"
                st.baseline_tiling, st.baseline_us = None, 0.0

    def evaluated(st: TaskState) -> bool:
        return st.bank_entry is not None or math.isfinite(st.best_us) or \
            (st.baseline_tiling is not None and math.isfinite(st.baseline_us))
    if to_tune and not interrupted and not any(evaluated(st) for st in to_tune):
        # Nothing was measured: a result of 0 ms (or inf) and 0% would look like one.
        raise RuntimeError(f"no task could be evaluated ({evaluator.name}); the first failed with: "
                           f"{to_tune[0].error or 'every evaluation failed'}")
    notify([], "done")
    result = _assemble(graph, part, states, to_tune, stored, plat.name, dtype, overhead, the_bank, parallel, seed,
                       time.monotonic() - t0, is_selected, evaluator.name)
    result.interrupted = interrupted
    write_model_outputs(result, output=output, result_dir=result_dir)
    return result


def tune_torch(module: Any, example_inputs: Any, soc_version: str | Platform = "Ascend910B3",
               exporter: str = "dynamo", input_names: list[str] | None = None, **options: Any) -> ModelTuneResult:
    """Tune a PyTorch module: export it to ONNX in memory (static shapes: those of
    `example_inputs`, a tensor or a tuple of tensors) and run :func:`tune_model` on it.

    exporter: "dynamo" (default) or "torchscript".  options: every other keyword of
    :func:`tune_model` (bank, parallel, tuning_time_limit, output, result_dir, ...).  torch is
    optional: without it this raises an ImportError that names the extra to install."""
    if "input_shape" in options:
        raise TypeError("tune_torch takes its input shapes from example_inputs; input_shape is not accepted")
    from ..graph.torch_export import export_module  # imports onnx: only when a module is tuned
    return tune_model(export_module(module, example_inputs, exporter, input_names), soc_version, **options)


def _check_tune_ops(selected: set[str], part: Partition) -> None:
    """tune_ops must name something in the model: none matching is an error (nothing would be
    tuned), some not matching a warning (a list shared between models may name other ops)."""
    known: set[str] = set()
    for k in part.kernels:
        known |= set(k.nodes) | set(k.onnx_types) | {k.op_type}
    missing = sorted(selected - known)
    if len(missing) == len(selected):
        types = sorted({t for k in part.kernels for t in k.onnx_types})
        raise ValueError(f"tune_ops {missing} match no operator of the model by node name or type "
                         f"(its tunable op types: {', '.join(types) or 'none'})")
    if missing:
        warnings.warn(TuneOpsWarning(f"tune_ops: {', '.join(missing)} match no operator of the model"), stacklevel=3)


def _fastest(st: TaskState, tuned: bool = True) -> tuple[float, Tiling | None]:
    """A task's fastest known tiling and its time: the default, the bank's, or (`tuned`) the
    best found or started from; on a tie the first of these."""
    known = [(st.baseline_us, st.baseline_tiling)]
    if st.bank_entry is not None:
        known.append((st.bank_us, st.bank_entry["tiling"]))
    if tuned and st.best_tiling is not None:
        known.append((st.best_us, st.best_tiling))
    return min(known, key=lambda k: k[0])


def _assemble(graph: Graph, part: Partition, states: list[TaskState], to_tune: list[TaskState], stored: set[str],
              soc: str, dtype: str, overhead: float, the_bank: Bank, parallel: int, seed: int, elapsed: float,
              is_selected: Callable[[Task], bool], evaluator_name: str) -> ModelTuneResult:
    tuned_set = {id(s) for s in to_tune}
    tasks: list[TaskResult] = []
    outcomes: list[tuple[str, bool]] = []
    for st in states:
        t = st.task
        selected = is_selected(t)
        hit = st.bank_entry is not None
        tuned = id(st) in tuned_set
        final, tiling = _fastest(st, tuned=selected)  # what the plan runs
        if not selected:  # not tuned; runs with the bank's tiling if it has a faster one
            mode = "skipped"
        elif st.error is not None and st.best_tiling is None and not hit:
            mode = "failed"
        elif tuned and st.rounds == 0 and not hit:  # Ctrl-C or the time limit came before it started
            mode = "not reached"
        else:
            mode = update_mode(hit, tuned, t.key in stored)
        if selected and mode not in ("failed", "not reached"):
            outcomes.append((mode, hit))
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
                           kernels, unsupported, repo_summary(outcomes), the_bank.directory, part.n_nodes,
                           part.n_view_nodes, parallel, seed, evaluator_name,
                           part.coverage.to_dict() if part.coverage is not None else {})
