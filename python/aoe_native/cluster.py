"""The communication model of a data-parallel cluster: the time of one all-reduce.

Units: bytes, microseconds, and bandwidths in GB/s with 1 GB = 1e9 bytes.

One level is the α-β(-γ) model of a ring all-reduce over p ranks (reduce-scatter then
all-gather, p−1 steps each; docs: /work/shared/reference/tuning_modes.md §3)::

    T(n) = 2(p−1)·α + 2(p−1)/p · n / bandwidth  [+ (p−1)/p · n / reduce_bandwidth]

A cluster of several levels (HCCS inside a server, RoCE or InfiniBand between servers)
runs either one flat ``ring`` over all ranks, which every step pays at the slowest link,
or the ``hierarchical`` algorithm: reduce-scatter inside the innermost level, all-reduce
of the 1/p₀ shard at the next level, and so on, then all-gather back.  A reduce-scatter
plus an all-gather over a level costs what a ring all-reduce there costs, so the
hierarchical time is the sum of each level's ring time on the shard it sees.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any, Iterable, Sequence

import numpy as np

from .fileio import read_given_json

__all__ = ["Calibration", "Cluster", "ClusterError", "Level", "ALGORITHMS"]

ALGORITHMS = ("ring", "hierarchical")


class ClusterError(ValueError):
    """A cluster description or a calibration input that cannot be used (the message says where)."""


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: ``ranks`` peers joined by links of start-up ``alpha_us``
    per step and ``gbps`` bandwidth (GB/s); ``reduce_gbps`` is the reduction arithmetic's
    throughput (γ = 1 / reduce_gbps; None: not modelled); ``source`` says where the numbers
    come from."""

    name: str
    ranks: int
    alpha_us: float
    gbps: float
    reduce_gbps: float | None = None
    source: str = ""

    def ring_us(self, nbytes: Any) -> Any:
        """Ring all-reduce time of ``nbytes`` (scalar or numpy array) over this level."""
        p = self.ranks
        if p == 1:
            return np.zeros_like(nbytes, dtype=float) if isinstance(nbytes, np.ndarray) else 0.0
        t = 2 * (p - 1) * self.alpha_us + 2 * (p - 1) / p * nbytes / (self.gbps * 1e3)  # GB/s -> bytes/us
        if self.reduce_gbps:
            t = t + (p - 1) / p * nbytes / (self.reduce_gbps * 1e3)
        return t


def _check_level(lv: Level, where: str) -> None:
    if not isinstance(lv.ranks, int) or isinstance(lv.ranks, bool) or lv.ranks < 1:
        raise ClusterError(f"{where}: ranks must be an integer >= 1, got {lv.ranks!r}")
    for field in ("alpha_us", "gbps"):
        v = getattr(lv, field)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ClusterError(f"{where}: {field} must be a finite number, got {v!r}")
    if lv.alpha_us < 0:
        raise ClusterError(f"{where}: alpha_us must be >= 0, got {lv.alpha_us}")
    if lv.gbps <= 0:
        raise ClusterError(f"{where}: gbps must be > 0, got {lv.gbps}")
    if lv.reduce_gbps is not None and (not isinstance(lv.reduce_gbps, (int, float)) or not lv.reduce_gbps > 0):
        raise ClusterError(f"{where}: reduce_gbps must be > 0 or absent, got {lv.reduce_gbps!r}")


