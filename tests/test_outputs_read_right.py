"""What a user reads in the outputs says what it means at a glance: a stage's own gain beside the gain
over the defaults, one kernel time for one kernel in every report, progress that agrees with the
summary, English counts and short numbers, the platform's own default first, and help text that
says what the commands do."""
import re
import subprocess
import sys

import pytest

import aoe_native as an
from aoe_native import cli, zoo
from aoe_native.outputs import report
from aoe_native.outputs.console import subgraph_table
from aoe_native.outputs.text import attr_text, number, shapes_text
from aoe_native.results import plural

from opat_models import mlp

SOC = "Ascend910B3"
FAST_OPAT = dict(evals_per_task=200, round_evals=100, parallel=1)


def test_counts_and_numbers_read_as_english():
    assert plural(1, "view") == "1 view" and plural(2, "view") == "2 views" and plural(0, "bucket") == "0 buckets"
    assert number(1523.4) == "1,523" and number(3.014) == "3.01" and number(0.04123) == "0.0412"
    # float32 attributes as their author wrote them, not as a float64 repr
    assert attr_text({"epsilon": 9.999999747378752e-06, "axis": -1}) == "axis=-1, epsilon=1e-05"
    # an absent optional input (FusedInferAttentionScore without a mask, a matmul without bias) is named
    assert shapes_text([[2048, 4096], [], [4096]]) == "2048x4096, none, 4096"


def test_operator_tuning_after_subgraph_tuning_reports_its_own_gain(tmp_path):
    """`1,2`: the operator-tuning stage started from subgraph tuning's plan; its report and the
    console say that stage's own gain beside the gain over the fixed rules at default tilings."""
    r = an.tune_subgraphs(mlp(), SOC, input_shape="x:1,64,256", bank=tmp_path / "bank", evals_per_kernel=30,
                          then_tune_ops=True, output=tmp_path / "out", **FAST_OPAT)
    o = r.opat
    assert o.start_ms == pytest.approx(r.tuned_ms)
    assert o.stage_improvement == pytest.approx(r.tuned_ms / o.tuned_ms - 1)
    assert o.stage_improvement <= o.improvement
    html = open(o.report_file).read()
    assert "This run started from subgraph tuning's plan" in html
    assert f"operator tuning's own gain is <b>{o.stage_improvement * 100:.2f}%</b>" in html
    sgat_html = open(r.report_file).read()
    assert "this stage&#x27;s own gain" in sgat_html or "this stage's own gain" in sgat_html


def test_a_kernel_has_the_same_time_before_in_the_subgraph_and_the_operator_outputs(tmp_path):
    """SGAT's per-subgraph 'before' used to include the launch overhead while OPAT's did not
    (143.68 against 140.68 us for the same kernel)."""
    model = zoo.build("resnet50")
    s = an.tune_subgraphs(model, SOC, bank=tmp_path / "a", evals_per_kernel=20, parallel=1)
    o = an.tune_model(model, SOC, bank=tmp_path / "b", **FAST_OPAT)
    default_of = {tuple(k.nodes): t.baseline_us for t in o.tasks for k in o.kernels if k.task == t.index}
    single = [g for g in s.subgraphs if len(g.before_kernels) == 1 and tuple(g.before_kernels[0]) in default_of]
    assert single
    for g in single:
        assert g.kernel_us(s.launch_overhead_us)[0] == pytest.approx(default_of[tuple(g.before_kernels[0])])
    from rich.console import Console
    con = Console(width=200, record=True)
    con.print(subgraph_table(s, rows=len(s.subgraphs)))
    text = con.export_text()
    g = max(single, key=lambda g: g.occurrences * (g.before_us - g.after_us))
    if g.changed:
        assert f"{g.kernel_us(s.launch_overhead_us)[0]:.2f}" in text and f"{g.before_us:.2f}" not in text


