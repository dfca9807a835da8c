"""What the tuning jobs return, one module that both the jobs (:mod:`aoe_native.jobs`) and the
outputs (:mod:`aoe_native.outputs`) import: the jobs produce these, the outputs render them.

:class:`JobResult` holds what every model-tuning job reports (the model, the SoC, the baseline
and tuned times, the bank, the run); :class:`ModelTuneResult` (operator tuning) and
:class:`SubgraphTuneResult` (subgraph tuning) add their own parts.  :class:`GradientPlan` is
gradient-split tuning's result.  Every result is built with keywords.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .graph.partition import TaskIdentity
from .gradients.buckets import MIB, percents_for
from .tuning import improvement

__all__ = ["JobResult", "TaskResult", "KernelResult", "ModelTuneResult", "FusedKernel", "SubgraphResult",
           "SubgraphTuneResult", "GradientPlan", "plural"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 view", "2 views": counts in outputs read as English."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


@dataclass(kw_only=True)
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
    # what the "before" is: "CANN MatMulV3 default", "approximate CANN default" or "built-in bank"
    baseline_kind: str = ""

    @property
    def improvement(self) -> float:
        """AOE's performance improvement: before / after - 1."""
        return improvement(self.baseline_us, self.time_us)


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class JobResult:
    """What every model-tuning job reports.  ``baseline_ms`` is the model's time before tuning
    (the fixed fusion rules with every kernel at its default tiling), ``tuned_ms`` after; both
    count each kernel's launch overhead.  ``evaluator`` says what the times are ("cost model"
    estimates or "measured")."""
    model_name: str
    model_path: str | None
    soc_version: str
    dtype: str
    baseline_ms: float
    tuned_ms: float
    launch_overhead_us: float
    tuning_time_s: float
    unsupported: list[dict[str, Any]]
    repo_summary: dict[str, int]
    bank_directory: str
    parallel: int
    seed: int
    evaluator: str = "cost model"
    coverage: dict[str, Any] = field(default_factory=dict)  # graph.partition.Coverage.to_dict()
    interrupted: bool = False  # Ctrl-C stopped tuning: unfinished work keeps its best so far (or the default)
    result_file: str | None = None
    plan_file: str | None = None
    report_file: str | None = None

    @property
    def improvement(self) -> float:
        """AOE's model performance improvement: baseline / tuned - 1."""
        return improvement(self.baseline_ms, self.tuned_ms)

    @property
    def times_are(self) -> str:
        """What the times are: "cost model estimate" or what the evaluator measured them with."""
        return "cost model estimate" if self.evaluator == "cost model" else self.evaluator

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.tuned_ms if self.tuned_ms > 0 else 1.0

    def coverage_text(self) -> str:
        """What the improvement covers, e.g. "174 of 175 nodes modelled (1 view, 0 unmodelled),
        100.0% of FLOPs, 100.0% of bytes"."""
        c = self.coverage
        if not c:
            return "coverage unknown"
        return (f"{c['modelled_nodes']} of {c['nodes']} nodes modelled ({plural(c['view_nodes'], 'view')}, "
                f"{c['unmodelled_nodes']} unmodelled), {c['flops_share'] * 100:.1f}% of FLOPs, "
                f"{c['bytes_share'] * 100:.1f}% of bytes")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["improvement"] = self.improvement
        return d


