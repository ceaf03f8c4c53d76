"""The ``challenge`` tool: the variant challenger (``vouch.bench._challenge``), imported lazily.

The challenger derives permitted variants and violations of a candidate from the task's public
materials and runs the verifier on each; the tool hands the agent its summary: permitted
variants the verifier rejects (unjustified checks) and violations it accepts.

The challenger hides the task's own withheld directories from its runs; the agent's verifier
must not read the rest of the tasks root or the output root either, so every run the
challenger starts goes through the toolbox's ``HidingExecutor``, which adds the agent's hidden paths.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from vouch.bench import Task
from vouch.errors import UsageError
from vouch.exec import Executor

MODULE = "vouch.bench._challenge"


def available() -> bool:
    """Whether this installation has the challenger."""
    return importlib.util.find_spec(MODULE) is not None


def run_challenge(
    executor: Executor, task: Task, verifier: str, candidate: dict[str, Any]
) -> tuple[str | None, str, dict[str, Any]]:
    """Run the challenger; returns (error or None, text for the model, data for the trace).

    ``executor`` must add the agent's hidden paths to every run (the toolbox's does).
    """
    if not available():
        return "the challenger is not available in this installation", "", {}
    module = importlib.import_module(MODULE)
    try:
        report = module.run_challenge(task, verifier, candidate, executor)
    except UsageError as exc:
        return str(exc), "", {}
    counts: dict[str, Any] = report.to_json()["counts"]
    return None, report.summary(), {"counts": counts}
