"""Verifier scoring: decisions of verifiers on hidden cases (and, later, the metrics)."""

from __future__ import annotations

from vouch.bench._decide import (
    PRELOAD,
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
from vouch.bench._references import check_references

__all__ = [
    "PRELOAD",
    "Decision",
    "DecisionResult",
    "Task",
    "candidate_call",
    "check_references",
    "classify",
    "decide_cases",
    "load_task",
    "load_tasks",
    "replay_calls",
]
