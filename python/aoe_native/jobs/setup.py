"""What every model-tuning job does before it tunes: check its arguments (once, here), build the
evaluator, import the model, check it fits the device, and open the SoC's knowledge bank.

Operator tuning (:mod:`.opat`), subgraph tuning (:mod:`.sgat`) and gradient-split tuning
(:mod:`.gdat`) all start with :func:`prepare_job`, so a rule about a job's input has one home.
"""
from __future__ import annotations

import math
import numbers
import os
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ascend.platforms import DEFAULT_SOC, Platform, check_compute_dtype
from ..bank.store import Bank
from ..graph import load_graph
from ..graph.ir import Graph
from ..graph.partition import Partition
from ..outputs import check_job_dirs
from .evaluator import CostModelEvaluator, TaskEvaluator

if TYPE_CHECKING:  # onnx is a dependency, but only a model file is needed to call a job
    import onnx

__all__ = ["JobSetup", "prepare_job", "usable_cores", "warn_coverage", "check_device_memory", "CoverageWarning",
           "check_positive_int", "unsupported_summary", "MIN_COVERED_SHARE", "DEFAULT_SOC"]


# Below this share of the model's FLOPs or bytes in modelled kernels, the job warns.
MIN_COVERED_SHARE = 0.9


class CoverageWarning(UserWarning):
    """The cost model sees less than MIN_COVERED_SHARE of the model's FLOPs or bytes."""


@dataclass
class JobSetup:
    """A job's checked inputs: how tasks are evaluated, on which SoC, the imported model, the
    SoC's bank (loaded: a damaged bank stops the job before any work), the launch overhead per
    kernel (us), the worker count, and the job's start and deadline (``time.monotonic``)."""
    evaluator: TaskEvaluator
    platform: Platform
    graph: Graph | None  # None: a job without a model (GDAT on a timeline file)
    bank: Bank
    overhead_us: float
    parallel: int
    t0: float
    deadline: float | None

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no limit; never 0, so a next stage still
        returns the tilings it starts from)."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 1e-9)


def usable_cores() -> int:
    """The cores this process may run on (the default number of worker processes)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def check_positive_int(name: str, value: Any) -> int:
    """`value` as an int >= 1, else a ValueError naming `name` (budgets, worker counts)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be >= 1 (an integer), got {value!r}")
    return int(value)


def _check_launch_overhead(launch_overhead_us: float | None) -> None:
    """A launch overhead given by the user must be a finite number of microseconds >= 0 (an
    infinite one would make every plan's time infinite, found only when storing results)."""
    if launch_overhead_us is not None and not (isinstance(launch_overhead_us, numbers.Real)
                                               and math.isfinite(launch_overhead_us) and launch_overhead_us >= 0):
        raise ValueError(f"launch_overhead_us must be a finite number of microseconds >= 0, got {launch_overhead_us!r}")


def check_device_memory(graph: Graph, plat: Platform) -> None:
    """ValueError when a tensor of the model is larger than the SoC's device memory."""
    largest = graph.largest_tensor()
    if largest is not None and plat.hbm_bytes > 0 and largest[1] > plat.hbm_bytes:
        t, size = largest
        raise ValueError(f"{graph.path or graph.name}: tensor {t.name!r} {list(t.shape or ())} ({t.dtype or '?'}) "
                         f"needs {size / 2**30:.3g} GiB, more than the {plat.hbm_bytes / 2**30:.3g} GiB of device "
                         f"memory of {plat.name}")


def warn_coverage(graph: Graph, part: Partition) -> None:
    """Warn (:class:`CoverageWarning`) when the modelled kernels hold too little of the model's FLOPs or bytes,
    or when there is no kernel at all (a model of views only: nothing to tune, 0 ms)."""
    if not part.kernels:
        warnings.warn(f"{graph.name}: no kernel to tune (its {part.n_nodes} node(s) are views or unsupported); "
                      "the model time is 0", CoverageWarning, stacklevel=3)
        return
    why = part.coverage.shortfall(MIN_COVERED_SHARE) if part.coverage is not None else None
    if why is not None:
        warnings.warn(f"{graph.name}: {why}; the improvement is that of the modelled part", CoverageWarning,
                      stacklevel=3)


def unsupported_summary(part: Partition) -> list[dict[str, Any]]:
    """The unmodelled operator types of a partition, as the results and outputs list them."""
    return [{"op_type": u.onnx_type, "count": u.count, "share": u.share, "reason": u.reason, "nodes": u.nodes}
            for u in part.unsupported]


def prepare_job(model: "str | os.PathLike | onnx.ModelProto | Graph | None", soc_version: str | Platform = DEFAULT_SOC, *, evaluator: TaskEvaluator | None,
                input_shape: str | dict | None, dtype: str, bank: str | os.PathLike | None, parallel: int | None,
                tuning_time_limit: float | None, launch_overhead_us: float | None,
                output: str | os.PathLike | None, result_dir: str | os.PathLike | None) -> JobSetup:
    """Check a job's common arguments, then import the model and open the bank.

    Every argument is checked before the model is read, and the output directories before any
    tuning, so a bad path fails at once rather than after the run.  A given `evaluator` brings
    its own platform (`soc_version` is then unused)."""
    if tuning_time_limit is not None and not tuning_time_limit > 0:
        raise ValueError(f"tuning_time_limit must be > 0 seconds, got {tuning_time_limit}")
    _check_launch_overhead(launch_overhead_us)
    workers = usable_cores() if parallel is None else check_positive_int("parallel", parallel)
    if evaluator is None:
        evaluator = CostModelEvaluator(soc_version)
    plat = evaluator.platform
    check_compute_dtype(dtype, plat)
    check_job_dirs(output, result_dir)
    t0 = time.monotonic()
    graph = model if model is None or isinstance(model, Graph) else load_graph(model, input_shape)
    if graph is not None:
        check_device_memory(graph, plat)
    the_bank = Bank.open(plat.name, bank)  # a damaged bank stops here, untouched
    overhead = float(plat.launch_overhead_us) if launch_overhead_us is None else float(launch_overhead_us)
    return JobSetup(evaluator=evaluator, platform=plat, graph=graph, bank=the_bank, overhead_us=overhead,
                    parallel=workers, t0=t0, deadline=None if tuning_time_limit is None else t0 + tuning_time_limit)
