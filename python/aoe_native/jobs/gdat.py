"""Gradient-split tuning (GDAT, AOE_MODE 4): which gradients to all-reduce together.

The job on the same seams as the other modes: the timeline comes from a file or is predicted
from a model through the evaluator (:mod:`.backward`); the split is the exact optimum of the
all-reduce timeline (:mod:`aoe_native.gradients.buckets`), compared with the rules people run;
the plan is kept in the SoC's knowledge bank (keyed by the timeline's source, the cluster, the
SoC and the constraints), so a rerun serves it; the outputs are written by
:mod:`aoe_native.outputs`.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any, Iterable

from ..ascend.platforms import DEFAULT_SOC, Platform
from ..bank.policy import beats_bank
from ..bank.store import Bank, make_entry
from ..cluster import Cluster
from ..graph.ir import Graph
from ..gradients.buckets import (BACKEND_DEFAULT, BACKEND_MAX_SEGMENTS, PLATFORM_BACKEND, baseline_rules,
                                 optimal_partition, simulate)
from ..gradients.timeline import Gradient, PredictedTimeline, check_timeline, load_timeline
from ..outputs import write_gdat_outputs
from ..results import GradientPlan
from ..tuning import improvement
from .backward import predict_timeline
from .setup import prepare_job

__all__ = ["tune_gradients", "gdat_job", "GDAT_OP"]

# The op type of gradient plans in the bank (one file, GradientPlan.json, beside the operators').
GDAT_OP = "GradientPlan"


def tune_gradients(gradients: Iterable[Gradient] | str | os.PathLike, cluster: Cluster, *,
                   max_buckets: int | None = None, backend: str | None = None) -> GradientPlan:
    """The gradient split that minimises the step's end in the timeline model.

    ``gradients``: ``(name, bytes, ready_us)`` in ready order (``ready_us`` never
    decreases), or the path of a timeline JSON file (:func:`load_timeline`) or of an ONNX
    model (``.onnx``: :func:`predict_timeline` on the default SoC).
    ``max_buckets``: at most this many buckets.  ``backend`` ("hccl", "mindspore", "ddp",
    "horovod"): the plan must fit that backend's split API (HCCL: at most 8 segments), and the
    plan's ``improvement`` is over that backend's default rule; without one, over the platform's
    own default (HCCL's split on Ascend), every other rule kept in ``gain``.  A :class:`PredictedTimeline`'s ``unmatched`` names
    are kept in the plan (``apply_plan`` explains a mismatch with them)."""
    t0 = time.perf_counter()
    if isinstance(gradients, (str, os.PathLike)):
        is_onnx = os.fspath(gradients).lower().endswith(".onnx")
        gradients = predict_timeline(gradients) if is_onnx else load_timeline(gradients)
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster must be an aoe_native.Cluster, got {type(cluster).__name__}")
    if backend is not None and backend not in BACKEND_MAX_SEGMENTS:
        raise ValueError(f"backend must be one of {sorted(BACKEND_MAX_SEGMENTS)}, got {backend!r}")
    if max_buckets is not None and (isinstance(max_buckets, bool) or not isinstance(max_buckets, int)
                                    or max_buckets < 1):
        raise ValueError(f"max_buckets must be an integer >= 1, got {max_buckets!r}")
    limit = BACKEND_MAX_SEGMENTS.get(backend) if backend else None
    if limit is not None:
        if max_buckets is not None and max_buckets > limit:
            raise ValueError(f"max_buckets={max_buckets}: {backend} allows at most {limit} segments")
        max_buckets = max_buckets or limit
    unmatched = gradients.unmatched if isinstance(gradients, PredictedTimeline) else {}
    names, sizes, ready = check_timeline(gradients)
    ends = optimal_partition(sizes, ready, cluster, max_buckets)
    starts, finish = simulate(ends, sizes, ready, cluster)
    time_us = float(finish[-1])
    rules = baseline_rules(sizes, ready, cluster, even_k=len(ends))
    base = {k: e for k, (e, _) in rules.items()}
    spans = {k: list(zip(*(map(float, a) for a in simulate(e, sizes, ready, cluster, ticks))))
             for k, (e, ticks) in rules.items()}
    base_t = {k: v[-1][1] for k, v in spans.items()}
    buckets, lo = [], 0
    for e in ends:
        buckets.append(names[lo:e])
        lo = e
    return GradientPlan(
        buckets=buckets, time_us=time_us, exposed_us=time_us - float(ready[-1]), baselines=base_t,
        gain={k: improvement(v, time_us) for k, v in base_t.items()}, names=names,
        gradient_bytes=[int(x) for x in sizes], gradient_ready_us=[float(x) for x in ready],
        bucket_bytes=[int(sizes[a:b].sum()) for a, b in zip([0] + ends[:-1], ends)],
        bucket_start_us=[float(x) for x in starts], bucket_end_us=[float(x) for x in finish],
        backward_us=float(ready[-1]), cluster=cluster.to_dict(), baseline_buckets=base, baseline_spans=spans,
        max_buckets=max_buckets, backend=backend, tuning_time_s=time.perf_counter() - t0,
        reference_baseline=BACKEND_DEFAULT[backend or PLATFORM_BACKEND], unmatched=dict(unmatched))


def gdat_job(cluster: Cluster, *, timeline: str | os.PathLike | None = None, model: Any = None,
             max_buckets: int | None = None, backend: str | None = None, soc_version: str | Platform = DEFAULT_SOC,
             input_shape: Any = None, dtype: str = "float16", bank: str | os.PathLike | None = None,
             repeat_tune: bool = False, evaluator: Any = None, max_evals: int | None = None, seed: int = 0,
             result_dir: str | os.PathLike | None = None, output: str | os.PathLike | None = None) -> GradientPlan:
    """``aoe --job_type=4``: the gradients from a timeline file, else predicted from an ONNX
    model through the evaluator; the plan, served from the SoC's knowledge bank when it holds
    one for this source, cluster and constraints (unless `repeat_tune`), else tuned and stored;
    then the result file (into ``result_dir``) and the HTML report (into ``output``).  Every
    input is checked before anything is written."""
    if (timeline is None) == (model is None):
        raise ValueError("give a gradient timeline file or an ONNX model (one of them)")
    job = prepare_job(model, soc_version, evaluator=evaluator,
                      input_shape=input_shape, dtype=dtype, bank=bank, parallel=1, tuning_time_limit=None,
                      launch_overhead_us=None, output=output, result_dir=result_dir)
    if timeline is not None:
        grads: Iterable[Gradient] = load_timeline(timeline)
        name, evaluated_by = os.path.splitext(os.path.basename(os.fspath(timeline)))[0], None
        source = _digest(list(grads))
    else:  # a model: prepare_job imported it
        name, evaluated_by = job.graph.name, job.evaluator.name
        source = _digest([job.evaluator.name, dtype, max_evals, seed, _graph_signature(job.graph)])
    key = f"{GDAT_OP}({source})|{_digest(cluster.to_dict())}|max_buckets={max_buckets}|backend={backend}"
    plan = None if repeat_tune else _served(job.bank, key)
    if plan is None:
        if timeline is None:
            grads = predict_timeline(job.graph, dtype=dtype, max_evals=max_evals, seed=seed, evaluator=job.evaluator)
        plan = tune_gradients(grads, cluster, max_buckets=max_buckets, backend=backend)
        _store(job.bank, key, plan, name, dtype)
    plan.model_name, plan.soc_version, plan.evaluator = name, job.platform.name, evaluated_by
    plan.bank_directory, plan.tuning_time_s = job.bank.directory, job.elapsed()
    plan.result_file, plan.report_file = write_gdat_outputs(plan, name, output=output, result_dir=result_dir)
    return plan


def _digest(value: Any) -> str:
    """A short, stable digest of a JSON-able value (bank keys)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _graph_signature(graph: Graph) -> list[Any]:
    """What a predicted timeline depends on: each node's type, tensors with their shapes and
    dtypes, and attributes (not the weights' values)."""
    def tensor(name: str) -> list[Any]:
        t = graph.tensors.get(name)
        return [name, None if t is None or t.shape is None else list(t.shape), None if t is None else t.dtype]
    return [[n.op_type, [tensor(i) for i in n.inputs], [tensor(o) for o in n.outputs], repr(sorted(n.attrs.items()))]
            for n in graph.nodes]


_PLAN_FIELDS = ("buckets", "time_us", "exposed_us", "baselines", "gain", "names", "gradient_bytes",
                "gradient_ready_us", "bucket_bytes", "bucket_start_us", "bucket_end_us", "backward_us", "cluster",
                "baseline_buckets", "baseline_spans", "max_buckets", "backend", "reference_baseline", "unmatched")


def _store(the_bank: Bank, key: str, plan: GradientPlan, name: str, dtype: str) -> None:
    """Keep the plan when it beats the reference rule and the bank's entry (the bank policy)."""
    before = plan.baselines[plan.reference_baseline]
    old = the_bank.get(key)
    if not beats_bank(plan.time_us, before, old["time_after_us"] if old else None):
        return
    the_bank.check_writable()
    stored = {f: getattr(plan, f) for f in _PLAN_FIELDS}
    the_bank.store([(key, make_entry(GDAT_OP, [], dtype, [], {"model": name}, {}, before, plan.time_us,
                                     plan=json.loads(json.dumps(stored))))])


def _served(the_bank: Bank, key: str) -> GradientPlan | None:
    """The bank's plan for `key`, or None (none, or one this version cannot read: re-tuned)."""
    entry = the_bank.get(key)
    if entry is None:
        return None
    try:
        stored = entry["plan"]
        kw = {f: stored[f] for f in _PLAN_FIELDS}
        kw["baseline_spans"] = {k: [tuple(s) for s in v] for k, v in kw["baseline_spans"].items()}
        return GradientPlan(**kw, bank_hit=True)
    except (KeyError, TypeError, ValueError):
        return None
