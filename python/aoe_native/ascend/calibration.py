"""Calibration of the AI Core cost model's fitted constants to measurements.

The cube model has a few constants that no document states: hand fits
(``mte2_eff``, ``gm_sector``) and terms the model lacked, 0 (off) by default
(``mte2_miss_cycles``, ``scalar_start_cycles``, ``scalar_block_cycles``); all are
Platform fields (:func:`aoe_native.platform_fields`).  :func:`calibrate` refits them to measured
records (operator, shapes, dtype, tiling, time and, where known, per-pipe times) by
bounded least squares on log(model / measured) (scipy's trust-region reflective
``least_squares``), predicts the held-out records with the fitted constants and
reports both errors.  :meth:`Calibration.save` writes a platform JSON that
:func:`aoe_native.load_platform` reads.

The published Ascend measurements the model can express ship as
``data/ascend_measured_cases.json`` (:func:`published_cases`), each record citing its
case in ``ascend_measured_cases.md`` and its source document.

The vector model's constants (:data:`VECTOR_FITTED`) are fitted per SoC on CANN's measured
kernels (``shared/reference/measured_ops``) by :func:`calibrate_measured`, on the records whose
benchmark case id % 4 == 0, the others held out; socs.json ships the result for 910B2 and 950PR.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field, replace
from importlib import resources
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

import numpy as np

from ..fileio import atomic_write_text, dump_json
from . import ops
from .platforms import Platform, native_platform
from .platforms import platform_fields as _native_fields

__all__ = ["Measurement", "RecordFit", "Calibration", "Contradiction", "calibrate", "calibrate_measured",
           "measurement_of_record",
           "contradictions", "published_cases", "uncalibrated", "CalibrationWarning", "FITTED", "VECTOR_FITTED",
           "BOUNDS", "SECTORS", "FITTABLE", "PIPES", "OP_COST_BOUNDS", "PER_OP", "bounds_of", "op_cost_name",
           "write_fitted"]

# The constants calibrate() fits by default, and their bounds (continuous ones).
# scalar_block_cycles is fittable but not fitted by default: the published cases do not
# identify it (fitting it on cases 1, 5, 6 and 11 lowers their error by 0.4 points).
FITTED = ("mte2_eff", "gm_sector", "mte2_miss_cycles", "scalar_start_cycles")
# The vector model's constants, fitted on CANN's measured kernels (calibrate_measured).  Bounds
# keep them physical: an AIV moves between its half of the AI core's ddr_rate (the AIVs sharing
# it, the model before) and all of it (the ini's per-core rate: no more); at most the whole L2
# absorbs writes (at l2_gbps, the datasheet's); no negative cost; instruction costs at most 2x
# faster than GE's per-API table (950PR's VF dual issue: 512 B/cycle against 256, IPC limit ~2,
# shared/reference/ascend_measured_cases.md §0) and at most 4x slower; a row's reduce wait at
# most 5000 cycles (~3 us); at most all of the L2-resident re-reads at the L2 hit rate.
VECTOR_FITTED = ("vec_rate_share", "l2_absorb", "vec_launch_cycles", "vec_cost_scale", "vec_reread_l2",
                 "vec_row_cycles")
BOUNDS = {"mte2_eff": (0.3, 1.0), "mte2_copy_cycles": (0.0, 5000.0), "mte2_miss_cycles": (0.0, 5000.0),
          "scalar_start_cycles": (0.0, 100000.0), "scalar_block_cycles": (0.0, 10000.0),
          "vec_rate_share": (0.5, 1.0), "l2_absorb": (0.0, 1.0), "vec_launch_cycles": (0.0, 20000.0),
          "vec_cost_scale": (0.5, 4.0), "vec_reread_l2": (0.0, 1.0),
          "vec_row_cycles": (0.0, 5000.0)}
# Per-operator factors on the vector instruction costs (Platform.vec_op_costs), fitted as
# "vec_op_costs[Kind]" and "vec_op_costs[Kind:dtype]" (op_cost_name): a CANN kernel's own
# instruction sequence at most 4x cheaper or 8x dearer than the model's recipe.  Each factor's
# log is pulled towards 0 (weight OP_COST_PRIOR, in units of a log error), so the chip-wide
# vec_cost_scale takes what the operators share and a factor moves only where its records ask;
# a (kind, dtype) factor is pulled harder than its kind's, so what an operator's dtypes share
# goes to the kind's factor (and to its dtypes without records).  The dtype pull is checked on an
# inner split of the fit half (bench/bench_measured.py --inner: fit on case id % 8 == 0, predict
# % 8 == 4, and the reverse), mean |log ratio| of the predicted records, 910B2 / 950PR: 0.220 /
# 0.141 at 1, 0.222 / 0.140 at 2, 0.222 / 0.144 at 3, 0.220 / 0.194 at 5.  (Before the Softmax
# ARA tiling, vector.cpp, 3 had looked better on 950PR, 0.162 against 0.200: its dtype factors
# had been following the non-last-axis Softmax records.)
OP_COST_BOUNDS = (0.25, 8.0)
OP_COST_PRIOR = 0.3
OP_DTYPE_COST_PRIOR = 1.0
# gm_sector is a transfer granule, a power of two: the model's cost is a step
# function of it, so it is fitted by trying each value, not by gradients.
SECTORS = (32, 64, 128, 256, 512)
FITTABLE = (*BOUNDS, "gm_sector")
# Per-pipe times a record may carry (keys of Estimate.breakdown).
PIPES = ("mte2_us", "mte1_us", "cube_us", "fixpipe_us", "vector_us", "mte3_us")

PlatformLike = Union[str, Platform]


def op_cost_name(kind: str, dtype: str | None = None) -> str:
    """The fit's name of the vec_op_costs factor of operator ``kind`` (and ``dtype``)."""
    return f"vec_op_costs[{kind}{':' + dtype if dtype else ''}]"


