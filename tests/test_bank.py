"""Knowledge bank: layout, better-wins merging, damaged files, concurrency, kill -9, merge CLI."""
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time

import pytest

from aoe_native.cli import bank_main, bank_root
from aoe_native.ascend.calibration import uncalibrated
from aoe_native.bank.store import SCHEMA_VERSION, Bank, BankError, bank_dir, make_entry, merge_banks

SOC = "Ascend910B3"


def _entry(m, after, before=100.0, op="MatMul"):
    return make_entry(op, [[m, 64], [64, 32]], "float16", ["ND", "ND"], {}, {"bm": 16, "bn": m % 7 + 1},
                      before, after)


def _key(m, op="MatMul"):
    return f"{op}({m}x64,64x32)|float16|ND,ND|{{}}"


def test_store_load_roundtrip_and_file_format(tmp_path):
    b = Bank(tmp_path / SOC, SOC)
    out = b.store([(_key(1), _entry(1, 50.0)), (_key(2), _entry(2, 60.0)),
                   (_key(3, "Conv"), _entry(3, 70.0, op="Conv"))])
    assert all(o.stored for o in out)
    assert sorted(os.listdir(tmp_path / SOC)) == [".lock", "Conv.json", "MatMul.json"]
    text = (tmp_path / SOC / "MatMul.json").read_text()
    doc = json.loads(text)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["soc_version"] == SOC
    lines = text.splitlines()  # stable order: entries sorted by key, one line each
    assert [json.loads(ln.strip().split('": ')[0] + '"') for ln in lines[2:4]] == sorted(doc["entries"])
    assert len(lines) == 2 + len(doc["entries"]) + 6
    e = doc["entries"][_key(1)]
    assert {"tiling", "time_before_us", "time_after_us", "tool_version", "date", "inputs", "attrs",
            "formats", "dtype"} <= set(e)
    again = Bank(tmp_path / SOC, SOC).load()
    assert again.entries == b.entries and len(again.entries) == 3


def test_better_entry_wins(tmp_path):
    b = Bank(tmp_path, SOC)
    b.store([(_key(1), _entry(1, 50.0))])
    assert not b.store([(_key(1), _entry(1, 55.0))])[0].stored
    assert b.store([(_key(1), _entry(1, 40.0))])[0].stored
    assert Bank(tmp_path, SOC).load().get(_key(1))["time_after_us"] == 40.0


@pytest.mark.parametrize("content,msg", [
    ("{\"schema\": \"aoe_native.opat_bank\", \"entr", "corrupt bank file"),
    ("{\"policies\": []}", "not an aoe_native bank file"),
    ("\x00\x01binary", "corrupt bank file"),
])
def test_damaged_or_foreign_file_is_named_and_never_overwritten(tmp_path, content, msg):
    b = Bank(tmp_path, SOC)
    b.store([(_key(1), _entry(1, 50.0))])
    bad = tmp_path / "MatMul.json"
    bad.write_text(content)
    with pytest.raises(BankError, match=f"MatMul.json: {msg}"):
        Bank(tmp_path, SOC).load()
    with pytest.raises(BankError, match="MatMul.json"):
        b.store([(_key(2), _entry(2, 10.0))])
    assert bad.read_text() == content


def test_wrong_soc_file_is_rejected(tmp_path):
    Bank(tmp_path, "Ascend310P3").store([(_key(1), _entry(1, 50.0))])
    with pytest.raises(BankError, match="bank for SoC 'Ascend310P3', expected 'Ascend910B3'"):
        Bank(tmp_path, SOC).load()


def test_bank_location_precedence(tmp_path):
    # the command resolves --bank, $TUNE_BANK_PATH, $XDG_CACHE_HOME; the library takes a root
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert bank_dir(SOC, bank_root(None, env)) == str(tmp_path / "cache" / "aoe_native" / "bank" / SOC)
    env["TUNE_BANK_PATH"] = str(tmp_path / "tbp")
    with pytest.raises(BankError, match="does not exist"):
        bank_root(None, env)
    (tmp_path / "tbp").mkdir()
    assert bank_dir(SOC, bank_root(None, env)) == str(tmp_path / "tbp" / SOC)
    assert bank_root(str(tmp_path / "explicit"), env) == str(tmp_path / "explicit")
    assert bank_root(None, {}) is None
    assert bank_dir(SOC) == os.path.join(os.path.expanduser("~"), ".cache", "aoe_native", "bank", SOC)


