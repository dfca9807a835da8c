"""Operator tuning of a whole model (OPAT, AOE's job_type 2).

Pipeline: import the model into the graph IR -> partition it into kernels and distinct
tasks -> look each task up in the knowledge bank -> tune the rest through the evaluator
(cost model or measurements), the scheduler spending the budget where the model's time
is -> store each winner in the bank as it comes -> write the outputs.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..ascend.ops import supported_ops
from ..ascend.platforms import DEFAULT_SOC, Platform
from ..bank.policy import beats_bank, repo_summary, serves, update_mode
from ..bank.store import BankError, make_entry
from ..cann import CannBankWarning, builtin_lookup, store_tuned
from ..graph.ir import Graph
from ..graph.partition import Partition, Task, partition
from ..outputs import write_model_outputs
from ..results import KernelResult, ModelTuneResult, TaskResult
from ..tuning import improvement
from .evaluator import TaskEvaluator, Tiling
from .scheduler import TaskState, WorkerPool, schedule
from .setup import JobSetup, check_positive_int, prepare_job, unsupported_summary, warn_coverage

if TYPE_CHECKING:  # onnx is a dependency, but only a model file is needed to call this
    import onnx

__all__ = ["tune_model", "tune_torch", "TuneOpsWarning"]


# What the "before" of a task is when CANN's built-in bank holds it (beside ops.baseline_kind's kinds).
BUILTIN_BANK = "built-in bank"


class TuneOpsWarning(UserWarning):
    """Some names of tune_ops match no operator of the model (the others are tuned)."""


def tune_model(model: "str | os.PathLike | onnx.ModelProto | Graph", soc_version: str | Platform = DEFAULT_SOC, *,
               job_type: int = 2, input_shape: str | dict | None = None, dtype: str = "float16",
               bank: str | os.PathLike | None = None, parallel: int | None = None,
               tuning_time_limit: float | None = None, tune_ops: Iterable[str] | None = None,
               seed: int = 0, evals_per_task: int = 100_000, round_evals: int = 25_000,
               launch_overhead_us: float | None = None, repeat_tune: bool = False,
               output: str | os.PathLike | None = None, result_dir: str | os.PathLike | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None,
               evaluator: TaskEvaluator | None = None, kernels: Partition | None = None,
               start_tilings: Mapping[str, Tiling] | None = None, start_ms: float | None = None,
               builtin_bank: str | os.PathLike | None = None) -> ModelTuneResult:
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
    start_ms: the model time the earlier stage ended with (recorded in the result, so outputs
    show this stage's own gain beside the gain over the default tilings).  builtin_bank: CANN's
    built-in bank root (``<opp>/built-in/data/op``): a task found there runs CANN's shipped tiling
    without tuning, so that is its baseline, and it counts as a bank hit unless `repeat_tune`.
    A tuned MatMul that CANN's MatMulV3 runs is also written where CANN reads it
    (:func:`aoe_native.cann.store_tuned`, under the same bank root).

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
    evals_per_task = check_positive_int("evals_per_task", evals_per_task)
    round_evals = check_positive_int("round_evals", round_evals)
    selected = _selection(tune_ops)
    job = prepare_job(model, soc_version, evaluator=evaluator, input_shape=input_shape, dtype=dtype, bank=bank,
                      parallel=parallel, tuning_time_limit=tuning_time_limit, launch_overhead_us=launch_overhead_us,
                      output=output, result_dir=result_dir)
    part = kernels if kernels is not None else partition(job.graph, supported_ops(), dtype=dtype,
                                                         ub_bytes=int(job.platform.ub))
    warn_coverage(job.graph, part)
    if selected is not None:
        _check_tune_ops(selected, part)
    run = _OperatorTuning(job, part, selected, progress, builtin_bank)
    run.look_up(start_tilings)
    to_tune = run.choose(repeat_tune)
    interrupted = schedule(to_tune, job.evaluator, WorkerPool(min(job.parallel, max(len(to_tune), 1))), seed=seed,
                           budget=evals_per_task * len(to_tune), round_evals=round_evals, deadline=job.deadline,
                           on_result=run.store, notify=run.notify)
    run.finish(interrupted)
    result = run.assemble(dtype, seed)
    result.interrupted, result.start_ms = interrupted, start_ms
    write_model_outputs(result, output=output, result_dir=result_dir)
    return result


def _selection(tune_ops: Iterable[str] | None) -> set[str] | None:
    """tune_ops as a set of names (None: every operator)."""
    if isinstance(tune_ops, str):
        raise ValueError(f"tune_ops must be a list of op names or types, got the string {tune_ops!r}")
    selected = None if tune_ops is None else set(tune_ops)
    if selected is not None and not all(isinstance(n, str) and n for n in selected):
        raise ValueError(f"tune_ops must hold op names or types (non-empty strings), got {sorted(map(repr, selected))}")
    return selected


class _OperatorTuning:
    """One operator-tuning run: each task's state from the bank through the scheduler's rounds
    (stored as they finish) to the result."""

    def __init__(self, job: JobSetup, part: Partition, selected: set[str] | None,
                 progress: Callable[[dict[str, Any]], None] | None, builtin_bank: str | os.PathLike | None) -> None:
        self.job, self.part, self.selected, self.progress = job, part, selected, progress
        self.builtin_bank = builtin_bank
        self.states: list[TaskState] = []
        self.to_tune: list[TaskState] = []
        # Bank entries as read, by key: a stored result replaces its entry when it beats the entry's
        # time re-estimated now (or the entry no longer helps: stale), not only its recorded time.
        self.judged: dict[str, dict[str, Any]] = {}
        self.failed: dict[int, Exception] = {}
        self.stored: set[str] = set()  # keys this run put into the bank

    def is_selected(self, task: Task) -> bool:
        if self.selected is None:
            return True
        for ki in task.kernels:
            k = self.part.kernels[ki]
            if self.selected & (set(k.nodes) | set(k.onnx_types) | {k.op_type}):
                return True
        return False

    def look_up(self, start_tilings: Mapping[str, Tiling] | None) -> None:
        """Each task's default, its bank entry (served when it still beats the default) and the
        tilings its search starts from."""
        evaluator, the_bank = self.job.evaluator, self.job.bank
        for task in self.part.tasks:
            st = TaskState(task, [])
            try:  # cheap (one estimate); tells the scheduler where the model's time is
                st.baseline_tiling, st.baseline_us = evaluator.baseline(task)
                self._builtin_baseline(st)
            except Exception as e:
                st.error = f"{type(e).__name__}: {e}"
                self.failed[task.index] = e
            entry = the_bank.get(task.key)  # also for tasks not selected: a compiler would use it
            if entry is not None:
                self.judged[task.key] = entry
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
            self.states.append(st)

    def _builtin_baseline(self, st: TaskState) -> None:
        """A task CANN's built-in bank holds runs that tiling without tuning: it is the baseline."""
        t = st.task
        found = builtin_lookup(self.builtin_bank, self.job.platform.name, int(self.job.platform.cube_cores),
                               t.op_type, t.inputs, t.dtype, t.attrs, t.formats)
        if found is not None and found.tiling is not None:
            tiling = self.job.evaluator.complete_tiling(t, found.tiling)
            st.baseline_tiling, st.baseline_us = tiling, self.job.evaluator.estimate(t, tiling)
            st.builtin = True

    def choose(self, repeat_tune: bool) -> list[TaskState]:
        """The tasks to tune: selected, and not served by the bank or CANN's built-in bank (unless
        re-tuning)."""
        def wanted(st: TaskState) -> bool:
            if st.builtin and st.bank_entry is None and not repeat_tune:
                return st.best_tiling is not None and st.best_us < st.baseline_us
            if st.bank_entry is None or repeat_tune:
                return True
            return st.best_tiling is not None and st.best_us < st.bank_us  # a start tiling beats the bank's
        self.to_tune = [st for st in self.states if self.is_selected(st.task) and wanted(st)]
        if self.to_tune:  # results will be stored: a bank that cannot take them is an error now, not after tuning
            self.job.bank.check_writable()
        for st in self.states:
            if st not in self.to_tune:
                st.done = True
                if st.task.index in self.failed:  # a task nobody tunes must at least be costed
                    raise self.failed[st.task.index]
        return self.to_tune

    def notify(self, running: list[TaskState], stage: str = "tuning") -> None:
        if self.progress is None:
            return
        known = [s for s in self.states if s.baseline_tiling is not None]
        launches = self.job.overhead_us * sum(s.task.occurrences for s in known)
        before = launches + sum(s.task.occurrences * s.baseline_us for s in known)
        after = launches + sum(s.task.occurrences * _fastest(s)[0] for s in known)
        self.progress({"stage": stage,
                       "tasks_total": len(self.to_tune),
                       "tasks_started": sum(1 for s in self.to_tune if s.rounds > 0),
                       # a task is done when its search ended, not when Ctrl-C or a time limit came first
                       "tasks_done": sum(1 for s in self.to_tune if s.done and s.rounds > 0),
                       "evaluations": sum(s.evaluations for s in self.to_tune),
                       "current": [f"{s.task.op_type} {'x'.join(map(str, s.task.inputs[0]))}" for s in running],
                       "gain": improvement(before, after),
                       "elapsed_s": self.job.elapsed()})

    def store(self, st: TaskState) -> None:
        """Keep a task's best tiling if it beats the default and the bank's entry."""
        if beats_bank(st.best_us if st.best_tiling else None, st.baseline_us, st.bank_us):
            t = st.task
            out = self.job.bank.store([(t.key, make_entry(t.op_type, t.inputs, t.dtype, t.formats, t.attrs,
                                                          st.best_tiling, st.baseline_us, st.best_us,
                                                          evaluations=st.evaluations))],
                                      replace={t.key: self.judged[t.key]} if t.key in self.judged else None)
            if out[0].stored:
                self.stored.add(t.key)
                self._store_for_cann(st)

    def _store_for_cann(self, st: TaskState) -> None:
        """A MatMul that CANN's MatMulV3 runs also goes where CANN reads it; a tiling CANN could
        not run safely (or a damaged CANN file) is a warning, never a lost result."""
        t, plat = st.task, self.job.platform
        try:
            store_tuned(os.path.dirname(self.job.bank.directory), plat.name, int(plat.cube_cores), t.op_type,
                        t.inputs, t.dtype, t.attrs, st.best_tiling, formats=t.formats)
        except BankError as e:
            warnings.warn(f"{t.key}: not written to CANN's bank: {e}", CannBankWarning, stacklevel=2)

    def finish(self, interrupted: bool) -> None:
        """After the scheduler: tasks whose tuning failed keep the default tiling; a run that
        evaluated nothing at all is an error, not a result of 0 ms."""
        evaluator = self.job.evaluator
        for st in self.to_tune:
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
        if self.to_tune and not interrupted and not any(evaluated(st) for st in self.to_tune):
            raise RuntimeError(f"no task could be evaluated ({evaluator.name}); the first failed with: "
                               f"{self.to_tune[0].error or 'every evaluation failed'}")
        self.notify([], "done")

    def _task_result(self, st: TaskState, tuned: bool) -> TaskResult:
        t = st.task
        selected = self.is_selected(t)
        hit = st.bank_entry is not None or st.builtin
        final, tiling = _fastest(st, tuned=selected)  # what the plan runs
        if not selected:  # not tuned; runs with the bank's tiling if it has a faster one
            mode = "skipped"
        elif st.error is not None and st.best_tiling is None and not hit:
            mode = "failed"
        elif tuned and st.rounds == 0 and not hit:  # Ctrl-C or the time limit came before it started
            mode = "not reached"
        else:
            mode = update_mode(hit, tuned, t.key in self.stored)
        first = self.part.kernels[t.kernels[0]]
        return TaskResult(index=t.index, key=t.key, op_type=t.op_type, inputs=t.inputs, dtype=t.dtype,
                          formats=t.formats, attrs=t.attrs, occurrences=t.occurrences, node_names=first.nodes,
                          baseline_tiling=st.baseline_tiling, baseline_us=st.baseline_us, tiling=tiling,
                          time_us=final, update_mode=mode, bank_hit=hit, tuned=tuned,
                          warm_started=bool(st.warm) and not hit and tuned, evaluations=st.evaluations,
                          space_size=st.space_size, roofline_us=st.roofline_us, trace=st.trace, error=st.error,
                          baseline_kind=self._baseline_kind(st))

    def _baseline_kind(self, st: TaskState) -> str:
        if st.builtin:
            return BUILTIN_BANK
        try:
            return self.job.evaluator.baseline_kind(st.task)
        except Exception:  # a task the model cannot build has no default either
            return ""

    def assemble(self, dtype: str, seed: int) -> ModelTuneResult:
        tuned_set = {id(s) for s in self.to_tune}
        tasks = [self._task_result(st, id(st) in tuned_set) for st in self.states]
        outcomes = [(t.update_mode, t.bank_hit) for t in tasks
                    if t.update_mode not in ("skipped", "failed", "not reached")]
        kernels = [KernelResult(index=k.index, nodes=k.nodes, onnx_types=k.onnx_types, op_type=k.op_type,
                                inputs=k.inputs, attrs=k.attrs, output_shape=k.output_shape, task=k.task,
                                baseline_us=tasks[k.task].baseline_us, time_us=tasks[k.task].time_us,
                                tiling=tasks[k.task].tiling)
                   for k in self.part.kernels]
        job, part = self.job, self.part
        launches = len(kernels) * job.overhead_us
        return ModelTuneResult(
            model_name=job.graph.name, model_path=job.graph.path, soc_version=job.platform.name, dtype=dtype,
            baseline_ms=(sum(k.baseline_us for k in kernels) + launches) / 1000.0,
            tuned_ms=(sum(k.time_us for k in kernels) + launches) / 1000.0, launch_overhead_us=job.overhead_us,
            tuning_time_s=job.elapsed(), tasks=tasks, kernels=kernels, unsupported=unsupported_summary(part),
            repo_summary=repo_summary(outcomes), bank_directory=job.bank.directory, n_nodes=part.n_nodes,
            n_view_nodes=part.n_view_nodes, parallel=job.parallel, seed=seed, evaluator=job.evaluator.name,
            coverage=part.coverage.to_dict() if part.coverage is not None else {})


def tune_torch(module: Any, example_inputs: Any, soc_version: str | Platform = DEFAULT_SOC, *,
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