@dataclass(kw_only=True)
class ModelTuneResult(JobResult):
    """Outcome of a model-tuning job (:func:`aoe_native.tune_model`, AOE's job_type 2)."""
    job_type: int = 2
    tasks: list[TaskResult]
    kernels: list[KernelResult]
    n_nodes: int
    n_view_nodes: int
    # Set when operator tuning ran on subgraph tuning's plan (job_type "1,2"): the model time the
    # stage started from (the baseline is then the fused kernels at their default tilings).
    start_ms: float | None = None

    def baseline_kinds(self) -> dict[str, int]:
        """How many tasks' "before" is each kind of default (CANN's own, approximate, built-in bank)."""
        out: dict[str, int] = {}
        for t in self.tasks:
            if t.baseline_kind:
                out[t.baseline_kind] = out.get(t.baseline_kind, 0) + 1
        return out

    def baselines_text(self) -> str:
        """What the tasks' "before" is, e.g. "CANN MatMulV3 default (12 tasks), approximate CANN
        default (15 tasks)"."""
        kinds = ", ".join(f"{k} ({plural(n, 'task')})" for k, n in sorted(self.baseline_kinds().items()))
        return kinds or "default tilings"

    def basis_text(self) -> str:
        """One line saying what the numbers are: "times: cost model estimate; before: ..."."""
        return f"times: {self.times_are}; before: {self.baselines_text()}"

    @property
    def stage_improvement(self) -> float:
        """This stage's own gain: over ``start_ms`` when it continued another stage's plan,
        else the same as ``improvement``."""
        return improvement(self.start_ms if self.start_ms is not None else self.baseline_ms, self.tuned_ms)


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class SubgraphResult:
    """A distinct piece of the graph (identical pieces share one): its kernels under the fixed
    fusion rules with default tilings (before) and under the tuned plan (after)."""
    key: str                       # the subgraph bank's key
    occurrences: int
    nodes: list[str]               # the nodes of its first occurrence
    before_kernels: list[list[str]]
    before_us: float               # one occurrence, launch overheads included (kernel_us: without)
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

    def kernel_us(self, launch_overhead_us: float) -> tuple[float, float]:
        """One occurrence's kernel time before and after, without launch overheads (as the
        operator-tuning outputs show a kernel); ``before_us``/``after_us`` count one launch per kernel."""
        return (self.before_us - len(self.before_kernels) * launch_overhead_us,
                self.after_us - len(self.after_kernels) * launch_overhead_us)


@dataclass(kw_only=True)
class SubgraphTuneResult(JobResult):
    """Outcome of subgraph tuning (:func:`aoe_native.tune_subgraphs`, AOE's job_type 1): the
    baseline is the fixed fusion rules with default tilings and policies, the tuned time that of
    the tuned fusion, split policies and tilings."""
    job_type: int = 1
    optimization_level: str
    nonhomo_split: bool
    subgraphs: list[SubgraphResult]
    kernels: list[FusedKernel]     # the whole fused plan, in execution order
    baseline_kernels: int
    candidate_kernels: int         # distinct (group, policy) kernels evaluated
    evaluations: int
    kept_baseline: bool = False    # the search found nothing faster than the fixed rules
    opat: ModelTuneResult | None = None  # operator tuning run on the fused kernels afterwards
    # The plan as kernels and tasks (graph.partition.Partition): tune_model(graph, kernels=...)
    partition: Any = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(replace(self, partition=None))
        d.pop("partition")
        d["improvement"] = self.improvement
        return d


