"""Result files of an OPAT job: AOE's ``aoe_result_opat_{timestamp}_{pid}.json`` and the
tuned plan a compiler consumes.  AOE's structure is documented in ascend_model.md §4
(hiascend.com AOE docs aoe_16_019 / aoeep_16_044)."""
from __future__ import annotations

import datetime as _dt
import os
from typing import TYPE_CHECKING, Any

from .fileio import atomic_write_text, dump_json

if TYPE_CHECKING:  # pragma: no cover
    from .opat import ModelTuneResult

__all__ = ["aoe_result", "tuned_plan", "write_outputs", "PLAN_SCHEMA", "percent"]

PLAN_SCHEMA = "aoe_native.tuned_plan"


def percent(fraction: float) -> str:
    """AOE prints improvements as "35.35%" (before / after - 1)."""
    return f"{fraction * 100:.2f}%"


def aoe_result(r: "ModelTuneResult", tuning_name: str | None = None) -> list[dict[str, Any]]:
    """The result in AOE's OPAT result-file structure."""
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
    return [
        {"basic": {"tuning_name": tuning_name or r.model_name, "tuning_time(s)": round(r.tuning_time_s, 3)}},
        {"OPAT": {
            "model_baseline_performance(ms)": round(r.baseline_ms, 6),
            "model_performance_improvement": percent(r.improvement),
            "model_result_performance(ms)": round(r.tuned_ms, 6),
            "opat_tuning_result": "tuning successful" if not failed else
            f"tuning incomplete: {len(failed)} task(s) failed",
            "repo_modified_operators": modified,
            "repo_summary": dict(r.repo_summary),
        }},
    ]


def tuned_plan(r: "ModelTuneResult") -> dict[str, Any]:
    """Per kernel: its nodes, operator, shapes, tiling and time, for a compiler to consume."""
    return {
        "schema": PLAN_SCHEMA, "schema_version": 1,
        "model": r.model_name, "model_path": r.model_path, "soc_version": r.soc_version, "dtype": r.dtype,
        "model_baseline_ms": r.baseline_ms, "model_tuned_ms": r.tuned_ms,
        "launch_overhead_us": r.launch_overhead_us,
        "kernels": [{"index": k.index, "nodes": k.nodes, "onnx_types": k.onnx_types, "op_type": k.op_type,
                     "inputs": k.inputs, "attrs": k.attrs, "output_shape": k.output_shape,
                     "task_key": r.tasks[k.task].key, "tiling": k.tiling, "time_us": k.time_us,
                     "baseline_us": k.baseline_us} for k in r.kernels],
        "unsupported": r.unsupported,
    }


def _timestamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]  # milliseconds


def write_outputs(r: "ModelTuneResult", output: str | os.PathLike | None = None,
                  result_dir: str | os.PathLike | None = None) -> None:
    """Write the AOE result file into `result_dir` and the plan + HTML report into `output`
    (each skipped when None); the paths are recorded on `r`."""
    ts = _timestamp()
    if result_dir is not None:
        os.makedirs(result_dir, exist_ok=True)
        path = os.path.join(os.fspath(result_dir), f"aoe_result_opat_{ts}_{os.getpid()}.json")
        atomic_write_text(path, dump_json(aoe_result(r, f"{r.model_name}_{ts}")))
        r.result_file = path
    if output is not None:
        from .report import render_report
        out = os.fspath(output)
        if os.path.exists(out) and not os.path.isdir(out):
            raise ValueError(f"--output {out}: exists and is not a directory")
        os.makedirs(out, exist_ok=True)
        r.plan_file = os.path.join(out, f"{r.model_name}_tuned_plan.json")
        r.report_file = os.path.join(out, f"{r.model_name}_opat_report.html")
        atomic_write_text(r.plan_file, dump_json(tuned_plan(r)))
        atomic_write_text(r.report_file, render_report(r))
