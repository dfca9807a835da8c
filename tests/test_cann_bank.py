"""CANN's MatMulV3 knowledge bank (issue 47 part 3): the key, the hash, reading, writing,
store_tuned, the built-in lookup and aoe-bank cann-import / cann-export."""
import json
import multiprocessing
import os
import stat
import struct
import warnings

import pytest

import aoe_native
from aoe_native.bank.store import Bank, BankError
from aoe_native.cli import bank_main

cann = aoe_native.cann  # `import aoe_native` exports the subpackage

SHIPPED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "reference", "cann",
                       "Ascend910B2_24_AiCore_MatMulV3_runtime_kb.json")
needs_shipped = pytest.mark.skipif(not os.path.exists(SHIPPED), reason="../shared/reference/cann is absent")
SOC, CORES = "Ascend910B2", 24
FILE_NAME = "Ascend910B2_24_AiCore_MatMulV3_runtime_kb.json"

# An independent reader of MatMulV3InputArgs (matmul_v3_tuning.h, #pragma pack(1)), written from
# the reference doc's table A.5, not from aoe_native.cann.keys.
LAYOUT = "<qqq" + "q" * 8 + "ffff" + "iiiiii" + "???????" + "Q" * 6
LAYOUT_NAMES = ["m", "k", "n"] + [f"batch_{x}{i}" for x in "ab" for i in range(1, 5)] + \
    ["l1_fused_num", "aub_double_num", "bub_double_num", "fused_double_operand_num",
     "a_dtype", "b_dtype", "out_dtype", "a_format", "b_format", "out_format",
     "trans_a_flag", "trans_b_flag", "bias_flag", "reserved_bool", "m_align_flag", "k_align_flag",
     "n_align_flag"] + [f"reserved_params{i}" for i in range(1, 7)]


def independent_pack(info):
    return struct.pack(LAYOUT, *(info[n] for n in LAYOUT_NAMES))


