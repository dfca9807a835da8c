"""aoe-native: an open auto-tuning engine for tensor operators and networks on Ascend NPUs.

The public API (everything else is reachable through the subpackages):

- search: :class:`SearchSpace`, :func:`tune`, :mod:`replay` (recorded spaces), :mod:`runners`
  (real measurements: host timing, process isolation);
- the Ascend cost model: :func:`estimate`, :func:`tiling_space`, :func:`tune_op`, SoC tables,
  :func:`calibrate` (fit the model's constants to measurements; needs the ``calibrate`` extra),
  :func:`predict_record` (a record of CANN's operator benchmark; :class:`UnmodelledOperator`);
- model tuning: :func:`tune_model` (OPAT) and :func:`tune_torch` (a PyTorch module, exported in
  memory; needs the ``torch`` extra), with :class:`CostModelEvaluator`, :class:`MeasuredEvaluator` or
  :class:`RayEvaluator`;
- subgraph tuning (SGAT): :func:`tune_subgraphs` (fusion and split policies per subgraph, giving a
  :class:`SubgraphTuneResult`; its ``partition`` feeds ``tune_model(..., kernels=...)``);
- gradient-split tuning (GDAT): :func:`tune_gradients` on a :class:`Cluster`, giving a
  :class:`GradientPlan`; :func:`predict_timeline` (a model's gradients through the evaluator) and
  :func:`gdat_job` (the whole job, with the bank);
- every model-tuning result is a :class:`JobResult` (:mod:`aoe_native.results`);
- :mod:`cann`: CANN's MatMulV3 knowledge-bank files (read, write, store a tuned MatMul where CANN reads it).
"""

from __future__ import annotations

import os as _os

from . import _core, cann, replay, runners
from ._core import __version__
from ._core.space import Objective, SearchSpace, SyntheticObjective, TableObjective
from ._core.space import strategy_defaults as _strategy_defaults
from ._core.space import strategy_names as _strategy_names
from .ascend.calibration import Calibration, CalibrationWarning, Measurement, calibrate
from .ascend.ops import (Estimate, OpTuneResult, baseline_tiling, estimate, estimate_batch, op_table,
                         supported_ops, tiling_space, tune_op)
from .ascend.platforms import DEFAULT_SOC, Platform, load_platform, platform, platform_fields, soc_versions
from .ascend.records import UnmodelledOperator, predict_record
from .bank.store import BankError
from .cluster import Cluster
from .jobs.evaluator import CostModelEvaluator, MeasuredEvaluator, RayEvaluator, TaskEvaluator
from .jobs.backward import predict_timeline
from .jobs.gdat import gdat_job, tune_gradients
from .jobs.opat import TuneOpsWarning, tune_model, tune_torch
from .jobs.setup import CoverageWarning
from .jobs.sgat import tune_subgraphs
from .results import GradientPlan, JobResult, ModelTuneResult, SubgraphTuneResult
from .tuning import BatchObjective, BatchResult, TuneResult, TuningInterrupted, improvement, tune


def strategies() -> list[str]:
    """Names accepted by ``tune(strategy=...)``."""
    return list(_strategy_names())


def strategy_options(name: str) -> dict[str, float]:
    """The options ``tune(strategy=name, strategy_options=...)`` accepts, with their defaults."""
    return dict(_strategy_defaults(name))


def cmake_dir() -> str:
    """Directory of the installed CMake package config, for ``find_package(aoe_native)``."""
    # The C++ library and its config are installed next to the extension module.
    return _os.path.join(_os.path.dirname(_core.__file__), "lib", "cmake", "aoe_native")


__all__ = [
    "BankError",
    "BatchObjective",
    "BatchResult",
    "Calibration",
    "CalibrationWarning",
    "Cluster",
    "CostModelEvaluator",
    "CoverageWarning",
    "TuneOpsWarning",
    "Estimate",
    "DEFAULT_SOC",
    "GradientPlan",
    "JobResult",
    "Measurement",
    "MeasuredEvaluator",
    "ModelTuneResult",
    "Objective",
    "OpTuneResult",
    "Platform",
    "RayEvaluator",
    "SearchSpace",
    "SubgraphTuneResult",
    "SyntheticObjective",
    "TableObjective",
    "TaskEvaluator",
    "TuneResult",
    "TuningInterrupted",
    "UnmodelledOperator",
    "__version__",
    "baseline_tiling",
    "calibrate",
    "cann",
    "cmake_dir",
    "estimate",
    "estimate_batch",
    "improvement",
    "load_platform",
    "op_table",
    "platform",
    "platform_fields",
    "predict_record",
    "replay",
    "runners",
    "soc_versions",
    "strategies",
    "strategy_options",
    "supported_ops",
    "tiling_space",
    "tune",
    "gdat_job",
    "predict_timeline",
    "tune_gradients",
    "tune_subgraphs",
    "tune_model",
    "tune_op",
    "tune_torch",
]
