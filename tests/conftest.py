import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("AOE_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" / "datasets"))


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture(autouse=True)
def _no_bank_in_the_home_directory(tmp_path_factory, monkeypatch):
    """A job run without --bank uses the default root: in the tests, a temporary one, never the
    user's ~/.cache (nor a $TUNE_BANK_PATH the shell happens to set)."""
    monkeypatch.delenv("TUNE_BANK_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_llm_ops: estimates or tunes a graph with the LLM operators of issue 49 "
                                       "(RmsNorm, FusedInferAttentionScore, ...); skipped while the cost model lacks them")


def pytest_collection_modifyitems(config, items):
    import aoe_native
    if "RmsNorm" in aoe_native.supported_ops():
        return
    skip = pytest.mark.skip(reason="the cost model has no LLM operators yet (RmsNorm not in supported_ops())")
    for item in items:
        if "requires_llm_ops" in item.keywords:
            item.add_marker(skip)
