"""The jobs and CANN's banks: a MatMul that operator tuning stores reaches CANN's unified bank in
CANN's format, and a task CANN's built-in bank holds is served from it (its baseline, a hit)."""
import json
import os
import shutil
import stat
import struct

import pytest
from onnx import TensorProto, helper

import aoe_native as an
from aoe_native.ascend.matmul_v3 import knowledge_from_tiling

from test_cann_bank import LAYOUT, LAYOUT_NAMES, SHIPPED, needs_shipped

SOC, CORES = "Ascend910B2", 24
FILE_NAME = f"{SOC}_{CORES}_AiCore_MatMulV3_runtime_kb.json"
FAST = dict(evals_per_task=300, round_evals=150, parallel=1)


def matmul_model(m, k, n, dtype=TensorProto.FLOAT16):
    x = helper.make_tensor_value_info("x", dtype, [m, k])
    w = helper.make_tensor_value_info("w", dtype, [k, n])
    y = helper.make_tensor_value_info("y", dtype, [m, n])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm", [x, w], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_tuned_matmul_reaches_canns_unified_bank(tmp_path):
    r = an.tune_model(matmul_model(2000, 3000, 5000), SOC, bank=tmp_path, **FAST)
    (task,) = r.tasks
    assert task.update_mode == "add" and task.time_us < task.baseline_us
    path = tmp_path / SOC / "unified_bank" / FILE_NAME
    assert path.exists() and stat.S_IMODE(os.stat(path).st_mode) == 0o640
    (line,) = path.read_text().splitlines()
    rec = json.loads(line)
    info = rec["info_dict"]
    # read back with a reader of the key layout of its own (test_cann_bank's, from the reference table)
    key = struct.unpack(LAYOUT, struct.pack(LAYOUT, *(info[f] for f in LAYOUT_NAMES)))
    assert key[:3] == (2000, 3008, 5008)  # k and n rounded up to 16 as CANN does; m already aligned
    assert (info["m_align_flag"], info["k_align_flag"], info["n_align_flag"]) == (True, False, False)
    assert rec["op"] == "MatMulV3" and rec["id"] == an.cann.cann_hash(struct.pack(LAYOUT, *key))
    assert rec["knowledge"] == knowledge_from_tiling(task.tiling, m=2000, k=3000, n=5000)


@needs_shipped
def test_a_task_in_the_builtin_bank_runs_its_tiling_untuned(tmp_path):
    entries = [e for e in an.cann.read_bank(SHIPPED) if e.tiling is not None and e.op == "MatMul"
               and e.dtype == "float16" and not any(e.attrs.get(a) for a in ("transpose_a", "transpose_b"))]
    if not entries:
        pytest.skip("no shipped record the model expresses as a plain MatMul")
    e = entries[0]
    builtin = tmp_path / "op" / SOC / "unified_bank"
    builtin.mkdir(parents=True)
    shutil.copy(SHIPPED, builtin / FILE_NAME)
    (m, k), (_, n) = e.inputs[0], e.inputs[1]
    model = matmul_model(m, k, n)
    r = an.tune_model(model, SOC, bank=tmp_path / "bank", builtin_bank=tmp_path / "op", **FAST)
    (task,) = r.tasks
    assert task.bank_hit and task.update_mode == "reserved" and task.evaluations == 0
    assert task.baseline_kind == "built-in bank"
    assert {k_: task.baseline_tiling[k_] for k_ in e.tiling} == e.tiling
    again = an.tune_model(model, SOC, bank=tmp_path / "bank2", builtin_bank=tmp_path / "op", repeat_tune=True,
                          **FAST)
    assert again.tasks[0].evaluations > 0 and again.tasks[0].bank_hit  # REPEAT_TUNE tunes it again