def shipped_records():
    with open(SHIPPED, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ---- the key and the hash -----------------------------------------------------------------

def test_key_layout_is_183_packed_bytes_at_the_documented_offsets():
    assert struct.calcsize(LAYOUT) == cann.keys.KEY_SIZE == 183
    info = cann.task_info("MatMul", [[1000, 4096], [4096, 2048]], "bfloat16", {})
    data = cann.pack_key(info)
    assert data == independent_pack(info)
    assert struct.unpack_from("<qqq", data, 0) == (1008, 4096, 2048)        # m rounded up to 16
    assert struct.unpack_from("<iii", data, 104) == (1, 1, 1)               # bf16 keyed as FLOAT16
    assert struct.unpack_from("<iii", data, 116) == (2, 2, 2)               # ND
    assert struct.unpack_from("<7?", data, 128) == (False, False, False, False, False, True, True)
    assert struct.unpack_from("<ffff", data, 88) == (0.0, 1.0, 1.0, 0.0)
    assert data[135:] == bytes(48)
    assert cann.unpack_key(data) == info


# Four records of the shipped 910B2 bank, as tasks: (op, inputs, dtype, attrs, the shipped id).
INLINE = [
    ("MatMul", [[8192, 5120], [5120, 6272]], "float16", {}, 1836242645),                       # line 1
    ("MatMul", [[200, 2390], [2390, 256], [256]], "float32", {}, 3773661998),                  # line 55: bias
    ("MatMul", [[3000, 590], [3000, 590]], "float32", {"transpose_a": 1}, 2411964743),       # line 50
    ("Gemm", [[230, 8192], [28672, 8192]], "bfloat16", {"transB": 1}, 280732224),            # line 45
]


@pytest.mark.parametrize("op, inputs, dtype, attrs, shipped_id", INLINE)
def test_hash_of_tasks_matches_cann_ids(op, inputs, dtype, attrs, shipped_id):
    info = cann.task_info(op, inputs, dtype, attrs)
    assert cann.key_hash(info) == shipped_id
    assert cann.cann_hash(independent_pack(info)) == shipped_id


def test_hash_tail_reads_the_leading_bytes():
    # 183 % 4 == 3: the last combine takes bytes 2, 1, 0 of the buffer onto the last word.
    data = bytes(range(1, 184))
    changed_start = b"\xff" + data[1:]
    changed_end = data[:-1] + b"\xff"  # byte 182 is in no whole word: it never enters the hash
    assert cann.cann_hash(changed_end) == cann.cann_hash(data)
    assert cann.cann_hash(changed_start) != cann.cann_hash(data)
    assert cann.cann_hash(b"") != cann.cann_hash(b"\x00")


@needs_shipped
def test_hash_reproduces_124_of_the_140_shipped_ids():
    records = shipped_records()
    assert len(records) == 140
    wrong = [i for i, r in enumerate(records, 1)
             if cann.cann_hash(independent_pack(r["info_dict"])) != r["id"]]
    assert len(records) - len(wrong) == 124
    # the hand-edited-looking ones: fp32 split-K records and one K-shift record
    assert wrong == [57, *range(117, 131), 132]


# ---- tasks and keys -------------------------------------------------------------------------

def test_task_round_trips_through_its_key():
    info = cann.task_info("MatMul", [[1000, 1001], [1001, 2048], [2048]], "float16", {"transpose_b": 0})
    assert (info["m"], info["k"], info["n"], info["bias_flag"]) == (1008, 1008, 2048, True)
    assert (info["m_align_flag"], info["k_align_flag"], info["n_align_flag"]) == (False, False, True)
    inputs, dtype, attrs = cann.task_of_info(info)
    assert (inputs, dtype, attrs) == ([[1007, 1007], [1007, 2048], [2048]], "float16", {})
    assert cann.task_info("MatMul", inputs, dtype, attrs) == info
    fp32 = cann.task_info("MatMul", [[16, 1001], [1001, 16]], "float32", {})
    assert (fp32["k"], fp32["a_dtype"]) == (1008, 0)  # K rounded to 8 for fp32


@pytest.mark.parametrize("op, inputs, dtype, attrs", [
    ("Conv", [[1, 3, 8, 8], [4, 3, 3, 3]], "float16", {}),
    ("MatMul", [[4, 64, 64], [64, 64]], "float16", {}),                 # a batch
    ("MatMul", [[64, 64], [64, 64]], "int8", {}),
    ("MatMul", [[64, 64], [64, 64]], "float16", {"epilogue": ["Gelu"]}),
    ("MatMul", [[64, 64], [64, 64], [64, 64]], "float16", {}),          # a full C, not a bias
    ("Gemm", [[64, 64], [64, 64]], "float16", {"alpha": 2.0}),
])
def test_tasks_matmulv3_does_not_serve(op, inputs, dtype, attrs):
    assert isinstance(cann.task_info(op, inputs, dtype, attrs), str)


# ---- store_tuned: a tuned MatMul reaches CANN's bank -------------------------------------------

def _tuned(inputs, dtype="float16", attrs=None):
    return aoe_native.baseline_tiling("MatMul", inputs, dtype, SOC, attrs=attrs)


def test_store_tuned_writes_where_and_what_cann_reads(tmp_path):
    inputs = [[1000, 4096], [4096, 2048]]
    tiling = _tuned(inputs, "bfloat16")
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "bfloat16", {}, tiling)
    assert path == os.path.join(tmp_path, SOC, "unified_bank", FILE_NAME)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    lines = open(path, encoding="utf-8").read().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert sorted(rec) == ["id", "info_dict", "knowledge", "op", "version"]
    assert (rec["op"], rec["version"]) == ("MatMulV3", 0)
    info = rec["info_dict"]
    key = struct.unpack(LAYOUT, independent_pack(info))  # every field present, with the right types
    assert dict(zip(LAYOUT_NAMES, key))["m"] == 1008
    assert (info["m"], info["k"], info["n"]) == (1008, 4096, 2048)
    assert (info["m_align_flag"], info["k_align_flag"], info["n_align_flag"]) == (False, True, True)
    assert (info["a_dtype"], info["b_dtype"], info["out_dtype"]) == (1, 1, 1)
    assert all(info[f"batch_{x}{i}"] == 1 for x in "ab" for i in range(1, 5))
    assert rec["id"] == cann.cann_hash(independent_pack(info))
    k = rec["knowledge"]
    assert list(k) == list(cann.keys.KNOWLEDGE_FIELDS)
    assert all(type(v) is int for v in k.values())
    assert {n: k[n] for n in tiling if n in k} == {n: v for n, v in tiling.items() if n in k}
    # MatMulV3's default is a round-robin tiling of the base template: the record is its fields
    assert tiling["dispatch"] == 1
    assert (k["singleCoreK"], k["usedCoreNum"], k["tilingEnable"]) == (4096, tiling["usedCoreNum"], 0)
    assert all(k[f] == tiling[f] for f in ("l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock"))
    # the file reads back as the task (M 1000 comes back as 1007: same key)
    [entry] = cann.read_bank(path)
    assert (entry.op, entry.inputs, entry.dtype, entry.soc_version, entry.core_num) == \
        ("MatMul", [[1007, 4096], [4096, 2048]], "float16", SOC, CORES)


