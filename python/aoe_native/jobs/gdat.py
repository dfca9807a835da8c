"""Gradient-split tuning (GDAT, AOE_MODE 4): which gradients to all-reduce together.

In data-parallel training each gradient is all-reduced across the ranks while the
backward pass goes on.  Buckets of gradients, contiguous in the order the gradients
become ready, trade start-up costs (few buckets) against overlap (many buckets).

The timeline, as in MG-WFBP (Shi et al., INFOCOM'19, arXiv 1811.11141): bucket k starts
when its last gradient is ready and bucket k−1 has finished, and takes
``cluster.allreduce_us(bytes of bucket k)``; the step's time is the end of the last
bucket.  :func:`tune_gradients` finds the exact optimum of that timeline (a DP over
contiguous buckets, optionally with at most K buckets) and evaluates the rules people
run (DDP, Horovod, HCCL, MindSpore, MG-WFBP) in the same model.

Inputs: a list of ``(name, bytes, ready_us)``; :func:`load_timeline` (a JSON file);
:func:`predict_timeline` (an ONNX model through the Ascend cost model);
``aoe_native.torch_ddp.measure_timeline`` (a real PyTorch run).
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..ascend.ops import tune_op
from ..ascend.platforms import Platform, check_compute_dtype, native_platform
from ..cluster import Cluster
from ..graph.ir import EXPORTER_MADE_PREFIX, RELAYOUT_OPS, Graph, Node
from ..graph.lowering import VIEW_OPS, UnsupportedNode, map_node
from ..graph import load_graph
from ..fileio import read_given_json
from ..outputs import check_job_dirs, write_gdat_outputs
from ..tuning import improvement

__all__ = ["GradientPlan", "TimelineError", "tune_gradients", "simulate", "load_timeline", "predict_timeline",
           "PredictedTimeline", "GradientNameWarning", "describe_unmatched", "BACKEND_MAX_SEGMENTS", "gdat_job",
           "baseline_partitions", "optimal_partition"]

Gradient = tuple[str, int, float]

# Segments a backend's split API accepts (None: no limit).  HCCL: set_split_strategy_by_idx /
# by_size take at most 8 segments (tuning_modes.md §1).
BACKEND_MAX_SEGMENTS: dict[str, int | None] = {"hccl": 8, "mindspore": None, "ddp": None, "horovod": None}
# Each backend's own default, the "before" of a report.
BACKEND_DEFAULT = {"hccl": "hccl_default", "mindspore": "mindspore_even", "ddp": "ddp_25mb",
                   "horovod": "horovod_128mb"}

MIB = 1 << 20
# An unlimited plan with more buckets than this is replaced by an equally fast one with at most
# this many when there is one.
FEW_BUCKETS = 32
DDP_FIRST_BUCKET = 1 * MIB       # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DDP_BUCKET_CAP = 25 * MIB        # DistributedDataParallel(bucket_cap_mb=25)
HCCL_DEFAULT_SPLIT = (96.54, 3.46)  # HCCL's default split by size, percent (tuning_modes.md §1)
# Horovod's fusion threshold and cycle time: 128 MB / 1 ms since horovod PR #2468, 64 MB / 5 ms before
# (tuning_modes.md §3).
HOROVOD_SETTINGS = {"horovod_64mb": (64 * MIB, 5000.0), "horovod_128mb": (128 * MIB, 1000.0)}


class TimelineError(ValueError):
    """A gradient timeline that cannot be used; the message names the item."""


class GradientNameWarning(UserWarning):
    """Gradients predicted from an ONNX file whose framework names the file does not hold, or
    framework parameters the file lost (``PredictedTimeline.unmatched`` says which and why)."""


class PredictedTimeline(list):
    """What :func:`predict_timeline` returns: the ``(name, bytes, ready_us)`` list, plus
    ``unmatched``: name -> why, for gradients whose framework name the ONNX file does not hold
    and for framework parameters missing from the timeline (the plan keeps it, and
    ``aoe_native.torch_ddp.apply_plan`` explains a mismatch with it)."""

    def __init__(self, gradients: Iterable[Gradient] = (), unmatched: dict[str, str] | None = None) -> None:
        super().__init__(gradients)
        self.unmatched: dict[str, str] = dict(unmatched or {})


# --------------------------------------------------------------------------- input
# A gradient of more than a petabyte is an input error; the bound keeps every bucket's byte
# count (a sum of up to millions of them) inside int64 (found by fuzzing).
_MAX_BYTES = 1 << 50


def _check_timeline(gradients: Iterable[Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    names: list[str] = []
    sizes: list[int] = []
    ready: list[float] = []
    seen: dict[str, int] = {}
    for i, g in enumerate(gradients):
        try:
            name, nbytes, r = g
        except (TypeError, ValueError):
            raise TimelineError(f"gradient {i}: expected (name, bytes, ready_us), got {g!r}") from None
        where = f"gradient {i} ({name!r})"
        if not isinstance(name, str) or not name:
            raise TimelineError(f"gradient {i}: name must be a non-empty string, got {name!r}")
        if name in seen:
            raise TimelineError(f"{where}: duplicate name (also gradient {seen[name]})")
        seen[name] = i
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or not 0 < nbytes <= _MAX_BYTES:
            raise TimelineError(f"{where}: bytes must be an integer in 1..2^50, got {nbytes!r}")
        if isinstance(r, bool) or not isinstance(r, (int, float, np.number)) or not math.isfinite(r):
            raise TimelineError(f"{where}: ready_us must be a finite number, got {r!r}")
        if r < 0:
            raise TimelineError(f"{where}: ready_us {r} is negative (it counts from the start of backward)")
        if ready and r < ready[-1]:
            raise TimelineError(f"{where}: ready_us {r} goes backwards (previous gradient ready at {ready[-1]}); "
                                "list gradients in the order they become ready")
        names.append(name)
        sizes.append(int(nbytes))
        ready.append(float(r))
    if not names:
        raise TimelineError("the timeline has no gradient")
    return names, np.array(sizes, dtype=np.int64), np.array(ready, dtype=float)


def load_timeline(path: str | os.PathLike) -> list[Gradient]:
    """Read a timeline JSON: ``{"gradients": [{"name": ..., "bytes": ..., "ready_us": ...}, ...]}``
    in ready order (a bare list of such objects, or of ``[name, bytes, ready_us]``, is accepted)."""
    where = f"timeline file {os.fspath(path)}"
    doc = read_given_json(path, "timeline file", TimelineError)
    items = doc.get("gradients") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise TimelineError(f"{where}: expected {{\"gradients\": [...]}}")
    out: list[Gradient] = []
    for i, it in enumerate(items):
        if isinstance(it, dict):
            missing = [k for k in ("name", "bytes", "ready_us") if k not in it]
            if missing:
                raise TimelineError(f"{where}: gradient {i}: field(s) {missing} missing")
            it = (it["name"], it["bytes"], it["ready_us"])
        out.append(tuple(it) if isinstance(it, list) else it)
    try:
        _check_timeline(out)
    except TimelineError as e:
        raise TimelineError(f"{where}: {e}") from None
    return out


# --------------------------------------------------------------------------- the timeline
def simulate(ends: Sequence[int], sizes: np.ndarray, ready: np.ndarray, cluster: Cluster,
             not_before: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times of each bucket; ``ends`` are the buckets' exclusive end indices.
    ``not_before``: the earliest start of each bucket besides its gradients and the previous
    bucket (a Horovod cycle's tick); None for a plan applied as soon as it can be."""
    starts, finish, prev, lo = [], [], -math.inf, 0
    for k, e in enumerate(ends):
        s = max(prev, ready[e - 1], -math.inf if not_before is None else not_before[k])
        prev = s + float(cluster.allreduce_us(float(sizes[lo:e].sum())))
        starts.append(s)
        finish.append(prev)
        lo = e
    return np.array(starts), np.array(finish)


