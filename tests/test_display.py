"""How results are shown: names from the model (graph, node, op) appear literally in the
terminal tables and the HTML reports (never read as rich markup or matplotlib mathtext),
the convergence chart shows how far below the default each search gets, and the task
table does not present evaluations as a share of the tiling space."""
import re

import matplotlib
import pytest
from onnx import TensorProto, helper
from rich.console import Console

import aoe_native as an
from aoe_native import cli
from aoe_native.outputs import report
from aoe_native.outputs.console import subgraph_table, summary_table

from opat_models import drive_progress_bar, mlp

SOC = "Ascend910B3"
SHAPE = "x:1,64,256"
# rich markup (an unmatched closing tag raises), an emoji code, and an unbalanced mathtext
# fraction (two names in one label make a pair of `$`, which matplotlib renders as maths)
NODE = "blk[/i] {} :smile: $\\frac{{a"


def _hostile_mlp(graph_name: str):
    m = mlp()
    m.graph.name = graph_name
    for n in m.graph.node:
        n.name = NODE.format(n.name)
    return m


def _texts(svg_html: str) -> list[str]:
    """The strings of the <text> elements matplotlib wrote (with svg.fonttype "none" text is
    kept as text; mathtext would come out as separate glyphs, not as the source string)."""
    return re.findall(r"<text\b[^>]*>([^<]*)</text>", svg_html)


# --------------------------------------------------------------------------- terminal
def test_console_tables_and_progress_show_names_literally(tmp_path):
    r = an.tune_model(_hostile_mlp("net[/b]"), SOC, input_shape=SHAPE, bank=tmp_path / "b1", parallel=1,
                      evals_per_task=50)
    r.tasks[0].op_type = "Op[bold]X[/bold]"
    console = Console(width=300, record=True)
    console.print(summary_table(r))
    r.model_name = "net[red]plain"
    console.print(summary_table(r, narrow=True))
    sg = an.tune_subgraphs(_hostile_mlp("net[/b]"), SOC, input_shape=SHAPE, bank=tmp_path / "b2",
                           evals_per_kernel=30, parallel=1)
    console.print(subgraph_table(sg))
    text = console.export_text()
    assert "net[/b]: top tasks" in text and "net[red]plain: top tasks" in text
    assert "Op[bold]X[/bold]" in text
    assert "blk[/i] " in text and ":smile: $\\frac{a" in text  # the emoji code as written

    ev = {"stage": "tuning", "tasks_total": 2, "tasks_done": 0, "evaluations": 10, "gain": 0.1,
          "current": ["Op[/b] 1x64", "MatMul 1x64"]}
    assert "Op[/b] 1x64" in drive_progress_bar(200, ev)


@pytest.mark.parametrize("job_type", ["2", "1"])
def test_aoe_prints_the_summary_of_a_model_with_markup_in_its_names(tmp_path, monkeypatch, capsys, job_type):
    model = tmp_path / "m.onnx"
    model.write_bytes(_hostile_mlp("net[/b]").SerializeToString())
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path))
    code = cli.main(["-f", "5", "-m", str(model), "-j", job_type, f"--bank={tmp_path / 'bank'}", "--parallel=1",
                     "--progress_bar=off", "--input_shape", SHAPE])
    out = capsys.readouterr().out
    assert code == 0
    assert "net[/b]: top" in out
    if job_type == "1":  # the subgraph table names each subgraph's first and last node
        assert "blk[/i] " in out


