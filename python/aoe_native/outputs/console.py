"""What the ``aoe`` command shows in a terminal: a live progress bar while tuning and a
summary table after it (both drawn by ``rich``).

Names from the model (graph, node and op names) reach rich as Text objects, never as str:
rich reads a str as markup, so ``net[/b]`` would raise and ``net[red]x`` lose its tag, and
``:smile:`` would become an emoji."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..results import ModelTuneResult, SubgraphTuneResult
from .aoe_files import percent
from .text import shapes_text

__all__ = ["ProgressBar", "summary_table", "subgraph_table"]


class ProgressBar:
    """Progress of a model-tuning job on stderr: tasks finished (converged, exhausted or out
    of budget) of those being tuned, evaluations, the model's gain so far, and the tasks
    running now.  Refreshed on each event, not by a background thread, so that forking
    worker processes never copies a thread holding the terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress: Progress | None = None
        self.bar: Any = None

    def __call__(self, ev: dict[str, Any]) -> None:
        done = ev["stage"] == "done"
        if ev["tasks_total"] == 0:
            if done:
                self.console.print(f"all tasks served from the knowledge bank | gain {percent(ev['gain'])}")
            return

        if self.progress is None:
            # The counts and the gain must stay readable in a narrow terminal: below 100 columns
            # the running tasks go, below 80 the bar too (rich would cut the numbers instead).
            width = self.console.width
            columns: list[Any] = [TextColumn(ev.get("job", "tuning"))]
            if width >= 80:
                columns.append(BarColumn(bar_width=None if width >= 120 else 20))
            columns += [MofNCompleteColumn(), TextColumn("tasks"),
                        TextColumn("| {task.fields[evals]:,} " + ("evaluations" if width >= 100 else "evals") +
                                   " | gain {task.fields[gain]}"), TimeElapsedColumn()]
            if width >= 100:  # op types and shapes of the running tasks: shown as they are, not as markup
                columns.append(TextColumn("{task.fields[now]}", markup=False))
            self.progress = Progress(*columns, console=self.console, auto_refresh=False, transient=False)
            self.progress.start()
            self.bar = self.progress.add_task("tuning", total=ev["tasks_total"], evals=0, gain="", now="")
        running = ev["current"]
        now = "" if done or not running else "| " + ", ".join(running[:2]) + (" ..." if len(running) > 2 else "")
        self.progress.update(self.bar, completed=ev["tasks_done"], evals=ev["evaluations"],
                             gain=percent(ev["gain"]), now=now)
        self.progress.refresh()
        if done:
            self.progress.stop()
            self.progress = None  # a next job (operator tuning after subgraph tuning) gets its own bar


def _table(title: str, columns: list[tuple[str, str]], wrap: str, narrow: bool) -> Table:
    """A summary table; `wrap` is the column that folds (names, shapes) rather than lose
    characters to an ellipsis.  Narrow (a terminal under 80 columns): no outer border and no
    update-mode column (the repo summary line below the table counts the modes)."""
    # The title holds the model's name: a Text, styled as rich styles a str title.
    table = Table(title=Text(title, style="table.title"), title_justify="left", show_edge=not narrow)
    for name, justify in columns:
        if narrow and name == "mode":
            continue
        table.add_column(name, justify=justify,  # type: ignore[arg-type]
                         overflow="fold" if name == wrap else "ellipsis", min_width=12 if name == wrap else None)
    return table


def summary_table(r: ModelTuneResult, rows: int = 10, narrow: bool = False) -> Table:
    """The tasks that gained most model time (occurrences x time saved), largest first."""
    table = _table(f"{r.model_name}: top tasks by model time saved",
                   [("op", "left"), ("input shapes", "left"), ("x", "right"), ("default us", "right"),
                    ("tuned us", "right"), ("gain", "right"), ("mode", "left")], "input shapes", narrow)
    ranked = sorted(r.tasks, key=lambda t: -t.occurrences * (t.baseline_us - t.time_us))
    for t in ranked[:rows]:
        table.add_row(Text(t.op_type), shapes_text(t.inputs, "\n"), str(t.occurrences),
                      f"{t.baseline_us:.2f}", f"{t.time_us:.2f}", percent(t.improvement),
                      *([] if narrow else [t.update_mode]))
    return table


def subgraph_table(r: SubgraphTuneResult, rows: int = 10, narrow: bool = False) -> Table:
    """The subgraphs whose tuning saved most model time (occurrences x time saved)."""
    table = _table(f"{r.model_name}: top subgraphs by model time saved",
                   [("first .. last node", "left"), ("x", "right"), ("kernels", "right"), ("before us", "right"),
                    ("after us", "right"), ("gain", "right"), ("mode", "left")], "first .. last node", narrow)
    ranked = sorted(r.subgraphs, key=lambda g: -g.occurrences * (g.before_us - g.after_us))
    for g in ranked[:rows]:
        before, after = g.kernel_us(r.launch_overhead_us)  # as the operator table shows a kernel
        table.add_row(Text(f"{g.nodes[0]} ..\n{g.nodes[-1]}"), str(g.occurrences),
                      f"{len(g.before_kernels)} -> {len(g.after_kernels)}", f"{before:.2f}",
                      f"{after:.2f}", percent(g.improvement), *([] if narrow else [g.update_mode]))
    return table
