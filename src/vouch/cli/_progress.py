"""``--progress plain|rich|none``: how long-running commands show their progress.

``rich`` is rich's own live bars; ``plain`` is one line per task on stderr, at most every
``PLAIN_INTERVAL_S`` seconds and when the task ends, with no escape codes (CI logs keep every
frame of a live bar, and a pipe gets nothing until it finishes); ``none`` shows nothing. The
default is ``rich`` when stderr is a terminal and ``plain`` otherwise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import click
from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID, TextColumn

from vouch.cli._terminal import shown

__all__ = [
    "ENV",
    "MODES",
    "PLAIN_INTERVAL_S",
    "Bar",
    "PlainProgress",
    "default_mode",
    "progress_bar",
    "progress_option",
    "stage_progress",
]

MODES = ("plain", "rich", "none")
ENV = "VOUCH_PROGRESS"
PLAIN_INTERVAL_S = 10.0
"""Least seconds between two plain lines of one task (its last line is printed whatever the wait)."""

F = TypeVar("F", bound=Callable[..., Any])


class Bar(Protocol):
    """The part of rich's ``Progress`` the commands use; ``PlainProgress`` has the same."""

    @property
    def console(self) -> Console: ...

    def __enter__(self) -> Bar: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None: ...

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> TaskID: ...

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None: ...

    def advance(self, task_id: TaskID, advance: float = 1) -> None: ...


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    visible: bool
    started: float
    printed_at: float
    changed: bool = False
    finished: bool = False


class PlainProgress:
    """Progress as plain lines: ``[vouch] DESCRIPTION: DONE/TOTAL (P%) ELAPSED s`` on stderr.

    A task prints when ``interval`` seconds have passed since its last line, when it first
    reaches its total, and on leaving the ``with`` block if it changed since its last line.
    Hidden tasks (``visible=False``) print nothing until shown.
    """

    def __init__(self, console: Console, *, interval: float = PLAIN_INTERVAL_S) -> None:
        self._console = console
        self._interval = interval
        self._tasks: dict[TaskID, _Task] = {}

    @property
    def console(self) -> Console:
        """The command's console, for lines printed beside the progress (as with rich's)."""
        return self._console

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        for task in self._tasks.values():
            if task.visible and task.changed:
                self._print(task, time.monotonic())

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> TaskID:
        """A new task; its id for ``update`` and ``advance``."""
        now = time.monotonic()
        task_id = TaskID(len(self._tasks))
        self._tasks[task_id] = _Task(description, total, completed, visible, started=now, printed_at=now)
        return task_id

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None:
        """Change a task as rich's ``Progress.update`` does (None leaves a value as it is)."""
        task = self._tasks[task_id]
        before = (task.description, task.total, task.completed, task.visible)
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if advance is not None:
            task.completed += advance
        if description is not None:
            task.description = description
        if visible is not None:
            task.visible = visible
        # Callers repeat the last count (a stage's batches end on done == total): not a change.
        task.changed = task.changed or before != (task.description, task.total, task.completed, task.visible)
        self._maybe_print(task)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        """Add ``advance`` to a task's completed count."""
        self.update(task_id, advance=advance)

    def _maybe_print(self, task: _Task) -> None:
        if not task.visible:
            return
        now = time.monotonic()
        # A stage can run as several batches, each counting up to its own total: only the first
        # completion prints at once, later ones wait their turn like any other line.
        done = task.total is not None and task.completed >= task.total
        if (done and not task.finished) or (task.changed and now - task.printed_at >= self._interval):
            task.finished = task.finished or done
            self._print(task, now)

    def _print(self, task: _Task, now: float) -> None:
        task.printed_at = now
        task.changed = False
        count = _number(task.completed)
        if task.total is not None:
            count += f"/{_number(task.total)}"
            if task.total > 0:
                count += f" ({100 * task.completed / task.total:.0f}%)"
        # Straight to the stream: the line is not rich markup ("[vouch]" would parse as a tag).
        # Descriptions may name a task or a file of the user's: no control character of theirs is written.
        sys.stderr.write(f"[vouch] {shown(task.description)}: {count} {now - task.started:.1f} s\n")
        sys.stderr.flush()


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def default_mode() -> str:
    """``rich`` when stderr is a terminal, else ``plain``."""
    return "rich" if sys.stderr.isatty() else "plain"


def progress_bar(mode: str | None, *columns: str | ProgressColumn, console: Console) -> Bar:
    """What a command calls instead of ``Progress(*columns, console=console)``.

    Args:
        mode: plain, rich or none; None for the default (``default_mode``).
        *columns: rich's columns, used in rich mode.
        console: The command's stderr console.

    Returns:
        rich's ``Progress`` (rich; disabled for none) or a ``PlainProgress``.
    """
    mode = mode or default_mode()
    if mode == "plain":
        return PlainProgress(console)
    for column in columns:
        # Descriptions name tasks, instances and models from input files: text, never markup.
        if isinstance(column, TextColumn):
            column.markup = False
    return _ShownProgress(*columns, console=console, disable=mode == "none")


def stage_progress(bar: Bar, prefix: str = "") -> Callable[[str, int, int], None]:
    """The ``progress(stage, done, total)`` callback the library's long runs take, shown on
    ``bar`` as one task per stage (named ``prefix`` + the stage), added when it first reports."""
    tasks: dict[str, TaskID] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(prefix + stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return progress


class _ShownProgress(Progress):
    """rich's ``Progress`` whose descriptions (which name tasks, instances and models from input
    files) are shown with their control characters escaped (``_terminal.shown``)."""

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> TaskID:
        return super().add_task(shown(description), start, total, completed, visible, **fields)

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None:
        super().update(
            task_id,
            total=total,
            completed=completed,
            advance=advance,
            description=None if description is None else shown(description),
            visible=visible,
            refresh=refresh,
            **fields,
        )


def progress_option(f: F) -> F:
    """``--progress plain|rich|none`` (or ``$VOUCH_PROGRESS``), passed as ``progress_mode``."""
    return click.option(
        "--progress",
        "progress_mode",
        type=click.Choice(MODES),
        envvar=ENV,
        default=None,
        show_envvar=True,
        help="How progress is shown on stderr: rich bars, plain lines for CI logs and pipes, or none "
        "(default: rich on a terminal, else plain).",
    )(f)