def test_the_subgraph_report_says_when_its_table_stops_short(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "SHOWN_SUBGRAPHS", 1)
    s = an.tune_subgraphs(zoo.build("resnet50"), SOC, bank=tmp_path / "bank", evals_per_kernel=20, parallel=1)
    changed = sum(1 for g in s.subgraphs if g.changed)
    assert changed > 1
    html = report.render_sgat_report(s)
    assert f"{changed - 1} more changed subgraphs are not shown here" in html
    assert "the 1 that saved most" in html  # the chart names the same count as the table


def test_progress_of_an_interrupted_run_agrees_with_its_summary(tmp_path):
    """A Ctrl-C'd run's last progress event counts only tasks whose search ended, never the ones
    not reached (the bar showed 27/27 while the summary said 21 were not reached)."""
    events, calls = [], []

    def stop_once(ev):
        events.append(ev)
        if ev["stage"] == "tuning" and ev["tasks_started"] >= 1 and not calls:
            calls.append(1)
            raise KeyboardInterrupt
    r = an.tune_model(zoo.build("resnet50"), SOC, bank=tmp_path, progress=stop_once, **FAST_OPAT)
    assert r.interrupted
    never = sum(t.update_mode == "not reached" for t in r.tasks)
    last = events[-1]
    assert never > 0 and last["stage"] == "done"
    assert last["tasks_done"] <= last["tasks_total"] - never


def test_an_interrupted_subgraph_run_ends_its_progress_with_the_result_gain(tmp_path):
    events, calls = [], []

    def stop_once(ev):
        events.append(ev)
        if ev.get("subgraphs_done", 0) >= 1 and not calls:
            calls.append(1)
            raise KeyboardInterrupt
    r = an.tune_subgraphs(zoo.build("bert_base"), SOC, bank=tmp_path, progress=stop_once, evals_per_kernel=20,
                          parallel=1)
    assert r.interrupted and events[-1]["stage"] == "done"
    assert events[-1]["gain"] == pytest.approx(r.improvement)  # not 0.00% then "improved by 131%"
    assert events[-1]["tasks_done"] < events[-1]["tasks_total"]


def test_gradient_split_tuning_leads_with_the_platform_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the result file goes to the working directory
    grads = [(f"g{i}", (i % 7 + 1) * 1_000_000, 10.0 * i) for i in range(40)]
    plan = an.tune_gradients(grads, an.Cluster(ranks=8, alpha_us=20.0, gbps=100.0))
    assert plan.reference_baseline == "hccl_default" and plan.improvement == plan.gain["hccl_default"]
    assert plan.ordered_baselines()[0][0] == "hccl_default"
    html = report.render_gdat_report(plan, "t")
    assert "faster than hccl_default" in html and "hccl_default (the default here)" in html
    assert re.search(r"all-reduce \(1 bucket\)|all-reduce \(\d+ buckets\)", html) is not None
    timeline = tmp_path / "t.json"
    timeline.write_text('{"gradients": [' + ",".join(
        f'{{"name": "{n}", "bytes": {b}, "ready_us": {r}}}' for n, b, r in grads) + "]}")
    assert cli.main(["--job_type=4", f"--timeline={timeline}", "--ranks=8", f"--bank={tmp_path / 'bank'}"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("  ")]
    assert rows[0].split()[0] == "hccl_default" and "(default)" in rows[0]
    assert "over hccl_default" in out.splitlines()[-1]


def test_help_says_what_the_commands_do():
    out = subprocess.run([sys.executable, "-m", "aoe_native.cli", "--help"], capture_output=True, text=True).stdout
    assert "operator tuning" in out and "subgraph tuning" in out and "gradient-split tuning" in out
    p = cli.build_parser()
    assert p.description and "Operator auto-tuning of a whole" not in p.description
    with pytest.raises(SystemExit):
        cli.bank_main(["--help"])
    bank_help = subprocess.run([sys.executable, "-c", "from aoe_native.cli import bank_main; bank_main(['--help'])"],
                               capture_output=True, text=True).stdout
    assert "stats a bank" not in bank_help and "summarise a bank" in bank_help