def _op_cost_key(name: str) -> str | None:
    """"Kind" or "Kind:dtype" of an op-cost name, None for a Platform field."""
    return name[len("vec_op_costs["):-1] if name.startswith("vec_op_costs[") and name.endswith("]") else None


def _op_costs(p: Platform | Mapping[str, Any]) -> dict[str, float]:
    entries = p.get("vec_op_costs", []) if isinstance(p, Mapping) else getattr(p, "vec_op_costs", [])
    return {e.split("=", 1)[0]: float(e.split("=", 1)[1]) for e in entries or []}


def bounds_of(name: str) -> tuple[float, float]:
    """The fit's bounds of a constant: :data:`BOUNDS`, or :data:`OP_COST_BOUNDS` for a per-operator factor."""
    return OP_COST_BOUNDS if _op_cost_key(name) else BOUNDS[name]


def _fittable(name: str) -> bool:
    return name in FITTABLE or bool(_op_cost_key(name))


def _value(p: Platform, name: str) -> float:
    key = _op_cost_key(name)
    return _op_costs(p).get(key, 1.0) if key else float(getattr(p, name))


@dataclass(frozen=True)
class Measurement:
    """One measured operator run.

    ``time_us`` is the measured operator time (None when only pipe times are known),
    ``pipes`` per-pipe times in µs keyed like ``Estimate.breakdown`` (``mte2_us``,
    ``cube_us``, ...), ``tiling`` the TCubeTiling-style parameters of the run (None:
    the model's default tiling).  ``soc_version`` names the part it ran on when that
    differs from the calibrated platform (e.g. a 20-core bin of the same SoC): the
    fitted constants are applied to that part for this record.
    """

    op: str
    inputs: Sequence[Sequence[int]]
    dtype: str = "float16"
    time_us: float | None = None
    tiling: Mapping[str, int] | None = None
    attrs: Mapping[str, Any] | None = None
    pipes: Mapping[str, float] = field(default_factory=dict)
    soc_version: str | None = None
    name: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> "Measurement":
        """A record from a JSON-like mapping (unknown keys other than ``case``,
        ``note`` and ``source`` are an error naming ``where``)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected a mapping, got {type(d).__name__}")
        known = {"op", "inputs", "dtype", "time_us", "tiling", "attrs", "pipes", "soc_version", "name"}
        extra = set(d) - known - {"case", "note", "source"}
        if extra:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(map(str, extra)))} "
                             f"(known: {', '.join(sorted(known))})")
        if "op" not in d or "inputs" not in d:
            raise ValueError(f"{where}: a measurement needs 'op' and 'inputs'")
        return cls(**{k: d[k] for k in known if k in d and d[k] is not None})


def measurement_of_record(record: Mapping[str, Any], soc_map: Mapping[str, str] | None = None) -> Measurement:
    """A record of CANN's benchmark file (records.py) as a :class:`Measurement` of the model
    operator that runs it, at the default tiling, on the record's SoC; UnmodelledOperator
    or ValueError naming the record as :func:`records.translate_record`."""
    from . import records

    op, inputs, dtype, attrs = records.translate_record(record)
    return Measurement(op=op, inputs=inputs, dtype=dtype, attrs=attrs, time_us=float(record["time_us"]),
                       soc_version=records.record_soc(record, soc_map), name=str(record.get("id", "")))


@dataclass(frozen=True)
class RecordFit:
    """One compared quantity of one record: ``published`` (measured), ``model`` with
    the fitted constants, ``before`` with the starting ones; ``ratio`` = model/published."""

    name: str
    quantity: str  # "time_us" or a pipe key
    held_out: bool
    published: float
    model: float
    before: float

    @property
    def ratio(self) -> float:
        return self.model / self.published

    @property
    def ratio_before(self) -> float:
        return self.before / self.published


def _mean_abs_error(rows: Iterable[RecordFit], before: bool = False) -> float:
    errs = [abs((r.ratio_before if before else r.ratio) - 1) for r in rows]
    return float(np.mean(errs)) if errs else float("nan")


@dataclass
class Calibration:
    """Outcome of :func:`calibrate`: the fitted ``platform``, the fitted ``params``
    (and the ``start`` values), and one :class:`RecordFit` per compared quantity of
    the fitted and the held-out records."""

    platform: Platform
    params: dict[str, float]
    start: dict[str, float]
    rows: list[RecordFit]

    @property
    def fitted_rows(self) -> list[RecordFit]:
        return [r for r in self.rows if not r.held_out]

    @property
    def held_out_rows(self) -> list[RecordFit]:
        return [r for r in self.rows if r.held_out]

    @property
    def fit_error(self) -> float:
        """Mean |model/measured - 1| over the fitted records' quantities."""
        return _mean_abs_error(self.fitted_rows)

    @property
    def held_out_error(self) -> float:
        """Mean |model/measured - 1| over the held-out records' quantities (NaN if none)."""
        return _mean_abs_error(self.held_out_rows)

    def table(self) -> str:
        """The per-record table (published, model before and after, ratios) as text."""
        lines = [f"{'record':16s} {'quantity':9s} {'set':8s} {'published':>10s} {'before':>10s} {'ratio':>6s} "
                 f"{'model':>10s} {'ratio':>6s}"]
        for r in sorted(self.rows, key=lambda r: r.held_out):
            flag = "" if abs(r.ratio - 1) <= 0.2 else "  >20%"
            lines.append(f"{r.name:16s} {r.quantity:9s} {'held-out' if r.held_out else 'fit':8s} {r.published:10.2f} "
                         f"{r.before:10.2f} {r.ratio_before:6.2f} {r.model:10.2f} {r.ratio:6.2f}{flag}")
        for label, rows in (("fit", self.fitted_rows), ("held-out", self.held_out_rows)):
            if rows:
                lines.append(f"{label}: mean |ratio-1| {_mean_abs_error(rows, True) * 100:.1f}% before -> "
                             f"{_mean_abs_error(rows) * 100:.1f}% after, max {max(abs(r.ratio - 1) for r in rows) * 100:.1f}%"
                             f", within 20%: {sum(abs(r.ratio - 1) <= 0.2 for r in rows)}/{len(rows)}")
        lines.append("params: " + ", ".join(f"{k} {self.start[k]:g} -> {v:g}" for k, v in self.params.items()))
        return "\n".join(lines)

    def save(self, path: str, name: str | None = None) -> str:
        """Write the fitted platform as a JSON file for :func:`aoe_native.load_platform`
        (atomically) under ``name`` (default: the platform's name + ``"-calibrated"``);
        returns the name."""
        d = self.platform.to_dict()
        d["name"] = name or f"{d['name']}-calibrated"
        d["sources"] = {k: f"aoe_native.calibrate: fitted on {len({r.name for r in self.fitted_rows})} records, "
                        f"held-out error {self.held_out_error * 100:.1f}%" for k in self.params}
        atomic_write_text(path, dump_json(d))
        return d["name"]


