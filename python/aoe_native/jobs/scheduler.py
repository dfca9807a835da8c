"""The task scheduler: shares a tuning budget among the tasks of a model.

It follows Ansor's task scheduler (Zheng et al., OSDI 2020, §6): tuning proceeds in
rounds; after a first round for every task, each round goes to the tasks with the largest
estimated gradient of model time per evaluation, occurrences x (recent gain per evaluation,
and the remaining gap to the roofline bound per evaluation spent so far).  Rounds are
synchronous, so the allocation, and hence the result, depends only on the seed.

A round of one task is ``evaluator.tune(task, ...)`` (:mod:`.evaluator`), run in this
process or in a pool of worker processes (:class:`WorkerPool`).
"""
from __future__ import annotations

import concurrent.futures as cf
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from .evaluator import RoundResult, TaskEvaluator

__all__ = ["TaskState", "WorkerPool", "schedule"]

Tiling = dict[str, int]


@dataclass
class TaskState:
    """A task in the scheduler: what the bank holds for it, and what tuning found so far."""
    task: Any                                # occurrences, index, key (a graph.partition.Task)
    warm: list[Tiling]                       # tilings the first round starts from
    bank_entry: dict[str, Any] | None = None
    bank_us: float | None = None
    best_tiling: Tiling | None = None
    best_us: float = float("inf")
    baseline_tiling: Tiling | None = None
    baseline_us: float = float("inf")
    roofline_us: float = 0.0
    builtin: bool = False                    # the baseline is CANN's built-in bank record
    evaluations: int = 0
    space_size: int = 0
    trace: list[float] = field(default_factory=list)
    last_gain: float = 0.0
    last_evals: int = 1
    stagnant: int = 0
    rounds: int = 0
    done: bool = False
    error: str | None = None
    # every tiling evaluated so far (indices into the task's space) and its time, per round: later
    # rounds continue from them rather than measure them again (TaskEvaluator.remember_rounds)
    evaluated_ids: list[np.ndarray] = field(default_factory=list)
    evaluated_us: list[np.ndarray] = field(default_factory=list)

    def known(self) -> tuple[np.ndarray, np.ndarray] | None:
        """What earlier rounds evaluated, as ``(indices, times)`` (None before the first)."""
        if not self.evaluated_ids:
            return None
        return np.concatenate(self.evaluated_ids), np.concatenate(self.evaluated_us)

    def covered(self) -> bool:
        """Every tiling of the task's space evaluated (by one round or over several)."""
        total = sum(len(i) for i in self.evaluated_ids)
        return total >= self.space_size and len(np.unique(np.concatenate(self.evaluated_ids))) >= self.space_size

    def priority(self) -> float:
        if self.done or self.rounds == 0:
            return 0.0
        backward = self.last_gain / max(self.last_evals, 1)
        forward = max(self.best_us - self.roofline_us, 0.0) / max(self.evaluations, 1)
        return self.task.occurrences * (0.5 * backward + 0.5 * forward)

    def apply(self, res: RoundResult | None, err: str | None) -> None:
        """Take in one round's result (None: the round failed with `err`)."""
        self.rounds += 1
        if res is None:
            self.error, self.done = err, True
            return
        if self.baseline_tiling is None:
            self.baseline_tiling, self.baseline_us = res.baseline_tiling, res.baseline_us
        self.roofline_us = res.roofline_us
        self.space_size = res.space_size
        prev = self.best_us
        if res.time_us < self.best_us:
            self.best_us, self.best_tiling = res.time_us, res.tiling
        trace = np.minimum.accumulate(np.minimum(np.asarray(res.trace, dtype=np.float64), prev))
        self.trace.extend(trace.tolist())
        self.evaluated_ids.append(np.asarray(res.ids, dtype=np.int64))
        self.evaluated_us.append(np.asarray(res.values, dtype=np.float64))
        self.evaluations += res.evaluations
        self.last_evals = max(res.evaluations, 1)
        self.last_gain = max((prev if prev != float("inf") else self.baseline_us) - self.best_us, 0.0)
        self.stagnant = self.stagnant + 1 if self.last_gain <= 1e-9 * max(self.best_us, 1.0) else 0
        if res.evaluations >= self.space_size or self.covered() or self.stagnant >= 2 or \
                self.best_us <= self.roofline_us * 1.0001:
            self.done = True


def _seed_for(seed: int, key: str, round_no: int) -> int:
    return (zlib.crc32(f"{seed}|{round_no}|{key}".encode()) & 0x7FFFFFFF)


