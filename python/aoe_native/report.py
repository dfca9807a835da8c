"""Self-contained HTML report of an OPAT job, with inline SVG plots (no plotting dependency):
time per kernel before/after, model time by op type, convergence of the largest tasks,
the unsupported operators and the task table."""
from __future__ import annotations

import html
from typing import TYPE_CHECKING, Sequence

from .results import percent

if TYPE_CHECKING:  # pragma: no cover
    from .opat import ModelTuneResult

__all__ = ["render_report"]

_BEFORE, _AFTER = "#f2a65a", "#2f6fb0"
_LINE_COLORS = ["#2f6fb0", "#d1495b", "#66a182", "#edae49", "#8d6a9f", "#00798c"]


def _e(x) -> str:
    return html.escape(str(x))


def _svg(width: int, height: int, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">' + "".join(body) + "</svg>")


def _legend(x: int, y: int, items: Sequence[tuple[str, str]]) -> list[str]:
    out = []
    for i, (label, color) in enumerate(items):
        out.append(f'<rect x="{x}" y="{y + 16 * i}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14}" y="{y + 9 + 16 * i}">{_e(label)}</text>')
    return out


def _kernel_bars(before: list[float], after: list[float]) -> str:
    """Vertical bars per kernel: before (light, behind) and after (dark, in front)."""
    w, h, left, bottom, top = 960, 260, 55, 30, 10
    n = max(len(before), 1)
    peak = max(before + after + [1e-9])
    bw = (w - left - 10) / n
    body = [f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="#444"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#444"/>']
    for frac in (0.0, 0.5, 1.0):
        y = h - bottom - frac * (h - bottom - top)
        body.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{peak * frac:.3g}</text>')
    for i, (b, a) in enumerate(zip(before, after)):
        x = left + i * bw
        for v, color in ((b, _BEFORE), (a, _AFTER)):
            bh = v / peak * (h - bottom - top)
            body.append(f'<rect x="{x:.2f}" y="{h - bottom - bh:.2f}" width="{max(bw * 0.85, 0.5):.2f}" '
                        f'height="{bh:.2f}" fill="{color}"><title>kernel {i}: {v:.3f} us</title></rect>')
    body.append(f'<text x="{(left + w) / 2}" y="{h - 8}" text-anchor="middle">kernel (execution order)</text>')
    body.append(f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">time (us)</text>')
    body += _legend(w - 150, top, [("default tiling", _BEFORE), ("tuned", _AFTER)])
    return _svg(w, h, body)


def _hbars(rows: list[tuple[str, float, float]], unit: str) -> str:
    """Horizontal paired bars (before/after) per label."""
    row_h, left, w = 34, 230, 960
    h = row_h * len(rows) + 40
    peak = max([b for _, b, _ in rows] + [a for _, _, a in rows] + [1e-9])
    body = []
    for i, (label, b, a) in enumerate(rows):
        y = 10 + i * row_h
        body.append(f'<text x="{left - 6}" y="{y + 16}" text-anchor="end">{_e(label)}</text>')
        for j, (v, color) in enumerate(((b, _BEFORE), (a, _AFTER))):
            bw = v / peak * (w - left - 120)
            body.append(f'<rect x="{left}" y="{y + j * 13}" width="{bw:.1f}" height="12" fill="{color}"/>'
                        f'<text x="{left + bw + 4:.1f}" y="{y + j * 13 + 10}">{v:.3g} {unit}</text>')
    body += _legend(w - 110, h - 34, [("default tiling", _BEFORE), ("tuned", _AFTER)])
    return _svg(w, h, body)


def _convergence(series: list[tuple[str, list[float], float]]) -> str:
    """Best time so far / default time versus evaluations (log scale), one line per task."""
    import math
    w, h, left, bottom, top = 960, 280, 55, 35, 10
    longest = max([len(t) for _, t, _ in series] + [2])
    span_x = math.log10(longest)

    def xpos(j: int) -> float:  # evaluation j+1 on a log axis
        return left + math.log10(j + 1) / span_x * (w - left - 10)
    vals = [v / base for _, t, base in series for v in t if base > 0 and v != float("inf")]
    lo, hi = min(vals + [1.0]), max(vals + [1.0])
    span = max(hi - lo, 1e-6)
    body = [f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="#444"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#444"/>']
    for frac in (0.0, 0.5, 1.0):
        y = h - bottom - frac * (h - bottom - top)
        body.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{lo + frac * span:.3f}</text>')
    decade = 1
    while decade <= longest:
        x = xpos(decade - 1)
        body.append(f'<line x1="{x:.1f}" y1="{h - bottom}" x2="{x:.1f}" y2="{h - bottom + 4}" stroke="#444"/>'
                    f'<text x="{x:.1f}" y="{h - bottom + 15}" text-anchor="middle">{decade}</text>')
        decade *= 10
    body.append(f'<text x="{(left + w) / 2}" y="{h - 4}" text-anchor="middle">evaluations (log scale)</text>')
    legend = []
    for i, (label, trace, base) in enumerate(series):
        color = _LINE_COLORS[i % len(_LINE_COLORS)]
        pts = []
        for j, v in enumerate(trace):
            if base <= 0 or v == float("inf"):
                continue
            x = xpos(j)
            y = h - bottom - (v / base - lo) / span * (h - bottom - top)
            pts.append(f"{x:.1f},{y:.1f}")
        if pts:
            body.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{" ".join(pts)}"/>')
            legend.append((label, color))
    body.append(f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">'
                f'best / default time</text>')
    body += _legend(w - 330, top, legend)
    return _svg(w, h, body)


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _shape_str(inputs: list[list[int]]) -> str:
    return ", ".join("x".join(map(str, s)) for s in inputs)


def render_report(r: "ModelTuneResult") -> str:
    """The HTML report as one string (no external resources)."""
    by_op: dict[str, list[float]] = {}
    for k in r.kernels:
        acc = by_op.setdefault(k.op_type, [0.0, 0.0])
        acc[0] += k.baseline_us
        acc[1] += k.time_us
    op_rows = sorted(((op, b, a) for op, (b, a) in by_op.items()), key=lambda x: -x[1])
    if r.kernels:
        op_rows.append(("launch overhead", len(r.kernels) * r.launch_overhead_us,
                        len(r.kernels) * r.launch_overhead_us))
    largest = sorted((t for t in r.tasks if t.trace), key=lambda t: -t.occurrences * t.baseline_us)[:6]
    series = [(f"{t.op_type} {_shape_str(t.inputs[:1])} x{t.occurrences}", t.trace, t.baseline_us) for t in largest]
    s = r.repo_summary
    summary = _table(["item", "value"], [
        ["model", r.model_path or r.model_name], ["SoC", r.soc_version], ["dtype", r.dtype],
        ["model time, default tilings (ms)", f"{r.baseline_ms:.4f}"],
        ["model time, tuned (ms)", f"{r.tuned_ms:.4f}"],
        ["performance improvement", percent(r.improvement)],
        ["launch overhead per kernel (us)", r.launch_overhead_us],
        ["graph nodes / kernels / distinct tasks", f"{r.n_nodes} / {len(r.kernels)} / {len(r.tasks)}"],
        ["views and folded nodes (no kernel)", r.n_view_nodes],
        ["bank", r.bank_directory],
        ["repo summary", f"total {s['total_num']} = hit {s['repo_hit_num']} (reserved {s['repo_reserved_num']}"
                         f" + update {s['repo_update_num']}) + add {s['repo_add_num']}"
                         f" + unsatisfied {s['repo_unsatisfied_num']}"],
        ["tuning time (s)", f"{r.tuning_time_s:.2f}"], ["worker processes", r.parallel]])
    unsup = (_table(["ONNX op", "count", "share of nodes", "reason", "nodes (first 5)"],
                    [[u["op_type"], u["count"], f"{u['share'] * 100:.1f}%", u["reason"], ", ".join(u["nodes"][:5])]
                     for u in r.unsupported])
             if r.unsupported else "<p>Every node is modelled.</p>")
    tasks = _table(["#", "op", "input shapes", "attrs", "occurs", "default (us)", "tuned (us)", "improvement",
                    "mode", "evaluations / space"],
                   [[t.index, t.op_type, _shape_str(t.inputs),
                     ", ".join(f"{k}={v}" for k, v in sorted(t.attrs.items())), t.occurrences,
                     f"{t.baseline_us:.3f}", f"{t.time_us:.3f}", percent(t.improvement),
                     t.update_mode + (" (warm start)" if t.warm_started else "") + (f" [{t.error}]" if t.error else ""),
                     f"{t.evaluations} / {t.space_size}"]
                    for t in sorted(r.tasks, key=lambda t: -t.occurrences * t.baseline_us)])
    style = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}th{background:#eee}h2{margin-top:28px}")
    return "".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>OPAT report: {_e(r.model_name)}</title><style>{style}</style></head><body>",
        f"<h1>Operator tuning report: {_e(r.model_name)}</h1>",
        f"<p><b>Performance improved by {percent(r.improvement)}</b> "
        f"({r.baseline_ms:.4f} ms &rarr; {r.tuned_ms:.4f} ms, model time predicted by the cost model "
        f"as the sum of kernel times plus launch overhead; unsupported nodes are not counted).</p>",
        "<h2>Summary</h2>", summary,
        "<h2>Time per kernel, before and after tuning</h2>",
        _kernel_bars([k.baseline_us for k in r.kernels], [k.time_us for k in r.kernels]),
        "<h2>Where the model's time goes, by operator type</h2>", _hbars(op_rows, "us"),
        "<h2>Convergence of the largest tasks</h2>",
        _convergence(series) if series else "<p>No task was tuned in this run (all served from the bank).</p>",
        "<h2>Unsupported operators</h2>", unsup,
        "<h2>Tasks</h2>", tasks,
        "</body></html>\n"])
