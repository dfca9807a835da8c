"""Buckets of gradients and their all-reduce timeline: the exact optimum and the fixed rules.

In data-parallel training each gradient is all-reduced across the ranks while the backward pass
goes on.  Buckets of gradients, contiguous in the order the gradients become ready, trade
start-up costs (few buckets) against overlap (many buckets).  The timeline, as in MG-WFBP (Shi
et al., INFOCOM'19, arXiv 1811.11141): bucket k starts when its last gradient is ready and bucket
k-1 has finished, and takes ``cluster.allreduce_us(bytes of bucket k)``; the step's time is the
end of the last bucket.  :func:`optimal_partition` finds the exact optimum of that timeline (a DP
over contiguous buckets, optionally with at most K buckets); :func:`baseline_partitions` gives the
rules people run (DDP, Horovod, HCCL, MindSpore, MG-WFBP) in the same model.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..cluster import Cluster

__all__ = ["simulate", "optimal_partition", "baseline_partitions", "baseline_rules", "percents_for", "BACKEND_MAX_SEGMENTS",
           "BACKEND_DEFAULT", "PLATFORM_BACKEND", "MIB"]

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
# The split API a SoC's own collective library has: an Ascend SoC's is HCCL's, whose default
# split is the "before" a user of that SoC has.
PLATFORM_BACKEND = "hccl"

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


def percents_for(sizes: np.ndarray, ends: Sequence[int]) -> list[float]:
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


def baseline_rules(sizes: np.ndarray, ready: np.ndarray, cluster: Cluster, even_k: int
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
    return {k: ends for k, (ends, _) in baseline_rules(sizes, ready, cluster, even_k).items()}
