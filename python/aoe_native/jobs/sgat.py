"""Subgraph tuning of a whole model (SGAT, AOE's job_type 1).

It decides jointly which neighbouring operators fuse into one kernel and how each fused
kernel's work is split over the cores, with each kernel's tiling found by the operator-tuning
search inside:

1. the graph's fusion space (:mod:`aoe_native.graph.fusion`): candidate fused kernels, the
   independent pieces they leave, and one canonical key per distinct piece;
2. each piece is looked up in the subgraph bank (entries ``Subgraph(<key>)`` in the SoC's bank,
   :mod:`aoe_native.bank.store`); a stored plan is re-checked against the piece before it is used;
3. for the other pieces, every candidate kernel under every split policy is a task that the
   scheduler (:mod:`.scheduler`) tunes through the evaluator (:mod:`.evaluator`), like OPAT's tasks;
4. each piece's cheapest partition comes from the exact DP over its downsets; a piece is stored in
   the bank as soon as all its candidates have been tuned, so an interrupted run resumes there;
5. the plan is assembled, compared with the fixed fusion rules at default tilings (never worse),
   and written out (:mod:`aoe_native.outputs`).

Split policies are attributes of a cube kernel: AIV per AIC ratio of a fused epilogue
(``mix_ratio``), GM workspace slots between cube and vector (``workspace_slots``), and the
non-uniform split of a last partial wave (``nonuniform_split``, only with ``nonhomo_split``).
"""
from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..ascend.ops import supported_ops
from ..ascend.platforms import DEFAULT_SOC, Platform
from ..bank.policy import beats_bank, repo_summary, serves, update_mode
from ..bank.store import make_entry
from ..graph.fusion import DPTooLarge, FusionSpace, Piece, fusion_space, solve_piece, solve_windowed
from ..graph.ir import Graph
from ..graph.partition import (Atoms, Partition, TaskIdentity, atoms, kernel_dtype, kernel_formats, kernel_of,
                               make_partition, partition, task_key)
from ..outputs import write_sgat_outputs
from ..results import FusedKernel, SubgraphResult, SubgraphTuneResult
from ..tuning import improvement
from .evaluator import TaskEvaluator
from .opat import tune_model
from .scheduler import TaskState, WorkerPool, schedule
from .setup import JobSetup, check_positive_int, prepare_job, unsupported_summary, warn_coverage

if TYPE_CHECKING:
    import onnx

__all__ = ["tune_subgraphs", "split_policies", "LEVELS", "SUBGRAPH_OP"]

# --tune_optimization_level: AOE's O1 is "high performance" (searches harder), O2 "normal" (its
# default).  Here: the evaluation budget per candidate kernel and split policy, and whether the
# cube:vector core ratio is searched.
LEVELS = {"O1": 20_000, "O2": 3_000}
# The op type of subgraph entries in the bank (one file, Subgraph.json, beside the operators').
SUBGRAPH_OP = "Subgraph"
_INF = float("inf")