@dataclass(kw_only=True)
class GradientPlan:
    """The tuned gradient split and how it compares.

    ``buckets``: lists of gradient names in launch order; ``time_us``: the step's end (the
    last bucket's end; time 0 = the start of backward); ``exposed_us``: communication
    after the last gradient is ready; ``baselines``: name → time_us of each fixed rule in
    the same timeline; ``gain``: name → baseline time / plan time − 1; ``names`` and
    ``gradient_bytes``, ``gradient_ready_us``: the input timeline in ready order;
    ``baseline_buckets`` / ``baseline_spans``: each baseline's bucket end indices and
    (start, end) times; ``reference_baseline``: the backend's default rule.  The backend
    settings (``hccl_split_idx``, ``hccl_split_percent``, ``mindspore_fusion_config``,
    ``ddp_bucket_cap_mb_list``) index gradients in ready order (0-based)."""

    buckets: list[list[str]]
    time_us: float
    exposed_us: float
    baselines: dict[str, float]
    gain: dict[str, float]
    names: list[str]
    gradient_bytes: list[int]
    gradient_ready_us: list[float]
    bucket_bytes: list[int]
    bucket_start_us: list[float]
    bucket_end_us: list[float]
    backward_us: float
    cluster: dict[str, Any]
    baseline_buckets: dict[str, list[int]] = field(default_factory=dict)  # name -> end indices
    baseline_spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # (start, end) per bucket
    max_buckets: int | None = None
    backend: str | None = None
    tuning_time_s: float = 0.0
    reference_baseline: str = "hccl_default"
    result_file: str | None = None
    report_file: str | None = None
    # gradient or framework parameter name -> why the framework name could not be matched
    # (a timeline predicted from an ONNX file: PredictedTimeline.unmatched)
    unmatched: dict[str, str] = field(default_factory=dict)
    # The job's bookkeeping (gdat_job): the timeline's source, the SoC that predicted it, and
    # whether the plan was served from the knowledge bank.
    model_name: str | None = None
    soc_version: str | None = None
    evaluator: str | None = None       # "cost model", "measured", ...; None: a timeline file
    bank_hit: bool = False
    bank_directory: str | None = None

    @property
    def improvement(self) -> float:
        """Gain over the backend's default rule (``reference_baseline``; without a backend the
        platform's own, HCCL's default split on an Ascend SoC)."""
        return self.gain[self.reference_baseline]

    def ordered_baselines(self) -> list[tuple[str, float]]:
        """The baselines with their times, the reference (the platform's or backend's default)
        first, then the others from fastest to slowest."""
        ref = self.reference_baseline
        return [(ref, self.baselines[ref])] + sorted(((k, t) for k, t in self.baselines.items() if k != ref),
                                                      key=lambda kv: kv[1])

    @property
    def ends(self) -> list[int]:
        """Exclusive end index of each bucket in the ready order."""
        return [int(e) for e in np.cumsum([len(b) for b in self.buckets])]

    @property
    def hccl_split_idx(self) -> list[int]:
        """For HCCL ``set_split_strategy_by_idx``: the last gradient index of each segment
        (ascending, the last one = number of gradients − 1)."""
        return [e - 1 for e in self.ends]

    @property
    def hccl_split_percent(self) -> list[float]:
        """For HCCL ``set_split_strategy_by_size``: each segment's share of the bytes in
        percent, summing to 100, printed with 2 decimals chosen so that HCCL's rule (a segment
        ends at the first gradient whose cumulative share reaches the running sum) gives
        exactly the planned segments; with more decimals where no 2-decimal value does."""
        return percents_for(np.array(self.gradient_bytes, dtype=np.int64), self.ends)

    @property
    def mindspore_fusion_config(self) -> list[int]:
        """For MindSpore ``all_reduce_fusion_config``: the split points (gradients before each
        cut), without the final end."""
        return self.ends[:-1]

    @property
    def ddp_bucket_cap_mb_list(self) -> list[float]:
        """For ``DistributedDataParallel(bucket_cap_mb_list=...)``: each bucket's exact size
        in MiB (bytes / 2^20, exact in binary floating point), in ready order; DDP closes a
        bucket when it reaches its cap, so these caps give exactly the planned buckets."""
        return [b / MIB for b in self.bucket_bytes]

    def to_dict(self) -> dict[str, Any]:
        return {
            "time_us": self.time_us, "exposed_us": self.exposed_us, "backward_us": self.backward_us,
            "buckets": self.buckets, "bucket_bytes": self.bucket_bytes,
            "bucket_start_us": self.bucket_start_us, "bucket_end_us": self.bucket_end_us,
            "baselines": self.baselines, "gain": self.gain, "max_buckets": self.max_buckets,
            "backend": self.backend, "cluster": self.cluster,
            "hccl_split_idx": self.hccl_split_idx, "hccl_split_percent": self.hccl_split_percent,
            "mindspore_fusion_config": self.mindspore_fusion_config,
            "ddp_bucket_cap_mb_list": self.ddp_bucket_cap_mb_list, "unmatched": self.unmatched,
            "reference_baseline": self.reference_baseline, "improvement": self.improvement,
        }