def test_store_tuned_merges_by_key(tmp_path):
    a, b = [[1024, 1024], [1024, 1024]], [[512, 256], [256, 128]]
    ta, tb = _tuned(a), _tuned(b)
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", a, "float16", {}, ta)
    cann.store_tuned(tmp_path, SOC, CORES, "MatMul", b, "float16", {}, tb)
    ta2 = {**ta, "iterateOrder": 1 - ta["iterateOrder"]}
    cann.store_tuned(tmp_path, SOC, CORES, "MatMul", [[1020, 1024], [1024, 1024]], "float16", {}, ta)  # own key
    cann.store_tuned(tmp_path, SOC, CORES, "MatMul", a, "float16", {}, ta2)  # replaces a's record
    recs = [json.loads(x) for x in open(path, encoding="utf-8")]
    assert len(recs) == 3
    assert [r["id"] for r in recs] == sorted(r["id"] for r in recs)
    mine = [r for r in recs if r["info_dict"]["m"] == 1024 and r["info_dict"]["m_align_flag"]]
    assert len(mine) == 1 and mine[0]["knowledge"]["iterateOrder"] == ta2["iterateOrder"]


def test_store_tuned_maps_a_round_robin_tiling_field_for_field(tmp_path):
    knowledge = {"usedCoreNum": 24, "singleCoreM": 128, "singleCoreN": 256, "baseM": 128, "baseN": 256,
                 "baseK": 64, "depthA1": 16, "depthB1": 8, "stepM": 1, "stepN": 1, "iterateOrder": 0, "stepKa": 8,
                 "stepKb": 4, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "l2MTileCnt": 2, "l2NTileCnt": 1,
                 "l2MTileBlock": 16, "l2NTileBlock": 16, "l2IterateOrder": 0, "tilingEnable": 0}
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", [[4096, 4096], [4096, 4096]], "float16", {},
                            {**knowledge, "dispatch": 1})
    rec = json.loads(open(path, encoding="utf-8").read())
    assert rec["knowledge"] == {**knowledge, "singleCoreK": 4096}


@pytest.mark.parametrize("op, inputs, dtype, attrs, change", [
    ("MatMul", [[4, 256, 256], [256, 256]], "float16", {}, {}),
    ("MatMul", [[256, 256], [256, 256]], "int8", {}, {}),
    ("MatMul", [[256, 4096], [4096, 256]], "float16", {}, {"splitK": 2}),
    ("MatMul", [[256, 256], [256, 256]], "float16", {}, {"unitFlag": 1}),
    ("MatMul", [[256, 256], [256, 256]], "float16", {}, {"dbL0A": 1}),  # CANN would run dbL0A = 2
    ("MatMul", [[256, 256], [256, 256]], "float16", {}, {"dispatch": 2}),
])
def test_store_tuned_returns_none_for_what_matmulv3_does_not_serve(tmp_path, op, inputs, dtype, attrs, change):
    base = {"singleCoreM": 256, "singleCoreN": 256, "baseM": 128, "baseN": 128, "baseK": 64, "stepM": 1,
            "stepN": 1, "stepKa": 1, "stepKb": 1, "depthA1": 2, "depthB1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1,
            "iterateOrder": 0}
    assert cann.store_tuned(tmp_path, SOC, CORES, op, inputs, dtype, attrs, {**base, **change}) is None
    assert not os.path.exists(os.path.join(tmp_path, SOC))


