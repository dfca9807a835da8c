"""Gradient timelines, the input of gradient-split tuning: ``(name, bytes, ready_us)`` per
gradient in the order the gradients become ready (time 0 = the start of backward).

They come from a JSON file (:func:`load_timeline`), from an ONNX model through the evaluator
(:func:`aoe_native.jobs.backward.predict_timeline`) or from a real PyTorch run
(``aoe_native.torch_ddp.measure_timeline``); every source is checked here (:func:`check_timeline`).
"""
from __future__ import annotations

import math
import os
from typing import Any, Iterable

import numpy as np

from ..fileio import read_given_json

__all__ = ["Gradient", "TimelineError", "GradientNameWarning", "PredictedTimeline", "check_timeline",
           "load_timeline", "describe_unmatched"]

Gradient = tuple[str, int, float]


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


# A gradient of more than a petabyte is an input error; the bound keeps every bucket's byte
# count (a sum of up to millions of them) inside int64 (found by fuzzing).
_MAX_BYTES = 1 << 50


def check_timeline(gradients: Iterable[Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
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
        check_timeline(out)
    except TimelineError as e:
        raise TimelineError(f"{where}: {e}") from None
    return out


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