def uncalibrated(soc_version: PlatformLike) -> Platform:
    """``soc_version`` with every fittable constant at its field default: the model before
    any calibration (the hand fits, the lacking terms off)."""
    defaults = {f["name"]: f["default"] for f in _native_fields()}
    d = native_platform(soc_version).to_dict()
    d.update({k: defaults[k] for k in (*FITTABLE, "vec_op_costs")})
    return Platform.from_dict(d, f"uncalibrated {d['name']}")


def published_cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The published Ascend measurements the model can express, as records for
    :func:`calibrate`, split into the records of the cases to fit on (at most half of
    the cases) and the held-out ones (the other cases, and the ``held_out_records`` of
    fitted cases: a knob's "after" predicted from the fit on its "before").  Each record names its ``case`` (numbers of
    shared/reference/ascend_measured_cases.md), its ``source`` document and a ``note``
    on how the case is expressed."""
    text = resources.files("aoe_native").joinpath("data/ascend_measured_cases.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    fit, kept_out = set(doc["fit_cases"]), set(doc.get("held_out_records", ()))
    fitted = [r for r in doc["records"] if r["case"] in fit and r["name"] not in kept_out]
    return fitted, [r for r in doc["records"] if r not in fitted]


# ---- checking and evaluating records ------------------------------------------------------

def _positive(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and v > 0


class _Record:
    """A checked measurement with its operator model built for each trial platform."""

    def __init__(self, m: Measurement, base: Platform, where: str):
        self.m, self.where = m, where
        self.name = m.name or where
        if m.time_us is not None and not _positive(m.time_us):
            raise ValueError(f"{where}: time_us must be a positive number, got {m.time_us!r}")
        if not isinstance(m.pipes, Mapping):
            raise ValueError(f"{where}: pipes must be a mapping of pipe name to µs, got {type(m.pipes).__name__}")
        for k, v in m.pipes.items():
            if k not in PIPES:
                raise ValueError(f"{where}: unknown pipe {k!r} (known: {', '.join(PIPES)})")
            if not _positive(v):
                raise ValueError(f"{where}: pipe {k} must be a positive number of µs, got {v!r}")
        self.targets = ([("time_us", float(m.time_us))] if m.time_us is not None else []) + \
            [(k, float(v)) for k, v in m.pipes.items()]
        if not self.targets:
            raise ValueError(f"{where}: no measured time (time_us or pipes)")
        try:
            self.base = native_platform(m.soc_version) if m.soc_version else base
            if m.op not in ops.supported_ops():
                raise ValueError(f"unknown op {m.op!r}")
            model = ops.op_model(m.op, m.inputs, m.dtype, self.base, m.attrs)
            # (a custom Ascend C kernel's record without a tiling ran the API's default, not MatMulV3's)
            self.row = list(model.api_baseline) if m.tiling is None else ops._tiling_row(model, m.tiling)
            bad = model.violation(self.row)
            if bad:
                raise ValueError(f"tiling {dict(zip(model.param_names, self.row))} is impossible: {bad}")
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from None

    def predict(self, params: Mapping[str, float], plat: Platform | None = None) -> list[float]:
        """The record's modelled quantities with ``params`` on its platform (``plat``: that
        platform already built)."""
        plat = plat or _with(self.base, params)
        model = ops.build_op_model(self.m.op, self.m.inputs, self.m.dtype, plat, self.m.attrs)
        b = model.estimate(self.row)
        return [float(b[k]) for k, _ in self.targets]


def _with(base: Platform, params: Mapping[str, float]) -> Platform:
    d = base.to_dict()
    costs = _op_costs(d)
    for k, v in params.items():
        key = _op_cost_key(k)
        if key:
            costs[key] = float(v)
        else:
            d[k] = int(round(v)) if k == "gm_sector" else float(v)
    if costs:
        d["vec_op_costs"] = [f"{k}={v:.6g}" for k, v in sorted(costs.items())]
    return Platform.from_dict(d, "calibrated platform")


def _records(measurements: Iterable[Measurement | Mapping[str, Any]], base: Platform, what: str) -> list[_Record]:
    out = []
    for i, m in enumerate(measurements):
        label = m.get("name") if isinstance(m, Mapping) else getattr(m, "name", "")
        where = f"{what} {i}" + (f" ({label})" if label else "")
        if not isinstance(m, Measurement):
            m = Measurement.from_dict(m, where)
        out.append(_Record(m, base, where))
    return out


# ---- records no model can fit together ---------------------------------------------------

# Per-core work of a run, from the model's breakdown: each pipe's busy time on the
# critical core, the GM -> L1 copies and base-block iterations it pays per unit, and
# its GM bytes (over its clock, so that parts with the same per-cycle rates compare).
_WORK = ("cube_us", "mte1_us", "fixpipe_us", "vector_us", "mte3_us", "gm_copies", "base_blocks")


@dataclass(frozen=True)
class Contradiction:
    """Two measured times that no model within ``tolerance`` of both can reproduce, if
    a run's time grows at most in proportion to its work: ``slow`` does at most
    ``work_ratio`` times the work of ``fast`` in every respect :func:`contradictions`
    counts, yet measured ``time_ratio`` times as long, more than
    ``work_ratio * (1 + tolerance) / (1 - tolerance)``."""

    slow: str
    fast: str
    work_ratio: float
    time_ratio: float


def _per_core_work(r: _Record) -> tuple[str, dict[str, float]]:
    """The operator kind of ``r`` and its per-core work."""
    model = ops.build_op_model(r.m.op, r.m.inputs, r.m.dtype, r.base, r.m.attrs)
    b = model.estimate(r.row)
    w = {k: float(b[k]) for k in _WORK}
    # GM bytes per core and over the chip (contention), over the clock: the time they
    # take at a given rate in bytes per cycle.
    w["gm_read_core"] = float(b["gm_read_bytes"]) / max(1, int(b["cores_used"])) / r.base.freq_mhz
    w["gm_read_chip"] = float(b["gm_read_bytes"]) / r.base.freq_mhz
    return model.kind, w


def contradictions(measurements: Iterable[Measurement | Mapping[str, Any]], tolerance: float = 0.2,
                   soc_version: PlatformLike = "Ascend910B1") -> list[Contradiction]:
    """Pairs of ``measurements`` (records as for :func:`calibrate`, with ``time_us``) that
    contradict each other for any cost model: one run (of the same operator kind) does
    no more work than ``work_ratio`` times the other's in every respect, as the cube
    model counts it with the record's tiling (busy time of the cube, MTE1, FixPipe,
    vector and MTE3 pipes on the critical core; its GM -> L1 copies and base-block
    iterations; GM bytes read per core and over the chip), yet its measured time is more
    than ``work_ratio * (1 + tolerance) / (1 - tolerance)`` times the other's.  A model whose time grows at most in proportion
    to per-core work then misses one of the two by more than ``tolerance``: the
    difference lies in something the records do not state (another kernel, another
    build, the measuring set-up).  Records without ``time_us`` are skipped;
    ``soc_version`` is the platform of records that name none."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be a relative error in [0, 1), got {tolerance!r}")
    base = native_platform(soc_version)
    recs = [r for r in _records(measurements, base, "measurement") if r.m.time_us is not None]
    kind, work = zip(*(_per_core_work(r) for r in recs)) if recs else ((), ())
    limit = (1 + tolerance) / (1 - tolerance)
    out = []
    for i, slow in enumerate(recs):
        for j, fast in enumerate(recs):
            if i == j or kind[i] != kind[j]:
                continue
            if any(work[j][k] <= 0 < work[i][k] for k in work[i]):
                continue  # slow does work of a kind fast does not
            w = max([1.0, *(work[i][k] / work[j][k] for k in work[i] if work[i][k] > 0)])
            t = float(slow.m.time_us) / float(fast.m.time_us)
            if t > w * limit:
                out.append(Contradiction(slow.name, fast.name, w, t))
    return sorted(out, key=lambda c: c.work_ratio * limit / c.time_ratio)