# --------------------------------------------------------------------------- HTML reports
def test_reports_render_names_literally_not_as_mathtext(tmp_path):
    sg = an.tune_subgraphs(_hostile_mlp("net"), SOC, input_shape=SHAPE, bank=tmp_path / "b", evals_per_kernel=30,
                           parallel=1, output=tmp_path / "out")
    assert "<svg" in open(sg.report_file).read()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        texts = _texts(report.render_sgat_report(sg))
    assert any("$\\frac{a .. blk[/i] " in t for t in texts)  # a row label: first .. last node

    r = an.tune_model(_hostile_mlp("net"), SOC, input_shape=SHAPE, bank=tmp_path / "b2", parallel=1,
                      evals_per_task=50)
    for k in r.kernels:  # op types reach the by-type bars and the convergence legend
        k.op_type = f"My$x${k.op_type}"
    for t in r.tasks:
        t.op_type = f"My$x${t.op_type}"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        texts = _texts(report.render_report(r))
    assert any(t.startswith("My$x$") for t in texts)  # a bar label
    assert any(t.startswith("#") and "My$x$" in t for t in texts)  # a legend label


# --------------------------------------------------------------------------- convergence chart
def _three_matmuls():
    """Three MatMul tasks with the same first input (so the same first shape) and different weights."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 256])
    ws = [helper.make_tensor_value_info(f"w{n}", TensorProto.FLOAT, [256, n]) for n in (64, 128, 256)]
    nodes = [helper.make_node("MatMul", ["x", f"w{n}"], [f"y{n}"], name=f"mm{n}") for n in (64, 128, 256)]
    outs = [helper.make_tensor_value_info(f"y{n}", TensorProto.FLOAT, None) for n in (64, 128, 256)]
    return helper.make_model(helper.make_graph(nodes, "three", [x, *ws], outs),
                             opset_imports=[helper.make_opsetid("", 17)])


def _charts(render, result, monkeypatch) -> list:
    """The matplotlib axes of every chart `render(result)` draws."""
    from matplotlib.figure import Figure

    drawn = []

    def svg(width_in, height_in, draw):
        ax = Figure().subplots()
        draw(ax)
        drawn.append(ax)
        return ""
    monkeypatch.setattr(report, "_svg", svg)
    render(result)
    return drawn


def test_convergence_chart_shows_the_part_below_the_default_and_names_each_task(tmp_path, monkeypatch):
    r = an.tune_model(_three_matmuls(), SOC, bank=tmp_path, parallel=1, evals_per_task=60)
    tuned = [t for t in r.tasks if t.trace]
    assert len(tuned) == 3
    for k, t in enumerate(tuned):  # searches whose first tilings are up to 31x slower than the default
        t.trace = [31.0 * t.baseline_us, 3.0 * t.baseline_us] + [(0.5 + 0.1 * k) * t.baseline_us] * 40
    (ax,) = [ax for ax in _charts(report.render_report, r, monkeypatch) if "best / default" in ax.get_ylabel()]
    bottom, top = ax.get_ylim()
    assert 1.0 < top <= 1.2 and 0.3 < bottom < 0.5  # the span from the best (0.5) to the default (1) fills it
    assert "cut" in ax.get_ylabel()  # the reader is told the first evaluations are off the chart
    labels = ax.get_legend_handles_labels()[1]
    assert len(set(labels)) == 3
    for t in tuned:  # every input shape and the task's number in the task table
        assert f"#{t.index} MatMul {', '.join('x'.join(map(str, s)) for s in t.inputs)} x1" in labels

    # A task that never beat its default stays on the chart.
    tuned[0].trace = [2.0 * tuned[0].baseline_us] * 5 + [1.5 * tuned[0].baseline_us] * 5
    (ax,) = [ax for ax in _charts(report.render_report, r, monkeypatch) if "best / default" in ax.get_ylabel()]
    assert ax.get_ylim()[1] >= 1.5


# --------------------------------------------------------------------------- task table
def test_task_table_does_not_show_evaluations_as_a_share_of_the_space(tmp_path):
    r = an.tune_model(mlp(), SOC, input_shape=SHAPE, bank=tmp_path, parallel=1, evals_per_task=50)
    t = r.tasks[0]
    t.evaluations, t.space_size = 75000, 41556  # three rounds of 25000 over a space of 41556 (resnet50)
    html = report.render_report(r)
    assert "75000 / 41556" not in html and "evaluations / space" not in html
    assert "<td>75000</td><td>41556</td>" in html
    assert "can exceed the tiling space" in html
