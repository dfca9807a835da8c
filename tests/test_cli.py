"""The `aoe` command: AOE's flags, clear errors, final line, files written."""
import json
import re

import pytest

from aoe_native import cli, zoo
from aoe_native.ascend.ops import supported_ops

from opat_models import mlp, run_aoe


def test_unsupported_framework_and_job_type(tmp_path, capsys):
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    assert cli.main(["--framework=3", f"--model={m}", "--job_type=2", f"--bank={tmp_path}"]) == 2
    assert "--framework=3 (TensorFlow) is not supported; only 5 (ONNX)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["-f", "5", "-m", str(m), "-j", "3"])
    assert e.value.code == 2 and "expected 1, 2, 1,2 or 4, got '3'" in capsys.readouterr().err
    assert not (tmp_path / "Ascend910B3").exists()


def test_errors_are_one_clear_line(tmp_path, capsys):
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    assert cli.main(["-f", "5", "-m", str(m), "-j", "2", f"--bank={tmp_path}", "--progress_bar=off",
                     "--input_shape", "y:1,2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aoe: error: ") and "'y', which is not an input" in err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    assert cli.main(["-f", "5", "-m", str(bad), "-j", "2", f"--bank={tmp_path}", "--progress_bar=off"]) == 1
    assert "bad.onnx: not a readable ONNX model" in capsys.readouterr().err
    assert not (tmp_path / "Ascend910B3").exists()


def test_end_to_end_run_prints_aoe_final_line_and_writes_files(tmp_path):
    model = tmp_path / "r.onnx"
    zoo.save("resnet50", str(model))
    work = tmp_path / "work"
    work.mkdir()
    p = run_aoe(["--framework=5", f"--model={model}", "--job_type=2", "--soc_version=Ascend910B3",
                 f"--bank={tmp_path / 'bank'}", f"--output={tmp_path / 'out'}", "--parallel=2"], cwd=tmp_path,
                env_extra={"ASCEND_WORK_PATH": str(work)}, timeout=120)
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"resnet50 OPAT process finished\. Performance improved by \d+\.\d\d% "
                        r"\(of the modelled part: 100\.0% of FLOPs, 100\.0% of bytes\)", last)
    assert "174 of 175 nodes modelled (1 views, 0 unmodelled), 100.0% of FLOPs" in p.stdout
    assert "tasks" in p.stderr  # the progress bar is on by default
    results = list(work.glob("aoe_result_opat_*_*.json"))
    assert len(results) == 1
    doc = json.loads(results[0].read_text())
    assert doc[1]["OPAT"]["model_performance_improvement"] in last
    cov = doc[1]["OPAT"]["model_coverage"]  # an added field
    assert (cov["nodes"], cov["modelled_nodes"], cov["flops_share"]) == (175, 174, 1.0)
    assert (tmp_path / "out" / "resnet50_opat_report.html").exists()
    assert (tmp_path / "out" / "resnet50_tuned_plan.json").exists()
    again = run_aoe(["-f", "5", "-m", str(model), "-j", "2", f"--bank={tmp_path / 'bank'}",
                     "--progress_bar", "off"], cwd=work, timeout=120)
    assert again.returncode == 0 and again.stderr == ""
    added = int(re.search(r", add (\d+),", p.stdout).group(1))
    assert f"hit {added} (reserved {added}, update 0)" in again.stdout  # every stored task is reused


def test_tune_ops_file_json_form(tmp_path):
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"tune_ops_type": ["Softmax"]}))
    p = run_aoe(["-f", "5", "-m", str(m), "-j", "2", "--input_shape", "x:1,64,256", f"--bank={tmp_path}",
                 f"--tune_ops_file={cfg}", "--progress_bar=off"], cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "total 1," in p.stdout


@pytest.mark.parametrize("value, ok", [("on", True), ("off", True), ("true", True), ("false", True),
                                       ("True", True), ("maybe", False)])
def test_progress_bar_takes_on_off_true_false(value, ok):
    from aoe_native.cli import build_parser
    if ok:
        args = build_parser().parse_args(["-m", "x.onnx", "-f", "5", "-j", "2", f"--progress_bar={value}"])
        assert args.progress_bar == (value.lower() in ("on", "true"))
    else:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["-m", "x.onnx", "-f", "5", "-j", "2", f"--progress_bar={value}"])


def test_low_coverage_warns_on_stderr_naming_the_top_operators(tmp_path, capsys, monkeypatch):
    """A model whose MatMuls the cost model cannot see: the run still finishes, the summary says
    what share is modelled, and stderr names the operator that holds the FLOPs."""
    from aoe_native.jobs import opat
    monkeypatch.chdir(tmp_path)  # the result file goes to the working directory
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    monkeypatch.setattr(opat, "supported_ops", lambda: [o for o in supported_ops() if o not in ("MatMul", "Gemm")])
    assert cli.main(["-f", "5", "-m", str(m), "-j", "2", f"--bank={tmp_path / 'bank'}", "--progress_bar=off",
                     "--input_shape", "x:1,64,256"]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"aoe: warning: mlp: only \d+\.\d% of the model's FLOPs is in modelled kernels.*"
                     r"Top unmodelled operators: MatMul \(\d+ nodes, 9\d\.\d% of FLOPs\)", err)
    assert "unmodelled)" in out and "of the modelled part" in out
    assert len(list(tmp_path.glob("aoe_result_opat_*.json"))) == 1
