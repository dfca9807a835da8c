"""AOE's result files, ``aoe_result_{mode}_{timestamp}_{pid}.json``: a ``basic`` section and
one section per tuning mode (AOE docs aoe_16_019 / aoeep_16_044 on hiascend.com,
summarised in docs/ascend_model.md §4).  The writer is shared by every mode; each mode
brings its section (:func:`opat_section` for operator tuning)."""
from __future__ import annotations

import datetime as _dt
import os
from typing import Any

from ..fileio import atomic_write_text, dump_json
from ..results import ModelTuneResult, SubgraphTuneResult

__all__ = ["percent", "timestamp", "write_result_file", "opat_section", "sgat_section", "gdat_section"]


def percent(fraction: float) -> str:
    """AOE prints improvements as "35.35%" (before / after - 1)."""
    return f"{fraction * 100:.2f}%"


def timestamp() -> str:
    """AOE's file-name timestamp, to the millisecond."""
    return _dt.datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]


def write_result_file(result_dir: str | os.PathLike, mode: str, tuning_name: str, tuning_time_s: float,
                      section: dict[str, Any], stamp: str | None = None) -> str:
    """Write ``[{"basic": ...}, {MODE: section}]`` atomically; returns the path."""
    stamp = stamp or timestamp()
    os.makedirs(result_dir, exist_ok=True)
    path = os.path.join(os.fspath(result_dir), f"aoe_result_{mode.lower()}_{stamp}_{os.getpid()}.json")
    doc = [{"basic": {"tuning_name": tuning_name, "tuning_time(s)": round(tuning_time_s, 3)}},
           {mode.upper(): section}]
    atomic_write_text(path, dump_json(doc))
    return path


def opat_section(r: ModelTuneResult) -> dict[str, Any]:
    """The ``OPAT`` section of a result file."""
    modified = []
    for t in r.tasks:
        if t.update_mode not in ("add", "update"):
            continue
        modified.append({"op_name": t.node_names[0], "op_type": t.op_type, "tune_performance": {"Schedule": {
            "performance_after_tune(us)": round(t.time_us, 3),
            "performance_before_tune(us)": round(t.baseline_us, 3),
            "performance_improvement": percent(t.improvement),
            "update_mode": t.update_mode}}})
    failed = [t for t in r.tasks if t.update_mode == "failed"]
    return {
        "model_baseline_performance(ms)": round(r.baseline_ms, 6),
        "model_performance_improvement": percent(r.improvement),
        "model_result_performance(ms)": round(r.tuned_ms, 6),
        "opat_tuning_result": ("tuning interrupted: unfinished tasks keep the best tiling of their finished rounds, "
                               "else the default" if r.interrupted
                               else f"tuning incomplete: {len(failed)} task(s) failed" if failed
                               else "tuning successful"),
        "repo_modified_operators": modified,
        "repo_summary": dict(r.repo_summary),
        # Added by aoe-native (not AOE fields): what the improvement above covers, and what the
        # times and the "before" are.
        "model_coverage": {k: v for k, v in r.coverage.items()},
        "aoe_native_basis": {"times": r.times_are, "baselines": r.baseline_kinds()},
    }


def sgat_section(r: SubgraphTuneResult) -> dict[str, Any]:
    """The ``SGAT`` section of a result file: the model's baseline (fixed fusion rules, default
    tilings) and result performance, each changed subgraph's before/after, and the bank summary
    (the same add/hit/reserved/unsatisfied/update meanings as OPAT's)."""
    modified = []
    for s in r.subgraphs:
        if s.update_mode not in ("add", "update"):
            continue
        modified.append({"subgraph_key": s.key, "occurrences": s.occurrences, "nodes": s.nodes,
                         "kernels_before": s.before_kernels,
                         "kernels_after": [{"nodes": k.nodes, "op_type": k.op_type, "split_policy": k.policy,
                                            "tiling": k.tiling} for k in s.after_kernels],
                         "tune_performance": {
                             "performance_after_tune(us)": round(s.after_us, 3),
                             "performance_before_tune(us)": round(s.before_us, 3),
                             "performance_improvement": percent(s.improvement),
                             "update_mode": s.update_mode}})
    return {
        "model_baseline_performance(ms)": round(r.baseline_ms, 6),
        "model_performance_improvement": percent(r.improvement),
        "model_result_performance(ms)": round(r.tuned_ms, 6),
        "sgat_tuning_result": ("tuning interrupted: the plan uses the subgraphs tuned so far" if r.interrupted
                               else "tuning successful: no fusion faster than the fixed rules was found"
                               if r.kept_baseline else "tuning successful"),
        "repo_modified_subgraphs": modified,
        "repo_summary": dict(r.repo_summary),
        # Added by aoe-native (not AOE fields): the options and what the improvement covers.
        "tune_optimization_level": r.optimization_level,
        "Fnonhomo_split": r.nonhomo_split,
        "aoe_native_basis": {"times": r.times_are, "baselines": {"fixed fusion rules, default tilings": len(r.subgraphs)}},
        "kernels_before": r.baseline_kernels,
        "kernels_after": len(r.kernels),
        "model_coverage": dict(r.coverage),
    }


def gdat_section(plan: Any) -> dict[str, Any]:
    """The ``GDAT`` section of a result file, from a :class:`~aoe_native.results.GradientPlan`:
    the plan (buckets, predicted times, the settings for HCCL, MindSpore and DDP), the
    baselines and the gain over each (times in us, time 0 = start of backward)."""
    lo = 0
    buckets = []
    for k, b in enumerate(plan.buckets):
        buckets.append({"index": k, "gradients": b, "first_gradient_index": lo, "bytes": plan.bucket_bytes[k],
                        "start_us": round(plan.bucket_start_us[k], 3), "end_us": round(plan.bucket_end_us[k], 3)})
        lo += len(b)
    return {
        "gdat_tuning_result": "tuning successful",
        "step_time_us": round(plan.time_us, 3),
        "backward_us": round(plan.backward_us, 3),
        "exposed_communication_us": round(plan.exposed_us, 3),
        "gradients": len(plan.names),
        "max_buckets": plan.max_buckets,
        "backend": plan.backend,
        "cluster": plan.cluster,
        "buckets": buckets,
        "baselines": {k: {"step_time_us": round(t, 3), "buckets": len(plan.baseline_buckets[k]),
                          "performance_improvement": percent(plan.gain[k])} for k, t in plan.baselines.items()},
        "hccl_split_idx": plan.hccl_split_idx,
        "hccl_split_percent": plan.hccl_split_percent,
        "mindspore_fusion_config": plan.mindspore_fusion_config,
        "ddp_bucket_cap_mb_list": plan.ddp_bucket_cap_mb_list,
        # gradients whose framework name the model file does not hold, and parameters it lost: why
        "unmatched_gradients": dict(plan.unmatched),
    }