# ---- fitting ----------------------------------------------------------------------------------

class CalibrationWarning(UserWarning):
    """A calibration whose result the measurements do not determine."""


def _better(cost: float, best: float) -> bool:
    """A fit replaces an earlier one (the starting sector and constants first) only when it
    is better by more than float noise: an exact fit's cost is ~1e-30, not 0."""
    return cost < best * (1 - 1e-9) - 1e-12


def calibrate(soc_version: PlatformLike, measurements: Iterable[Measurement | Mapping[str, Any]],
              held_out: Iterable[Measurement | Mapping[str, Any]] = (), fit: Sequence[str] = FITTED) -> Calibration:
    """Fit the cost model's constants ``fit`` (default :data:`FITTED`) of ``soc_version`` to
    ``measurements`` and predict ``held_out`` with the result.

    Each measurement is a :class:`Measurement` or a mapping with its fields (``op``,
    ``inputs``, ``dtype``, ``tiling`` or None for the default, ``time_us`` and/or
    ``pipes``).  The fit minimises the squared log ratios model/measured of every
    measured quantity, with the continuous constants bounded by :data:`BOUNDS` and
    ``gm_sector`` tried at each of :data:`SECTORS`; a constant that no record depends on
    keeps its value.  A bad record (unknown operator,
    impossible tiling, non-positive time) is a ValueError naming it.  Needs scipy.
    """
    try:
        from scipy.optimize import least_squares
    except ImportError:  # pragma: no cover - the calibrate extra installs it
        raise ImportError("aoe_native.calibrate needs scipy: pip install 'aoe-native[calibrate]'") from None
    base = native_platform(soc_version)
    if isinstance(fit, str):
        raise TypeError(f"calibrate: fit must be a list of constant names, got the string {fit!r} "
                        f"(write fit=[{fit!r}])")
    unknown = [k for k in fit if not _fittable(k)]
    if unknown or not fit:
        raise ValueError(f"calibrate: cannot fit {', '.join(unknown) or 'nothing'}; fittable constants: "
                         f"{', '.join(sorted(FITTABLE))} and op_cost_name(kind[, dtype])")
    fit_recs = _records(measurements, base, "measurement")
    if not fit_recs:
        raise ValueError("calibrate: no measurements to fit")
    held_recs = _records(held_out, base, "held-out measurement")
    start = {k: _value(base, k) for k in fit}
    cont = [k for k in fit if k != "gm_sector"]
    lo = np.array([bounds_of(k)[0] for k in cont])
    hi = np.array([bounds_of(k)[1] for k in cont])
    prior_w = np.array([(OP_DTYPE_COST_PRIOR if ":" in (_op_cost_key(k) or "") else OP_COST_PRIOR)
                        if _op_cost_key(k) else 0.0 for k in cont])
    priors = prior_w > 0
    measured = np.log([v for r in fit_recs for _, v in r.targets])
    if len(measured) + int(priors.sum()) < len(fit):  # (a factor's prior pins it where no record does)
        # More constants than measured quantities: many settings fit exactly and the
        # solver returns one of them (one op time moved mte2_eff 0.89 -> 0.58 and the
        # scalar start 3,523 -> 50,070 cycles at once).
        warnings.warn(CalibrationWarning(
            f"calibrate: {len(measured)} measured quantit{'y' if len(measured) == 1 else 'ies'} for {len(fit)} "
            f"constants ({', '.join(fit)}): the fit is not determined and its constants are arbitrary; add "
            f"measurements or fit fewer constants (fit=[...])"), stacklevel=2)

    def params_of(x: np.ndarray, sector: float | None) -> dict[str, float]:
        p = dict(zip(cont, map(float, x)))
        if sector is not None:
            p["gm_sector"] = sector
        return {k: p[k] for k in fit}

    def residuals(x: np.ndarray, sector: float | None) -> np.ndarray:
        p = params_of(x, sector)
        plats: dict[str, Platform] = {}  # one platform per part the records ran on
        for r in fit_recs:
            if r.base.name not in plats:
                plats[r.base.name] = _with(r.base, p)
        pred = [v for r in fit_recs for v in r.predict(p, plats[r.base.name])]
        return np.concatenate([np.log(pred) - measured, prior_w[priors] * np.log(x[priors])]) \
            if priors.any() else np.log(pred) - measured

    # The constants as they are come first: a fit must beat them by more than float noise.
    x_start = np.array([start[k] for k in cont])
    best: tuple[float, dict[str, float]] | None = None
    if np.all((x_start >= lo) & (x_start <= hi)):
        best = (0.5 * float(np.sum(residuals(x_start, start.get("gm_sector")) ** 2)), dict(start))
    # The starting sector first: another must fit strictly better (sectors up to the
    # shortest burst of the records charge alike).
    sectors = sorted(SECTORS, key=lambda s: s != start["gm_sector"]) if "gm_sector" in fit else [None]
    # Two starts per sector: the current constants and the centre of the box (a term
    # inside a max() has no gradient where it does not bind).
    margin = 0.01 * (hi - lo)  # inside the box: at a bound, trust-region reflective's scaling can stop at once
    starts = [np.clip([start[k] for k in cont], lo + margin, hi - margin), (lo + hi) / 2]
    for sector in sectors:
        if not cont:
            cost = 0.5 * float(np.sum(residuals(np.array([]), sector) ** 2))
            if best is None or _better(cost, best[0]):
                best = (cost, params_of(np.array([]), sector))
            continue
        for x0 in starts:
            # Relative finite-difference steps: the model is piecewise linear in these constants.
            sol = least_squares(residuals, x0, bounds=(lo, hi), args=(sector,), method="trf", diff_step=1e-3,
                                x_scale=np.maximum(np.abs(x0), margin))
            # A constant no record depends on (its term never binds) keeps its start value.
            x = np.where(np.all(sol.jac == 0, axis=0), [start[k] for k in cont], sol.x)
            # ... and the choice is made at that x: a constant flat at the solution need not be
            # flat where the others would be had it kept its start value.
            cost = float(sol.cost) if np.array_equal(x, sol.x) else 0.5 * float(np.sum(residuals(x, sector) ** 2))
            if best is None or _better(cost, best[0]):
                best = (cost, params_of(x, sector))
    assert best is not None
    params = best[1]
    rows = []
    for recs, held in ((fit_recs, False), (held_recs, True)):
        for r in recs:
            for (q, pub), after, before in zip(r.targets, r.predict(params), r.predict(start)):
                rows.append(RecordFit(r.name, q, held, pub, after, before))
    return Calibration(platform=_with(base, params), params=params, start=start, rows=rows)