def _tolerant(t: float) -> float:
    """Times within a relative 1e-12 count as equal (float sums of the same buckets differ
    in the last bits)."""
    return t + 1e-12 * max(1.0, abs(t))


def optimal_partition(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster,
                      max_buckets: int | None = None) -> list[int]:
    """Exact optimum of the timeline: the buckets' exclusive end indices.

    f_k(j) = the earliest time at which gradients 0..j−1 can all be reduced in k buckets:
    f_k(j) = min over i < j of max(f_{k−1}(i), ready[j−1]) + T(bytes i..j−1).
    Keeping only the earliest finish per (prefix, bucket count) is exact because the rest of
    the timeline depends on the prefix only through its finish time F, and every later
    bucket's end, max(F, ready) + T, never decreases in F: a plan that finishes the prefix
    later cannot end the step earlier (exchange argument, by induction over the buckets).
    Without a bucket limit the count drops out: O(L²); with K buckets O(K·L²), both
    vectorised.  Among equally fast plans the DP prefers fewer buckets.
    """
    L = len(sizes)
    prefix = np.concatenate([[0.0], np.cumsum(sizes, dtype=float)])
    K = L if max_buckets is None else min(max_buckets, L)
    if K >= L:
        f = np.full(L + 1, math.inf)
        f[0] = -math.inf  # nothing to wait for before the first bucket
        arg = np.zeros(L + 1, dtype=np.int64)
        count = np.zeros(L + 1, dtype=np.int64)
        for j in range(1, L + 1):
            cand = np.maximum(f[:j], ready[j - 1]) + cluster.allreduce_us(prefix[j] - prefix[:j])
            # among (numerically) equally early finishes, the one with the fewest buckets
            tie = cand <= _tolerant(float(cand.min()))
            i = int(np.argmin(np.where(tie, count[:j], L + 1)))
            f[j], arg[j], count[j] = cand[i], i, count[i] + 1
        ends, j = [], L
        while j > 0:
            ends.append(j)
            j = int(arg[j])
        if len(ends) > FEW_BUCKETS and max_buckets is None:
            # Often many splits tie (the step is compute-bound); prefer a plan with few
            # buckets when one is as fast: easier to apply and to read.
            few = optimal_partition(sizes, ready, cluster, FEW_BUCKETS)
            if simulate(few, sizes, ready, cluster)[1][-1] <= _tolerant(float(f[L])):
                return few
        return ends[::-1]
    # bucket-limited: row k of F holds f_k; one vector operation per j covers every k
    F = np.full((K + 1, L + 1), math.inf)
    F[0, 0] = -math.inf
    arg = np.zeros((K + 1, L + 1), dtype=np.int64)
    rows = np.arange(K)
    for j in range(1, L + 1):
        cand = np.maximum(F[:K, :j], ready[j - 1]) + cluster.allreduce_us(prefix[j] - prefix[:j])
        a = np.argmin(cand, axis=1)
        F[1:, j] = cand[rows, a]
        arg[1:, j] = a
    k = int(np.argmax(F[1:, L] <= _tolerant(float(F[1:, L].min())))) + 1  # fewest buckets among the fastest
    ends, j = [], L
    for k in range(k, 0, -1):
        ends.append(j)
        j = int(arg[k, j])
    return ends[::-1]


