import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("AOE_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" / "datasets"))


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS
