"""Per-task results of the zoo under the three modes, for checking that a refactor changes no
result: run it on the old and the new code, then compare the two files.

    python bench/zoo_snapshot.py write before.json      # (on the old code)
    python bench/zoo_snapshot.py write after.json       # (on the new code)
    python bench/zoo_snapshot.py compare before.json after.json

It runs OPAT (cold, then from the bank), SGAT with operator tuning after it, and GDAT's predicted
timelines, at small budgets (about 30 min on 2 busy cores, 10 on a quiet machine).  Times of the
run itself, paths and bank directories are left out; so are fields added since (ADDED)."""
import importlib
import json
import os
import sys
import tempfile
import warnings

VOLATILE = {"tuning_time_s", "bank_directory", "result_file", "plan_file", "report_file", "elapsed_s", "model_path"}
ADDED = {"job_type", "start_ms", "baseline_kind"}  # fields a newer result has and an older did not
RENAMED = {"result_ms": "tuned_ms"}
MODELS = ["resnet50", "bert_base", "gpt2_small", "yolov5s"]


def _clean(d):
    if isinstance(d, dict):
        return {k: _clean(v) for k, v in d.items() if k not in VOLATILE}
    if isinstance(d, list):
        return [_clean(x) for x in d]
    return d


def write(path: str) -> None:
    import aoe_native as an
    from aoe_native import zoo
    warnings.simplefilter("ignore")
    tmp = tempfile.mkdtemp()
    out = {}
    for name in MODELS:
        model = os.path.join(tmp, name + ".onnx")
        zoo.main([name, "-o", model])
        bank = os.path.join(tmp, "bank_" + name)
        for run in ("opat", "opat_rerun"):
            r = an.tune_model(model, "Ascend910B3", bank=bank, parallel=1, evals_per_task=300, round_evals=100, seed=0)
            out[f"{name}/{run}"] = _clean(r.to_dict())
        s = an.tune_subgraphs(model, "Ascend910B3", bank=os.path.join(tmp, "bank2_" + name), parallel=1,
                              evals_per_kernel=150, seed=0, then_tune_ops=True, evals_per_task=200, round_evals=100)
        out[f"{name}/sgat"] = _clean(s.to_dict())
        print(name, r.baseline_ms, r.tuned_ms, flush=True)
    # predict_timeline's home before the house issue was jobs.gdat (this script runs on both)
    predict = getattr(an, "predict_timeline", None) or importlib.import_module("aoe_native.jobs.gdat").predict_timeline
    for name in MODELS[:2]:
        tl = predict(os.path.join(tmp, name + ".onnx"), "Ascend910B3", max_evals=200)
        out[f"{name}/timeline"] = [list(g) for g in tl]
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True, default=str)
    print("wrote", path)


def _norm(d):
    if isinstance(d, dict):
        return {RENAMED.get(k, k): _norm(v) for k, v in d.items() if k not in ADDED}
    if isinstance(d, list):
        return [_norm(x) for x in d]
    return d


def _diff(x, y, path, out):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y:
                out.append(f"{path}.{k}: only in {'the second' if k in y else 'the first'}")
            else:
                _diff(x[k], y[k], f"{path}.{k}", out)
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            out.append(f"{path}: length {len(x)} against {len(y)}")
        else:
            for i, (p, q) in enumerate(zip(x, y)):
                _diff(p, q, f"{path}[{i}]", out)
    elif x != y:
        out.append(f"{path}: {str(x)[:80]} against {str(y)[:80]}")


def compare(a_path: str, b_path: str) -> int:
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    diffs: list[str] = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            diffs.append(f"{k}: in one file only")
        else:
            _diff(_norm(a[k]), _norm(b[k]), k, diffs)
    print(f"{len(diffs)} differences")
    for d in diffs[:40]:
        print(" ", d)
    return 1 if diffs else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
