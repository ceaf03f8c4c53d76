"""Run each task's reference verifier on its own cases and list where it disagrees with a label.

A disagreement is kept and flagged, never fixed here: deciding between label and verifier is
the audit's job (V4V).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vouch.bench._decide import Decision, Task, decide_cases, load_task
from vouch.core import Case, FlaggedCase
from vouch.exec import Executor


def check_references(
    executor: Executor,
    tasks_dir: Path,
    task_ids: list[str],
    progress: Callable[[int, int], None] | None = None,
) -> list[FlaggedCase]:
    """Decide every case of the named tasks with the task's reference verifier."""
    items: list[tuple[Task, Case, str | None]] = []
    for task_id in task_ids:
        task = load_task(tasks_dir / task_id)
        reference = (task.root / "reference" / "verifier.py").read_text()
        items.extend((task, case, reference) for case in task.cases)
    results = decide_cases(executor, items, progress=progress)
    flagged = []
    for (task, case, _), result in zip(items, results, strict=True):
        expected = Decision.PASS if case.label == "positive" else Decision.FAIL
        if result.decision is not expected:
            flagged.append(
                FlaggedCase(
                    task_id=task.id,
                    case_id=case.id,
                    label=case.label,
                    reference_decision=result.decision.value,
                    reason=result.reason,
                )
            )
    return flagged