class Cluster:
    """The ranks of a data-parallel job and the time of one all-reduce on them.

    ``Cluster(ranks=8, alpha_us=20.0, gbps=100.0)`` is a one-level ring; hierarchical
    clusters come from :meth:`from_levels`, :meth:`load` (a JSON file) or
    :meth:`ascend910b` (the shipped Ascend 910B description)."""

    def __init__(self, ranks: int = 8, alpha_us: float = 20.0, gbps: float = 100.0, *,
                 reduce_gbps: float | None = None, name: str = "ring", source: str = "given") -> None:
        self._init([Level("ring", ranks, alpha_us, gbps, reduce_gbps, source)], "ring", name, source)

    def _init(self, levels: Sequence[Level], algorithm: str, name: str, source: str) -> None:
        if not levels:
            raise ClusterError(f"cluster {name!r}: no level")
        if algorithm not in ALGORITHMS:
            raise ClusterError(f"cluster {name!r}: algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
        for i, lv in enumerate(levels):
            _check_level(lv, f"cluster {name!r} level {i} ({lv.name!r})")
        self.levels: tuple[Level, ...] = tuple(levels)
        self.algorithm = algorithm
        self.name = name
        self.source = source

    @classmethod
    def from_levels(cls, levels: Sequence[Level], algorithm: str = "hierarchical", name: str = "cluster",
                    source: str = "") -> "Cluster":
        """Levels from the innermost (inside a server) to the outermost."""
        c = cls.__new__(cls)
        c._init(list(levels), algorithm, name, source)
        return c

    @property
    def ranks(self) -> int:
        return math.prod(lv.ranks for lv in self.levels)

    def allreduce_us(self, nbytes: Any) -> Any:
        """Time (µs) of one all-reduce of ``nbytes`` bytes; accepts a numpy array."""
        if self.algorithm == "ring" or len(self.levels) == 1:
            # a flat ring over every rank: each step waits for the slowest link
            slow = Level("ring", self.ranks, max(lv.alpha_us for lv in self.levels),
                         min(lv.gbps for lv in self.levels),
                         min((lv.reduce_gbps for lv in self.levels if lv.reduce_gbps), default=None))
            return slow.ring_us(nbytes)
        t, shard = 0.0, nbytes
        for lv in self.levels:
            t = t + lv.ring_us(shard)
            shard = shard / lv.ranks
        return t

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "algorithm": self.algorithm, "source": self.source, "ranks": self.ranks,
                "levels": [{k: v for k, v in asdict(lv).items() if v is not None} for lv in self.levels]}

    @classmethod
    def from_dict(cls, doc: Any, where: str = "cluster") -> "Cluster":
        """A cluster description: ``{"name", "algorithm", "source", "levels": [{"name",
        "ranks", "alpha_us", "gbps", "source"[, "reduce_gbps"]}, ...]}``, levels innermost
        first.  Every number must say where it came from (``source``)."""
        if not isinstance(doc, dict):
            raise ClusterError(f"{where}: expected a JSON object")
        levels_doc = doc.get("levels")
        if not isinstance(levels_doc, list) or not levels_doc:
            raise ClusterError(f"{where}: field 'levels' missing or empty")
        levels = []
        for i, d in enumerate(levels_doc):
            at = f"{where}: levels[{i}]"
            if not isinstance(d, dict):
                raise ClusterError(f"{at}: expected an object")
            at += f" ({d.get('name', '?')!r})"
            for key in ("name", "ranks", "alpha_us", "gbps", "source"):
                if key not in d:
                    raise ClusterError(f"{at}: field {key!r} missing")
            unknown = set(d) - {"name", "ranks", "alpha_us", "gbps", "reduce_gbps", "source", "note"}
            if unknown:
                raise ClusterError(f"{at}: unknown field(s) {sorted(unknown)}")
            lv = Level(str(d["name"]), d["ranks"], d["alpha_us"], d["gbps"], d.get("reduce_gbps"), str(d["source"]))
            _check_level(lv, at)
            levels.append(lv)
        return cls.from_levels(levels, doc.get("algorithm", "hierarchical"), str(doc.get("name", where)),
                               str(doc.get("source", "")))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Cluster":
        """Read a cluster file (see :meth:`from_dict`)."""
        doc = read_given_json(path, "cluster file", ClusterError)
        return cls.from_dict(doc, f"cluster file {os.fspath(path)}")

    @classmethod
    def ascend910b(cls, servers: int = 1) -> "Cluster":
        """Ascend 910B (Atlas A2) servers of 8 NPUs: HCCS from Huawei's published HCCL fit,
        the inter-server level an assumption to calibrate (see data/ascend910b_cluster.json)."""
        if not isinstance(servers, int) or servers < 1:
            raise ClusterError(f"servers must be an integer >= 1, got {servers!r}")
        doc = json.loads(resources.files("aoe_native").joinpath("data/ascend910b_cluster.json").read_text("utf-8"))
        doc["levels"][1]["ranks"] = servers
        if servers == 1:
            doc["levels"] = doc["levels"][:1]
        return cls.from_dict(doc, "data/ascend910b_cluster.json")

    def __repr__(self) -> str:
        lv = ", ".join(f"{x.name}: {x.ranks} x (α {x.alpha_us:g} us, {x.gbps:g} GB/s)" for x in self.levels)
        return f"Cluster({self.name!r}, {self.algorithm}, {lv})"

    # ------------------------------------------------------------------ calibration
    @classmethod
    def calibrate(cls, pairs: Iterable[tuple[float, float]], ranks: int, name: str = "calibrated",
                  source: str = "calibrated from measurements") -> "Calibration":
        """Fit α and the bandwidth of a one-level ring to measured ``(bytes, time_us)`` pairs
        (e.g. hccl_test or gloo all-reduce timings) and report the fit's quality.

        The model is linear, t = a + b·n with a = 2(p−1)α and b = 2(p−1)/(p·bandwidth); the
        fit is weighted least squares with weights 1/t, i.e. it minimises relative errors, so
        that small messages (where α matters) count as much as large ones."""
        pts = [(float(n), float(t)) for n, t in pairs]
        if not isinstance(ranks, int) or ranks < 2:
            raise ClusterError(f"calibrate: ranks must be an integer >= 2, got {ranks!r}")
        for i, (n, t) in enumerate(pts):
            if not (math.isfinite(n) and n >= 0 and math.isfinite(t) and t > 0):
                raise ClusterError(f"calibrate: pair {i} ({n}, {t}): need bytes >= 0 and time_us > 0")
        if len({n for n, _ in pts}) < 2:
            raise ClusterError("calibrate: need measurements at two or more message sizes")
        n = np.array([p[0] for p in pts])
        t = np.array([p[1] for p in pts])
        w = 1.0 / t
        (a, b), *_ = np.linalg.lstsq(np.stack([w, n * w], axis=1), t * w, rcond=None)
        if a < 0:  # a negative start-up is not physical: fit through the origin instead
            a, b = 0.0, float(np.sum(n * t * w * w) / np.sum(n * n * w * w))
        if b <= 0:
            raise ClusterError("calibrate: the fitted time does not grow with size (bandwidth <= 0); "
                               "check the measurements")
        pred = a + b * n
        ss_tot = float(np.sum((t - t.mean()) ** 2))
        r2 = 1.0 - float(np.sum((t - pred) ** 2)) / ss_tot if ss_tot > 0 else 1.0
        p = ranks
        alpha = float(a) / (2 * (p - 1))
        gbps = 2 * (p - 1) / p / float(b) / 1e3
        return Calibration(cls(ranks, alpha, gbps, name=name, source=source), alpha, gbps, r2,
                           float(np.max(np.abs(pred - t) / t)), len(pts))


@dataclass(frozen=True)
class Calibration:
    """Outcome of :meth:`Cluster.calibrate`: the fitted one-level cluster, α (µs), the
    bandwidth (GB/s), R² and the largest relative error over the measurements."""

    cluster: Cluster
    alpha_us: float
    gbps: float
    r2: float
    max_rel_error: float
    n_points: int
