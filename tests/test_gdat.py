"""Gradient-split tuning (GDAT): the cluster model, the exact DP, the baselines, bad input."""
import itertools
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aoe_native
from aoe_native import Cluster, GradientPlan, tune_gradients
from aoe_native.cluster import ClusterError, Level
from aoe_native.gradients import buckets, timeline
from aoe_native.jobs import backward
from aoe_native.gradients.buckets import optimal_partition, simulate
from aoe_native.gradients.timeline import TimelineError

MIB = 1 << 20
EXPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "exports")


def _timeline(sizes, gaps):
    ready = np.cumsum(gaps)
    return [(f"g{i}", int(s), float(r)) for i, (s, r) in enumerate(zip(sizes, ready))]


def _arrays(grads):
    return np.array([g[1] for g in grads], dtype=np.int64), np.array([g[2] for g in grads], dtype=float)


# --------------------------------------------------------------------------- cluster
def test_one_level_ring_formula():
    c = Cluster(ranks=8, alpha_us=20.0, gbps=100.0)
    n = 10e6
    assert c.allreduce_us(n) == pytest.approx(2 * 7 * 20.0 + 2 * 7 / 8 * n / 100e9 * 1e6)
    assert np.allclose(c.allreduce_us(np.array([0.0, n])), [280.0, c.allreduce_us(n)])
    assert Cluster(ranks=1).allreduce_us(123.0) == 0.0


def test_hierarchical_is_sum_of_levels_on_shards():
    inner, outer = Level("hccs", 8, 2.0, 100.0, source="t"), Level("roce", 4, 10.0, 25.0, source="t")
    h = Cluster.from_levels([inner, outer], "hierarchical")
    n = 64e6
    assert h.ranks == 32
    assert h.allreduce_us(n) == pytest.approx(inner.ring_us(n) + outer.ring_us(n / 8))
    flat = Cluster.from_levels([inner, outer], "ring")
    assert flat.allreduce_us(n) == pytest.approx(Cluster(32, 10.0, 25.0).allreduce_us(n))
    assert h.allreduce_us(n) < flat.allreduce_us(n)


def _hccl_fit_us(x_mb):  # Huawei's published fit (tuning_modes.md §4)
    return -0.9698 * x_mb ** 2 + 27.062 * x_mb + 14.769 if x_mb < 8 else 13.585 * x_mb + 61.508


def test_shipped_ascend_hccs_level_is_the_calibrated_published_fit():
    xs = np.geomspace(1 / 16, 256, 40)
    fit = Cluster.calibrate([(x * MIB, _hccl_fit_us(x)) for x in xs], ranks=8)
    hccs = Cluster.ascend910b().levels[0]
    assert hccs.ranks == 8 and "HCCL" in hccs.source
    assert hccs.alpha_us == pytest.approx(fit.alpha_us, rel=1e-3)
    assert hccs.gbps == pytest.approx(fit.gbps, rel=1e-3)
    assert fit.r2 == pytest.approx(0.972, abs=1e-3) and fit.max_rel_error == pytest.approx(0.247, abs=1e-3)
    two = Cluster.ascend910b(servers=2)
    assert two.ranks == 16 and two.algorithm == "hierarchical" and "ASSUMPTION" in two.levels[1].source


def test_calibrate_recovers_alpha_beta():
    truth = Cluster(ranks=2, alpha_us=1250.0, gbps=1.4)
    pairs = [(n, truth.allreduce_us(n)) for n in (1e3, 1e5, 1e6, 1e7, 1e8)]
    fit = Cluster.calibrate(pairs, ranks=2)
    assert fit.alpha_us == pytest.approx(1250.0) and fit.gbps == pytest.approx(1.4)
    assert fit.r2 == pytest.approx(1.0) and fit.max_rel_error < 1e-9
    noisy = Cluster.calibrate([(n, t * (1.1 if i % 2 else 0.9)) for i, (n, t) in enumerate(pairs)], ranks=2)
    assert noisy.max_rel_error > 0.05 and noisy.r2 < 1.0
    with pytest.raises(ClusterError, match="two or more message sizes"):
        Cluster.calibrate([(1e6, 10.0), (1e6, 11.0)], ranks=2)
    with pytest.raises(ClusterError, match="pair 1"):
        Cluster.calibrate([(1e6, 10.0), (2e6, -1.0)], ranks=2)