# ---- CANN's measured kernels ------------------------------------------------------------------

def _vector_measurements(records: Iterable[Mapping[str, Any]], soc: str,
                         soc_map: Mapping[str, str]) -> list[tuple[Measurement, str]]:
    """Single-kernel, modelled records of ``soc`` that run on the vector cores only (no cube
    time: MatMul has its own fit), each with its operator kind in the model."""
    from . import records as recs

    out = []
    for r in records:
        if r.get("single_kernel") is not True or r.get("soc") != soc:
            continue
        try:
            m = measurement_of_record(r, soc_map)
            tiling = ops.baseline_tiling(m.op, m.inputs, m.dtype, m.soc_version, m.attrs)  # refused ones are left out
            est = ops.estimate(m.op, m.inputs, m.dtype, m.soc_version, tiling, m.attrs)
        except (recs.UnmodelledOperator, ValueError):
            continue
        if float(est.breakdown["cube_us"]) == 0:
            out.append((m, ops.op_model(m.op, m.inputs, m.dtype, m.soc_version, m.attrs).kind))
    return out


# Families of the fused LLM kernels (norm_quant.cpp, optimizer.cpp, moe_routing.cpp): they carry
# their own per-operator constants, chosen on the same fit half.  Fitted with the chip-wide
# constants they pulled those towards their own errors (held-out accuracy fell), so the chip-wide
# stage predicts them and fits only the other vector kernels.
FUSED_FAMILIES = ("norm", "quant", "llm_elementwise", "optimizer", "routing")


