"""The ``challenge`` tool: the variant challenger (``vouch.bench._challenge``), imported lazily.

The challenger derives permitted variants and violations of a candidate from the task's public
materials and runs the verifier on each; the tool hands the agent the findings: permitted
variants its verifier rejects (unjustified checks) and violations it accepts.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
from typing import Any

from vouch.bench import Task
from vouch.exec import Executor

MODULE = "vouch.bench._challenge"


def available() -> bool:
    """Whether this installation has the challenger."""
    return importlib.util.find_spec(MODULE) is not None


def _data(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def run_challenge(
    executor: Executor, task: Task, verifier: str, candidate: dict[str, Any], hidden: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """Run the challenger; returns (text for the model, data for the trace)."""
    if not available():
        return "error: the challenger is not available in this installation", {"unavailable": True}
    module = importlib.import_module(MODULE)
    result = _data(module.challenge(executor, task, verifier, candidate, hide=hidden))
    findings = {
        "rejected_permitted": result.get("rejected_permitted", []),
        "accepted_violations": result.get("accepted_violations", []),
    }
    text = json.dumps(findings, default=str)
    return text, {
        "rejected_permitted": len(findings["rejected_permitted"]),
        "accepted_violations": len(findings["accepted_violations"]),
    }