def test_cluster_file_errors(tmp_path):
    good = json.loads(json.dumps(Cluster.ascend910b(servers=2).to_dict()))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(good))
    assert Cluster.load(path).allreduce_us(1e6) == pytest.approx(Cluster.ascend910b(2).allreduce_us(1e6))
    bad = json.loads(json.dumps(good))
    del bad["levels"][1]["gbps"]
    path.write_text(json.dumps(bad))
    with pytest.raises(ClusterError, match=r"levels\[1\] \('roce'\): field 'gbps' missing"):
        Cluster.load(path)
    bad = json.loads(json.dumps(good))
    bad["levels"][0]["gbps"] = 0
    path.write_text(json.dumps(bad))
    with pytest.raises(ClusterError, match=r"levels\[0\] \('hccs'\).*gbps must be > 0"):
        Cluster.load(path)
    path.write_text("{")
    with pytest.raises(ClusterError, match="invalid JSON"):
        Cluster.load(path)
    with pytest.raises(ClusterError, match="alpha_us must be >= 0"):
        Cluster(ranks=2, alpha_us=-1.0)


# --------------------------------------------------------------------------- the exact DP
def _brute_force(sizes, ready, cluster, max_buckets=None):
    L = len(sizes)
    best = math.inf
    for cuts in itertools.product([False, True], repeat=L - 1):
        ends = [i + 1 for i, c in enumerate(cuts) if c] + [L]
        if max_buckets is None or len(ends) <= max_buckets:
            best = min(best, simulate(ends, sizes, ready, cluster)[1][-1])
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 50_000_000), st.floats(0.0, 3000.0)), min_size=1, max_size=9),
       st.integers(2, 16), st.floats(0.0, 500.0), st.floats(0.5, 200.0), st.integers(1, 4))
def test_dp_equals_brute_force(items, ranks, alpha, gbps, kmax):
    grads = _timeline([s for s, _ in items], [g for _, g in items])
    sizes, ready = _arrays(grads)
    c = Cluster(ranks, alpha, gbps)
    for limit in (None, kmax):
        ends = optimal_partition(sizes, ready, c, limit)
        assert ends[-1] == len(sizes) and all(a < b for a, b in zip(ends, ends[1:]))
        assert limit is None or len(ends) <= limit
        got = simulate(ends, sizes, ready, c)[1][-1]
        assert got == pytest.approx(_brute_force(sizes, ready, c, limit), rel=1e-9)


def test_plan_beats_or_ties_every_baseline_and_reports_consistently():
    rng = np.random.default_rng(7)
    grads = _timeline(rng.integers(1_000, 8 * MIB, 120), rng.uniform(5, 150, 120))
    cluster = Cluster(ranks=16, alpha_us=30.0, gbps=12.0)
    plan = tune_gradients(grads, cluster)
    assert isinstance(plan, GradientPlan)
    assert set(plan.baselines) == {"no_fusion", "one_bucket", "hccl_default", "ddp_25mb", "horovod_64mb",
                                   "horovod_128mb", "mindspore_even", "mg_wfbp"}
    for name, t in plan.baselines.items():
        assert plan.time_us <= t * (1 + 1e-12), name
        assert plan.gain[name] == pytest.approx(t / plan.time_us - 1)
    assert plan.gain["one_bucket"] > 0.05 and plan.gain["no_fusion"] > 0.05  # a real trade-off here
    assert [n for b in plan.buckets for n in b] == [g[0] for g in grads]
    assert plan.exposed_us == pytest.approx(plan.time_us - grads[-1][2])
    assert plan.bucket_end_us[-1] == plan.time_us
    assert plan.hccl_split_idx[-1] == len(grads) - 1
    assert sum(plan.hccl_split_percent) == pytest.approx(100.0)
    assert plan.mindspore_fusion_config == plan.ends[:-1]
    assert sum(plan.ddp_bucket_cap_mb_list) * MIB == sum(g[1] for g in grads)
    assert json.loads(json.dumps(plan.to_dict()))["time_us"] == plan.time_us