# --------------------------------------------------------------------------- baselines
def _greedy_caps(sizes: np.ndarray, caps: Callable[[int], float]) -> list[int]:
    """DDP's rule: add tensors in ready order; a bucket closes once its size reaches its cap
    (the tensor that crosses the cap stays in it: pytorch#48880)."""
    ends, acc = [], 0
    for i, n in enumerate(sizes):
        acc += int(n)
        if acc >= caps(len(ends)):
            ends.append(i + 1)
            acc = 0
    if not ends or ends[-1] != len(sizes):
        ends.append(len(sizes))
    return ends


# A cumulative percentage reaches a gradient's cumulative share within this (float sums of
# percentages printed with 2 decimals miss an exact share by a few ulps).
_PERCENT_TOL = 1e-9


def _cumulative_percent(sizes: np.ndarray) -> np.ndarray:
    """Each gradient's cumulative share of the bytes, in percent, in ready order."""
    return np.cumsum(sizes) / float(sizes.sum()) * 100.0


def _percent_cut(cum: np.ndarray, acc: float) -> int:
    """HCCL's rule for one cut: the segment whose percentages add up to ``acc`` ends at the
    first gradient whose cumulative share reaches ``acc`` (exclusive end index)."""
    return int(np.searchsorted(cum, acc - _PERCENT_TOL)) + 1


def _split_by_percent(sizes: np.ndarray, percents: Sequence[float]) -> list[int]:
    """Segments by cumulative share of the bytes (HCCL set_split_strategy_by_size): a segment
    ends at the first gradient where the cumulative share reaches its percentage."""
    cum = _cumulative_percent(sizes)
    ends, acc = [], 0.0
    for p in percents[:-1]:
        acc += p
        e = _percent_cut(cum, acc)
        if (not ends or e > ends[-1]) and e < len(sizes):
            ends.append(e)
    return ends + [len(sizes)]


def _fits(cum: np.ndarray, acc: float, p: float, e: int) -> bool:
    """Whether printing ``p`` after percentages summing to ``acc`` makes HCCL's rule cut at
    ``e`` and leaves the segments after it a positive share."""
    return p > 0 and acc + p < 100.0 and _percent_cut(cum, acc + p) == e


