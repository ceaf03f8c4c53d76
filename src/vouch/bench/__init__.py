"""Verifier scoring: decisions of verifiers on hidden cases (and, later, the metrics)."""

from __future__ import annotations

from vouch.bench._challenge import ChallengeReport, ChallengeRow, run_challenge
from vouch.bench._challenge_public import Derived, load_public_task
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
    preload_for,
    replay_calls,
)
from vouch.bench._metrics import CaseOutcome, paired_difference, score
from vouch.bench._references import check_references
from vouch.bench._score import (
    BASELINES,
    decide_stored,
    decide_stored_verifiers,
    load_verifiers,
    results_object,
    run_verifiers,
    trivial_rows,
)
from vouch.bench._sealed import SEALED_PACKAGES, SealedExecutor, sealed_executor, sealed_paths

__all__ = [
    "BASELINES",
    "PRELOAD",
    "SEALED_PACKAGES",
    "CaseOutcome",
    "ChallengeReport",
    "ChallengeRow",
    "Decision",
    "DecisionResult",
    "Derived",
    "SealedExecutor",
    "Task",
    "candidate_call",
    "check_references",
    "classify",
    "decide_cases",
    "decide_stored",
    "decide_stored_verifiers",
    "load_public_task",
    "load_task",
    "load_tasks",
    "load_verifiers",
    "paired_difference",
    "preload_for",
    "replay_calls",
    "results_object",
    "run_challenge",
    "run_verifiers",
    "score",
    "sealed_executor",
    "sealed_paths",
    "trivial_rows",
]