def _kinds_of(families: Sequence[str]) -> frozenset[str]:
    """Operator kinds (canonical names) of the operator table's ``families``."""
    return frozenset(e["name"] for e in ops.op_table() if e["family"] in families)


def _op_cost_names(fit_ms: Sequence[tuple[Measurement, str]], per_op: str) -> list[str]:
    """The vec_op_costs factors ``per_op`` fits for these (measurement, kind) pairs."""
    names: list[str] = []
    if per_op != "none":
        names += sorted({op_cost_name(kind) for _, kind in fit_ms})
    if per_op == "kind+dtype":
        names += sorted({op_cost_name(kind, m.dtype) for m, kind in fit_ms})
    return names


# Which per-operator factors calibrate_measured fits (PER_OP): none, one per operator kind, or
# one per kind and one per (kind, dtype) on top (both apply, Platform.vec_op_costs).
PER_OP = ("none", "kind", "kind+dtype")


def calibrate_measured(records: Sequence[Mapping[str, Any]], fit: Sequence[str] = VECTOR_FITTED,
                       candidates: Mapping[str, Sequence[str]] | None = None,
                       per_op: str = "kind+dtype",
                       fit_half: Callable[[Mapping[str, Any]], bool] | None = None) -> dict[str, Calibration]:
    """Fit the vector model's constants ``fit`` per SoC on records of CANN's benchmark file
    (``shared/reference/measured_ops``): the records whose case id % 4 == 0
    (:func:`records.fit_half`) are fitted, the others predicted (``held_out_rows``).  Only
    single-kernel records the model runs on the vector cores alone take part, whatever their
    operator, except the fused LLM kernels (:data:`FUSED_FAMILIES`: their own constants).  With
    ``per_op`` (:data:`PER_OP`) each operator kind (and each kind and dtype) of the fitted
    records also gets its factor on the vector instruction costs
    (``vec_op_costs``); the fit starts from the field defaults (no factors), so it does not
    depend on an earlier fit.

    ``candidates`` maps a record's ``soc`` to the built-in SoCs it may be (default: the
    benchmark's unnamed 950PR is either socs.json's ``Ascend950PR``, 32/64 cores, or the
    ``Ascend950PR_9579`` ini, 28/56); each is fitted and the one with the lower fit cost
    is kept.  Returns {record soc: Calibration} (its ``platform.name`` the chosen SKU).

    ``fit_half`` (default :func:`records.fit_half`) picks the records fitted; the others are
    predicted.  An inner split of the fit half (bench_measured.py --inner) passes its own."""
    from . import records as recs

    fit_half = fit_half or recs.fit_half

    if per_op not in PER_OP:
        raise ValueError(f"calibrate_measured: per_op must be one of {', '.join(PER_OP)}, got {per_op!r}")
    candidates = dict(candidates or {"Ascend910B2": ["Ascend910B2"], "Ascend950PR": ["Ascend950PR", "Ascend950PR_9579"]})
    by_id = {str(r.get("id")): r for r in records}
    defaults = {f["name"]: f["default"] for f in _native_fields()}
    out: dict[str, Calibration] = {}
    fused = _kinds_of(FUSED_FAMILIES)
    for soc, skus in candidates.items():
        best: tuple[float, Calibration, list[tuple[Measurement, str]]] | None = None
        for sku in skus:
            all_ms = _vector_measurements(records, soc, {soc: sku})
            ms = [(m, kind) for m, kind in all_ms if kind not in fused]
            fit_ms = [(m, kind) for m, kind in ms if fit_half(by_id[m.name])]
            held = [m for m, _ in ms if not fit_half(by_id[m.name])]
            if not fit_ms:
                continue
            names = list(fit) + _op_cost_names(fit_ms, per_op)
            # From the field defaults: the result is the fit's, not a refinement of the last one.
            base = native_platform(sku).to_dict()
            base.update({k: defaults[k] for k in (*VECTOR_FITTED, "vec_op_costs")})
            start = Platform.from_dict(base, sku)
            fit_ms_ = [replace(m, soc_version=None) for m, _ in fit_ms]
            held_ = [replace(m, soc_version=None) for m in held]
            cal = calibrate(start, fit_ms_, held_, fit=names)
            cost = float(np.sum(np.log([r.ratio for r in cal.fitted_rows]) ** 2))
            if best is None or cost < best[0]:
                best = (cost, cal, all_ms)
        if best is not None:
            out[soc] = _fit_kernel_factors(best[1], best[2], by_id, per_op, fit_half)
    return out


