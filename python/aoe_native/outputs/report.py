"""Self-contained HTML reports (one file, no external resources; inline SVG plots drawn by
matplotlib).  OPAT: time per kernel before/after, model time by op type, convergence of the
largest tasks, the unsupported operators and the task table.  GDAT: the step's timeline
(backward compute and each bucket's all-reduce) before and after, the baselines, the buckets."""
from __future__ import annotations

import html
import io
import math
from typing import Any, Callable

from ..results import ModelTuneResult, SubgraphTuneResult, plural
from .aoe_files import percent
from .text import attr_text, number, shapes_text

# Changed subgraphs shown in the SGAT report's chart and table (the result file lists them all).
SHOWN_SUBGRAPHS = 12

__all__ = ["render_report", "render_sgat_report", "render_gdat_report"]

_BEFORE, _AFTER = "#f2a65a", "#2f6fb0"


def _e(x) -> str:
    return html.escape(str(x))


def _literal(label: str) -> str:
    """A name (graph node, op type) as matplotlib must get it to draw it as written: a pair
    of `$` would render the text between as mathtext, and a lone `$\\frac{a` fails to parse
    and loses the whole report.  An escaped `\\$` is drawn as `$`."""
    return label.replace("$", r"\$")


def _svg(width_in: float, height_in: float, draw: Callable[[Any], None]) -> str:
    """A plot as inline SVG: `draw(axes)` fills it.  matplotlib's object API, not pyplot,
    so a user's own figures and settings are untouched; fixed ids and no date, so the
    same result gives the same file.  The legend, if any series is labelled, stands right of
    the axes, where it cannot cover a bar or a value label."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": "aoe-native", "font.size": 9}):
        fig = Figure(figsize=(width_in, height_in))
        ax = fig.subplots()
        draw(ax)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _kernel_bars(before: list[float], after: list[float]) -> str:
    """Bars per kernel in execution order: default tiling (behind) and tuned (in front)."""
    def draw(ax) -> None:
        x = range(len(before))
        ax.bar(x, before, width=0.85, color=_BEFORE, label="default tiling")
        ax.bar(x, after, width=0.85, color=_AFTER, label="tuned")
        ax.set_xlabel("kernel (execution order)")
        ax.set_ylabel("time (us)")
        ax.set_xlim(-0.5, max(len(before), 1) - 0.5)
    return _svg(10, 2.8, draw)


def _hbars(rows: list[tuple[str, float, float]], unit: str,
           labels: tuple[str, str] = ("default tiling", "tuned")) -> str:
    """Paired horizontal bars (before, after) per label, largest first."""
    def draw(ax) -> None:
        y = list(range(len(rows)))
        h = 0.38
        before = [b for _, b, _ in rows]
        after = [a for _, _, a in rows]
        bars_b = ax.barh([v - h / 2 for v in y], before, height=h, color=_BEFORE, label=labels[0])
        bars_a = ax.barh([v + h / 2 for v in y], after, height=h, color=_AFTER, label=labels[1])
        for bars in (bars_b, bars_a):
            ax.bar_label(bars, labels=[f"{number(v)} {unit}" for v in bars.datavalues], padding=3, fontsize=8)
        ax.set_yticks(y, [_literal(label) for label, _, _ in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, max(before + after + [1e-9]) * 1.18)
        ax.set_xlabel(f"time ({unit})")
    return _svg(10, 0.42 * len(rows) + 0.8, draw)


def _convergence(series: list[tuple[str, list[float], float]]) -> str:
    """Best time so far / default time versus evaluations (log scale), one line per task.

    A search's first tilings are often many times slower than the default (31x on BERT), and
    an axis reaching up to them squashes what matters, how far below the default (1) each
    search gets, into a strip at the bottom.  So the axis spans the best values up to a little
    above 1 (or above the final value of a task that never beat its default), and says when
    it cuts the start of a curve."""
    curves = []
    for label, trace, base in series:
        pts = [(j + 1, v / base) for j, v in enumerate(trace) if base > 0 and math.isfinite(v)]
        if pts:
            curves.append((label, [p[0] for p in pts], [p[1] for p in pts]))

    def draw(ax) -> None:
        top = max([1.1] + [1.05 * ys[-1] for _, _, ys in curves])
        lowest = min((min(ys) for _, _, ys in curves), default=1.0)
        for label, xs, ys in curves:
            ax.plot(xs, ys, linewidth=1.6, label=_literal(label))
        ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle="--")  # the default tiling
        ax.set_ylim(max(lowest - 0.1 * (top - lowest), 0.0), top)
        ax.set_xscale("log")
        ax.set_xlabel("evaluations (log scale)")
        cut = any(max(ys) > top for _, _, ys in curves)
        ax.set_ylabel("best / default time\n(1 = default" + (f"; axis cut at {top:.3g})" if cut else ")"))
    return _svg(10, 3.0, draw)


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _stopped_note(interrupted: bool, units: list, what: str) -> str:
    """A line saying the run did not finish: Ctrl-C, or the time limit before every part started."""
    unreached = sum(1 for u in units if u.update_mode == "not reached")
    if not interrupted and not unreached:
        return ""
    why = "Tuning was interrupted (Ctrl-C)" if interrupted else "The time limit ended tuning"
    rest = (f": {unreached} of {len(units)} {what} were not reached and keep what was known before "
            "(see the tables); run again to tune them" if unreached else "")
    return f"<p><b>{why}</b>{rest}.</p>"


def render_report(r: ModelTuneResult) -> str:
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
    # "#index": the task's row in the task table; every input shape, as tasks of one op type often
    # share the first (the Q, K and V projections of a transformer layer).
    series = [(f"#{t.index} {t.op_type} {shapes_text(t.inputs)} x{t.occurrences}", t.trace, t.baseline_us)
              for t in largest]
    s = r.repo_summary
    summary = _table(["item", "value"], [
        ["model", r.model_path or r.model_name], ["SoC", r.soc_version], ["dtype", r.dtype],
        ["model time, default tilings (ms)", f"{r.baseline_ms:.4f}"],
        ["model time, tuned (ms)", f"{r.tuned_ms:.4f}"],
        ["performance improvement (of the modelled part)", percent(r.improvement)],
        ["modelled part", r.coverage_text()],
        ["launch overhead per kernel (us)", r.launch_overhead_us],
        ["times", r.times_are],
        ["before (default tiling)", r.baselines_text()],
        ["graph nodes / kernels / distinct tasks", f"{r.n_nodes} / {len(r.kernels)} / {len(r.tasks)}"],
        ["views and folded nodes (no kernel)", r.n_view_nodes],
        ["bank", r.bank_directory],
        ["repo summary", f"total {s['total_num']} = hit {s['repo_hit_num']} (reserved {s['repo_reserved_num']}"
                         f" + update {s['repo_update_num']}) + add {s['repo_add_num']}"
                         f" + unsatisfied {s['repo_unsatisfied_num']}"],
        ["tuning time (s)", f"{r.tuning_time_s:.2f}"], ["worker processes", r.parallel]])
    shares = {u["op_type"]: u for u in r.coverage.get("top_unmodelled", [])}
    unsup = (_table(["ONNX op", "count", "share of nodes", "share of FLOPs", "share of bytes", "reason",
                     "nodes (first 5)"],
                    [[u["op_type"], u["count"], f"{u['share'] * 100:.1f}%",
                      f"{shares.get(u['op_type'], {}).get('flops_share', 0) * 100:.1f}%",
                      f"{shares.get(u['op_type'], {}).get('bytes_share', 0) * 100:.1f}%", u["reason"],
                      ", ".join(u["nodes"][:5])]
                     for u in r.unsupported])
             if r.unsupported else "<p>Every node is modelled.</p>")
    tasks = _table(["#", "op", "input shapes", "attrs", "occurs", "default (us)", "default is", "tuned (us)",
                    "improvement", "mode", "evaluations", "tiling space"],
                   [[t.index, t.op_type, shapes_text(t.inputs),
                     attr_text(t.attrs), t.occurrences,
                     f"{t.baseline_us:.3f}", t.baseline_kind, f"{t.time_us:.3f}", percent(t.improvement),
                     t.update_mode + (" (warm start)" if t.warm_started else "") + (f" [{t.error}]" if t.error else ""),
                     t.evaluations, t.space_size]
                    for t in sorted(r.tasks, key=lambda t: -t.occurrences * t.baseline_us)])
    style = _STYLE
    return "".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>OPAT report: {_e(r.model_name)}</title><style>{style}</style></head><body>",
        f"<h1>Operator tuning report: {_e(r.model_name)}</h1>", _stopped_note(r.interrupted, r.tasks, "tasks"),
        _stage_note(r),
        f"<p><b>Performance improved by {percent(r.improvement)}</b> on the modelled part of the model: "
        f"{_e(r.coverage_text())} "
        f"({r.baseline_ms:.4f} ms &rarr; {r.tuned_ms:.4f} ms, model time as the sum of kernel times "
        f"({_e(r.times_are)}) plus launch overhead; unmodelled nodes are not counted). {_e(r.basis_text())}.</p>",
        "<h2>Summary</h2>", summary,
        "<h2>Time per kernel, before and after tuning</h2>",
        _kernel_bars([k.baseline_us for k in r.kernels], [k.time_us for k in r.kernels]),
        "<h2>Where the model's time goes, by operator type</h2>", _hbars(op_rows, "us"),
        "<h2>Convergence of the largest tasks</h2>",
        _convergence(series) if series else "<p>No task was tuned in this run (all served from the bank).</p>",
        "<h2>Unmodelled operators</h2>", unsup,
        "<h2>Tasks</h2>", tasks,
        "<p>evaluations: tilings timed in all of the task's tuning rounds.  Each round is a new search "
        "from the best tiling so far and may time tilings an earlier round timed, so the count can exceed "
        "the tiling space (the number of valid tilings).</p>",
        "</body></html>\n"])


def _stage_note(r: ModelTuneResult) -> str:
    """Operator tuning that continued subgraph tuning's plan (job_type "1,2"): its own gain beside
    the gain over the fused kernels at their default tilings, so the two are never confused."""
    if r.start_ms is None:
        return ""
    return (f"<p>This run started from subgraph tuning's plan ({r.start_ms:.4f} ms): operator tuning's own gain "
            f"is <b>{percent(r.stage_improvement)}</b> ({r.start_ms:.4f} ms &rarr; {r.tuned_ms:.4f} ms). The "
            f"improvement below is over the same fused kernels at their default tilings ({r.baseline_ms:.4f} ms), "
            "so it includes the tilings subgraph tuning found; the subgraph-tuning report compares with the fixed "
            "fusion rules.</p>")


def _kernel_name(types: list[str]) -> str:
    return " + ".join(types) if len(types) <= 6 else " + ".join(types[:3] + ["..."] + types[-2:])


def render_sgat_report(r: SubgraphTuneResult) -> str:
    """The subgraph-tuning report as one HTML string: the model time before and after, the
    changed subgraphs, and each one's kernels before and after fusion."""
    s = r.repo_summary
    changed = sorted((g for g in r.subgraphs if g.changed),
                     key=lambda g: -(g.before_us - g.after_us) * g.occurrences)
    shown = changed[:SHOWN_SUBGRAPHS]
    overhead = r.launch_overhead_us
    rows = [(f"{g.nodes[0]} .. {g.nodes[-1]} ({plural(len(g.nodes), 'node')}) x{g.occurrences}",
             g.kernel_us(overhead)[0] * g.occurrences, g.kernel_us(overhead)[1] * g.occurrences) for g in shown]
    more = (f"<p>{len(changed) - len(shown)} more changed subgraphs are not shown here; the result file "
            "(aoe_result_sgat_*.json) lists every one.</p>" if len(changed) > len(shown) else "")
    four = [["fixed fusion rules, default tilings", f"{r.baseline_ms:.4f}", "", ""],
            ["subgraph tuning", f"{r.tuned_ms:.4f}", percent(r.improvement), percent(r.improvement)]]
    if r.opat is not None:
        four.append(["subgraph tuning, then operator tuning", f"{r.opat.tuned_ms:.4f}",
                     percent(r.opat.improvement), percent(r.opat.stage_improvement)])
    summary = _table(["item", "value"], [
        ["model", r.model_path or r.model_name], ["SoC", r.soc_version], ["dtype", r.dtype],
        ["tune_optimization_level", r.optimization_level], ["Fnonhomo_split", r.nonhomo_split],
        ["kernels, fixed rules / tuned", f"{r.baseline_kernels} / {len(r.kernels)}"],
        ["subgraphs: distinct / faster / fused differently",
         f"{len(r.subgraphs)} / {len(changed)} / {sum(1 for g in r.subgraphs if g.fusion_changed)}"],
        ["candidate kernels tuned / evaluations", f"{r.candidate_kernels} / {r.evaluations}"],
        ["launch overhead per kernel (us)", r.launch_overhead_us], ["times", r.times_are],
        ["bank", r.bank_directory],
        ["repo summary", f"total {s['total_num']} = hit {s['repo_hit_num']} (reserved {s['repo_reserved_num']}"
                         f" + update {s['repo_update_num']}) + add {s['repo_add_num']}"
                         f" + unsatisfied {s['repo_unsatisfied_num']}"],
        ["tuning time (s)", f"{r.tuning_time_s:.2f}"], ["worker processes", r.parallel]])
    detail = []
    for g in shown:
        before = "<br>".join(_e(_kernel_name(k)) for k in g.before_kernels)
        after = "<br>".join(
            _e(f"{k.op_type}: {_kernel_name(k.onnx_types)}" + (f" [{', '.join(f'{a}={v}' for a, v in k.policy.items())}]"
                                                                 if k.policy else "") + f" {k.time_us:.2f} us")
            for k in g.after_kernels)
        before_us, after_us = g.kernel_us(overhead)
        detail.append(f"<tr><td>x{g.occurrences}</td><td>{before}</td><td>{before_us:.2f}</td>"
                      f"<td>{after}</td><td>{after_us:.2f}</td><td>{percent(g.improvement)}</td></tr>")
    kernels_table = ("<p>Kernel times without launch overhead, as in the operator-tuning report; the "
                     f"improvement counts the launches too ({r.launch_overhead_us:g} us per kernel).</p>"
                     "<table><thead><tr><th>occurs</th><th>kernels before (fixed rules)</th><th>us</th>"
                     "<th>kernels after (tuned fusion, split policy, time)</th><th>us</th><th>improvement</th></tr>"
                     "</thead><tbody>" + "".join(detail) + "</tbody></table>" + more) if detail else \
        "<p>No subgraph changed: the fixed fusion rules are already the fastest plan found.</p>"
    return "".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>SGAT report: {_e(r.model_name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Subgraph tuning report: {_e(r.model_name)}</h1>",
        _stopped_note(r.interrupted, r.subgraphs, "subgraphs"),
        f"<p><b>Performance improved by {percent(r.improvement)}</b> ({r.baseline_ms:.4f} ms &rarr; "
        f"{r.tuned_ms:.4f} ms, {r.baseline_kernels} &rarr; {len(r.kernels)} kernels; model time as the sum of "
        f"kernel times ({_e(r.times_are)}) plus launch overhead, over the modelled part).</p>",
        "<h2>Model time</h2>",
        _table(["plan", "model time (ms)", "improvement over the fixed rules", "this stage's own gain"], four),
        "<h2>Summary</h2>", summary,
        f"<h2>Changed subgraphs (kernel time x occurrences; the {len(shown)} that saved most)</h2>",
        _hbars(rows, "us", ("fixed fusion, default tilings", "tuned fusion")) if rows else "<p>None.</p>",
        "<h2>Kernels before and after fusion</h2>", kernels_table,
        "</body></html>\n"])