def test_hccl_split_percent_reproduces_the_plan_under_hccls_rule():
    # the first gradient holds 25.155% of the bytes: printed as 25.16, HCCL's rule would put
    # the second gradient into the first segment too ([2, 9]); 25.15 gives the plan's [1, 9]
    sizes = [2_688_757] + [1_000_000] * 8
    assert 25.155 < sizes[0] / sum(sizes) * 100 < 25.156
    grads = [("g0", sizes[0], 0.0)] + [(f"g{i}", n, 5000.0) for i, n in enumerate(sizes[1:], 1)]
    plan = tune_gradients(grads, Cluster(ranks=16, alpha_us=30.0, gbps=12.0), backend="hccl")
    assert plan.ends == [1, 9]
    assert plan.hccl_split_percent == [25.15, 74.85]
    assert buckets._split_by_percent(np.array(sizes), plan.hccl_split_percent) == [1, 9]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 10**9), min_size=2, max_size=40), st.data())
def test_hccl_split_percent_property_any_cut_is_reproduced(sizes, data):
    """Percentages -> HCCL's rule -> the same buckets, for any contiguous split; 2 decimals
    whenever the cut's gradient holds more than 0.0101% of the bytes (an interval wider than 0.01)."""
    sizes = np.array(sizes, dtype=np.int64)
    L = len(sizes)
    cuts = sorted(data.draw(st.sets(st.integers(1, L - 1), max_size=min(L - 1, 10))))
    ends = cuts + [L]
    pct = buckets.percents_for(sizes, ends)
    assert buckets._split_by_percent(sizes, pct) == ends
    assert len(pct) == len(ends) and all(p > 0 for p in pct) and sum(pct) == pytest.approx(100.0)
    share = sizes / sizes.sum() * 100
    for e, p in zip(cuts, pct):
        if share[e - 1] > 0.0101:
            assert round(p, 2) == p, (e, p)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 60))
def test_hccl_split_percent_property_on_random_timelines(seed, n):
    rng = np.random.default_rng(seed)
    grads = _timeline(rng.integers(1, 64 * MIB, n), rng.uniform(0, 400, n))
    plan = tune_gradients(grads, Cluster(ranks=16, alpha_us=30.0, gbps=12.0), backend="hccl")
    assert buckets._split_by_percent(np.array(plan.gradient_bytes), plan.hccl_split_percent) == plan.ends


def test_hccl_backend_limits_segments():
    # each all-reduce takes exactly the gap to the next gradient: any merge delays the step
    c = Cluster(ranks=8, alpha_us=5.0, gbps=50.0)
    grads = _timeline([MIB] * 20, [c.allreduce_us(MIB)] * 20)
    assert len(tune_gradients(grads, c).buckets) == 20
    plan = tune_gradients(grads, c, backend="hccl")
    assert 1 <= len(plan.buckets) <= 8 and len(plan.hccl_split_idx) <= 8
    with pytest.raises(ValueError, match="max_buckets=9: hccl allows at most 8 segments"):
        tune_gradients(grads, c, max_buckets=9, backend="hccl")


