"""The package's layout rules, checked on its source: data flows one way (no import
cycles), nothing reaches back into the package façade from inside a function, and only
the command-line module reads the environment."""
import ast
import os

import aoe_native

ROOT = os.path.dirname(aoe_native.__file__)


def _modules():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                name = "aoe_native" if rel == "__init__" else "aoe_native." + rel.removesuffix(".__init__")
                out[name] = os.path.join(dirpath, f)
    return out


MODULES = _modules()
TREES = {m: ast.parse(open(p, encoding="utf-8").read(), p) for m, p in MODULES.items()}


def _targets(module, node):
    """Package modules an import statement names (type-only and function-level imports count)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            parts = module.split(".")
            if not MODULES[module].endswith("__init__.py"):
                parts = parts[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [base] + [f"{base}.{a.name}" for a in node.names]
    return {n for n in names if n in MODULES}


def _graph():
    return {m: {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for t in _targets(m, n) if t not in (m, "aoe_native")}
            for m, tree in TREES.items()}


def _cycle(graph):
    state = {}

    def visit(v, path):
        state[v] = 1
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w, path + [w])
                if found:
                    return found
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v, [v])
            if found:
                return found
    return None


def test_no_import_cycle():
    assert _cycle(_graph()) is None


def test_cycle_finder_finds_cycles():  # the check above can fail
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_function_imports_the_package_facade():
    offenders = []
    for m, tree in TREES.items():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if isinstance(n, (ast.Import, ast.ImportFrom)) and "aoe_native" in _targets(m, n):
                    offenders.append(f"{m}:{n.lineno}")
    assert offenders == []


def test_only_the_cli_reads_the_environment():
    readers = set()
    for m, tree in TREES.items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv") and \
                    isinstance(n.value, ast.Name) and n.value.id == "os":
                readers.add(m)
    assert readers <= {"aoe_native.cli"}


def _reaches(graph, start):
    seen, todo = set(), [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_each_tuning_mode_is_one_file_in_jobs_on_the_same_seams():
    jobs = {m for m in MODULES if m.startswith("aoe_native.jobs.")}
    assert {"aoe_native.jobs.evaluator", "aoe_native.jobs.scheduler", "aoe_native.jobs.setup",
            "aoe_native.jobs.opat", "aoe_native.jobs.sgat", "aoe_native.jobs.gdat"} <= jobs
    graph = _graph()
    for mode in ("opat", "sgat", "gdat"):
        # every mode starts from the one job setup, keeps what it finds in the bank under the bank
        # policy, returns a result type of aoe_native.results and writes through the outputs
        deps = graph[f"aoe_native.jobs.{mode}"]
        assert {"aoe_native.jobs.setup", "aoe_native.bank.store", "aoe_native.bank.policy", "aoe_native.outputs",
                "aoe_native.results"} <= deps, mode
        # ... and measures through the evaluator seam, never the cost model itself
        assert "aoe_native.jobs.evaluator" in _reaches(graph, f"aoe_native.jobs.{mode}"), mode
    for mode in ("opat", "sgat"):
        assert "aoe_native.jobs.scheduler" in graph[f"aoe_native.jobs.{mode}"], mode
    # GDAT's predicted kernels go through the evaluator too (no direct tune_op)
    assert "aoe_native.jobs.evaluator" in graph["aoe_native.jobs.backward"]
    assert "aoe_native.ascend.ops" not in graph["aoe_native.jobs.backward"] | graph["aoe_native.jobs.gdat"]


def _subpackage(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or MODULES[module].endswith("__init__.py") and len(parts) > 1 else None


def test_no_two_subpackages_import_each_other():
    """Data flows one way between the folders too (jobs -> outputs -> results, never back)."""
    graph = _graph()
    edges = {(_subpackage(a), _subpackage(b)) for a, deps in graph.items() for b in deps}
    edges = {(a, b) for a, b in edges if a and b and a != b}
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []
    # the result types are below both the jobs and the outputs
    assert not {d for d in graph["aoe_native.results"] if d.startswith(("aoe_native.jobs", "aoe_native.outputs"))}


def test_no_function_is_over_a_hundred_lines():
    """A function that long holds several steps that want names of their own."""
    long = []
    for m, tree in TREES.items():
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.end_lineno - fn.lineno + 1 > 100:
                long.append(f"{m}.{fn.name} ({fn.end_lineno - fn.lineno + 1} lines)")
    assert long == []


def test_importing_the_package_does_not_load_the_onnx_front_end():
    """`import aoe_native` for tune() alone: onnx (about 0.1 s to import) loads with the first model."""
    import subprocess
    import sys
    code = "import sys, aoe_native; print(sorted(m for m in ('onnx', 'torch', 'ray', 'matplotlib', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