_STYLE = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
          "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}th{background:#eee}h2{margin-top:28px}"
          "svg{max-width:100%;height:auto}")


def _gdat_timeline(rows: list[tuple[str, float, list[tuple[float, float]]]]) -> str:
    """One pair of lanes per plan: backward compute, and each bucket's all-reduce (alternating
    shades, so adjacent buckets stay distinguishable)."""
    def draw(ax) -> None:
        ticks, labels = [], []
        for r, (label, backward, spans) in enumerate(rows):
            y = 3 * (len(rows) - 1 - r)
            ax.broken_barh([(0.0, backward)], (y + 1.5, 0.9), color="#999999")
            colors = [_BEFORE, "#c9782f"] if r == 0 and len(rows) > 1 else [_AFTER, "#7fa7d6"]
            ax.broken_barh([(s, e - s) for s, e in spans], (y + 0.3, 0.9),
                           color=[colors[k % 2] for k in range(len(spans))])
            ticks += [y + 1.95, y + 0.75]
            labels += [f"{label}: backward", f"{label}: all-reduce ({plural(len(spans), 'bucket')})"]
        ax.set_yticks(ticks, labels)
        ax.set_xlabel("time since the start of backward (us)")
        ax.set_xlim(0, max(max(e for _, _, sp in rows for _, e in sp), 1e-9) * 1.02)
    return _svg(10, 0.9 * len(rows) + 1.0, draw)


