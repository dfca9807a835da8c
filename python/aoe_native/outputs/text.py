"""How numbers and attributes read in every output (reports, terminal tables): short, exact
enough, and never in Python's repr of a float32 (``epsilon=9.999999747378752e-06``)."""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["number", "attr_text", "shapes_text"]


def number(v: float) -> str:
    """A time or size for a label: "1,520" rather than "1.52e+03", "3.01" and "0.0412" kept short."""
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"  # float32 attributes (epsilon=1e-05) as the model author wrote them
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def attr_text(attrs: Mapping[str, Any]) -> str:
    """``k=v, ...`` sorted by name, floats to 6 significant digits."""
    return ", ".join(f"{k}={_value(v)}" for k, v in sorted(attrs.items()))


def shapes_text(inputs: list[list[int]], sep: str = ", ") -> str:
    """Input shapes as ``2048x4096, 4096x1024``; an absent optional input (an empty shape) reads "none"
    rather than leaving an empty slot between two separators."""
    return sep.join("x".join(map(str, s)) if s else "none" for s in inputs)
