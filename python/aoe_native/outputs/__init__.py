"""What a tuning job leaves behind: AOE's result file (:mod:`.aoe_files`), the tuned plan
(:mod:`.plan`), the HTML report (:mod:`.report`) and the terminal view (:mod:`.console`)."""
from __future__ import annotations

import os

from ..fileio import atomic_write_text, dump_json
from ..jobs.results import ModelTuneResult
from .aoe_files import opat_section, timestamp, write_result_file
from .plan import tuned_plan
from .report import render_report

__all__ = ["write_model_outputs"]


def write_model_outputs(r: ModelTuneResult, output: str | os.PathLike | None = None,
                        result_dir: str | os.PathLike | None = None) -> None:
    """Write the OPAT result file into `result_dir` and the plan + HTML report into
    `output` (each skipped when None); the paths are recorded on `r`."""
    stamp = timestamp()
    if output is not None:
        out = os.fspath(output)
        if os.path.exists(out) and not os.path.isdir(out):
            raise ValueError(f"--output {out}: exists and is not a directory")
    if result_dir is not None:
        r.result_file = write_result_file(result_dir, "opat", f"{r.model_name}_{stamp}", r.tuning_time_s,
                                          opat_section(r), stamp)
    if output is not None:
        os.makedirs(out, exist_ok=True)
        r.plan_file = os.path.join(out, f"{r.model_name}_tuned_plan.json")
        r.report_file = os.path.join(out, f"{r.model_name}_opat_report.html")
        atomic_write_text(r.plan_file, dump_json(tuned_plan(r)))
        atomic_write_text(r.report_file, render_report(r))