# --------------------------------------------------------------------------- baselines
def test_ddp_rule_first_bucket_1mib_then_25mib_and_overshoot_stays():
    sizes = np.array([MIB // 2, MIB // 2, 10 * MIB, 20 * MIB, MIB, 3 * MIB], dtype=np.int64)
    caps = buckets.baseline_partitions(sizes, np.arange(6.0), Cluster(2), even_k=2)
    assert caps["ddp_25mb"] == [2, 4, 6]          # 1 MiB; 30 MiB crosses 25 and closes; the rest
    assert caps["one_bucket"] == [6] and caps["no_fusion"] == [1, 2, 3, 4, 5, 6]


def test_hccl_default_split_by_size_and_mindspore_even():
    sizes = np.array([50, 40, 6, 2, 1, 1], dtype=np.int64)  # 96.54% is reached within the 4th gradient
    ready = np.array([0.0, 10, 20, 30, 40, 100])
    caps = buckets.baseline_partitions(sizes, ready, Cluster(2), even_k=2)
    assert caps["hccl_default"] == [4, 6]
    assert caps["mindspore_even"] == [5, 6]        # half of the 100 us backward span ends after gradient 5


def test_horovod_fuses_what_is_ready_each_cycle_up_to_the_threshold():
    c = Cluster(ranks=2, alpha_us=1.0, gbps=1000.0)
    sizes = np.array([10, 10, 10, 10], dtype=np.int64)
    ready = np.array([100.0, 200.0, 1500.0, 1600.0])
    assert buckets._horovod(sizes, ready, c, threshold=1 << 30, cycle_us=1000.0) == ([2, 4], [1000.0, 2000.0])
    assert buckets._horovod(sizes, ready, c, threshold=20, cycle_us=1000.0)[0] == [2, 4]
    assert buckets._horovod(sizes, ready, c, threshold=15, cycle_us=1000.0)[0] == [1, 2, 3, 4]


def test_horovod_baselines_start_at_the_cycle_tick_and_the_plan_does_not_wait():
    c = Cluster(ranks=8)
    grads = [("a", 1000, 100.0), ("b", 1000, 200.0), ("c", 1000, 300.0)]
    plan = tune_gradients(grads, c)
    one = float(c.allreduce_us(3000.0))
    # the tuned plan: one bucket as soon as the last gradient is ready (no cycle)
    assert plan.time_us == pytest.approx(300.0 + one) and plan.bucket_start_us == [300.0]
    # Horovod's thread first sees the gradients at its tick after 300 us: 5 ms / 1 ms cycles
    assert plan.baseline_spans["horovod_64mb"] == [(5000.0, pytest.approx(5000.0 + one))]
    assert plan.baselines["horovod_64mb"] == pytest.approx(5000.0 + one)
    assert plan.baselines["horovod_128mb"] == pytest.approx(1000.0 + one)
    assert plan.gain["horovod_64mb"] == pytest.approx((5000.0 + one) / (300.0 + one) - 1)
    # a later cycle waits for the tick and for the previous cycle's all-reduce
    c2 = Cluster(ranks=2, alpha_us=1.0, gbps=1000.0)
    sizes, ready = np.array([10, 10, 10, 10], dtype=np.int64), np.array([100.0, 200.0, 1500.0, 1600.0])
    ends, ticks = buckets._horovod(sizes, ready, c2, threshold=1 << 30, cycle_us=1000.0)
    starts, _ = simulate(ends, sizes, ready, c2, ticks)
    assert list(starts) == [1000.0, 2000.0]


def test_mg_wfbp_merges_when_communication_would_queue():
    # tiny gradients ready together on a high-latency link: MG-WFBP merges them all
    c = Cluster(ranks=8, alpha_us=100.0, gbps=10.0)
    sizes = np.full(5, 1000, dtype=np.int64)
    assert buckets._mg_wfbp(sizes, np.array([0.0, 1, 2, 3, 4]), c) == [5]
    # gradients far apart in time: each goes alone
    assert buckets._mg_wfbp(sizes, np.arange(5) * 1e5, c) == [1, 2, 3, 4, 5]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("grads, match", [
    ([("a", 10, 0.0), ("a", 10, 1.0)], r"gradient 1 \('a'\): duplicate name"),
    ([("a", 10, 0.0), ("b", 0, 1.0)], r"gradient 1 \('b'\): bytes must be an integer in 1\.\.2\^50"),
    ([("a", 10, 5.0), ("b", 10, 1.0)], r"gradient 1 \('b'\): ready_us 1.0 goes backwards"),
    ([("a", 10, float("nan"))], r"gradient 0 \('a'\): ready_us must be a finite number"),
    ([("a", 10, -500.0)], r"gradient 0 \('a'\): ready_us -500.0 is negative"),
    ([("", 10, 0.0)], r"gradient 0: name must be"),
    ([], "no gradient"),
])
def test_bad_timelines_are_named(grads, match):
    with pytest.raises(TimelineError, match=match):
        tune_gradients(grads, Cluster())


def test_timeline_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"gradients": [{"name": "fc.w", "bytes": 4000, "ready_us": 3.0},
                                           {"name": "fc.b", "bytes": 40, "ready_us": 3.0}]}))
    plan = tune_gradients(p, Cluster(ranks=2))
    assert [n for b in plan.buckets for n in b] == ["fc.w", "fc.b"]
    p.write_text(json.dumps({"gradients": [{"name": "fc.w", "ready_us": 3.0}]}))
    with pytest.raises(TimelineError, match=r"t.json: gradient 0: field\(s\) \['bytes'\] missing"):
        timeline.load_timeline(p)


def test_public_names():
    assert aoe_native.tune_gradients is tune_gradients and aoe_native.Cluster is Cluster
    assert aoe_native.GradientPlan is GradientPlan


