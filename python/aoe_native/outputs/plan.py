"""The tuned plan: per kernel, its nodes, operator, shapes, tiling and time, for a compiler
to consume."""
from __future__ import annotations

from typing import Any

from ..jobs.results import ModelTuneResult

__all__ = ["PLAN_SCHEMA", "tuned_plan"]

PLAN_SCHEMA = "aoe_native.tuned_plan"


def tuned_plan(r: ModelTuneResult) -> dict[str, Any]:
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
