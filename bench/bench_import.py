"""Import benchmarks (issue 11): run with `python bench/bench_import.py [--quick]` (needs the test
extra: torch, onnxscript; onnxruntime is used when installed).

1. Shape resolution on the exports in tests/data/exports: nodes whose output shape stays
   unknown after onnx's inference with data propagation alone, after onnxscript's optimizer,
   after onnxruntime's basic graph optimisations, and after aoe-native's import (onnx's
   reference evaluator folding constants between inference passes); time of each.
2. A BERT-base-sized model (12 layers, hidden 768, sequence 128, random weights) exported by
   the TorchScript exporter: import + partition time and peak memory, weights inside the file
   and as external data (targets: <= 5 s, peak < 2x the file).
3. OPAT on that model from a cold bank with 2 workers, then from the bank (targets: 30 s, 3 s).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "tests" / "data" / "exports"
sys.path.insert(0, str(ROOT / "tests" / "data"))


def _unknown(model: onnx.ModelProto) -> int:
    """Nodes whose first output has no static shape after onnx's data-propagating inference."""
    m = onnx.shape_inference.infer_shapes(model, data_prop=True)
    known = {vi.name for vi in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input)
             if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") and d.dim_value > 0
                                                              for d in vi.type.tensor_type.shape.dim)}
    known |= {t.name for t in m.graph.initializer}
    return sum(1 for n in m.graph.node if n.output and n.output[0] not in known)


def bench_shape_resolution() -> None:
    from aoe_native.graph.onnx import load_graph
    print("[1] unresolved node shapes (time s) per method")
    methods = {"onnx data_prop": lambda p: (_unknown(onnx.load(p)))}
    try:
        import onnxscript.optimizer as oo
        methods["onnxscript optimize"] = lambda p: _unknown(oo.optimize(onnx.load(p)))
    except ImportError:
        print("    (onnxscript not installed)")
    try:
        import onnxruntime as ort

        def ort_basic(p: str) -> int:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            with tempfile.TemporaryDirectory() as d:
                so.optimized_model_filepath = os.path.join(d, "opt.onnx")
                ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
                return _unknown(onnx.load(so.optimized_model_filepath))
        methods["onnxruntime basic"] = ort_basic
    except ImportError:
        print("    (onnxruntime not installed)")

    def ours(p: str) -> int:
        g = load_graph(p)  # raises if any shape stays unknown
        return sum(1 for n in g.nodes for o in n.outputs[:1] if g.shape(o) is None)
    methods["aoe-native import"] = ours
    print(f"    {'model':<24}" + "".join(f"{m:>24}" for m in methods))
    for f in sorted(EXPORTS.glob("*.onnx")):
        cells = []
        for fn in methods.values():
            t = time.perf_counter()
            try:
                n = str(fn(str(f)))
            except Exception as e:  # a method that fails on a model is a result too
                n = f"error {type(e).__name__}"
            cells.append(f"{n} ({time.perf_counter() - t:.2f})")
        print(f"    {f.name:<24}" + "".join(f"{c:>24}" for c in cells))


def _export_bert_base(path: str, external: bool) -> None:
    import torch
    from make_exports import BertLike, export
    torch.manual_seed(0)
    m = BertLike(vocab=30522, hidden=768, heads=12, layers=12, ffn=3072, max_pos=512).eval()
    ids = torch.randint(0, 30522, (1, 128))
    export(m, (ids, torch.ones(1, 128, dtype=torch.long)), path, ["input_ids", "attention_mask"], dynamo=False)
    if external:
        model = onnx.load(path)
        os.remove(path)
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=1024)


# Peak RSS from /proc (VmHWM belongs to the process's own address space; ru_maxrss would keep the
# peak of the forking parent across exec).
_PEAK = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) * 1024"
_IMPORT = """
import sys, time
t = time.perf_counter()
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition
from aoe_native.ascend.ops import supported_ops
t0 = time.perf_counter()
p = partition(load_graph(sys.argv[1]), supported_ops())
print(time.perf_counter() - t0, """ + _PEAK + """, len(p.tasks), p.coverage.unmodelled_nodes)
"""


def bench_big_import(tmp: str, reps: int) -> str:
    print("[2] import + partition of a BERT-base-sized TorchScript export (fresh process each):")
    base_rss = int(subprocess.run([sys.executable, "-c", "import aoe_native.graph.partition, aoe_native.ascend.ops; "
                                   f"print({_PEAK})"], capture_output=True, text=True, check=True).stdout)
    path = ""
    for external in (False, True):
        path = os.path.join(tmp, f"bert_base_{'ext' if external else 'inline'}.onnx")
        t = time.perf_counter()
        _export_bert_base(path, external)
        export_s = time.perf_counter() - t
        size = os.path.getsize(path) + (os.path.getsize(path + ".data") if external else 0)
        runs = []
        for _ in range(reps):
            out = subprocess.run([sys.executable, "-c", _IMPORT, path], capture_output=True, text=True, check=True)
            secs, rss, tasks, unmodelled = out.stdout.split()
            runs.append((float(secs), int(rss)))
        med = statistics.median(r[0] for r in runs)
        peak = max(r[1] for r in runs) - base_rss
        print(f"    weights {'external' if external else 'inline  '}: {size / 1e6:.0f} MB (export {export_s:.0f} s); "
              f"import+partition median {med:.2f} s; peak RSS above the bare import {peak / 1e6:.0f} MB "
              f"= {peak / size:.2f}x the model; {tasks} tasks, {unmodelled} unmodelled nodes")
    return path


def bench_opat(path: str, tmp: str, reps: int) -> None:
    import aoe_native
    print("[3] OPAT on the BERT-base-sized export, 2 workers:")
    cold, warm = [], []
    for i in range(reps):
        bank = os.path.join(tmp, f"bank{i}")
        t = time.perf_counter()
        r = aoe_native.tune_model(path, bank=bank, parallel=2)
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        aoe_native.tune_model(path, bank=bank, parallel=2)
        warm.append(time.perf_counter() - t)
    print(f"    cold bank median {statistics.median(cold):.2f} s ({len(r.tasks)} tasks, {r.improvement * 100:+.2f}%, "
          f"{r.coverage_text()}); from the bank median {statistics.median(warm):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition")
    ap.add_argument("--skip_shapes", action="store_true", help="skip part 1")
    args = ap.parse_args()
    reps = 1 if args.quick else 3
    if not args.skip_shapes:
        bench_shape_resolution()
    with tempfile.TemporaryDirectory() as tmp:
        path = bench_big_import(tmp, reps)
        bench_opat(path, tmp, reps)


if __name__ == "__main__":
    main()