def _percents_for(sizes: np.ndarray, ends: Sequence[int]) -> list[float]:
    """Percentages that :func:`_split_by_percent` turns back into exactly ``ends``.

    A cut at ``e`` needs the running sum of the printed percentages (as the rule adds them)
    to reach gradient e−1's cumulative share but not gradient e−2's.  Per cut, the value with
    the fewest decimals (2 at least) that does so, nearest the bucket's true share (else the
    middle of the interval); more decimals only when no shorter value lies in the interval,
    which is narrower than 0.01 when the cut's gradient holds less than 0.01% of the bytes.
    The last segment takes the rest of 100.  Segments that together hold less than the rule's
    tolerance (1e-9 percent) cannot be reproduced by any percentages."""
    cum = _cumulative_percent(sizes)
    out: list[float] = []
    acc, most = 0.0, 2
    for e in ends[:-1]:
        below = float(cum[e - 2]) if e >= 2 else 0.0
        share = float(cum[e - 1])
        # the middle of the running sums that cut at e and stay below 100
        middle = (below + _PERCENT_TOL + min(share + _PERCENT_TOL, 100.0)) / 2
        for d in range(2, 18):
            near = round(share - acc, d)
            fit = next((p for p in (near, round(near - 10.0 ** -d, d), round(near + 10.0 ** -d, d),
                                    round(middle - acc, d)) if _fits(cum, acc, p, e)), None)
            if fit is not None:
                chosen, most = fit, max(most, d)
                break
        else:
            # Unrounded (a gradient of a few ulps of 100%).  Segments holding less than the
            # rule's tolerance in all cannot be told apart by it: then the true share, and HCCL
            # merges that segment with a neighbour.
            chosen = next((p for p in (middle - acc, share + _PERCENT_TOL - acc) if _fits(cum, acc, p, e)),
                          share - acc)
        out.append(float(chosen))
        acc += chosen
    last = round(100.0 - acc, most)
    while last <= 0 and most < 17:  # a last segment below 10^-most percent
        most += 1
        last = round(100.0 - acc, most)
    return out + [last]


def _horovod(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster, threshold: int, cycle_us: float
             ) -> tuple[list[int], list[float]]:
    """Horovod's fusion, as its background thread runs it: the thread wakes every ``cycle_us``
    (the first tick at time 0, when backward starts); at a tick it takes the tensors that are
    ready and all-reduces them one fusion buffer after another, each of at most ``threshold``
    bytes (a larger tensor goes alone); it sleeps again until the cycle time since that tick
    has passed and its all-reduces are done, and an idle thread ticks every ``cycle_us``.
    Returns the buckets' end indices and each bucket's tick (its earliest start: a bucket
    waits for the tick after its gradients are ready, :func:`simulate`'s ``not_before``)."""
    L, i, tick, prev, ends, ticks = len(sizes), 0, 0.0, 0.0, [], []
    while i < L:
        if ready[i] > tick:
            tick += cycle_us * math.ceil((ready[i] - tick) / cycle_us)
        j = int(np.searchsorted(ready, tick, side="right"))
        while i < j:
            acc, e = int(sizes[i]), i + 1
            while e < j and acc + int(sizes[e]) <= threshold:
                acc += int(sizes[e])
                e += 1
            prev = max(prev, tick) + float(cluster.allreduce_us(float(acc)))
            ends.append(e)
            ticks.append(tick)
            i = e
        tick = max(tick + cycle_us, prev)
    return ends, ticks


def _mg_wfbp(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster) -> list[int]:
    """MG-WFBP (Shi et al., INFOCOM'19, arXiv 1811.11141; HKBU-HPML/MG-WFBP): walk the
    gradients in ready order; merge gradient i (with what was merged into it) into the
    next one's bucket when its all-reduce would still be running when the next gradient
    is ready and either it could not start before that, or waiting for the next gradient
    costs less than the start-up it saves.  The reference code recomputes every start
    time after a merge (O(L²)); a decision at i only reads the start of i, which depends
    on the decisions before it, so one forward pass gives the same groups in O(L)."""
    L = len(sizes)
    startup = float(cluster.allreduce_us(0.0))
    ends, acc, start = [], 0.0, float(ready[0])  # start: when i's all-reduce could begin
    for i in range(L):
        acc += float(sizes[i])
        if i == L - 1:
            break
        tc = float(cluster.allreduce_us(acc))
        nxt = float(ready[i + 1])
        if nxt < start + tc and (start > nxt or nxt - start < startup):
            start = max(start, nxt)  # merged: the group now starts with gradient i + 1
            continue
        ends.append(i + 1)
        start = max(start + tc, nxt)
        acc = 0.0
    return ends + [L]