# Families of fused kernels whose per-operator factors (vec_op_costs) a second stage fits per SoC,
# on the fit half, with the chip-wide constants of the first stage held: one pooled constant per
# kernel cannot follow 910B2's slower vector work on them (fit half, before this stage: 16-bit
# ApplyAdamW 0.37-0.47 of the measured time on 910B2, 1.00-1.04 on 950PR).
KERNEL_FACTOR_FAMILIES = ("optimizer", "routing")


def _fit_kernel_factors(cal: Calibration, all_ms: Sequence[tuple[Measurement, str]],
                        by_id: Mapping[str, Mapping[str, Any]], per_op: str,
                        fit_half: Callable[[Mapping[str, Any]], bool]) -> Calibration:
    """``cal`` with the vec_op_costs factors of the :data:`KERNEL_FACTOR_FAMILIES` kernels among
    ``all_ms`` (the chosen SKU's vector measurements) fitted on the records ``fit_half`` picks
    (the other constants as ``cal`` has them)."""
    if per_op == "none":
        return cal
    kinds = _kinds_of(KERNEL_FACTOR_FAMILIES)
    ms = [(m, kind) for m, kind in all_ms if kind in kinds]
    fit_ms = [(m, kind) for m, kind in ms if fit_half(by_id[m.name])]
    if not fit_ms:
        return cal
    names = _op_cost_names(fit_ms, per_op)
    held = [replace(m, soc_version=None) for m, _ in ms if not fit_half(by_id[m.name])]
    stage = calibrate(cal.platform, [replace(m, soc_version=None) for m, _ in fit_ms], held, fit=names)
    return Calibration(platform=stage.platform, params={**cal.params, **stage.params},
                       start={**cal.start, **stage.start}, rows=cal.rows + stage.rows)


