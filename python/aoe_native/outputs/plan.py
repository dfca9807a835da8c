"""The tuned plan: per kernel, its nodes, operator, shapes, tiling and time, for a compiler
to consume."""
from __future__ import annotations

from typing import Any

from ..results import ModelTuneResult, SubgraphTuneResult

__all__ = ["PLAN_SCHEMA", "FUSED_PLAN_SCHEMA", "tuned_plan", "fused_plan"]

PLAN_SCHEMA = "aoe_native.tuned_plan"
FUSED_PLAN_SCHEMA = "aoe_native.fused_plan"


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


def fused_plan(r: SubgraphTuneResult) -> dict[str, Any]:
    """Subgraph tuning's plan: which nodes form which kernel, with its split policy and tiling."""
    return {
        "schema": FUSED_PLAN_SCHEMA, "schema_version": 1,
        "model": r.model_name, "model_path": r.model_path, "soc_version": r.soc_version, "dtype": r.dtype,
        "model_baseline_ms": r.baseline_ms, "model_result_ms": r.tuned_ms, "kept_fixed_rules": r.kept_baseline,
        "launch_overhead_us": r.launch_overhead_us,
        "kernels": [{"index": i, "nodes": k.nodes, "onnx_types": k.onnx_types, "op_type": k.op_type,
                     "inputs": k.inputs, "attrs": k.attrs, "split_policy": k.policy, "output_shape": k.output_shape,
                     "task_key": k.task_key, "tiling": k.tiling, "time_us": k.time_us}
                    for i, k in enumerate(r.kernels)],
        "unsupported": r.unsupported,
    }
