"""The bank policy every tuning job follows: when a result enters the bank, and AOE's
names for what happened to each task (the ``update_mode`` of a result file and the
counts of its ``repo_summary``)."""
from __future__ import annotations

from typing import Iterable

__all__ = ["beats_bank", "serves", "update_mode", "repo_summary", "REPO_SUMMARY_KEYS"]

# AOE's repo_summary fields (hiascend.com AOE docs, result file of OPAT/SGAT).
REPO_SUMMARY_KEYS = ("repo_add_num", "repo_hit_num", "repo_reserved_num", "repo_unsatisfied_num",
                     "repo_update_num", "total_num")
_MODE_KEYS = {"add": "repo_add_num", "update": "repo_update_num", "reserved": "repo_reserved_num",
              "unsatisfied": "repo_unsatisfied_num"}


def beats_bank(best_us: float | None, baseline_us: float, bank_us: float | None) -> bool:
    """A tuned result is stored only if it is faster than the default and than the bank's entry."""
    return best_us is not None and best_us < baseline_us and (bank_us is None or best_us < bank_us)


def serves(bank_us: float, baseline_us: float) -> bool:
    """A bank entry (its time re-estimated by the current evaluator) is served only while it beats
    the default; one no better was tuned for another model version or device: it is stale, tuned
    again from, and replaced."""
    return bank_us < baseline_us


def update_mode(hit: bool, tuned: bool, stored: bool) -> str:
    """AOE's update_mode of a task: a bank hit is "update" when re-tuning (REPEAT_TUNE)
    replaced the entry, else "reserved"; a miss is "add" when the result was stored,
    else "unsatisfied" (tuning found nothing faster than the default)."""
    if hit:
        return "update" if tuned and stored else "reserved"
    return "add" if stored else "unsatisfied"


def repo_summary(outcomes: Iterable[tuple[str, bool]]) -> dict[str, int]:
    """Counts of (update_mode, bank hit) pairs, for the tasks selected for tuning."""
    summary = dict.fromkeys(REPO_SUMMARY_KEYS, 0)
    for mode, hit in outcomes:
        summary["total_num"] += 1
        summary["repo_hit_num"] += bool(hit)
        summary[_MODE_KEYS[mode]] += 1
    return summary