_MEASURED_SOURCE = ("[F] fitted by aoe_native.calibrate_measured (python bench/bench_measured.py --refit) on the {n_fit} "
                    "single-kernel vector records of {soc} in shared/reference/measured_ops/cann_bench_calibration.json "
                    "(CANN's operator benchmark, hicann/cann-bench @ d59d44ca) whose case id % 4 == 0; the {n_held} "
                    "with case id % 4 == 2 are held out (bench/bench_measured.py). ")


def _describe(name: str, value: float, p: Platform) -> str:
    """What a fitted vector constant means at ``value`` on ``p`` (the sources' last sentence)."""
    if name == "vec_rate_share":
        return (f"An AIV moves {value:.4g} of the AI core's ddr_rate ({value * p.ddr_rate * p.freq_mhz / 1e3:.1f} GB/s; "
                f"bounds [0.5, 1]: the AIVs sharing it, the ini's per-core rate)")
    if name == "l2_absorb":
        return (f"{value * 100:.1f}% of L2 ({value * p.l2 / 2 ** 20:.0f} MiB) takes a vector kernel's writes at l2_gbps "
                f"instead of HBM")
    if name == "vec_launch_cycles":
        return f"{value:.0f} cycles ({value / p.freq_mhz:.2f} us) beyond GE's heads"
    if name == "vec_row_cycles":
        return (f"{value:.0f} cycles ({value / p.freq_mhz:.2f} us) per row (or reduce call) and reduction of a "
                "row-wise kernel")
    if name == "vec_reread_l2":
        return (f"{value * 100:.0f}% of the re-reads of rows L2 holds come at the core's L2 hit rate "
                f"({p.l2_rate * p.mte2_eff:.0f} B/cycle against ddr_rate {p.ddr_rate:g}); 0 where no fitted record "
                "re-reads")
    if name == "vec_cost_scale":
        return f"vector instructions at {value:.3g}x GE's per-API cycles (bounds [0.5, 4])"
    return ("factors on vec_cost_scale per operator kind and kind:dtype (both apply; bounds [0.25, 8], "
            f"log pulled to 0 with weight {OP_COST_PRIOR}, {OP_DTYPE_COST_PRIOR} per dtype): CANN's kernels run their "
            "own instruction sequences")


def write_fitted(cals: Mapping[str, Calibration], socs_path: str) -> list[str]:
    """Write the fitted vector constants of ``cals`` (:func:`calibrate_measured`) into the
    socs.json at ``socs_path``: each chosen SKU's entry gets its fitted values (the
    per-operator factors as ``vec_op_costs``) and, per constant, a source naming the data it
    came from.  Other fields and entries are left as they are.  Returns the entries written.
    The built-in table is compiled from socs.json: rebuild (``pip install .``) to use it."""
    with open(socs_path, encoding="utf-8") as f:
        doc = json.load(f)
    written = []
    for soc, cal in cals.items():
        entry = doc["socs"][cal.platform.name]
        src = _MEASURED_SOURCE.format(n_fit=len({r.name for r in cal.fitted_rows}), soc=soc,
                                      n_held=len({r.name for r in cal.held_out_rows}))
        costs = _op_costs(cal.platform)
        for k in VECTOR_FITTED:
            if k in cal.params:
                entry[k] = round(float(cal.params[k]), 4)
                entry["sources"][k] = src + _describe(k, float(cal.params[k]), cal.platform)
        # Factors at 1 (their prior, no record asking otherwise) are left out.
        costs = {k: v for k, v in costs.items() if abs(v - 1) > 5e-4}
        entry.pop("vec_op_costs", None)
        entry["sources"].pop("vec_op_costs", None)
        if costs:
            # (placed after vec_cost_scale, which it multiplies, before the notes and sources)
            items = list(entry.items())
            at = next(i for i, (k, _) in enumerate(items) if k == "vec_cost_scale") + 1
            items.insert(at, ("vec_op_costs", [f"{k}={v:.4g}" for k, v in sorted(costs.items())]))
            entry.clear()
            entry.update(items)
            entry["sources"]["vec_op_costs"] = src + _describe("vec_op_costs", 0, cal.platform)
        written.append(cal.platform.name)
    atomic_write_text(socs_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return written
