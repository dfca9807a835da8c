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
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..ascend.ops import supported_ops
from ..ascend.platforms import Platform, check_compute_dtype
from ..bank.policy import beats_bank, repo_summary, serves, update_mode
from ..bank.store import Bank, bank_dir, make_entry
from ..graph.fusion import DPTooLarge, Piece, fusion_space, solve_piece, solve_windowed
from ..graph.ir import Graph
from ..graph import load_graph
from ..graph.partition import (Atoms, Partition, TaskIdentity, atoms, kernel_formats, kernel_of, make_partition,
                               partition, task_key)
from ..outputs import check_job_dirs, write_sgat_outputs
from ..tuning import improvement
from .evaluator import CostModelEvaluator, TaskEvaluator
from .opat import check_device_memory, check_launch_overhead, tune_model, usable_cores, warn_coverage
from .results import FusedKernel, SubgraphResult, SubgraphTuneResult
from .scheduler import TaskState, WorkerPool, schedule

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
            key = task_key(op_type, inputs, self.dtype, formats, a)
            if key not in self.tasks:
                self.tasks[key] = _Candidate(len(self.tasks), key, op_type, inputs, self.dtype, formats, a)
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


def tune_subgraphs(model: "str | os.PathLike | onnx.ModelProto | Graph", soc_version: str | Platform = "Ascend910B3",
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
    if tuning_time_limit is not None and not tuning_time_limit > 0:
        raise ValueError(f"tuning_time_limit must be > 0 seconds, got {tuning_time_limit}")
    check_launch_overhead(launch_overhead_us)
    budget = LEVELS[optimization_level] if evals_per_kernel is None else int(evals_per_kernel)
    if budget < 1:
        raise ValueError(f"evals_per_kernel must be >= 1, got {evals_per_kernel}")
    parallel = usable_cores() if parallel is None else int(parallel)
    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, got {parallel}")
    if evaluator is None:
        evaluator = CostModelEvaluator(soc_version)
    plat = evaluator.platform
    check_compute_dtype(dtype, plat)
    check_job_dirs(output, result_dir)
    t0 = time.monotonic()
    deadline = None if tuning_time_limit is None else t0 + tuning_time_limit

    graph = model if isinstance(model, Graph) else load_graph(model, input_shape)
    check_device_memory(graph, plat)
    ag = atoms(graph, supported_ops())
    fixed = partition(graph, supported_ops(), dtype=dtype, ub_bytes=int(plat.ub))
    warn_coverage(graph, fixed)
    space = fusion_space(ag, dtype, tag=f"nonhomo={int(nonhomo_split)}")
    the_bank = Bank(bank_dir(plat.name, bank), plat.name).load()  # a damaged bank stops here, untouched
    overhead = float(plat.launch_overhead_us) if launch_overhead_us is None else float(launch_overhead_us)
    costs = _Costs(ag, dtype, plat, optimization_level, nonhomo_split, overhead)

    # The fixed rules' kernels at default tilings: the baseline, per kernel.
    defaults = _fixed_defaults(fixed, evaluator)
    fixed_us = {k: t for k, (_, t) in defaults.items()}
    atom_of = {name: a.index for a in ag.atoms for name in a.covers}
    fixed_first = {k.index: min(atom_of[n] for n in k.nodes) for k in fixed.kernels}

    # Distinct pieces: the first occurrence stands for all.
    by_key: dict[str, list[Piece]] = {}
    for p in space.pieces:
        by_key.setdefault(p.key, []).append(p)
    # Each distinct piece's time under the fixed rules at default tilings (launches included).
    before_of = {key: sum(fixed_us[k] + overhead for k, first in fixed_first.items()
                          if occ[0].start <= first < occ[0].stop)
                 for key, occ in by_key.items()}
    plans: dict[str, _Plan] = {}
    hits: dict[str, tuple[dict[str, Any], float]] = {}
    stale: set[str] = set()  # bank keys whose plan no longer fits its piece: re-tuned and overwritten
    judged: dict[str, dict[str, Any]] = {}  # bank entries as read: replaced by plans that beat them now
    searched_less: set[str] = set()  # O2 plans an O1 run tunes again: stored back as O1 even if no faster
    warm: dict[str, dict[str, int]] = {}  # served plans' tilings: where re-tuning them starts (not stale ones)
    for key, occ in by_key.items():
        entry = the_bank.get(_bank_key(key, dtype))
        if entry is None:
            continue
        judged[_bank_key(key, dtype)] = entry
        plan = _check_plan(entry, occ[0], costs, evaluator)
        if plan is None or not serves(plan.total_us, before_of[key]):  # no longer fits, or no longer faster
            stale.add(_bank_key(key, dtype))
        else:
            hits[key] = (entry, plan.total_us)
            warm.update((tkey, costs.from_bank[tkey][1]) for _, _, tkey in plan.kernels if tkey in costs.from_bank)
            # O1 searches more (the core ratio): a plan found at O2 is a start, not the answer.
            if optimization_level == "O1" and entry.get("optimization_level", "O2") != "O1":
                searched_less.add(key)
            elif not repeat_tune:
                plans[key] = plan
    to_solve = [k for k in by_key if k not in plans]
    if to_solve:  # plans will be stored: a bank that cannot take them is an error now, not after tuning
        the_bank.check_writable()

    # Every candidate kernel of the pieces to solve is a task.
    piece_tasks: dict[str, set[str]] = {}
    weight: dict[str, int] = {}
    for key in to_solve:
        rep = by_key[key][0]
        keys = set()
        for g in rep.groups:
            for _, cand in costs.candidates(g):
                keys.add(cand.key)
                weight[cand.key] = weight.get(cand.key, 0) + len(by_key[key])
        piece_tasks[key] = keys
    states = []
    for key, cand in costs.tasks.items():
        if key not in weight:
            continue
        cand.occurrences = weight[key]
        st = TaskState(cand, [warm[key]] if key in warm else [])
        try:  # one estimate: the default tiling, and whether the fused kernel is valid at all
            st.baseline_tiling, st.baseline_us = evaluator.baseline(cand)
        except Exception as e:
            st.error, st.done = f"{type(e).__name__}: {e}", True
        costs.states[key] = st
        if not st.done:
            states.append(st)

    stored_first: set[str] = set()  # pieces solved (each candidate tuned for a round at least)
    stored: set[str] = set()  # pieces whose plan this run put into the bank
    saved_us: dict[str, float] = {}  # per solved piece: model time saved over the fixed rules
    baseline_us = sum(fixed_us.values()) + len(fixed.kernels) * overhead

    def solve(key: str) -> _Plan:
        return _solve(by_key[key][0], ag, costs)

    def store(key: str, plan: _Plan) -> None:
        bkey = _bank_key(key, dtype)
        hit = hits.get(key)
        # (A plan is never slower than its piece's entry: costs.time knows the entry's tilings.)
        if bkey in stale or key in searched_less or \
                beats_bank(plan.total_us, before_of[key], hit[1] if hit else None):
            entry = _make_entry(key, by_key[key][0], ag, dtype, plan, costs, before_of[key], optimization_level)
            out = the_bank.store([(bkey, entry)], replace={bkey: judged[bkey]} if bkey in judged else None)
            stale.discard(bkey)
            if out[0].stored:
                stored.add(key)

    def solved(key: str) -> bool:
        """Every candidate kernel of the piece tuned for a round at least (or found invalid)."""
        return all(costs.states[k].rounds > 0 or costs.states[k].done for k in piece_tasks[key] if k in costs.states)

    def on_result(st: TaskState) -> None:
        for key, keys in piece_tasks.items():
            if key in stored_first or st.task.key not in keys:
                continue
            if solved(key):
                stored_first.add(key)
                plan = solve(key)
                store(key, plan)
                saved_us[key] = (before_of[key] - plan.total_us) * len(by_key[key])

    def notify(running: list[TaskState], stage: str = "tuning") -> None:
        if progress is not None:
            progress({"stage": stage, "job": "subgraph tuning", "tasks_total": len(states),
                      "gain": improvement(baseline_us, baseline_us - sum(saved_us.values())),
                      "tasks_started": sum(1 for s in states if s.rounds > 0),
                      "tasks_done": sum(1 for s in states if s.done),
                      "evaluations": sum(s.evaluations for s in states),
                      "subgraphs_total": len(to_solve), "subgraphs_done": len(stored_first),
                      "current": [f"{s.task.op_type} {'x'.join(map(str, s.task.inputs[0]))}" for s in running],
                      "elapsed_s": time.monotonic() - t0})

    interrupted = schedule(states, evaluator, WorkerPool(min(parallel, max(len(states), 1))), seed,
                           budget * len(states), budget, deadline, on_result, notify)
    # Pieces with a candidate never tuned (Ctrl-C, the time limit) are planned with what is known
    # but not stored: the next run tunes them rather than reusing a half-searched plan.
    unreached = {key for key in to_solve if not solved(key)}
    for st in states:  # out of budget or time: what each candidate has is final
        st.done = True
    for key in to_solve:  # final times (later rounds may have improved a candidate)
        plans[key] = solve(key)
        if key not in unreached:
            store(key, plans[key])
            stored_first.add(key)
    notify([], "done")

    result = _assemble(graph, ag, fixed, defaults, fixed_first, space, by_key, before_of, plans, hits, stored,
                       unreached, costs, plat, dtype, optimization_level, nonhomo_split, overhead, the_bank, parallel,
                       seed, evaluator.name, piece_tasks, time.monotonic() - t0)
    result.partition = result_partition(result, ag, fixed, dtype)
    result.interrupted = interrupted
    write_sgat_outputs(result, output=output, result_dir=result_dir)  # kept even if operator tuning fails
    if then_tune_ops and not interrupted:
        # Operator tuning goes on from subgraph tuning's tilings (never ending slower), within
        # what is left of the time limit (none left: the result is those tilings).
        remaining = None if deadline is None else max(deadline - time.monotonic(), 1e-9)
        start = {} if result.kept_baseline else {k.task_key: k.tiling for k in result.kernels if k.tiling}
        result.opat = tune_model(graph, plat, dtype=dtype, bank=bank, parallel=parallel, seed=seed,
                                 tuning_time_limit=remaining, launch_overhead_us=launch_overhead_us,
                                 evaluator=evaluator, output=output, result_dir=result_dir, progress=progress,
                                 repeat_tune=repeat_tune, kernels=result.partition, start_tilings=start,
                                 **opat_options)
        write_sgat_outputs(result, output=output)  # the report again, with the operator-tuning row
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


def _assemble(graph, ag, fixed, defaults, fixed_first, space, by_key, before_of, plans, hits, stored, unreached,
              costs, plat, dtype, level, nonhomo, overhead, the_bank, parallel, seed, evaluator_name, piece_tasks,
              elapsed) -> SubgraphTuneResult:
    n_fixed = len(fixed.kernels)
    baseline_ms = (sum(t for _, t in defaults.values()) + n_fixed * overhead) / 1000.0
    result_us = 0.0
    kernels: list[FusedKernel] = []
    subgraphs = []
    outcomes = []
    for piece in space.pieces:
        plan = plans[piece.key]
        result_us += plan.total_us
        for rel, pol, tkey in plan.kernels:
            group = tuple(piece.start + i for i in rel)
            if not tkey:
                continue
            kernels.append(_fused_kernel(group, pol, tkey, ag, costs))
    for key, occ in by_key.items():
        rep = occ[0]
        plan = plans[key]
        before = before_of[key]
        hit = key in hits
        tuned = key in piece_tasks
        if key in unreached and not hit:  # Ctrl-C or the time limit came first: not searched, not stored
            mode = "not reached"
        else:
            mode = update_mode(hit, tuned, key in stored)
            outcomes.append((mode, hit))
        before_kernels = [k.nodes for k in fixed.kernels if rep.start <= fixed_first[k.index] < rep.stop]
        after = [_fused_kernel(tuple(rep.start + i for i in rel), pol, tkey, ag, costs)
                 for rel, pol, tkey in plan.kernels if tkey]
        nodes = [n for i in rep.atoms for n in ag.atoms[i].covers]
        evals = sum(costs.states[k].evaluations for k in piece_tasks.get(key, ()) if k in costs.states)
        subgraphs.append(SubgraphResult(_bank_key(key, dtype), len(occ), nodes, before_kernels, before, after,
                                        plan.total_us, mode, hit, evals))
    result_ms = result_us / 1000.0
    kept = result_ms > baseline_ms
    if kept:  # never worse than the fixed rules: keep them, at their default tilings
        result_ms = baseline_ms
        kernels = [FusedKernel(k.nodes, k.onnx_types, k.op_type, k.inputs, k.attrs, {}, fixed.tasks[k.task].key,
                               defaults[k.index][0], defaults[k.index][1], defaults[k.index][1], k.output_shape)
                   for k in fixed.kernels]
    unsupported = [{"op_type": u.onnx_type, "count": u.count, "share": u.share, "reason": u.reason,
                    "nodes": u.nodes} for u in fixed.unsupported]
    return SubgraphTuneResult(
        graph.name, graph.path, plat.name, dtype, level, nonhomo, baseline_ms, result_ms, overhead, elapsed,
        subgraphs, kernels, n_fixed, unsupported, repo_summary(outcomes), the_bank.directory,
        sum(1 for s in costs.states.values() if s.rounds > 0), sum(s.evaluations for s in costs.states.values()),
        parallel, seed, evaluator_name, fixed.coverage.to_dict() if fixed.coverage is not None else {}, kept)


def _fused_kernel(group: tuple[int, ...], pol: dict[str, int], tkey: str, ag: Atoms, costs: _Costs) -> FusedKernel:
    cand = costs.tasks[tkey]
    t, tiling = costs.time(tkey)
    default = [c for p, c in costs.candidates(group) if not p]
    base = costs.states.get(default[0].key) if default else None
    nodes = [n for i in group for n in ag.atoms[i].covers]
    types = [t_ for i in group for t_ in ag.atoms[i].onnx_types]
    return FusedKernel(nodes, types, cand.op_type, cand.inputs, cand.attrs, dict(pol), tkey, tiling,
                       t if math.isfinite(t) else 0.0,
                       base.baseline_us if base is not None and math.isfinite(base.baseline_us) else t,
                       list(ag.atoms[group[-1]].out_shape))


def result_partition(result: SubgraphTuneResult, ag: Atoms, fixed: Partition, dtype: str) -> Partition:
    """The tuned fusion as a :class:`Partition` (kernels and tasks), for operator tuning; the
    fixed rules' partition when subgraph tuning kept them."""
    if result.kept_baseline:
        return fixed
    groups = [("fused", k.nodes, k.onnx_types, (k.op_type, k.inputs, k.attrs), k.output_shape)
              for k in result.kernels]
    unsupported = list(fixed.unsupported)
    return make_partition(ag, groups, unsupported, dtype)