def test_store_tuned_never_writes_a_tiling_that_overflows(tmp_path):
    inputs = [[1024, 1024], [1024, 1024]]
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "float16", {}, _tuned(inputs))
    before = open(path, "rb").read()
    bad = {**_tuned(inputs), "baseM": 256, "baseK": 128}  # L0A: 256*128*2*2 = 131072 > 65536
    with pytest.raises(BankError, match="overflows L0A"):
        cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "float16", {}, bad)
    bias = {**_tuned(inputs), "baseN": 512, "baseM": 32, "depthB1": 2}  # BT: 512*4 = 2048 > 1024
    with pytest.raises(BankError, match="overflows BT"):
        cann.store_tuned(tmp_path, SOC, CORES, "MatMul", [*inputs, [1024]], "float16", {}, bias)
    assert open(path, "rb").read() == before


def test_a_static_split_is_not_a_matmulv3_tiling(tmp_path):
    """An Ascend C custom kernel's static split (dispatch 0, base template) has no MatMulV3
    kernel: nothing is written; the same blocks dealt round-robin are."""
    inputs = [[64, 256], [256, 96]]
    tiling = {**_tuned(inputs), "singleCoreM": 32, "singleCoreN": 48, "baseM": 32, "baseN": 48, "depthA1": 8,
              "depthB1": 8, "stepKa": 4, "stepKb": 4}
    assert cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "float16", {}, {**tiling, "dispatch": 0}) is None
    assert not os.path.exists(os.path.join(tmp_path, SOC))
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "float16", {}, {**tiling, "dispatch": 1})
    k = json.loads(open(path, encoding="utf-8").read())["knowledge"]
    assert (k["singleCoreM"], k["singleCoreN"], k["baseM"], k["baseN"]) == (32, 48, 32, 48)


def test_the_bias_counts_in_l1(tmp_path):
    # (16*128 + 8*256) * 64 * 2 bytes = 524288 = all of L1; the bias's 256*4 bytes overflow it
    full = {"usedCoreNum": 24, "singleCoreM": 128, "singleCoreN": 256, "baseM": 128, "baseN": 256, "baseK": 64,
            "depthA1": 16, "depthB1": 8, "stepM": 1, "stepN": 1, "iterateOrder": 0, "stepKa": 8, "stepKb": 4,
            "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "l2MTileCnt": 1, "l2NTileCnt": 1, "l2MTileBlock": 32,
            "l2NTileBlock": 16, "l2IterateOrder": 0, "tilingEnable": 0, "dispatch": 1}
    inputs = [[4096, 4096], [4096, 4096]]
    assert cann.store_tuned(tmp_path, SOC, CORES, "MatMul", inputs, "float16", {}, full) is not None
    with pytest.raises(BankError, match=r"overflows L1: .* \+ baseN\*4 = 525312 > 524288"):
        cann.store_tuned(tmp_path, SOC, CORES, "MatMul", [*inputs, [4096]], "float16", {}, full)


def test_a_write_killed_before_its_rename_leaves_the_old_file(tmp_path, monkeypatch):
    a, b = [[1024, 1024], [1024, 1024]], [[512, 512], [512, 512]]
    path = cann.store_tuned(tmp_path, SOC, CORES, "MatMul", a, "float16", {}, _tuned(a))
    before = open(path, "rb").read()
    import aoe_native.fileio as fileio

    def killed(src, dst):
        raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(fileio.os, "replace", killed)
        with pytest.raises(KeyboardInterrupt):
            cann.store_tuned(tmp_path, SOC, CORES, "MatMul", b, "float16", {}, _tuned(b))
    assert open(path, "rb").read() == before
    stale = os.path.join(os.path.dirname(path), ".tmp-left-by-kill-9-" + FILE_NAME)  # as a SIGKILL leaves it
    open(stale, "w").close()
    cann.store_tuned(tmp_path, SOC, CORES, "MatMul", b, "float16", {}, _tuned(b))
    assert not os.path.exists(stale) and len(cann.read_bank(path)) == 2


def _store_many(root, first):
    for i in range(first, first + 5):
        inputs = [[16 * (i + 1), 256], [256, 512]]
        cann.store_tuned(root, SOC, CORES, "MatMul", inputs, "float16", {}, _tuned(inputs))


