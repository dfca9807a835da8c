"""AOE's result files, ``aoe_result_{mode}_{timestamp}_{pid}.json``: a ``basic`` section and
one section per tuning mode (AOE docs aoe_16_019 / aoeep_16_044 on hiascend.com,
summarised in docs/ascend_model.md §4).  The writer is shared by every mode; each mode
brings its section (:func:`opat_section` for operator tuning)."""
from __future__ import annotations

import datetime as _dt
import os
from typing import Any

from ..fileio import atomic_write_text, dump_json
from ..jobs.results import ModelTuneResult

__all__ = ["percent", "timestamp", "write_result_file", "opat_section"]


def percent(fraction: float) -> str:
    """AOE prints improvements as "35.35%" (before / after - 1)."""
    return f"{fraction * 100:.2f}%"


def timestamp() -> str:
    """AOE's file-name timestamp, to the millisecond."""
    return _dt.datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]


def write_result_file(result_dir: str | os.PathLike, mode: str, tuning_name: str, tuning_time_s: float,
                      section: dict[str, Any], stamp: str | None = None) -> str:
    """Write ``[{"basic": ...}, {MODE: section}]`` atomically; returns the path."""
    stamp = stamp or timestamp()
    os.makedirs(result_dir, exist_ok=True)
    path = os.path.join(os.fspath(result_dir), f"aoe_result_{mode.lower()}_{stamp}_{os.getpid()}.json")
    doc = [{"basic": {"tuning_name": tuning_name, "tuning_time(s)": round(tuning_time_s, 3)}},
           {mode.upper(): section}]
    atomic_write_text(path, dump_json(doc))
    return path


def opat_section(r: ModelTuneResult) -> dict[str, Any]:
    """The ``OPAT`` section of a result file."""
    modified = []
    for t in r.tasks:
        if t.update_mode not in ("add", "update"):
            continue
        modified.append({"op_name": t.node_names[0], "op_type": t.op_type, "tune_performance": {"Schedule": {
            "performance_after_tune(us)": round(t.time_us, 3),
            "performance_before_tune(us)": round(t.baseline_us, 3),
            "performance_improvement": percent(t.improvement),
            "update_mode": t.update_mode}}})
    failed = [t for t in r.tasks if t.update_mode == "failed"]
    return {
        "model_baseline_performance(ms)": round(r.baseline_ms, 6),
        "model_performance_improvement": percent(r.improvement),
        "model_result_performance(ms)": round(r.tuned_ms, 6),
        "opat_tuning_result": "tuning successful" if not failed else f"tuning incomplete: {len(failed)} task(s) failed",
        "repo_modified_operators": modified,
        "repo_summary": dict(r.repo_summary),
        # Added by aoe-native (not an AOE field): what the improvement above covers.
        "model_coverage": {k: v for k, v in r.coverage.items()},
    }