def render_gdat_report(plan: Any, name: str) -> str:
    """The GDAT report of a :class:`~aoe_native.results.GradientPlan` as one HTML string."""
    before = plan.reference_baseline  # the backend's own default rule
    rows = [(before, plan.backward_us, plan.baseline_spans[before]),
            ("tuned", plan.backward_us, list(zip(plan.bucket_start_us, plan.bucket_end_us)))]
    c = plan.cluster
    summary = _table(["item", "value"], [
        ["timeline", name], ["gradients", len(plan.names)], ["total bytes", sum(plan.gradient_bytes)],
        ["cluster", f"{c['name']}: {c['ranks']} ranks, {c['algorithm']}"],
        ["backward (us)", f"{plan.backward_us:.1f}"], ["step end, tuned (us)", f"{plan.time_us:.1f}"],
        ["exposed communication (us)", f"{plan.exposed_us:.1f}"], ["buckets", len(plan.buckets)],
        ["timeline from", plan.evaluator or "a timeline file"],
        ["knowledge bank", ("served from " if plan.bank_hit else "") + (plan.bank_directory or "not used")],
        ["bucket limit", plan.max_buckets or "none"], ["backend", plan.backend or "any"],
        ["HCCL set_split_strategy_by_idx", plan.hccl_split_idx],
        ["HCCL set_split_strategy_by_size", plan.hccl_split_percent],
        ["MindSpore all_reduce_fusion_config", plan.mindspore_fusion_config],
        ["DDP bucket_cap_mb_list", ", ".join(f"{x:.6g}" for x in plan.ddp_bucket_cap_mb_list)]])
    levels = _table(["level", "ranks", "alpha (us)", "bandwidth (GB/s)", "source"],
                    [[lv["name"], lv["ranks"], lv["alpha_us"], lv["gbps"], lv["source"]] for lv in c["levels"]])
    base = _table(["baseline", "buckets", "step end (us)", "tuned is faster by"],
                  [[k + (" (the default here)" if k == before else ""), len(plan.baseline_buckets[k]), f"{t:.1f}",
                    percent(plan.gain[k])] for k, t in plan.ordered_baselines()])
    buckets = _table(["#", "gradients", "first .. last", "bytes", "start (us)", "end (us)"],
                     [[k, len(b), f"{b[0]} .. {b[-1]}", plan.bucket_bytes[k], f"{plan.bucket_start_us[k]:.1f}",
                       f"{plan.bucket_end_us[k]:.1f}"] for k, b in enumerate(plan.buckets)])
    return "".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>GDAT report: {_e(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Gradient-split tuning report: {_e(name)}</h1>",
        f"<p><b>Step end {plan.time_us:.1f} us, {percent(plan.gain[before])} faster than {_e(before)}</b> "
        f"(predicted by the timeline model: a bucket starts when its last gradient is ready and the "
        f"previous bucket is done).</p>",
        "<h2>Summary</h2>", summary,
        f"<h2>Timeline: {_e(before)} (before) and tuned (after)</h2>", _gdat_timeline(rows),
        "<h2>Baselines in the same model</h2>", base,
        "<h2>Cluster</h2>", levels,
        "<h2>Buckets</h2>", buckets,
        "</body></html>\n"])