def _even_backward(ready: np.ndarray, k: int) -> list[int]:
    """MindSpore's even split (allreduce_fusion algo 1): k groups of equal backward time,
    i.e. cut where the ready time crosses each k-th of the backward span."""
    L = len(ready)
    t0, t1 = float(ready[0]), float(ready[-1])
    ends = []
    for q in range(1, k):
        e = int(np.searchsorted(ready, t0 + (t1 - t0) * q / k, side="right"))
        if 0 < e < L and (not ends or e > ends[-1]):
            ends.append(e)
    return ends + [L]


def _baselines(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster, even_k: int
               ) -> dict[str, tuple[list[int], list[float] | None]]:
    """Each fixed rule's bucket end indices and, for Horovod, each bucket's cycle tick."""
    L = len(sizes)
    out: dict[str, tuple[list[int], list[float] | None]] = {
        "no_fusion": (list(range(1, L + 1)), None),
        "one_bucket": ([L], None),
        "hccl_default": (_split_by_percent(sizes, HCCL_DEFAULT_SPLIT), None),
        # DDP: buckets in reverse parameter registration order, which is the ready order for
        # a network whose layers run in registration order (and DDP rebuilds its buckets in
        # the observed ready order after the first iteration anyway).
        "ddp_25mb": (_greedy_caps(sizes, lambda b: DDP_FIRST_BUCKET if b == 0 else DDP_BUCKET_CAP), None),
        "mindspore_even": (_even_backward(ready, even_k), None),  # as many groups as the tuned plan has
        "mg_wfbp": (_mg_wfbp(sizes, ready, cluster), None),
    }
    for name, (thr, cyc) in HOROVOD_SETTINGS.items():
        out[name] = _horovod(sizes, ready, cluster, thr, cyc)
    return out


def baseline_partitions(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster, even_k: int
                        ) -> dict[str, list[int]]:
    """The fixed rules people run, as bucket end indices over the ready order."""
    return {k: ends for k, (ends, _) in _baselines(sizes, ready, cluster, even_k).items()}


# --------------------------------------------------------------------------- the plan
@dataclass
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
    reference_baseline: str = "ddp_25mb"
    result_file: str | None = None
    report_file: str | None = None
    # gradient or framework parameter name -> why the framework name could not be matched
    # (a timeline predicted from an ONNX file: PredictedTimeline.unmatched)
    unmatched: dict[str, str] = field(default_factory=dict)

    @property
    def improvement(self) -> float:
        """Gain over the backend's default rule (``reference_baseline``; DDP's without a backend)."""
        return self.gain[self.reference_baseline]

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
        return _percents_for(np.array(self.gradient_bytes, dtype=np.int64), self.ends)

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
        }