def _writer(directory, worker, n):
    b = Bank(directory, SOC)
    for i in range(n):
        m = worker * 1000 + i
        b.store([(_key(m), _entry(m, float(i + 1)))])


def test_concurrent_writers_lose_nothing(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    b = Bank(tmp_path, SOC).load()
    assert len(b.entries) == 100
    assert set(b.entries) == {_key(w * 1000 + i) for w in range(4) for i in range(25)}


_KILL_CHILD = r"""
import sys
from aoe_native.bank.store import Bank, make_entry
b = Bank(sys.argv[1], "Ascend910B3")
i = 0
while True:
    key = f"MatMul({i}x64,64x32)|float16|ND,ND|{{}}"
    b.store([(key, make_entry("MatMul", [[i, 64], [64, 32]], "float16", ["ND", "ND"], {}, {"bm": 1}, 9.0, 1.0))])
    print(key, flush=True)
    i += 1
"""


def test_kill_9_leaves_a_loadable_bank_with_every_finished_entry(tmp_path):
    for delay in (0.3, 0.55, 0.8):
        d = tmp_path / str(delay)
        p = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(d)], stdout=subprocess.PIPE, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        finished = [ln for ln in out.splitlines() if ln]
        b = Bank(d, SOC).load()  # loads: no partial file was ever visible
        assert set(finished) <= set(b.entries)
        assert len(b.entries) <= len(finished) + 1  # at most the entry being written when killed
        b.store([("MatMul(1x1)|float16|ND|{}", _entry(1, 1.0))])  # the next writer cleans up after the kill
        assert not [n for n in os.listdir(d) if n.startswith(".tmp-")]


def test_merge_keeps_the_better_entry_same_soc_only(tmp_path, capsys):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    Bank(a, SOC).store([(_key(1), _entry(1, 50.0)), (_key(2), _entry(2, 20.0))])
    Bank(b, SOC).store([(_key(1), _entry(1, 30.0)), (_key(3), _entry(3, 20.0))])
    Bank(c, "Ascend310P3").store([(_key(9), _entry(9, 1.0))])
    assert bank_main(["merge", str(a), str(b), "-o", str(tmp_path / "dst")]) == 0
    merged = Bank(tmp_path / "dst").load()
    assert merged.soc_version == SOC and len(merged.entries) == 3
    assert merged.get(_key(1))["time_after_us"] == 30.0
    with pytest.raises(BankError, match="different SoCs"):
        merge_banks([a, c], tmp_path / "dst2")
    assert not (tmp_path / "dst2").exists()
    assert bank_main(["merge", str(a), str(c), "-o", str(tmp_path / "dst3")]) == 1
    assert "different SoCs" in capsys.readouterr().err
    assert bank_main(["stats", str(tmp_path / "dst")]) == 0
    assert "3 entries" in capsys.readouterr().out
    assert bank_main(["show", str(tmp_path / "dst"), "--op", "MatMul"]) == 0
    assert _key(3) in capsys.readouterr().out
    assert bank_main(["stats", str(tmp_path / "nope")]) == 1
    assert "nope: not a bank directory" in capsys.readouterr().err


def test_nearest_shapes_for_warm_start(tmp_path):
    b = Bank(tmp_path, SOC)
    b.store([(_key(m), _entry(m, 1.0)) for m in (64, 128, 1024, 4096)])
    near = b.nearest("MatMul", [[100, 64], [64, 32]], "float16", {}, k=2)
    assert [e["inputs"][0][0] for e in near] == [128, 64]
    assert b.nearest("Conv", [[100, 64], [64, 32]], "float16", {}) == []


