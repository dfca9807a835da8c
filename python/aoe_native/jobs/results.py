"""What a model-tuning job returns: per task, per kernel and for the whole model.  The
outputs (:mod:`aoe_native.outputs`) render these; the jobs produce them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..graph.partition import TaskIdentity
from ..tuning import improvement

__all__ = ["TaskResult", "KernelResult", "ModelTuneResult", "FusedKernel", "SubgraphResult", "SubgraphTuneResult"]


@dataclass
class TaskResult(TaskIdentity):
    """A distinct task: what it is, how often it occurs, and what tuning gave."""
    occurrences: int
    node_names: list[str]          # nodes of the task's first kernel
    baseline_tiling: dict[str, int] | None
    baseline_us: float
    tiling: dict[str, int] | None
    time_us: float                 # after tuning (never worse than the baseline)
    update_mode: str               # add / update / reserved / unsatisfied / skipped / failed / not reached
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
        return improvement(self.baseline_us, self.time_us)


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
    """Outcome of a model-tuning job (:func:`aoe_native.tune_model`)."""
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
    evaluator: str = "cost model"
    coverage: dict[str, Any] = field(default_factory=dict)  # graph.partition.Coverage.to_dict()
    interrupted: bool = False  # Ctrl-C stopped tuning: unfinished tasks keep their best so far (or the default)
    result_file: str | None = None
    plan_file: str | None = None
    report_file: str | None = None

    @property
    def improvement(self) -> float:
        """AOE's model performance improvement: baseline / tuned - 1."""
        return improvement(self.baseline_ms, self.tuned_ms)

    def coverage_text(self) -> str:
        """What the improvement covers, e.g. "174 of 175 nodes modelled (1 view, 0 unmodelled),
        100.0% of FLOPs, 100.0% of bytes"."""
        c = self.coverage
        if not c:
            return "coverage unknown"
        return (f"{c['modelled_nodes']} of {c['nodes']} nodes modelled ({c['view_nodes']} views, "
                f"{c['unmodelled_nodes']} unmodelled), {c['flops_share'] * 100:.1f}% of FLOPs, "
                f"{c['bytes_share'] * 100:.1f}% of bytes")

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.tuned_ms if self.tuned_ms > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["improvement"] = self.improvement
        return d


@dataclass
class FusedKernel:
    """One kernel of a subgraph-tuning plan: the nodes it fuses, its operator (with the split
    policy among its attributes), its tiling and its time."""
    nodes: list[str]
    onnx_types: list[str]
    op_type: str
    inputs: list[list[int]]
    attrs: dict[str, Any]
    policy: dict[str, int]         # the split-policy attributes chosen (empty: the compiler's default)
    task_key: str
    tiling: dict[str, int] | None
    time_us: float
    baseline_us: float             # the same kernel with its default tiling and default policy
    output_shape: list[int] = field(default_factory=list)


@dataclass
class SubgraphResult:
    """A distinct piece of the graph (identical pieces share one): its kernels under the fixed
    fusion rules with default tilings (before) and under the tuned plan (after)."""
    key: str                       # the subgraph bank's key
    occurrences: int
    nodes: list[str]               # the nodes of its first occurrence
    before_kernels: list[list[str]]
    before_us: float               # one occurrence, launch overheads included
    after_kernels: list[FusedKernel]
    after_us: float
    update_mode: str               # add / update / reserved / unsatisfied (bank/policy.py) / not reached
    bank_hit: bool
    evaluations: int = 0

    @property
    def fusion_changed(self) -> bool:
        """Are its nodes grouped into kernels differently from the fixed rules?"""
        return sorted(k.nodes for k in self.after_kernels) != sorted(self.before_kernels)

    @property
    def changed(self) -> bool:
        """Different kernels or a faster time (split policies, tilings) than the fixed rules'."""
        return self.fusion_changed or self.after_us < self.before_us

    @property
    def improvement(self) -> float:
        return improvement(self.before_us, self.after_us)


@dataclass
class SubgraphTuneResult:
    """Outcome of subgraph tuning (:func:`aoe_native.tune_subgraphs`, AOE's job_type 1)."""
    model_name: str
    model_path: str | None
    soc_version: str
    dtype: str
    optimization_level: str
    nonhomo_split: bool
    baseline_ms: float             # fixed fusion rules, default tilings and policies
    result_ms: float               # the tuned fusion, split policies and tilings
    launch_overhead_us: float
    tuning_time_s: float
    subgraphs: list[SubgraphResult]
    kernels: list[FusedKernel]     # the whole fused plan, in execution order
    baseline_kernels: int
    unsupported: list[dict[str, Any]]
    repo_summary: dict[str, int]
    bank_directory: str
    candidate_kernels: int         # distinct (group, policy) kernels evaluated
    evaluations: int
    parallel: int
    seed: int
    evaluator: str = "cost model"
    coverage: dict[str, Any] = field(default_factory=dict)
    kept_baseline: bool = False    # the search found nothing faster than the fixed rules
    interrupted: bool = False      # Ctrl-C stopped tuning; the plan uses what was finished
    opat: ModelTuneResult | None = None  # operator tuning run on the fused kernels afterwards
    # The plan as kernels and tasks (graph.partition.Partition): tune_model(graph, kernels=...)
    partition: Any = field(default=None, repr=False)
    result_file: str | None = None
    plan_file: str | None = None
    report_file: str | None = None

    @property
    def improvement(self) -> float:
        """AOE's model performance improvement: baseline / result - 1."""
        return improvement(self.baseline_ms, self.result_ms)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(replace(self, partition=None))
        d.pop("partition")
        d["improvement"] = self.improvement
        return d
