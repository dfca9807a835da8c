"""What a tuning job leaves behind: AOE's result file (:mod:`.aoe_files`), the tuned plan
(:mod:`.plan`), the HTML report (:mod:`.report`) and the terminal view (:mod:`.console`)."""
from __future__ import annotations

import os
import re
from typing import Any, Callable

from ..fileio import atomic_write_text, dump_json
from ..results import ModelTuneResult, SubgraphTuneResult
from .aoe_files import gdat_section, opat_section, sgat_section, timestamp, write_result_file
from .plan import fused_plan, tuned_plan
from .report import render_gdat_report, render_report, render_sgat_report

__all__ = ["write_model_outputs", "write_sgat_outputs", "write_gdat_outputs", "check_output_dir", "check_job_dirs",
           "output_name"]


def output_name(model_name: str, model_path: str | os.PathLike | None = None) -> str:
    """The stem of a job's plan and report files: the model file's name when there is one (graph
    names repeat: every torch export is "main_graph"), else the model's; separators, control
    characters and a leading dot removed, so that no name writes outside the output directory."""
    raw = os.path.splitext(os.path.basename(os.fspath(model_path)))[0] if model_path else model_name
    safe = re.sub(r'[\x00-\x1f/\\:*?"<>|]+', "_", raw).lstrip(". ")
    return safe or "model"


def check_output_dir(path: str | os.PathLike | None, what: str = "output directory") -> str | None:
    """ValueError unless job outputs can go to directory `path`: it is a writable directory,
    or can be created (the nearest existing parent is one).  Jobs call it before tuning, so a
    bad path fails at once rather than after the run; nothing is created here."""
    if path is None:
        return None
    out = os.fspath(path)
    probe = os.path.abspath(out)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise ValueError(f"{what} {out}: {probe} exists and is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {out}: {probe} is not writable")
    return out


def check_job_dirs(output: str | os.PathLike | None, result_dir: str | os.PathLike | None) -> None:
    """check_output_dir for a job's --output and its result-file directory."""
    check_output_dir(output)
    check_output_dir(result_dir, "result directory")


def _make_dir(path: str, what: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{what} {path}: cannot create it ({e.strerror})") from None


def _write_job_outputs(r: Any, mode: str, section: dict[str, Any], plan_name: str, plan: dict[str, Any],
                       report: Callable[[Any], str], output: str | os.PathLike | None,
                       result_dir: str | os.PathLike | None) -> None:
    stamp = timestamp()
    out = check_output_dir(output)
    if result_dir is not None:
        r.result_file = write_result_file(result_dir, mode, f"{r.model_name}_{stamp}", r.tuning_time_s, section, stamp)
    if out is not None:
        _make_dir(out, "output directory")
        stem = output_name(r.model_name, r.model_path)
        r.plan_file = os.path.join(out, f"{stem}_{plan_name}.json")
        r.report_file = os.path.join(out, f"{stem}_{mode}_report.html")
        atomic_write_text(r.plan_file, dump_json(plan))
        atomic_write_text(r.report_file, report(r))


def write_model_outputs(r: ModelTuneResult, output: str | os.PathLike | None = None,
                        result_dir: str | os.PathLike | None = None) -> None:
    """Write the OPAT result file into `result_dir` and the plan + HTML report into
    `output` (each skipped when None); the paths are recorded on `r`."""
    _write_job_outputs(r, "opat", opat_section(r), "tuned_plan", tuned_plan(r), render_report, output, result_dir)


def write_sgat_outputs(r: SubgraphTuneResult, output: str | os.PathLike | None = None,
                       result_dir: str | os.PathLike | None = None) -> None:
    """Write ``aoe_result_sgat_*.json`` into `result_dir` and the fused plan + HTML report
    into `output` (each skipped when None); the paths are recorded on `r`."""
    _write_job_outputs(r, "sgat", sgat_section(r), "fused_plan", fused_plan(r), render_sgat_report, output,
                       result_dir)


def write_gdat_outputs(plan: Any, name: str, output: str | os.PathLike | None = None,
                       result_dir: str | os.PathLike | None = None) -> tuple[str | None, str | None]:
    """Write the GDAT result file ``aoe_result_gdat_*.json`` into `result_dir` and the HTML
    report into `output` (each skipped when None); returns their paths.  ``plan`` is a
    :class:`~aoe_native.results.GradientPlan`."""
    stamp = timestamp()
    out = check_output_dir(output)
    result_file = report_file = None
    if result_dir is not None:
        result_file = write_result_file(result_dir, "gdat", f"{name}_{stamp}", plan.tuning_time_s,
                                        gdat_section(plan), stamp)
    if out is not None:
        _make_dir(out, "output directory")
        report_file = os.path.join(out, f"{output_name(name)}_gdat_report.html")
        atomic_write_text(report_file, render_gdat_report(plan, name))
    return result_file, report_file
