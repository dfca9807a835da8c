import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("AOE_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" / "datasets"))
# CANN's measured kernel times (shared/reference/measured_ops), read only by tests that skip without it.
MEASURED_OPS = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "measured_ops" / \
    "cann_bench_calibration.json"


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture(scope="session")
def measured() -> list[dict]:
    """The records of CANN's measured-kernel file (read once; tests do not modify them)."""
    if not MEASURED_OPS.is_file():
        pytest.skip(f"CANN measured kernels not found at {MEASURED_OPS}")
    from aoe_native.ascend import records
    return records.load_records(str(MEASURED_OPS))


@pytest.fixture(autouse=True)
def _no_bank_in_the_home_directory(tmp_path_factory, monkeypatch):
    """A job run without --bank uses the default root: in the tests, a temporary one, never the
    user's ~/.cache (nor a $TUNE_BANK_PATH the shell happens to set)."""
    monkeypatch.delenv("TUNE_BANK_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