# --------------------------------------------------------------------------- predicted timeline
def test_predict_timeline_walks_backward_with_the_cost_model():
    from opat_models import mlp

    tl = backward.predict_timeline(mlp(hidden=64, tokens=8, layers=2), input_shape="x:2,8,64")
    assert [g[0] for g in tl] == ["g", "beta", "b1", "w1", "b0", "w0"]  # last layer first
    assert dict((n, b) for n, b, _ in tl) == {"g": 256, "beta": 256, "b1": 256, "w1": 64 * 64 * 4,
                                               "b0": 256, "w0": 64 * 64 * 4}
    ready = [r for _, _, r in tl]
    assert ready[0] > 0 and all(a <= b for a, b in zip(ready, ready[1:])) and ready[3] > ready[2]
    # fc0's input is the graph input: no data gradient, so its backward is one GEMM, fc1's two
    w1_step, w0_step = ready[3] - ready[2], ready[5] - ready[4]
    assert w0_step < w1_step
    plan = tune_gradients(tl, Cluster(ranks=8, alpha_us=5.0, gbps=50.0))
    assert [n for b in plan.buckets for n in b] == [g[0] for g in tl]


def test_tune_gradients_takes_an_onnx_path(tmp_path):
    import onnx
    from opat_models import mlp

    m = mlp(hidden=64, tokens=8, layers=1)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2  # fix the batch
    onnx.save(m, tmp_path / "m.onnx")
    plan = tune_gradients(str(tmp_path / "m.onnx"), Cluster(ranks=2))
    assert sorted(plan.names) == ["b0", "beta", "g", "w0"]


def test_predict_timeline_counts_resnet50_parameters():
    from aoe_native import zoo
    from aoe_native.graph.onnx import load_graph

    params, _, unmatched = backward._parameters(load_graph(zoo.build("resnet50", batch=1)))
    assert len(params) == 161 and "fc.weight" in params and "conv1.bn.mean" not in params and not unmatched


