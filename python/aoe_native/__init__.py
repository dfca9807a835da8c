"""aoe-native: an open auto-tuning engine for tensor operators and networks on Ascend NPUs.

The core objects:

- :class:`SearchSpace` - named integer parameters with restriction strings.
- :func:`tune` - search a space for the configuration minimising an objective.
- :mod:`aoe_native.replay` - replay recorded (Kernel Tuner) search spaces.
- :mod:`aoe_native.runners` - real measurements: host timing, process isolation.
"""

from __future__ import annotations

import os as _os

from ._core import Objective, SearchSpace, SyntheticObjective, TableObjective, __version__
from ._core import strategy_defaults as _strategy_defaults
from ._core import strategy_names as _strategy_names
from . import replay, runners
from .tuning import BatchObjective, TuneResult, TuningInterrupted, tune
from .platforms import load_platform, platform, soc_versions
from .ops import (Estimate, OpTuneResult, baseline_tiling, estimate, estimate_batch, supported_ops, tiling_space,
                  tune_op)
from .opat import ModelTuneResult, tune_model


def strategies() -> list[str]:
    """Names accepted by ``tune(strategy=...)``."""
    return list(_strategy_names())


def strategy_options(name: str) -> dict[str, float]:
    """The options ``tune(strategy=name, strategy_options=...)`` accepts, with their defaults."""
    return dict(_strategy_defaults(name))


def cmake_dir() -> str:
    """Directory of the installed CMake package config, for ``find_package(aoe_native)``."""
    from . import _core

    # The C++ library and its config are installed next to the extension module.
    return _os.path.join(_os.path.dirname(_core.__file__), "lib", "cmake", "aoe_native")


__all__ = [
    "Estimate",
    "OpTuneResult",
    "baseline_tiling",
    "estimate",
    "estimate_batch",
    "load_platform",
    "platform",
    "soc_versions",
    "supported_ops",
    "tiling_space",
    "tune_op",
    "BatchObjective",
    "ModelTuneResult",
    "Objective",
    "SearchSpace",
    "SyntheticObjective",
    "TableObjective",
    "TuneResult",
    "TuningInterrupted",
    "__version__",
    "cmake_dir",
    "replay",
    "runners",
    "strategies",
    "strategy_options",
    "tune",
    "tune_model",
]
