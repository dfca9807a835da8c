"""The `aoe` command: AOE's flags, clear errors, final line, files written."""
import json
import os
import re
import sys

import pytest

import aoe_native
from aoe_native import cli, zoo
from aoe_native.ascend.ops import supported_ops

from opat_models import drive_progress_bar, mlp, run_aoe


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
    assert "174 of 175 nodes modelled (1 view, 0 unmodelled), 100.0% of FLOPs" in p.stdout
    assert "tasks" in p.stderr  # the progress bar is on by default
    results = list(work.glob("aoe_result_opat_*_*.json"))
    assert len(results) == 1
    doc = json.loads(results[0].read_text())
    assert doc[1]["OPAT"]["model_performance_improvement"] in last
    cov = doc[1]["OPAT"]["model_coverage"]  # an added field
    assert (cov["nodes"], cov["modelled_nodes"], cov["flops_share"]) == (175, 174, 1.0)
    # named after the model file (r.onnx), not its graph (resnet50): graph names repeat across exports
    assert (tmp_path / "out" / "r_opat_report.html").exists()
    assert (tmp_path / "out" / "r_tuned_plan.json").exists()
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


# --------------------------------------------------------------------------- found by use (QA pass)
def _mlp_file(tmp_path):
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    return m


def test_bad_dtype_output_and_tune_ops_fail_before_tuning(tmp_path, capsys):
    """Input mistakes are reported up front, with nothing tuned or stored."""
    m = _mlp_file(tmp_path)
    base = ["-f", "5", "-m", str(m), "-j", "2", f"--bank={tmp_path / 'bank'}", "--progress_bar=off",
            "--input_shape", "x:1,64,256"]
    assert cli.main(base + ["--dtype", "float64"]) == 1
    assert "dtype 'float64' is not supported on Ascend910B3; valid: float16, bfloat16, float32, int8" \
        in capsys.readouterr().err
    (tmp_path / "afile").write_text("")
    assert cli.main(base + [f"--output={tmp_path / 'afile'}"]) == 1
    assert "output directory" in capsys.readouterr().err
    for doc, message in ((["Gemm"], "expected a JSON object"),
                         ({"tune_ops_type": "Gemm"}, "tune_ops_type must be a list of strings"),
                         ({"tune_ops_name": None}, "tune_ops_name must be a list of strings"),
                         ({"tune_ops_types": ["Gemm"]}, "unknown field(s) tune_ops_types"),
                         ({"tune_ops_type": ["NoSuchOp"]}, "match no operator of the model")):
        cfg = tmp_path / "ops.json"
        cfg.write_text(json.dumps(doc))
        assert cli.main(base + [f"--tune_ops_file={cfg}"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("aoe: error: ") and message in err, (doc, err)
    assert not (tmp_path / "bank").exists()


def test_tune_ops_naming_some_unknown_ops_warns_and_tunes_the_rest(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    m = _mlp_file(tmp_path)
    cfg = tmp_path / "ops.txt"
    cfg.write_text("Softmax\nNoSuchOp\n")
    assert cli.main(["-f", "5", "-m", str(m), "-j", "2", f"--bank={tmp_path / 'bank'}", "--progress_bar=off",
                     "--input_shape", "x:1,64,256", f"--tune_ops_file={cfg}"]) == 0
    out, err = capsys.readouterr()
    assert "aoe: warning: tune_ops: NoSuchOp match no operator of the model" in err
    assert "total 1," in out


@pytest.mark.parametrize("args, message", [
    (["-j", "2", "--timeline=t.json"], "--timeline applies to --job_type=4, not 2"),
    (["-j", "2", "--servers=2"], "--servers applies to --job_type=4, not 2"),
    (["-j", "2", "--tune_optimization_level=O1"], "--tune_optimization_level applies to --job_type=1, not 2"),
    (["-j", "1", "--tune_ops_file=x.txt"], "--tune_ops_file applies to --job_type=2, not 1"),
    (["-j", "1,2", "--tune_ops_file=x.txt"], "--tune_ops_file applies to operator tuning of the model's own kernels"),
    (["-j", "4", "--timeline=t.json", "--parallel=2"], "--parallel applies to --job_type=1 or 2, not 4"),
    (["-j", "4", "--timeline=t.json", "--dtype=float16"], "--dtype describes a model; with --timeline there is none"),
    (["-j", "4", "-m", "m.onnx"], "--job_type=4 --model needs --framework=5"),
])
def test_options_of_other_job_types_are_usage_errors(args, message, capsys):
    extra = [] if "-j" in args and args[args.index("-j") + 1] == "4" else ["-f", "5", "-m", "m.onnx"]
    with pytest.raises(SystemExit) as e:
        cli.main(args + extra)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_ctrl_c_keeps_finished_tasks_and_writes_the_result(tmp_path, capsys, monkeypatch):
    """Ctrl-C during tuning (here raised from the progress callback after the first finished
    task): exit 130, no traceback, the result file and the bank hold what was finished."""
    from aoe_native.outputs import console

    class Interrupting(console.ProgressBar):
        def __call__(self, ev):
            if ev["stage"] == "tuning" and ev["tasks_done"] >= 1:
                raise KeyboardInterrupt
    monkeypatch.setattr(cli, "ProgressBar", Interrupting)
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "r.onnx"
    zoo.save("resnet50", str(model))
    rc = cli.main(["-f", "5", "-m", str(model), "-j", "2", f"--bank={tmp_path / 'bank'}", "--parallel=1"])
    out, err = capsys.readouterr()
    assert rc == 130 and "Traceback" not in err and "aoe: interrupted: the results above use" in err
    [res] = tmp_path.glob("aoe_result_opat_*.json")
    doc = json.loads(res.read_text())[1]["OPAT"]
    assert doc["opat_tuning_result"].startswith("tuning interrupted")
    added = doc["repo_summary"]["repo_add_num"]
    assert 1 <= added < 26  # some tasks finished, not all
    again = run_aoe(["-f", "5", "-m", str(model), "-j", "2", f"--bank={tmp_path / 'bank'}", "--progress_bar=off",
                     "--tuning_time_limit=1"], cwd=tmp_path, timeout=120)
    assert again.returncode == 0 and f"hit {added} " in again.stdout  # the rerun resumes from the bank


def test_sigint_to_the_process_group_stops_cleanly(tmp_path):
    """A real Ctrl-C (SIGINT to the whole process group, workers included) with worker
    processes: exit 130, no traceback, and the result file says the run was interrupted."""
    import os
    import signal
    import subprocess
    import sys
    import time

    model = tmp_path / "r.onnx"
    zoo.save("resnet50", str(model))
    bank = tmp_path / "bank"
    # (SIGINT restored in the child: a test run started in the background by a script inherits it ignored)
    p = subprocess.Popen([sys.executable, "-m", "aoe_native.cli", "-f", "5", "-m", str(model), "-j", "1,2",
                          f"--bank={bank}", "--parallel=2", "--progress_bar=off"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not list(bank.glob("*/*.json")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # until the first subgraph is stored: tuning is under way
    assert p.poll() is None, "the run ended before it could be interrupted"
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "aoe: interrupted" in err
    [res] = tmp_path.glob("aoe_result_sgat_*.json")
    assert json.loads(res.read_text())[1]["SGAT"]["sgat_tuning_result"].startswith("tuning interrupted")
    assert not list(tmp_path.glob("aoe_result_opat_*.json"))  # operator tuning does not start


def test_closed_stdout_ends_quietly(tmp_path):
    """`aoe ... | head -1`: the reader goes away; no traceback, SIGPIPE's exit status."""
    import os
    import subprocess
    import sys

    tl = tmp_path / "t.json"
    tl.write_text(json.dumps({"gradients": [{"name": f"g{i}", "bytes": 4000, "ready_us": float(i)}
                                            for i in range(8)]}))
    p = subprocess.Popen([sys.executable, "-m", "aoe_native.cli", "-j", "4", f"--timeline={tl}"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "Broken pipe" not in err
    assert p.returncode in (0, 141)  # 0 if everything was written before the pipe closed


def test_progress_bar_keeps_counts_and_gain_in_a_narrow_terminal():
    ev = {"stage": "tuning", "tasks_total": 26, "tasks_done": 12, "evaluations": 123456, "gain": 0.409,
          "current": ["Conv 1x64x56x56", "MatMul 1x2048"]}
    text = drive_progress_bar(60, ev)
    assert "26/26" in text and "123,456" in text and "40.90%" in text


def test_summary_table_fits_a_narrow_terminal_without_cutting_shapes():
    from rich.console import Console
    from aoe_native import tune_model
    from aoe_native.outputs.console import summary_table
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        m = f"{d}/m.onnx"
        open(m, "wb").write(mlp().SerializeToString())
        r = tune_model(m, input_shape="x:1,64,256", bank=d, parallel=1, evals_per_task=50)
    console = Console(width=60, record=True)
    console.print(summary_table(r, narrow=True))
    lines = console.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 60
    shapes = {"x".join(map(str, s)) for t in r.tasks for s in t.inputs}
    assert any(s in "\n".join(lines) for s in shapes)  # whole shapes, not digits split over lines


def _children(pid: int) -> list[int]:
    import glob
    kids = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.split("/")[2]))
    return kids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_worker_behind_and_sigterm_stops_cleanly(tmp_path, sig):
    """SIGTERM stops a run as Ctrl-C does (exit 143, the result file written); SIGKILL of the
    aoe process takes its worker processes with it instead of leaving them to run on."""
    import os
    import signal
    import subprocess
    import time

    model = tmp_path / "r.onnx"
    zoo.save("resnet50", str(model))
    bank = tmp_path / "bank"
    p = subprocess.Popen([sys.executable, "-m", "aoe_native.cli", "-f", "5", "-m", str(model), "-j", "2",
                          f"--bank={bank}", "--parallel=2", "--progress_bar=off"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(bank.glob("*/*.json")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # until the first task is stored: the workers are running
    assert p.poll() is None, "the run ended before it could be killed"
    workers = _children(p.pid)
    assert workers
    p.send_signal(getattr(signal, sig))
    out, err = p.communicate(timeout=120)
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{w}") and open(f"/proc/{w}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
              for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")
             and open(f"/proc/{w}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
    assert not alive, f"workers {alive} outlived the aoe process"
    if sig == "SIGTERM":
        assert p.returncode == 143 and "Traceback" not in err, err
        [res] = tmp_path.glob("aoe_result_opat_*.json")
        assert json.loads(res.read_text())[1]["OPAT"]["opat_tuning_result"].startswith("tuning interrupted")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_that_lands_in_a_finalizer_still_stops_the_run(monkeypatch, capsys, sig):
    """Python drops a KeyboardInterrupt raised inside a __del__ (a file lock's, in the CI run
    that found this); the run must stop anyway, with its exit status and no traceback."""
    import signal
    import time

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), getattr(signal, sig))
            end = time.monotonic() + 0.5
            while time.monotonic() < end:  # the handler runs here, inside the finalizer
                pass

    def job(argv):
        Finalized()
        end = time.monotonic() + 10
        while time.monotonic() < end:
            time.sleep(0.01)
        return 0

    monkeypatch.setattr(cli, "_aoe", job)
    # Python's own Ctrl-C handler, as in an `aoe` process (a test run started in the background
    # inherits SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status = cli.main([])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert status == (143 if sig == "SIGTERM" else 130)
    assert "Traceback" not in capsys.readouterr().err


def test_servers_with_a_given_cluster_is_an_error(tmp_path):
    tl = tmp_path / "t.json"
    tl.write_text(json.dumps({"gradients": [{"name": "g", "bytes": 4000, "ready_us": 1.0}]}))
    p = run_aoe(["-j", "4", f"--timeline={tl}", "--servers", "4", "--ranks", "8"], cwd=tmp_path)
    assert p.returncode != 0 and "--servers sizes the shipped Ascend 910B cluster" in p.stderr


def test_output_files_are_named_after_the_model_file_and_stay_in_the_output_directory(tmp_path):
    from onnx import save
    model = zoo.build("resnet50")
    model.graph.name = "../../escaped/name:0"
    path = tmp_path / "my model.onnx"
    save(model, str(path))
    out = tmp_path / "a" / "b"
    r = aoe_native.tune_model(str(path), bank=tmp_path / "bank", output=out, evals_per_task=10, round_evals=10,
                              parallel=1)
    assert sorted(os.listdir(out)) == ["my model_opat_report.html", "my model_tuned_plan.json"]
    assert not (tmp_path / "escaped").exists()
    assert r.model_name == "../../escaped/name:0"  # the graph's own name is kept for what it says


def test_aoe_bank_show_into_a_closed_pipe_is_quiet(tmp_path):
    import subprocess
    from aoe_native.bank.store import Bank, make_entry
    Bank(tmp_path / "b", "Ascend910B3").store(
        [(f"MatMul({i}x64,64x32)|float16|ND,ND|{{}}", make_entry("MatMul", [[i, 64], [64, 32]], "float16",
                                                                ["ND", "ND"], {}, {"bm": 1}, 9.0, 1.0))
         for i in range(1, 3000)])
    show = f"import sys; from aoe_native.cli import bank_main; sys.exit(bank_main(['show', {str(tmp_path / 'b')!r}]))"
    p = subprocess.run(f"{sys.executable} -c \"{show}\" | head -1", shell=True, capture_output=True, text=True)
    assert "Broken pipe" not in p.stderr and "Traceback" not in p.stderr


def test_gdat_on_a_torchscript_export_warns_of_names_it_cannot_recover(tmp_path):
    gpt2 = os.path.join(os.path.dirname(__file__), "data", "exports", "gpt2_ts.onnx")
    p = run_aoe(["-j", "4", "-f", "5", "-m", gpt2], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "aoe: warning: model" in p.stderr and "measure_timeline" in p.stderr and "Warning:" not in p.stderr
    [res] = tmp_path.glob("aoe_result_gdat_*.json")
    unmatched = json.loads(res.read_text())[1]["GDAT"]["unmatched_gradients"]
    assert unmatched and all(isinstance(v, str) and v for v in unmatched.values())