def test_predict_timeline_counts_embedding_tables():
    """BERT-base: the word, position and token-type embeddings (Gather's data) are gradients
    too: 438 MB of fp32 gradients, not the 343 MB of the GEMMs and norms alone."""
    import onnx

    from aoe_native import zoo

    m = zoo.build("bert_base")
    tl = backward.predict_timeline(m)
    data_inputs = {"input_ids", "token_type_ids", "attention_mask"}
    weights = {i.name for i in m.graph.input if i.name not in data_inputs
               and i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    assert {n for n, _, _ in tl} == weights and len(tl) == len(weights) == 199
    got = dict((n, b) for n, b, _ in tl)
    assert got["word_embeddings"] == 30522 * 768 * 4 and got["position_embeddings"] == 512 * 768 * 4
    assert got["token_type_embeddings"] == 2 * 768 * 4 and sum(got.values()) == 437_928_960
    assert tl[-1][0] == "word_embeddings"  # the first node: its gradient is ready last


def _tied_lm(vocab, hidden, dedup_norm=False):
    """Embedding W (Gather) -> LayerNorm -> MatMul by Transpose(W): the tied output projection
    of GPT-2.  dedup_norm: a second LayerNorm whose weight TorchScript wrote as Identity(g)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((vocab, hidden)).astype(np.float32), "W"),
             numpy_helper.from_array(np.ones(hidden, np.float32), "g"),
             numpy_helper.from_array(np.zeros(hidden, np.float32), "b")]
    nodes = [helper.make_node("Gather", ["W", "ids"], ["h"], name="wte"),
             helper.make_node("LayerNormalization", ["h", "g", "b"], ["n"], name="ln", axis=-1)]
    if dedup_norm:
        nodes = [helper.make_node("Identity", ["g"], ["g2"], name="Identity_0")] + nodes + [
            helper.make_node("LayerNormalization", ["n", "g2", "b"], ["n2"], name="ln2", axis=-1)]
    nodes += [helper.make_node("Transpose", ["W"], ["Wt"], name="t", perm=[1, 0]),
              helper.make_node("MatMul", ["n2" if dedup_norm else "n", "Wt"], ["logits"], name="lm_head")]
    graph = helper.make_graph(nodes, "tied", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("vocab, hidden", [(100, 64), (50, 16)])  # 6400 elements: kept; 800: folded on import
def test_a_tied_weight_counts_once_under_its_name(vocab, hidden):
    tl = backward.predict_timeline(_tied_lm(vocab, hidden))
    assert [n for n, _, _ in tl] == ["g", "b", "W"]  # W's first use (Gather) is the first node
    assert tl[-1][1] == vocab * hidden * 4 and not tl.unmatched


def test_a_parameter_written_as_identity_of_an_equal_one_is_its_own():
    # TorchScript writes a parameter whose values equal another's as Identity(other)
    tl = backward.predict_timeline(_tied_lm(100, 64, dedup_norm=True))
    assert sorted(n for n, _, _ in tl) == ["W", "b", "g", "g2"]
    assert dict((n, b) for n, b, _ in tl)["g2"] == 64 * 4


def _folded_tied_lm(copy, constant=False):
    """_tied_lm as TorchScript writes it: the output projection reads a folded constant
    "onnx::MatMul_7" holding copy(W) instead of Transpose(W).  constant: W all ones."""
    from onnx import numpy_helper

    m = _tied_lm(100, 64)
    g = m.graph
    [w] = [t for t in g.initializer if t.name == "W"]
    if constant:
        w.CopyFrom(numpy_helper.from_array(np.ones((100, 64), np.float32), "W"))
    g.initializer.append(numpy_helper.from_array(copy(numpy_helper.to_array(w)), "onnx::MatMul_7"))
    [t] = [n for n in g.node if n.op_type == "Transpose"]
    g.node.remove(t)
    [mm] = [n for n in g.node if n.op_type == "MatMul"]
    mm.input[1] = "onnx::MatMul_7"
    return m


@pytest.mark.parametrize("from_file", [None, "embedded", "external"])
def test_a_torchscript_copy_of_a_tied_weight_counts_once(tmp_path, from_file):
    import onnx

    def as_given(m):  # a ModelProto, or a file (read without its weights' values but these)
        if from_file is None:
            return m
        for f in tmp_path.iterdir():
            f.unlink()
        # a model past 2 GiB keeps its weights in external data files
        onnx.save_model(m, str(tmp_path / "m.onnx"), save_as_external_data=from_file == "external",
                        location="m.data", size_threshold=0)
        return str(tmp_path / "m.onnx")

    tl = backward.predict_timeline(as_given(_folded_tied_lm(lambda w: np.ascontiguousarray(w.T))))
    assert [n for n, _, _ in tl] == ["g", "b", "W"] and tl[-1][1] == 100 * 64 * 4 and not tl.unmatched
    # other values, or constant ones (nothing tells where those came from): a gradient of its own, flagged
    transposed = lambda w: np.ascontiguousarray(w.T)  # noqa: E731
    for copy, constant in ((lambda w: transposed(w) + 1, False), (transposed, True)):
        with pytest.warns(timeline.GradientNameWarning, match="TorchScript exporter computed"):
            tl = backward.predict_timeline(as_given(_folded_tied_lm(copy, constant)))
        assert sorted(n for n, _, _ in tl) == ["W", "b", "g", "onnx::MatMul_7"]


def test_exported_models_name_parameters_as_the_framework_does():
    """torch.export's graph signature and onnxscript's folded_from records give the framework
    names (the transposed Linear weight val_13 is blocks.0.c_attn.weight); the tied wte.weight
    (Gather, and Transpose into the output MatMul) counts once; what the file lost is named."""
    with pytest.warns(timeline.GradientNameWarning, match=r"\['wpe\.weight'\]: the exporter folded it into the constant"):
        tl = backward.predict_timeline(os.path.join(EXPORTS, "gpt2_dynamo.onnx"))
    names = [n for n, _, _ in tl]
    assert "blocks.0.c_attn.weight" in names and "blocks.1.proj.weight" in names
    assert not any(n.startswith("val_") for n in names)
    assert names.count("wte.weight") == 1 and dict((n, b) for n, b, _ in tl)["wte.weight"] == 256 * 64 * 4
    assert names[-1] == "wte.weight"
    assert "folded it into the constant 'embedding_1'" in tl.unmatched["wpe.weight"]
    assert "has no tensor for it" in tl.unmatched["ln_f.weight"]  # merged with blocks.0.ln1.weight (all ones)
    plan = tune_gradients(tl, Cluster(ranks=2))
    assert plan.unmatched == tl.unmatched and plan.to_dict()["unmatched"] == tl.unmatched


def test_torchscript_made_names_are_flagged_not_guessed():
    with pytest.warns(timeline.GradientNameWarning, match=r"measure_timeline\(module, loss_fn\)"):
        tl = backward.predict_timeline(os.path.join(EXPORTS, "gpt2_ts.onnx"))
    made = [n for n, _, _ in tl if n.startswith("onnx::")]
    assert made and sorted(made) == sorted(n for n in tl.unmatched if n.startswith("onnx::"))
    assert all("TorchScript exporter computed" in tl.unmatched[n] for n in made)
    # the output projection's folded copy of the tied wte.weight (its transpose) is wte.weight
    import onnx
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(os.path.join(EXPORTS, "gpt2_ts.onnx")).graph.initializer}
    copies = [n for n, v in inits.items() if n.startswith("onnx::") and v.shape == (64, 256)
              and np.array_equal(v, inits["wte.weight"].T)]
    assert len(copies) == 1 and copies[0] not in made and [n for n, _, _ in tl].count("wte.weight") == 1


# --------------------------------------------------------------------------- aoe --job_type=4
def _write_timeline(path, n=40, seed=3):
    rng = np.random.default_rng(seed)
    grads = _timeline(rng.integers(1_000, 4 * MIB, n), rng.uniform(5, 80, n))
    path.write_text(json.dumps({"gradients": [{"name": a, "bytes": b, "ready_us": r} for a, b, r in grads]}))
    return grads


def test_cli_job_type_4_writes_result_file_and_report(tmp_path, monkeypatch, capsys):
    from aoe_native import cli

    tl = tmp_path / "grads.json"
    grads = _write_timeline(tl)
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    rc = cli.main(["--job_type=4", f"--timeline={tl}", "--ranks=16", "--alpha_us=30", "--gbps=12",
                   "--backend=hccl", f"--output={tmp_path / 'out'}"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "GDAT process finished. Performance improved by" in out and "(over hccl_default)" in out
    [res] = list((tmp_path / "work").glob("aoe_result_gdat_*_*.json"))
    doc = json.loads(res.read_text())
    assert doc[0]["basic"]["tuning_name"].startswith("grads_")
    sec = doc[1]["GDAT"]
    plan = tune_gradients(grads, Cluster(16, 30.0, 12.0), backend="hccl")
    assert sec["hccl_split_idx"] == plan.hccl_split_idx and len(sec["buckets"]) <= 8
    assert sec["step_time_us"] == pytest.approx(plan.time_us, abs=1e-3)
    assert sec["baselines"]["hccl_default"]["performance_improvement"].endswith("%")
    html = (tmp_path / "out" / "grads_gdat_report.html").read_text()
    assert html.count("<svg") == 1 and "hccl_default (before) and tuned (after)" in html


@pytest.mark.parametrize("extra, message", [
    (["--max_buckets=9", "--backend=hccl"], "max_buckets=9: hccl allows at most 8 segments"),
    (["--cluster=BAD"], "levels[0] ('hccs'): gbps must be > 0"),
    (["--timeline=BADTL"], "ready_us 1.0 goes backwards"),
])
def test_cli_job_type_4_bad_input_writes_nothing(tmp_path, monkeypatch, capsys, extra, message):
    from aoe_native import cli

    tl = tmp_path / "grads.json"
    _write_timeline(tl)
    bad_cluster = Cluster.ascend910b().to_dict()
    bad_cluster["levels"][0]["gbps"] = -1
    (tmp_path / "c.json").write_text(json.dumps(bad_cluster))
    (tmp_path / "b.json").write_text(json.dumps([["a", 4, 2.0], ["b", 4, 1.0]]))
    extra = [e.replace("BADTL", str(tmp_path / "b.json")).replace("BAD", str(tmp_path / "c.json")) for e in extra]
    args = ["--job_type=4", f"--output={tmp_path / 'out'}"] + extra
    if not any(e.startswith("--timeline") for e in extra):
        args.append(f"--timeline={tl}")
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    assert cli.main(args) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


def test_cli_other_job_types_still_need_model_and_framework(capsys):
    from aoe_native import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["--job_type=2"])
    assert e.value.code == 2
    assert "the following arguments are required: --model/-m, --framework/-f" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--job_type=4"])
    assert "needs --timeline FILE or --model" in capsys.readouterr().err


def test_cli_job_type_4_predicts_from_an_onnx_model(tmp_path, monkeypatch, capsys):
    from opat_models import mlp

    from aoe_native import cli

    m = tmp_path / "m.onnx"
    m.write_bytes(mlp(hidden=64, tokens=8).SerializeToString())
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path))
    assert cli.main(["-j", "4", "-f", "5", "-m", str(m), "--input_shape", "x:2,8,64", "--servers=2"]) == 0
    assert "6 gradients, " in capsys.readouterr().out
    [res] = list(tmp_path.glob("aoe_result_gdat_*.json"))
    assert json.loads(res.read_text())[1]["GDAT"]["cluster"]["ranks"] == 16


# --------------------------------------------------------------------------- the job on the seams
def _timeline_file(path, grads):
    path.write_text(json.dumps({"gradients": [{"name": n, "bytes": b, "ready_us": r} for n, b, r in grads]}))
    return path


def test_gdat_job_keeps_its_plan_in_the_bank_and_a_rerun_serves_it(tmp_path):
    from aoe_native.jobs.gdat import gdat_job
    grads = [(f"g{i}", (i % 5 + 1) * 2_000_000, 15.0 * i) for i in range(30)]
    tl = _timeline_file(tmp_path / "t.json", grads)
    cluster = Cluster(ranks=8, alpha_us=20.0, gbps=100.0)
    first = gdat_job(cluster, timeline=tl, bank=tmp_path / "bank")
    assert not first.bank_hit and (tmp_path / "bank" / "Ascend910B3" / "GradientPlan.json").exists()
    again = gdat_job(cluster, timeline=tl, bank=tmp_path / "bank")
    assert again.bank_hit and again.buckets == first.buckets and again.time_us == pytest.approx(first.time_us)
    assert again.baselines == pytest.approx(first.baselines) and again.hccl_split_idx == first.hccl_split_idx
    assert not gdat_job(cluster, timeline=tl, bank=tmp_path / "bank", repeat_tune=True).bank_hit
    # another cluster, another bucket limit or another timeline: another plan
    assert not gdat_job(Cluster(ranks=16, alpha_us=20.0, gbps=100.0), timeline=tl, bank=tmp_path / "bank").bank_hit
    assert not gdat_job(cluster, timeline=tl, max_buckets=3, bank=tmp_path / "bank").bank_hit
    tl2 = _timeline_file(tmp_path / "t.json", grads[:-1])
    assert not gdat_job(cluster, timeline=tl2, bank=tmp_path / "bank").bank_hit


def test_gdat_job_on_a_model_serves_the_plan_without_predicting_again(tmp_path, monkeypatch):
    from aoe_native.jobs import gdat
    from opat_models import mlp
    cluster = Cluster(ranks=8, alpha_us=5.0, gbps=10.0)  # slow enough that a split beats HCCL's default
    model = mlp(hidden=256, tokens=8, layers=4)
    first = gdat.gdat_job(cluster, model=model, input_shape="x:2,8,256", bank=tmp_path, max_evals=50)
    assert not first.bank_hit and first.evaluator == "cost model" and first.improvement > 0

    def no_prediction(*a, **k):
        raise AssertionError("the plan should come from the bank")
    monkeypatch.setattr(gdat, "predict_timeline", no_prediction)
    again = gdat.gdat_job(cluster, model=model, input_shape="x:2,8,256", bank=tmp_path, max_evals=50)
    assert again.bank_hit and again.buckets == first.buckets


def test_a_predicted_timeline_runs_through_the_evaluator(tmp_path):
    """GDAT's backward kernels are tuned through the evaluator seam, so a timeline can be
    predicted from measurements (here a stand-in device that logs each kernel it times)."""
    from aoe_native.jobs.evaluator import MeasuredEvaluator
    from opat_models import mlp
    log = tmp_path / "measured.txt"

    def measure(task, tiling):  # runs in an isolated worker process: it logs to a file
        with open(log, "a") as f:
            f.write(task.op_type + "\n")
        return aoe_native.estimate(task.op_type, task.inputs, task.dtype, "Ascend910B3", tiling,
                                   attrs=task.attrs or None).time_us
    ev = MeasuredEvaluator("Ascend910B3", measure, timeout=30)
    model = mlp(hidden=64, tokens=8, layers=1)
    with pytest.raises(ValueError, match="needs max_evals"):
        backward.predict_timeline(model, input_shape="x:2,8,64", evaluator=ev)
    tl = backward.predict_timeline(model, input_shape="x:2,8,64", evaluator=ev, max_evals=4)
    ready = [r for _, _, r in tl]
    assert tl and ready == sorted(ready) and ready[-1] > 0
    assert "MatMul" in log.read_text().split()  # the weights' gradients were measured, not estimated