def test_a_bank_written_by_the_previous_layout_still_serves_its_entries(tmp_path):
    """tests/data/bank_v1 was written by aoe-native before the package moved to graph/, jobs/,
    bank/, outputs/ (schema version 1): its keys and entries must still be hits."""
    import shutil

    import aoe_native
    from opat_models import mlp

    src = os.path.join(os.path.dirname(__file__), "data", "bank_v1")
    shutil.copytree(src, tmp_path / "bank")
    old = Bank(tmp_path / "bank" / SOC, SOC).load()
    assert len(old.entries) == 3
    # The bank was tuned on the model before the A2 calibration (socs.json's fitted constants):
    # on that model its entries still beat the default tilings.
    plat = uncalibrated(SOC)
    r = aoe_native.tune_model(mlp(), soc_version=plat, input_shape="x:1,64,256", bank=tmp_path / "bank", parallel=1,
                              evals_per_task=200, round_evals=100)
    # Its Softmax entry is read too, but no longer served: since issue 48 round 9 CANN's default (910B's TBE
    # NORM tiling) takes the time the entry had, and an entry is applied only when it beats the default.
    assert r.repo_summary["total_num"] == 3 and r.repo_summary["repo_hit_num"] == 2
    soft = next(t for t in r.tasks if t.key.startswith("Softmax"))
    assert soft.update_mode == "unsatisfied"
    assert soft.time_us == pytest.approx(old.entries[soft.key]["time_after_us"])
    # Written before the cube knobs splitK, unitFlag and kReorderLoad: served with their defaults (no K
    # split, no UnitFlag, no staggered K loads), which reproduce the time the entries had, so they are still hits.
    assert all("splitK" not in e["tiling"] and "unitFlag" not in e["tiling"] for e in old.entries.values())
    # (and before MatMulV3's knobs, issue 47: dispatch 0, all cores, one neutral L2 tile, template 0)
    from aoe_native.ascend import ops
    added = ops.op_model("MatMul", [[64, 64], [64, 64]], "float16", plat).added_defaults
    assert {"splitK": 1, "unitFlag": 0, "kReorderLoad": 0, "dispatch": 0, "tilingEnable": 0}.items() <= added.items()
    assert all(t.update_mode == "reserved" and t.tiling == {**old.entries[t.key]["tiling"],
                                                            **(added if t.key.startswith("MatMul") else {})}
               for t in r.tasks if t is not soft)


def test_bank_commands_name_a_root_an_unknown_soc_and_a_soc_mismatch(tmp_path, capsys):
    root = tmp_path / "root"
    Bank(root / SOC, SOC).store([(_key(1), _entry(1, 50.0))])
    assert bank_main(["stats", str(root)]) == 1
    assert f"is a bank root (banks of {SOC}), not one SoC's bank" in capsys.readouterr().err
    assert bank_main(["stats", "--soc_version", SOC, "--bank", str(root)]) == 0
    assert "1 entries" in capsys.readouterr().out
    assert bank_main(["stats", str(root / SOC), "--soc_version", "Ascend310P3"]) == 1
    assert "expected 'Ascend310P3'" in capsys.readouterr().err
    assert bank_main(["show", "--soc_version", "Ascend9999", "--bank", str(root)]) == 1
    assert "unknown --soc_version 'Ascend9999'" in capsys.readouterr().err


def test_replace_overwrites_the_entry_the_caller_judged_unless_another_writer_changed_it(tmp_path):
    b = Bank(tmp_path / SOC, SOC)
    b.store([(_key(1), _entry(1, 5.0))])
    judged = Bank(tmp_path / SOC, SOC).load().get(_key(1))
    # The caller re-estimated the entry as slower than its new one (recorded 20 > 5): replaced.
    assert b.store([(_key(1), _entry(1, 20.0))], replace={_key(1): judged})[0].stored
    # A replace judged against an entry another writer has since changed: recorded times decide.
    assert not b.store([(_key(1), _entry(1, 30.0))], replace={_key(1): judged})[0].stored
    assert Bank(tmp_path / SOC, SOC).load().get(_key(1))["time_after_us"] == 20.0


def test_merge_refuses_a_bank_root_as_source_or_destination(tmp_path):
    root = tmp_path / "root"
    Bank(root / SOC, SOC).store([(_key(1), _entry(1, 5.0))])
    with pytest.raises(BankError, match="is a bank root"):
        merge_banks([root], tmp_path / "dst")
    with pytest.raises(BankError, match="is a bank root"):
        merge_banks([root / SOC], root)
    assert sorted(os.listdir(root)) == [SOC]  # nothing written into the root


def test_a_writer_waiting_for_the_lock_says_so(tmp_path, caplog, monkeypatch):
    from filelock import FileLock
    from aoe_native.bank import store
    monkeypatch.setattr(store, "LOCK_NOTICE_S", 0.2)
    monkeypatch.setattr(store, "LOCK_TIMEOUT_S", 0.6)
    (tmp_path / SOC).mkdir()
    with FileLock(str(tmp_path / SOC / ".lock")):  # another writer (a thread's lock is per object)
        with pytest.raises(BankError, match="lock was held"):
            Bank(tmp_path / SOC, SOC).store([(_key(1), _entry(1, 5.0))])
    assert "waiting for the knowledge bank's lock" in caplog.text
    assert Bank(tmp_path / SOC, SOC).store([(_key(1), _entry(1, 5.0))])[0].stored
