"""Verifier scoring: decisions of verifiers on hidden cases (and, later, the metrics)."""

from __future__ import annotations

from vouch.bench._decide import (
    Decision,
    DecisionResult,
    Task,
    candidate_call,
    classify,
    decide_cases,
    load_task,
    load_tasks,
    replay_calls,
)

__all__ = [
    "Decision",
    "DecisionResult",
    "Task",
    "candidate_call",
    "classify",
    "decide_cases",
    "load_task",
    "load_tasks",
    "replay_calls",
]
