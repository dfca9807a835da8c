"""Bounded fuzzing in CI: every target of tests/fuzz/ runs for FUZZ_SECONDS under atheris.

The long run, for occasional use, is ``python tests/fuzz/run.py --seconds 600``.  Crashes the
fuzzers found have regression tests in test_hostile_input.py.
"""
import os
import sys

import pytest

pytest.importorskip("atheris")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
import run  # noqa: E402  (tests/fuzz/run.py)

FUZZ_SECONDS = 20  # per target: five targets stay well inside CI's budget


@pytest.mark.parametrize("target", run.NAMES)
def test_fuzz_target_finds_nothing(target, tmp_path):
    r = run.run_target(target, FUZZ_SECONDS, timeout=20, workdir=str(tmp_path))
    assert r["rc"] == 0, f"fuzz target {target} found a problem:\n{r['log'][-6000:]}"
    assert r["executions"] > 0, r["log"][-3000:]