def _worker_init(parent: int) -> None:
    # Workers leave Ctrl-C to the parent, which stops the run and keeps what is finished;
    # a worker killed mid-round would only break the pool.  SIGTERM kills a worker outright
    # (the parent's handler, which stops a run cleanly, is for the parent).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # A parent killed outright (SIGKILL, a crash) must not leave workers behind: on Linux the
    # kernel kills them with it (prctl PR_SET_PDEATHSIG); a parent gone before that: exit now.
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def _round_job(args: tuple) -> tuple[int, RoundResult | None, str | None]:
    evaluator, index, task, max_evals, seed, initial, time_limit, known = args
    try:
        return index, evaluator.tune(task, max_evals, seed, initial, time_limit, known), None
    except Exception as e:  # a task that cannot be tuned keeps its baseline; the run goes on
        return index, None, f"{type(e).__name__}: {e}"


class WorkerPool:
    """Runs rounds of task tuning in this process (parallel 1) or in worker processes."""

    def __init__(self, parallel: int):
        self.parallel = parallel
        self.pool: cf.ProcessPoolExecutor | None = None

    def run(self, jobs: list[tuple]) -> Iterator[tuple[int, RoundResult | None, str | None]]:
        """Yield each job's result as soon as it is finished (completion order)."""
        if self.parallel <= 1 or len(jobs) <= 1:
            for j in jobs:
                yield _round_job(j)
            return
        if self.pool is None:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
            self.pool = cf.ProcessPoolExecutor(max_workers=self.parallel, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),))
        futures = [self.pool.submit(_round_job, j) for j in jobs]
        try:
            for f in cf.as_completed(futures):
                yield f.result()
        except cf.process.BrokenProcessPool as e:
            raise RuntimeError(f"a tuning worker process died ({e}); results stored so far are in the bank") from None

    def close(self, wait: bool = True) -> None:
        """Shut the workers down; queued rounds are cancelled.  wait=False (after Ctrl-C)
        returns at once: running rounds finish in the background and are dropped."""
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)
            self.pool = None


def schedule(to_tune: list[TaskState], evaluator: TaskEvaluator, pool: WorkerPool, *, seed: int, budget: int,
             round_evals: int, deadline: float | None, on_result: Callable[[TaskState], None],
             notify: Callable[[list[TaskState]], None]) -> bool:
    """Tune `to_tune` in rounds: every task once (heaviest first, so that a time limit cuts
    the light ones), then the tasks of largest priority (:meth:`TaskState.priority`),
    `pool.parallel` at a time, until the evaluation budget, the deadline or every task is
    spent.  `on_result(state)` runs after each finished round (the job stores winners at
    once, so a kill loses only the tasks still running); `notify(running)` reports progress.

    Ctrl-C stops the run: rounds still running are dropped, every finished one is kept, and
    the return value is True (False when the run ended by itself)."""
    interrupted = False
    try:
        round_no = 0
        first = sorted(to_tune, key=lambda s: (-s.task.occurrences * (s.baseline_us if s.baseline_tiling
                                                                       else 0.0), s.task.index))
        by_index = {s.task.index: s for s in to_tune}
        first_share = budget // max(len(first), 1)
        pending = list(first)  # the first round; under a deadline, one wave of `parallel` tasks at a time
        while True:
            if pending:
                batch = pending if deadline is None else pending[:pool.parallel]
                pending = pending[len(batch):]
            else:
                cands = sorted((s for s in to_tune if not s.done and s.priority() > 0),
                               key=lambda s: (-s.priority(), s.task.index))
                batch = cands[:pool.parallel]
            if not batch or (round_no > 0 and budget <= 0):
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break  # tasks not reached keep their default tiling
            per_job_time = None
            if remaining is not None:
                waves = -(-(len(batch) + len(pending)) // pool.parallel)
                per_job_time = max(remaining / waves, 0.05)
            # A round never spends more than its share of the budget left: the first round
            # shares it among every task, later rounds among the batch.
            share = first_share if round_no == 0 else budget // len(batch)
            evals = max(1, min(round_evals, share))
            jobs = [(evaluator, s.task.index, s.task, evals, _seed_for(seed, s.task.key, round_no),
                     (s.warm if round_no == 0 else [s.best_tiling] if s.best_tiling else []), per_job_time,
                     s.known() if evaluator.remember_rounds else None) for s in batch]
            running = list(batch)
            notify(running)
            for index, res, err in pool.run(jobs):
                st = by_index[index]
                st.apply(res, err)
                budget -= res.evaluations if res else 0
                on_result(st)
                running.remove(st)
                notify(running)
            if not pending:  # the first round ends with its last wave
                round_no += 1
    except KeyboardInterrupt:
        interrupted = True
    finally:
        pool.close(wait=not interrupted)
    return interrupted