def tune_gradients(gradients: Iterable[Gradient] | str | os.PathLike, cluster: Cluster,
                   max_buckets: int | None = None, backend: str | None = None) -> GradientPlan:
    """The gradient split that minimises the step's end in the timeline model.

    ``gradients``: ``(name, bytes, ready_us)`` in ready order (``ready_us`` never
    decreases), or the path of a timeline JSON file (:func:`load_timeline`) or of an ONNX
    model (``.onnx``: :func:`predict_timeline` on the default SoC).
    ``max_buckets``: at most this many buckets.  ``backend`` ("hccl", "mindspore", "ddp",
    "horovod"): the plan must fit that backend's split API (HCCL: at most 8 segments, the
    default limit when none is given).  A :class:`PredictedTimeline`'s ``unmatched`` names
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
    names, sizes, ready = _check_timeline(gradients)
    ends = optimal_partition(sizes, ready, cluster, max_buckets)
    starts, finish = simulate(ends, sizes, ready, cluster)
    time_us = float(finish[-1])
    rules = _baselines(sizes, ready, cluster, even_k=len(ends))
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
        reference_baseline=BACKEND_DEFAULT.get(backend or "ddp", "ddp_25mb"), unmatched=dict(unmatched))



# --------------------------------------------------------------------------- predicted timeline
# Which inputs of a node are trainable parameters when the file does not list them: weights and
# biases of convolutions and GEMMs, scale and shift of normalisations (not BN's running
# statistics), embedding tables (Gather's data), and rank-1 (bias) or constant operands of
# element-wise Add / Mul.
_PARAM_SLOTS = {"Conv": (1, 2), "Gemm": (1, 2), "MatMul": (1,), "BatchNormalization": (1, 2),
                "LayerNormalization": (1, 2), "Add": (0, 1), "Mul": (0, 1), "Gather": (0,)}
_NAMES_ADVICE = ("To apply a plan to a PyTorch module, build the timeline from the module itself: "
                 "aoe_native.torch_ddp.measure_timeline(module, loss_fn); or export the module in training mode "
                 "so that the file keeps its parameters: torch.onnx.export(..., dynamo=True, optimize=False), or "
                 "dynamo=False, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING.")


def describe_unmatched(unmatched: dict[str, str], names: Iterable[str] | None = None) -> str:
    """``unmatched`` (name -> why, as in ``PredictedTimeline.unmatched``; only ``names`` when
    given) as one message, names grouped by reason, then what to do instead; "" when none is
    unmatched."""
    by_why: dict[str, list[str]] = {}
    for n in unmatched if names is None else names:
        if n in unmatched:
            by_why.setdefault(unmatched[n], []).append(n)
    if not by_why:
        return ""
    return "; ".join(f"{ns[:5]}{f' ({len(ns)})' if len(ns) > 1 else ''}: {why}"
                     for why, ns in by_why.items()) + f". {_NAMES_ADVICE}"


def _is_float(dtype: str) -> bool:
    return not dtype or "float" in dtype  # unknown counts as float, as for the bytes


def _tensor_bytes(graph: Graph, name: str) -> int | None:
    t = graph.tensors.get(name)
    if t is None or t.shape is None:
        return None
    return int(math.prod(t.shape)) * (np.dtype(t.dtype).itemsize if t.dtype else 4)


def _weight_root(tensor: str, producer: dict[str, Node]) -> str | None:
    """The tensor a node input holds the values of: back through RELAYOUT_OPS (an exported
    Linear is MatMul(x, Transpose(weight)): the gradient is the weight's) to a tensor no node
    produces, or an Identity of one (a parameter of its own, see RELAYOUT_OPS); None when it is
    computed."""
    while tensor in producer:
        node = producer[tensor]
        if node.op_type == "Identity" and node.inputs and node.inputs[0] not in producer:
            return tensor
        if node.op_type not in RELAYOUT_OPS or not node.inputs:
            return None
        tensor = node.inputs[0]
    return tensor


def _slot_holds_parameter(graph: Graph, node: Node, root: str) -> bool:
    """Whether ``root`` (in one of the node's _PARAM_SLOTS) looks like a parameter when the
    file does not list them."""
    t = graph.tensors.get(root)
    if t is None or t.shape is None or math.prod(t.shape) < 2 or not _is_float(t.dtype):
        return False  # unknown, a scalar hyper-parameter, or integer data
    if node.op_type in ("Add", "Mul"):
        return t.const or len(t.shape) == 1  # not a graph input such as a mask
    if node.op_type == "Gather":
        return len(t.shape) == 2  # an embedding table, not a token picked from activations
    return True


def _parameters(graph: Graph) -> tuple[dict[str, tuple[int, int]], set[str], dict[str, str]]:
    """The model's trainable parameters: name -> (bytes, index of its first consumer); the node
    inputs that hold one (their backward has a weight gradient); and name -> why, for gradients
    whose framework name the file does not hold and for framework parameters it lost.

    A file that lists its parameters (``graph.declared_params``) is taken at its word: every
    node input whose values are a declared parameter's, directly, re-laid out or folded by
    the exporter, is a use of it.  Otherwise the inputs in _PARAM_SLOTS are.  A constant the
    exporter or the loader folded from one tensor (a weight's transpose) is that tensor, under
    its name; folded from several, each parameter among them is used there.  A parameter counts
    once however many nodes use it (a tied embedding and output projection)."""
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    declared = None if graph.declared_params is None else set(graph.declared_params)
    found: dict[str, tuple[int, int]] = {}
    weight_inputs: set[str] = set()
    unmatched: dict[str, str] = {}
    lost: dict[str, str] = {}  # parameters seen only folded into a constant of unknown size

    def loader_weight(name: str) -> bool:  # a source the loader folded from, that the file holds
        t = graph.tensors.get(name)
        return (t is not None and name not in producer and t.shape is not None and math.prod(t.shape) >= 2
                and _is_float(t.dtype))

    for node in graph.nodes:
        slots = range(len(node.inputs)) if declared is not None else _PARAM_SLOTS.get(node.op_type, ())
        for slot in slots:
            x = node.inputs[slot] if slot < len(node.inputs) else ""
            root = _weight_root(x, producer) if x else None
            if root is None or (declared is None and not _slot_holds_parameter(graph, node, root)):
                continue
            sources = graph.folded_from.get(root)
            if sources is None:
                params = [root] if declared is None or root in declared else []
            elif declared is not None:
                params = [p for p in sources if p in declared]
            elif len(sources) == 1:
                params = list(sources)  # one tensor re-laid out: that tensor
            else:
                params = [p for p in sources if loader_weight(p)]
                if not params:  # an exporter's fold of tensors the file does not hold
                    params = [root]
                    unmatched[root] = (f"a constant the exporter computed from {list(sources)[:5]}: the file "
                                       "does not say which parameter it holds")
            for p in params:
                nbytes = _tensor_bytes(graph, p)
                if nbytes is None and (sources is None or len(sources) == 1):
                    nbytes = _tensor_bytes(graph, root)  # the same values as the root
                if nbytes is None:
                    lost[p] = (f"the exporter folded it into the constant {root!r}, computed from it and other "
                               "values: the file holds neither the parameter nor its size")
                    continue
                weight_inputs.add(x)
                found[p] = (nbytes, min(found[p][1], node.index) if p in found else node.index)
                if p.startswith(EXPORTER_MADE_PREFIX):
                    unmatched[p] = ("a constant the TorchScript exporter computed from parameters (a Linear "
                                    "weight's transpose, a convolution weight with its BatchNorm folded in, an "
                                    "embedding looked up at constant positions): the file does not say which")
    unmatched.update((p, why) for p, why in lost.items() if p not in found)
    for p in graph.declared_params or ():
        if p not in found and p not in unmatched:
            unmatched[p] = ("no node of the file uses it" if p in graph.tensors else
                            "the file has no tensor for it: the exporter dropped it (unused by the forward pass), "
                            "folded it into another operator's weights (a BatchNorm into its convolution, in "
                            "eval mode) or kept one of several parameters of equal values (tied weights; "
                            "onnxscript's optimizer also merges e.g. freshly initialised LayerNorm weights)")
    return found, weight_inputs, unmatched


def _backward_kernels(graph: Graph, node: Node, produced: set[str], weights: set[str]
                      ) -> list[tuple[str, list[list[int]], dict]]:
    """The backward pass of one node as cost-model operators (the rule, documented in
    docs/architecture.md / README): a convolution's data gradient is a stride-1
    convolution of dY by the transposed weights with the forward's multiply-adds, its weight
    gradient the im2col GEMM [O/g, N·Ho·Wo] x [N·Ho·Wo, C/g·kh·kw]; a GEMM Y = X·W has
    dX = dY·Wᵀ and dW = Xᵀ·dY when W is a parameter (in ``weights``); a data gradient into a graph input is skipped (nothing asks
    for it); every other node costs twice its forward kernel (it reads dY and its saved
    input and writes dX: about two passes of a memory-bound op), and an element-wise node
    (or one the cost model does not cover) two element-wise passes over its output; views
    cost nothing."""
    op = node.op_type
    if op in VIEW_OPS:
        return []
    needs_dx = bool(node.inputs) and node.inputs[0] in produced
    out = graph.shape(node.outputs[0]) if node.outputs else None
    two_passes = [("Mul", [list(out), list(out)], {})] * 2 if out else []
    try:
        spec = map_node(graph, node)
    except UnsupportedNode:
        return two_passes
    if spec.kind == "elementwise":
        return two_passes
    if op == "Conv":
        (n, c, _, _), (o, cg, kh, kw) = spec.inputs[0], spec.inputs[1]
        g = spec.attrs["group"]
        ho, wo = graph.shape(node.outputs[0])[2:]
        dil = spec.attrs["dilations"]
        ph, pw = dil[0] * (kh - 1), dil[1] * (kw - 1)
        ks = []
        if needs_dx:
            ks.append(("Conv", [[n, o, ho, wo], [c, o // g, kh, kw]],
                       {"strides": [1, 1], "dilations": dil, "group": g,
                        "pads": [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]}))
        m, k = n * ho * wo, cg * kh * kw
        ks.append(("MatMul", [[o, m], [m, k]], {}) if g == 1 else ("BatchMatMul", [[g, o // g, m], [g, m, k]], {}))
        return ks
    if op in ("Gemm", "MatMul") and spec.op_type in ("Gemm", "MatMul") and node.inputs[1] in weights:
        x, wt = spec.inputs[0], spec.inputs[1]
        m, k = (x[1], x[0]) if spec.attrs.get("transA") else (x[0], x[1])
        nn = wt[0] if spec.attrs.get("transB") else wt[1]
        ks = [("MatMul", [[m, nn], [nn, k]], {})] if needs_dx else []
        return ks + [("MatMul", [[k, m], [m, nn]], {})]
    return [(spec.op_type, spec.inputs, spec.attrs)] * 2


def predict_timeline(model: Any, soc_version: str | Platform = "Ascend910B3", input_shape: Any = None,
                     dtype: str = "float16", max_evals: int | None = None, seed: int = 0
                     ) -> PredictedTimeline:
    """The gradients of an ONNX model (path, ModelProto or graph IR) and when each becomes
    ready, predicted with the Ascend cost model.

    Backward walks the nodes in reverse topological order; each node's backward kernels
    (:func:`_backward_kernels`) are tuned with ``tune_op`` as OPAT tunes them (its default
    budget policy unless ``max_evals`` is given) and run one after another, each plus the SoC's launch
    overhead.  A parameter's gradient is ready when the backward of its first consumer
    (in forward order) is done.  ``bytes`` = elements × the parameter's own element size
    (float32 when unknown).  Time 0 is the start of backward.

    Parameters (:func:`_parameters`) carry their framework names where the file holds them
    (initializer names, the dynamo exporter's graph signature and ``folded_from`` records, the
    loader's own folds, a TorchScript-made copy of another weight's values); a tied weight counts
    once.  Gradients whose framework name the file
    does not hold (TorchScript's ``onnx::MatMul_N``) and framework parameters the file lost are
    listed in the result's ``unmatched`` and in a :class:`GradientNameWarning`."""
    check_compute_dtype(dtype, soc_version)
    graph = model if isinstance(model, Graph) else load_graph(model, input_shape)
    plat = native_platform(soc_version)
    produced = {o for n in graph.nodes for o in n.outputs if o}
    params, weights, unmatched = _parameters(graph)
    if not params:
        raise TimelineError(f"model {graph.name}: no trainable parameter found"
                            + (f": {describe_unmatched(unmatched)}" if unmatched else ""))
    if unmatched:
        warnings.warn(f"model {graph.name}: the file does not hold the framework's name or size of "
                      f"{len(unmatched)} parameter(s), so a plan cannot be applied to them by name: "
                      f"{describe_unmatched(unmatched)}", GradientNameWarning, stacklevel=2)
    by_node: dict[int, list[str]] = {}
    for p, (_, idx) in params.items():
        by_node.setdefault(idx, []).append(p)
    cache: dict[str, float] = {}
    t = 0.0
    out: list[Gradient] = []
    for node in reversed(graph.nodes):
        for op, inputs, attrs in _backward_kernels(graph, node, produced, weights):
            key = repr((op, inputs, sorted(attrs.items())))
            if key not in cache:
                try:
                    cache[key] = tune_op(op, inputs, dtype, plat, attrs or None, max_evals=max_evals,
                                         seed=seed).time_us
                except (ValueError, KeyError) as e:
                    raise TimelineError(f"model {graph.name}: node {node.name} ({node.op_type}): backward "
                                        f"kernel {op} {inputs}: {e}") from None
            t += cache[key] + float(plat.launch_overhead_us)
        out.extend((p, params[p][0], t) for p in by_node.get(node.index, ()))
    return PredictedTimeline(out, unmatched)



# --------------------------------------------------------------------------- the job
def gdat_job(cluster: Cluster, timeline: str | os.PathLike | None = None, model: Any = None,
             max_buckets: int | None = None, backend: str | None = None, soc_version: str | Platform = "Ascend910B3",
             input_shape: Any = None, dtype: str = "float16", result_dir: str | os.PathLike | None = None,
             output: str | os.PathLike | None = None) -> GradientPlan:
    """``aoe --job_type=4``: the gradients from a timeline file, else predicted from an ONNX
    model; the plan; then the result file (into ``result_dir``) and the HTML report (into
    ``output``).  Every input is checked before anything is written."""
    if (timeline is None) == (model is None):
        raise ValueError("give a gradient timeline file or an ONNX model (one of them)")
    check_job_dirs(output, result_dir)
    if timeline is not None:
        grads, name = load_timeline(timeline), os.path.splitext(os.path.basename(os.fspath(timeline)))[0]
    else:
        graph = load_graph(model, input_shape)
        grads, name = predict_timeline(graph, soc_version, dtype=dtype), graph.name
    plan = tune_gradients(grads, cluster, max_buckets=max_buckets, backend=backend)
    plan.result_file, plan.report_file = write_gdat_outputs(plan, name, output=output, result_dir=result_dir)
    return plan