def split_policies(op_type: str, attrs: dict[str, Any], platform: Platform, level: str,
                   nonhomo_split: bool) -> list[dict[str, int]]:
    """The split policies searched for one fused kernel; {} is the compiler's default."""
    if op_type not in ("MatMul", "BatchMatMul", "Gemm", "Conv"):
        return [{}]
    cv = platform.mode == "split" and bool(attrs.get("epilogue"))
    ratios = [0] + (list(range(1, platform.vector_cores // max(platform.cube_cores, 1))) if cv and level == "O1"
                    else [])
    slots = [2, 4] if cv else [2]
    uniform = [0, 1] if nonhomo_split else [0]
    out = []
    for r, s, u in itertools.product(ratios, slots, uniform):
        p = {}
        if r:
            p["mix_ratio"] = r
        if s != 2:
            p["workspace_slots"] = s
        if u:
            p["nonuniform_split"] = u
        out.append(p)
    return out


@dataclass
class _Candidate(TaskIdentity):
    """A kernel task of subgraph tuning: one group's operator under one split policy."""
    occurrences: int = 1


@dataclass
class _Plan:
    """A piece's chosen partition: (group (relative atom indices), policy, task key) per kernel."""
    total_us: float
    kernels: list[tuple[tuple[int, ...], dict[str, int], str]]


class _Costs:
    """Kernel operators and tuned times of candidate groups under their policies."""

    def __init__(self, ag: Atoms, dtype: str, platform: Platform, level: str, nonhomo: bool, overhead: float):
        self.ag, self.dtype, self.platform, self.level, self.nonhomo = ag, dtype, platform, level, nonhomo
        self.overhead = overhead
        self.supported = set(supported_ops())
        self.ops: dict[tuple[int, ...], tuple[str, list[list[int]], dict[str, Any]] | None] = {}
        self.tasks: dict[str, _Candidate] = {}
        self.states: dict[str, TaskState] = {}
        self.from_bank: dict[str, tuple[float, dict[str, int]]] = {}  # task key -> re-estimated bank tiling

    def op(self, group: tuple[int, ...]):
        if group not in self.ops:
            atoms = [self.ag.atoms[i] for i in group]
            if any(a.kind == "unsupported" for a in atoms):
                self.ops[group] = None
            else:
                try:
                    self.ops[group] = kernel_of(self.ag, list(group), self.supported)
                except (ValueError, KeyError, IndexError):
                    self.ops[group] = None
        return self.ops[group]

    def candidates(self, group: tuple[int, ...]) -> list[tuple[dict[str, int], _Candidate]]:
        op = self.op(group)
        if op is None:
            return []
        op_type, inputs, attrs = op
        out = []
        for pol in split_policies(op_type, attrs, self.platform, self.level, self.nonhomo):
            a = {**attrs, **pol}
            formats = kernel_formats(op_type, inputs)
            kd = kernel_dtype(op_type, self.dtype)
            key = task_key(op_type, inputs, kd, formats, a)
            if key not in self.tasks:
                self.tasks[key] = _Candidate(len(self.tasks), key, op_type, inputs, kd, formats, a)
            out.append((pol, self.tasks[key]))
        return out

    def time(self, key: str) -> tuple[float, dict[str, int] | None]:
        """Best known time and tiling of a candidate task (inf: not a valid kernel): tuned here,
        the default, or a bank plan's (so a re-tuned piece is never planned slower than its entry)."""
        banked = self.from_bank.get(key, (_INF, None))
        st = self.states.get(key)
        if st is None or st.baseline_tiling is None:
            return banked
        if st.best_tiling is not None and st.best_us < st.baseline_us:
            tuned = st.best_us, st.best_tiling
        else:
            tuned = st.baseline_us, st.baseline_tiling
        return banked if banked[0] < tuned[0] else tuned

    def group_cost(self, group: tuple[int, ...]) -> tuple[float, dict[str, int], str]:
        """(time incl. launch, policy, task key) of a group's best policy; unsupported atoms
        launch nothing we model (0)."""
        if len(group) == 1 and self.ag.atoms[group[0]].kind == "unsupported":
            return 0.0, {}, ""
        best = (_INF, {}, "")
        for pol, cand in self.candidates(group):
            t, _ = self.time(cand.key)
            if t + self.overhead < best[0]:
                best = (t + self.overhead, pol, cand.key)
        if best[0] == _INF and len(group) == 1:
            return 0.0, {}, ""  # an atom the model cannot cost: outside the comparison, as in OPAT
        return best


def tune_subgraphs(model: "str | os.PathLike | onnx.ModelProto | Graph", soc_version: str | Platform = DEFAULT_SOC, *,
                   input_shape: str | dict | None = None, dtype: str = "float16",
                   bank: str | os.PathLike | None = None, parallel: int | None = None,
                   tuning_time_limit: float | None = None, optimization_level: str = "O2",
                   nonhomo_split: bool = False, seed: int = 0, evals_per_kernel: int | None = None,
                   repeat_tune: bool = False, launch_overhead_us: float | None = None,
                   then_tune_ops: bool = False, output: str | os.PathLike | None = None,
                   result_dir: str | os.PathLike | None = None,
                   progress: Callable[[dict[str, Any]], None] | None = None,
                   evaluator: TaskEvaluator | None = None, **opat_options: Any) -> SubgraphTuneResult:
    """Tune how a model's operators fuse into kernels and how each kernel is split (AOE SGAT),
    and keep each distinct subgraph's plan in the bank.

    optimization_level: "O2" (default, AOE's "normal") or "O1" (searches harder: a larger
    budget per candidate kernel, and the cube:vector core ratio).  nonhomo_split: allow
    non-uniform splits of a last partial wave over the cores (AOE's --Fnonhomo_split).
    evals_per_kernel: evaluation budget per candidate kernel and policy (default by level).
    repeat_tune: re-tune subgraphs the bank already holds.  then_tune_ops: run operator tuning
    (:func:`aoe_native.tune_model`) on the fused kernels afterwards, the order Huawei
    recommends; its result is ``result.opat`` and `opat_options` go to it (evals_per_task...).
    The other arguments are those of :func:`aoe_native.tune_model`.  Ctrl-C stops tuning: the
    plan and its files use the subgraphs finished so far, ``interrupted`` is True, and operator
    tuning does not start."""
    if optimization_level not in LEVELS:
        raise ValueError(f"optimization_level must be one of {', '.join(LEVELS)} (AOE's --tune_optimization_level), "
                         f"got {optimization_level!r}")
    if not isinstance(nonhomo_split, bool):
        raise ValueError(f"nonhomo_split must be True or False, got {nonhomo_split!r}")
    budget = LEVELS[optimization_level] if evals_per_kernel is None else \
        check_positive_int("evals_per_kernel", evals_per_kernel)
    job = prepare_job(model, soc_version, evaluator=evaluator, input_shape=input_shape, dtype=dtype, bank=bank,
                      parallel=parallel, tuning_time_limit=tuning_time_limit, launch_overhead_us=launch_overhead_us,
                      output=output, result_dir=result_dir)
    run = _SubgraphTuning(job, dtype, optimization_level, nonhomo_split, progress)
    run.look_up(repeat_tune)
    states = run.candidate_states()
    interrupted = schedule(states, job.evaluator, WorkerPool(min(job.parallel, max(len(states), 1))), seed=seed,
                           budget=budget * len(states), round_evals=budget, deadline=job.deadline,
                           on_result=run.on_result, notify=run.notify)
    run.finish()
    result = run.assemble(seed)
    result.interrupted = interrupted
    run.notify([], "done", gain=result.improvement)
    write_sgat_outputs(result, output=output, result_dir=result_dir)  # kept even if operator tuning fails
    if then_tune_ops and not interrupted:
        # Operator tuning goes on from subgraph tuning's tilings (never ending slower), within
        # what is left of the time limit (none left: the result is those tilings).
        start = {} if result.kept_baseline else {k.task_key: k.tiling for k in result.kernels if k.tiling}
        result.opat = tune_model(job.graph, job.platform, dtype=dtype, bank=bank, parallel=job.parallel, seed=seed,
                                 tuning_time_limit=job.remaining(), launch_overhead_us=launch_overhead_us,
                                 evaluator=job.evaluator, output=output, result_dir=result_dir, progress=progress,
                                 repeat_tune=repeat_tune, kernels=result.partition, start_tilings=start,
                                 start_ms=result.tuned_ms, **opat_options)
        write_sgat_outputs(result, output=output)  # the report again, with the operator-tuning row
    return result


class _SubgraphTuning:
    """One subgraph-tuning run: the pieces, what the bank holds for them, the candidate kernels
    the scheduler tunes, each piece's plan as its candidates finish, and the result."""

    def __init__(self, job: JobSetup, dtype: str, level: str, nonhomo: bool,
                 progress: Callable[[dict[str, Any]], None] | None) -> None:
        self.job, self.dtype, self.level, self.nonhomo, self.progress = job, dtype, level, nonhomo, progress
        graph, plat = job.graph, job.platform
        self.ag = atoms(graph, supported_ops())
        self.fixed = partition(graph, supported_ops(), dtype=dtype, ub_bytes=int(plat.ub))
        warn_coverage(graph, self.fixed)
        self.space: FusionSpace = fusion_space(self.ag, dtype, tag=f"nonhomo={int(nonhomo)}")
        self.costs = _Costs(self.ag, dtype, plat, level, nonhomo, job.overhead_us)
        # The fixed rules' kernels at default tilings: the baseline, per kernel.
        self.defaults = _fixed_defaults(self.fixed, job.evaluator)
        fixed_us = {k: t for k, (_, t) in self.defaults.items()}
        atom_of = {name: a.index for a in self.ag.atoms for name in a.covers}
        self.fixed_first = {k.index: min(atom_of[n] for n in k.nodes) for k in self.fixed.kernels}
        # Distinct pieces: the first occurrence stands for all.
        self.by_key: dict[str, list[Piece]] = {}
        for p in self.space.pieces:
            self.by_key.setdefault(p.key, []).append(p)
        # Each distinct piece's time under the fixed rules at default tilings (launches included).
        self.before_of = {key: sum(fixed_us[k] + job.overhead_us for k, first in self.fixed_first.items()
                                   if occ[0].start <= first < occ[0].stop)
                          for key, occ in self.by_key.items()}
        self.baseline_us = sum(fixed_us.values()) + len(self.fixed.kernels) * job.overhead_us
        self.plans: dict[str, _Plan] = {}
        self.hits: dict[str, tuple[dict[str, Any], float]] = {}
        self.stale: set[str] = set()  # bank keys whose plan no longer fits its piece: re-tuned and overwritten
        self.judged: dict[str, dict[str, Any]] = {}  # bank entries as read: replaced by plans that beat them now
        self.searched_less: set[str] = set()  # O2 plans an O1 run tunes again: stored back as O1 even if no faster
        self.warm: dict[str, dict[str, int]] = {}  # served plans' tilings: where re-tuning starts (not stale ones)
        self.to_solve: list[str] = []
        self.piece_tasks: dict[str, set[str]] = {}
        self.states: list[TaskState] = []
        self.stored_first: set[str] = set()  # pieces solved (each candidate tuned for a round at least)
        self.stored: set[str] = set()  # pieces whose plan this run put into the bank
        self.saved_us: dict[str, float] = {}  # per solved piece: model time saved over the fixed rules
        self.unreached: set[str] = set()

    def look_up(self, repeat_tune: bool) -> None:
        """Serve each piece from the bank when its plan still fits and still beats the fixed rules."""
        for key, occ in self.by_key.items():
            bkey = _bank_key(key, self.dtype)
            entry = self.job.bank.get(bkey)
            if entry is None:
                continue
            self.judged[bkey] = entry
            plan = _check_plan(entry, occ[0], self.costs, self.job.evaluator)
            if plan is None or not serves(plan.total_us, self.before_of[key]):  # no longer fits, or no longer faster
                self.stale.add(bkey)
                continue
            self.hits[key] = (entry, plan.total_us)
            self.warm.update((tkey, self.costs.from_bank[tkey][1]) for _, _, tkey in plan.kernels
                             if tkey in self.costs.from_bank)
            # O1 searches more (the core ratio): a plan found at O2 is a start, not the answer.
            if self.level == "O1" and entry.get("optimization_level", "O2") != "O1":
                self.searched_less.add(key)
            elif not repeat_tune:
                self.plans[key] = plan
        self.to_solve = [k for k in self.by_key if k not in self.plans]
        if self.to_solve:  # plans will be stored: a bank that cannot take them is an error now, not after tuning
            self.job.bank.check_writable()

    def candidate_states(self) -> list[TaskState]:
        """Every candidate kernel of the pieces to solve, as a task for the scheduler."""
        weight: dict[str, int] = {}
        for key in self.to_solve:
            keys = set()
            for g in self.by_key[key][0].groups:
                for _, cand in self.costs.candidates(g):
                    keys.add(cand.key)
                    weight[cand.key] = weight.get(cand.key, 0) + len(self.by_key[key])
            self.piece_tasks[key] = keys
        for key, cand in self.costs.tasks.items():
            if key not in weight:
                continue
            cand.occurrences = weight[key]
            st = TaskState(cand, [self.warm[key]] if key in self.warm else [])
            try:  # one estimate: the default tiling, and whether the fused kernel is valid at all
                st.baseline_tiling, st.baseline_us = self.job.evaluator.baseline(cand)
            except Exception as e:
                st.error, st.done = f"{type(e).__name__}: {e}", True
            self.costs.states[key] = st
            if not st.done:
                self.states.append(st)
        return self.states

    def solve(self, key: str) -> _Plan:
        return _solve(self.by_key[key][0], self.ag, self.costs)

    def store(self, key: str, plan: _Plan) -> None:
        bkey = _bank_key(key, self.dtype)
        hit = self.hits.get(key)
        # (A plan is never slower than its piece's entry: costs.time knows the entry's tilings.)
        if bkey in self.stale or key in self.searched_less or \
                beats_bank(plan.total_us, self.before_of[key], hit[1] if hit else None):
            entry = _make_entry(key, self.by_key[key][0], self.ag, self.dtype, plan, self.costs, self.before_of[key],
                                self.level)
            out = self.job.bank.store([(bkey, entry)], replace={bkey: self.judged[bkey]} if bkey in self.judged
                                      else None)
            self.stale.discard(bkey)
            if out[0].stored:
                self.stored.add(key)

    def solved(self, key: str) -> bool:
        """Every candidate kernel of the piece tuned for a round at least (or found invalid)."""
        states = self.costs.states
        return all(states[k].rounds > 0 or states[k].done for k in self.piece_tasks[key] if k in states)

    def on_result(self, st: TaskState) -> None:
        for key, keys in self.piece_tasks.items():
            if key in self.stored_first or st.task.key not in keys:
                continue
            if self.solved(key):
                self.stored_first.add(key)
                plan = self.solve(key)
                self.store(key, plan)
                self.saved_us[key] = (self.before_of[key] - plan.total_us) * len(self.by_key[key])

    def notify(self, running: list[TaskState], stage: str = "tuning", gain: float | None = None) -> None:
        if self.progress is None:
            return
        states = self.states
        self.progress({"stage": stage, "job": "subgraph tuning", "tasks_total": len(states),
                       "gain": improvement(self.baseline_us, self.baseline_us - sum(self.saved_us.values()))
                       if gain is None else gain,
                       "tasks_started": sum(1 for s in states if s.rounds > 0),
                       # a candidate is done when its search ended, not when Ctrl-C or a time limit came first
                       "tasks_done": sum(1 for s in states if s.done and s.rounds > 0),
                       "evaluations": sum(s.evaluations for s in states),
                       "subgraphs_total": len(self.to_solve), "subgraphs_done": len(self.stored_first),
                       "current": [f"{s.task.op_type} {'x'.join(map(str, s.task.inputs[0]))}" for s in running],
                       "elapsed_s": self.job.elapsed()})

    def finish(self) -> None:
        """Pieces with a candidate never tuned (Ctrl-C, the time limit) are planned with what is
        known but not stored: the next run tunes them rather than reusing a half-searched plan."""
        self.unreached = {key for key in self.to_solve if not self.solved(key)}
        for st in self.states:  # out of budget or time: what each candidate has is final
            st.done = True
        for key in self.to_solve:  # final times (later rounds may have improved a candidate)
            self.plans[key] = self.solve(key)
            if key not in self.unreached:
                self.store(key, self.plans[key])
                self.stored_first.add(key)

    def _subgraph_result(self, key: str) -> SubgraphResult:
        occ, plan, costs, ag = self.by_key[key], self.plans[key], self.costs, self.ag
        rep = occ[0]
        hit = key in self.hits
        if key in self.unreached and not hit:  # Ctrl-C or the time limit came first: not searched, not stored
            mode = "not reached"
        else:
            mode = update_mode(hit, key in self.piece_tasks, key in self.stored)
        before_kernels = [k.nodes for k in self.fixed.kernels if rep.start <= self.fixed_first[k.index] < rep.stop]
        after = [_fused_kernel(tuple(rep.start + i for i in rel), pol, tkey, ag, costs)
                 for rel, pol, tkey in plan.kernels if tkey]
        evals = sum(costs.states[k].evaluations for k in self.piece_tasks.get(key, ()) if k in costs.states)
        return SubgraphResult(key=_bank_key(key, self.dtype), occurrences=len(occ),
                              nodes=[n for i in rep.atoms for n in ag.atoms[i].covers], before_kernels=before_kernels,
                              before_us=self.before_of[key], after_kernels=after, after_us=plan.total_us,
                              update_mode=mode, bank_hit=hit, evaluations=evals)

    def _fixed_kernels(self) -> list[FusedKernel]:
        """The fixed rules' kernels at their default tilings, as a plan."""
        return [FusedKernel(nodes=k.nodes, onnx_types=k.onnx_types, op_type=k.op_type, inputs=k.inputs,
                            attrs=k.attrs, policy={}, task_key=self.fixed.tasks[k.task].key,
                            tiling=self.defaults[k.index][0], time_us=self.defaults[k.index][1],
                            baseline_us=self.defaults[k.index][1], output_shape=k.output_shape)
                for k in self.fixed.kernels]

    def assemble(self, seed: int) -> SubgraphTuneResult:
        job, fixed, costs = self.job, self.fixed, self.costs
        n_fixed = len(fixed.kernels)
        baseline_ms = (sum(t for _, t in self.defaults.values()) + n_fixed * job.overhead_us) / 1000.0
        kernels: list[FusedKernel] = []
        result_us = 0.0
        for piece in self.space.pieces:
            plan = self.plans[piece.key]
            result_us += plan.total_us
            kernels += [_fused_kernel(tuple(piece.start + i for i in rel), pol, tkey, self.ag, costs)
                        for rel, pol, tkey in plan.kernels if tkey]
        subgraphs = [self._subgraph_result(key) for key in self.by_key]
        outcomes = [(g.update_mode, g.bank_hit) for g in subgraphs if g.update_mode != "not reached"]
        tuned_ms = result_us / 1000.0
        kept = tuned_ms > baseline_ms
        if kept:  # never worse than the fixed rules: keep them, at their default tilings
            tuned_ms, kernels = baseline_ms, self._fixed_kernels()
        result = SubgraphTuneResult(
            model_name=job.graph.name, model_path=job.graph.path, soc_version=job.platform.name, dtype=self.dtype,
            optimization_level=self.level, nonhomo_split=self.nonhomo, baseline_ms=baseline_ms, tuned_ms=tuned_ms,
            launch_overhead_us=job.overhead_us, tuning_time_s=job.elapsed(), subgraphs=subgraphs, kernels=kernels,
            baseline_kernels=n_fixed, unsupported=unsupported_summary(fixed), repo_summary=repo_summary(outcomes),
            bank_directory=job.bank.directory,
            candidate_kernels=sum(1 for s in costs.states.values() if s.rounds > 0),
            evaluations=sum(s.evaluations for s in costs.states.values()), parallel=job.parallel, seed=seed,
            evaluator=job.evaluator.name, coverage=fixed.coverage.to_dict() if fixed.coverage is not None else {},
            kept_baseline=kept)
        result.partition = result_partition(result, self.ag, fixed, self.dtype)
        return result


def _bank_key(piece_key: str, dtype: str) -> str:
    return f"{SUBGRAPH_OP}({piece_key})|{dtype}"


def _fixed_defaults(fixed: Partition, evaluator: TaskEvaluator) -> dict[int, tuple[dict[str, int] | None, float]]:
    """Default tiling and its time for each kernel of the fixed rules (tasks the model cannot
    cost: no tiling, 0 us)."""
    per_task: dict[int, tuple[dict[str, int] | None, float]] = {}
    for t in fixed.tasks:
        try:
            per_task[t.index] = evaluator.baseline(t)
        except Exception:
            per_task[t.index] = (None, 0.0)
    return {k.index: per_task[k.task] for k in fixed.kernels}


def _solve(piece: Piece, ag: Atoms, costs: _Costs) -> _Plan:
    def cost(g: tuple[int, ...]) -> float:
        return costs.group_cost(g)[0]
    try:
        total, groups = solve_piece(piece, ag, cost)
    except DPTooLarge:
        total, groups = solve_windowed(piece, ag, cost)
    kernels = []
    for g in groups:
        _, pol, key = costs.group_cost(g)
        kernels.append((tuple(i - piece.start for i in g), pol, key))
    kernels.sort(key=lambda k: k[0])
    return _Plan(total, kernels)


def _make_entry(key: str, piece: Piece, ag: Atoms, dtype: str, plan: _Plan, costs: _Costs,
                before: float, level: str) -> dict[str, Any]:
    ext = []
    for i in piece.atoms:
        for t in ag.atoms[i].inputs:
            p = ag.producer.get(t)
            if p is None or not piece.start <= p < piece.stop:
                ext.append(list(ag.graph.shape(t) or []))
    kernels = []
    for group, pol, tkey in plan.kernels:
        t, tiling = costs.time(tkey) if tkey else (0.0, None)
        kernels.append({"atoms": list(group), "policy": pol, "task_key": tkey, "tiling": tiling or {},
                        "time_us": t if math.isfinite(t) else 0.0})
    types = [t for i in piece.atoms for t in ag.atoms[i].onnx_types]
    return make_entry(SUBGRAPH_OP, ext, dtype, [], {"piece": key, "nodes": types}, {}, before, plan.total_us,
                      kernels=kernels, atoms=len(piece.atoms), optimization_level=level)


def _check_plan(entry: dict[str, Any], piece: Piece, costs: _Costs, evaluator: TaskEvaluator) -> _Plan | None:
    """The bank's plan for `piece` if it still fits it: its kernels cover the piece's atoms
    once each, each is a candidate group whose operator (with the policy) has the recorded
    task key, and each tiling is accepted; re-estimated, with launch overheads.  None: re-tune."""
    try:
        kernels = entry["kernels"]
        n = piece.stop - piece.start
        if entry.get("atoms") != n or not isinstance(kernels, list):
            return None
        groups = set(piece.groups)
        seen: set[int] = set()
        plan, total = [], 0.0
        for k in kernels:
            rel = tuple(int(i) for i in k["atoms"])
            group = tuple(piece.start + i for i in rel)
            if group not in groups or seen.intersection(rel) or any(not 0 <= i < n for i in rel):
                return None
            seen.update(rel)
            pol = {str(a): int(v) for a, v in k["policy"].items()}
            if len(group) == 1 and costs.op(group) is None:
                plan.append((rel, {}, ""))
                continue
            match = [c for p, c in costs.candidates(group) if p == pol and c.key == k["task_key"]]
            if not match:
                return None
            tiling = evaluator.complete_tiling(match[0], {str(a): int(v) for a, v in k["tiling"].items()})
            t = evaluator.estimate(match[0], tiling)
            if not math.isfinite(t):
                return None
            costs.from_bank[match[0].key] = (t, tiling)
            total += t + costs.overhead
            plan.append((rel, pol, match[0].key))
        if len(seen) != n:
            return None
        return _Plan(total, plan)
    except Exception:  # a malformed entry, or a tiling the evaluator refuses: re-tune
        return None


def _fused_kernel(group: tuple[int, ...], pol: dict[str, int], tkey: str, ag: Atoms, costs: _Costs) -> FusedKernel:
    cand = costs.tasks[tkey]
    t, tiling = costs.time(tkey)
    default = [c for p, c in costs.candidates(group) if not p]
    base = costs.states.get(default[0].key) if default else None
    nodes = [n for i in group for n in ag.atoms[i].covers]
    types = [t_ for i in group for t_ in ag.atoms[i].onnx_types]
    return FusedKernel(nodes=nodes, onnx_types=types, op_type=cand.op_type, inputs=cand.inputs, attrs=cand.attrs,
                       policy=dict(pol), task_key=tkey, tiling=tiling, time_us=t if math.isfinite(t) else 0.0,
                       baseline_us=base.baseline_us if base is not None and math.isfinite(base.baseline_us) else t,
                       output_shape=list(ag.atoms[group[-1]].out_shape))


def result_partition(result: SubgraphTuneResult, ag: Atoms, fixed: Partition, dtype: str) -> Partition:
    """The tuned fusion as a :class:`Partition` (kernels and tasks), for operator tuning; the
    fixed rules' partition when subgraph tuning kept them."""
    if result.kept_baseline:
        return fixed
    groups = [("fused", k.nodes, k.onnx_types, (k.op_type, k.inputs, k.attrs), k.output_shape)
              for k in result.kernels]
    unsupported = list(fixed.unsupported)
    return make_partition(ag, groups, unsupported, dtype)