def test_concurrent_writers_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_store_many, args=(str(tmp_path), 5 * j)) for j in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    path = os.path.join(tmp_path, SOC, "unified_bank", FILE_NAME)
    assert sorted(e.record["info_dict"]["m"] for e in cann.read_bank(path)) == [16 * (i + 1) for i in range(15)]
    assert [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp-")] == []


# ---- reading bad input --------------------------------------------------------------------------

def _record(inputs=((1024, 1024), (1024, 1024)), **knowledge):
    tiling = _tuned([list(s) for s in inputs])
    e = cann.entry_for_task(SOC, CORES, "MatMul", inputs, "float16", {}, tiling)
    rec = json.loads(json.dumps(e.record))
    rec["knowledge"].update(knowledge)
    return rec


def _bad_file(tmp_path):
    good1, good2 = _record(), _record(((512, 512), (512, 512)))
    no_m = _record(((256, 256), (256, 256)))
    del no_m["info_dict"]["m"]
    wrong_type = _record(((128, 128), (128, 128)))
    wrong_type["info_dict"]["trans_a_flag"] = 1
    impossible = _record(((64, 64), (64, 64)), baseM=256, baseK=128)  # L0A overflow
    no_field = _record(((32, 32), (32, 32)))
    del no_field["knowledge"]["stepKa"]
    lines = [json.dumps(good1), "this is not JSON", json.dumps(no_m), "", json.dumps(wrong_type),
             json.dumps(impossible), json.dumps(good1), json.dumps(no_field), "{}", json.dumps(good2),
             json.dumps({"id": -1, "op": "MatMulV3", "version": 0, "info_dict": {}, "knowledge": {}})]
    path = tmp_path / FILE_NAME
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_bad_lines_are_reported_with_their_line_and_skipped(tmp_path):
    path = _bad_file(tmp_path)
    r = cann.read_bank_report(path)
    assert [e.line for e in r.entries] == [1, 10]
    assert [p.line for p in r.problems] == [2, 3, 5, 6, 7, 8, 11]
    msgs = {p.line: p.message for p in r.problems}
    assert "not JSON" in msgs[2]
    assert "info_dict lacks m" in msgs[3]
    assert "trans_a_flag must be a JSON boolean" in msgs[5]
    assert "overflows L0A" in msgs[6]
    assert "key of line 1 again" in msgs[7]
    assert "knowledge lacks stepKa" in msgs[8]
    assert str(r.problems[0]).startswith(f"{path}:2: ")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(cann.read_bank(path)) == 2
    assert [str(w.message) for w in caught] == [str(p) for p in r.problems]
    assert all(w.category is cann.CannBankWarning for w in caught)


def test_hostile_lines_are_reported_never_raised(tmp_path):
    import random
    rng = random.Random(0)
    good = _record()
    values = [None, True, -1, 2**64, 1e400, float("nan"), "x", [], {}, "HUGE", 0, 1.5, 2**31]
    lines = []
    for _ in range(300):
        rec = json.loads(json.dumps(good))
        part = rng.choice(["info_dict", "knowledge", None])
        if part is None:
            rec[rng.choice(sorted(rec))] = rng.choice(values)
        else:
            rec[part][rng.choice(sorted(rec[part]))] = rng.choice(values)
        text = json.dumps(rec) if rng.random() < 0.9 else json.dumps(rec)[:rng.randrange(1, 200)]
        lines.append(text.replace('"HUGE"', "1" + "0" * 5000))  # beyond Python's int-parsing limit
    lines.append("[" * 100000)
    lines.append(b"\xff\xfe".decode("latin-1"))
    path = tmp_path / FILE_NAME
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    r = cann.read_bank_report(path)
    assert len(r.entries) + len(r.problems) == len(lines)
    # what loads is a valid record (a field changed to another valid value), each key once
    assert all(cann.bank_file.check_record(e.record, aoe_native.platform(SOC)) == [] for e in r.entries)
    assert len({e.key_id for e in r.entries}) == len(r.entries) < 50
    assert all(p.line >= 1 and p.message for p in r.problems)


def test_nothing_is_written_to_a_bank_that_fails_validation(tmp_path):
    path = _bad_file(tmp_path)
    before = open(path, "rb").read()
    [good] = cann.read_bank_report(path).entries[:1]
    with pytest.raises(BankError, match="left untouched"):
        cann.write_bank(path, [good])  # the file has bad lines: never overwrite it
    assert open(path, "rb").read() == before
    fresh = tmp_path / "new" / FILE_NAME
    bad = cann.bank_file.entry_of_record(_record(baseM=512), SOC, CORES)  # L0C, L0A overflow
    with pytest.raises(BankError, match="nothing written.*overflows"):
        cann.write_bank(fresh, [good, bad])
    assert not fresh.exists()
    assert cann.write_bank(fresh, [good]) == 1
    with pytest.raises(BankError, match="for Ascend910B3"):
        cann.write_bank(tmp_path / "new" / "Ascend910B3_20_AiCore_MatMulV3_runtime_kb.json", [good])


# ---- the built-in bank --------------------------------------------------------------------------

def test_builtin_dir_and_lookup(tmp_path):
    assert cann.builtin_dir(None, None) is None
    assert cann.builtin_dir(None, "/opp") == os.path.join("/opp", "built-in", "data", "op")
    assert cann.builtin_dir("/mine", "/opp") == "/mine"
    inputs = [[1000, 4096], [4096, 2048]]
    cann.write_bank(cann.builtin_bank_path(tmp_path, SOC, CORES),
                    [cann.entry_for_task(SOC, CORES, "MatMul", inputs, "float16", {}, _tuned(inputs))])
    hit = cann.builtin_lookup(str(tmp_path), SOC, CORES, "MatMul", [[1001, 4096], [4096, 2048]], "bfloat16", {})
    assert hit is not None and hit.record["info_dict"]["m"] == 1008
    assert cann.builtin_lookup(str(tmp_path), SOC, CORES, "MatMul", [[1008, 4096], [4096, 2048]], "float16",
                               {}) is None  # aligned M: another key
    assert cann.builtin_lookup(str(tmp_path), SOC, 20, "MatMul", inputs, "float16", {}) is None
    assert cann.builtin_lookup(None, SOC, CORES, "MatMul", inputs, "float16", {}) is None


@needs_shipped
def test_builtin_lookup_in_the_shipped_bank(tmp_path):
    d = tmp_path / SOC / "unified_bank"
    d.mkdir(parents=True)
    (d / FILE_NAME).write_bytes(open(SHIPPED, "rb").read())
    with pytest.warns(cann.CannBankWarning, match=":44: the tiling overflows L0C"):
        hit = cann.builtin_lookup(str(tmp_path), SOC, CORES, "MatMul", [[8192, 5120], [5120, 6272]], "float16", {})
    assert hit.record["id"] == 1836242645 and hit.record["knowledge"]["l2NTileCnt"] == 3


# ---- import / export ------------------------------------------------------------------------------

@needs_shipped
def test_import_then_export_round_trips_the_shipped_bank(tmp_path, capsys):
    root, out = tmp_path / "bank", tmp_path / "out"
    assert bank_main(["cann-import", SHIPPED, "--bank", str(root)]) == 1  # one line skipped
    captured = capsys.readouterr()
    assert f"{FILE_NAME}:44: the tiling overflows L0C" in captured.err
    assert "read 139 records" in captured.out
    assert bank_main(["cann-export", "--bank", str(root), "--soc", SOC, "--output", str(out)]) == 0
    path = out / FILE_NAME
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    written = [json.loads(x) for x in open(path, encoding="utf-8")]
    shipped = [r for i, r in enumerate(shipped_records(), 1) if i != 44]
    key = lambda r: independent_pack(r["info_dict"])  # noqa: E731
    assert sorted(map(key, written)) == sorted(map(key, shipped))
    by_key = {key(r): r for r in written}
    for r in shipped:
        w = by_key[key(r)]
        assert (w["id"], w["info_dict"], w["knowledge"], w["op"], w["version"]) == \
            (r["id"], r["info_dict"], r["knowledge"], r["op"], r["version"])
        assert [type(v) for v in w["info_dict"].values()] == [type(r["info_dict"][k]) for k in w["info_dict"]]
    assert [cann.key_hash(r["info_dict"]) for r in written] == sorted(cann.key_hash(r["info_dict"]) for r in written)
    # exporting again changes nothing (merge by key), and the default place is the CANN custom bank
    assert bank_main(["cann-export", "--bank", str(root), "--soc", SOC, "--output", str(out)]) == 0
    assert [json.loads(x) for x in open(path, encoding="utf-8")] == written
    assert bank_main(["cann-export", "--bank", str(root), "--soc", SOC]) == 0
    assert (root / SOC / "unified_bank" / FILE_NAME).read_bytes() == path.read_bytes()


@needs_shipped
def test_import_reports_what_the_model_cannot_express(tmp_path):
    with pytest.warns(cann.CannBankWarning, match=":44: the tiling overflows L0C"):
        entries = cann.read_bank(SHIPPED)
    assert len(entries) == 139
    r = cann.import_files([SHIPPED], tmp_path)
    expressible = [e for e in entries if e.tiling is not None]
    assert r.tilings == len(expressible) and len(r.verbatim) == 139 - len(expressible)
    nz = [e for e in r.verbatim if e.formats[1] == "FRACTAL_NZ"]
    assert len(nz) == 1 and "FRACTAL_NZ" in nz[0].reason
    bank = Bank.open(SOC, tmp_path)
    assert sum(e["op_type"] == "MatMulV3" for e in bank.entries.values()) == len(r.verbatim)


def test_expressible_records_become_bank_hits(tmp_path, monkeypatch):
    """With a cost model that takes MatMulV3's knobs (simulated: the model's own knobs are
    checked, the new ones dropped), an imported record is a MatMul entry under the task's key."""
    real = cann.tiling_map.estimate

    def estimate(op, inputs, dtype, soc, tiling, attrs=None):
        known = aoe_native.baseline_tiling(op, inputs, dtype, soc, attrs=attrs)
        return real(op, inputs, dtype, soc, {k: v for k, v in tiling.items() if k in known}, attrs=attrs)
    monkeypatch.setattr(cann.tiling_map, "estimate", estimate)
    inputs = [[1024, 1024], [1024, 1024]]
    src = tmp_path / FILE_NAME
    cann.write_bank(src, [cann.entry_for_task(SOC, CORES, "MatMul", inputs, "float16", {}, _tuned(inputs))])
    r = cann.import_files([str(src)], tmp_path / "bank")
    assert (r.tilings, len(r.verbatim), r.problems) == (1, 0, [])
    [e] = Bank.open(SOC, tmp_path / "bank").entries.values()
    assert e["op_type"] == "MatMul" and e["inputs"] == inputs and e["tiling"]["dispatch"] == 1
    assert e["cann"]["record"] == json.loads(src.read_text())
    path, n, _ = cann.export_bank(tmp_path / "bank", SOC, tmp_path / "out")
    assert n == 1 and open(path, "rb").read() == src.read_bytes()


def test_export_makes_records_from_tuned_entries(tmp_path):
    from aoe_native.bank.store import make_entry
    from aoe_native.graph.partition import task_key
    inputs = [[2048, 512], [512, 1024]]
    bank = Bank.open(SOC, tmp_path)
    bank.store([(task_key("MatMul", inputs, "float16", ["ND", "ND"], {}),
                 make_entry("MatMul", inputs, "float16", ["ND", "ND"], {}, _tuned(inputs), 10.0, 9.0)),
                (task_key("Relu", [[64]], "float16", ["ND"], {}),
                 make_entry("Relu", [[64]], "float16", ["ND"], {}, {"cores": 1}, 1.0, 0.5))])
    assert bank_main(["cann-export", "--bank", str(tmp_path), "--soc", SOC]) == 0
    [e] = cann.read_bank(os.path.join(tmp_path, SOC, "unified_bank", FILE_NAME))
    assert e.inputs == inputs and e.record["knowledge"]["baseM"] == _tuned(inputs)["baseM"]


def test_cli_import_of_a_damaged_file_names_it(tmp_path, capsys):
    path = _bad_file(tmp_path)
    assert bank_main(["cann-import", path, "--bank", str(tmp_path / "bank")]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and f"{path}:11:" in err
    assert bank_main(["cann-import", str(tmp_path / "x.json"), "--bank", str(tmp_path)]) == 1
    assert "give the SoC" in capsys.readouterr().err
