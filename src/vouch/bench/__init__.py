"""Verifier scoring: decisions of verifiers on hidden cases (and, later, the metrics)."""

from __future__ import annotations

from vouch.bench._canary import check_pool, raise_if_errors
from vouch.bench._challenge import ChallengeReport, ChallengeRow, run_challenge
from vouch.bench._challenge_public import Derived, load_public_task
from vouch.bench._decide import (
    PRELOAD,
    CallAnswers,
    Decision,
    DecisionResult,
    Task,
    candidate_call,
    classify,
    decide_cases,
    load_task,
    load_tasks,
    preload_for,
    public_tests,
    replay_calls,
)
from vouch.bench._metrics import CaseOutcome, paired_difference, score
from vouch.bench._references import check_references
from vouch.bench._score import (
    BASELINES,
    DecisionRow,
    decide_stored,
    decide_stored_verifiers,
    load_verifiers,
    results_object,
    run_verifiers,
    trivial_rows,
)
from vouch.bench._sealed import SEALED_PACKAGES, SealedExecutor, sealed_executor, sealed_paths
from vouch.bench._share import share_key, verifier_identity

__all__ = [
    "BASELINES",
    "PRELOAD",
    "SEALED_PACKAGES",
    "CallAnswers",
    "CaseOutcome",
    "ChallengeReport",
    "ChallengeRow",
    "Decision",
    "DecisionResult",
    "DecisionRow",
    "Derived",
    "SealedExecutor",
    "Task",
    "candidate_call",
    "check_pool",
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
    "public_tests",
    "raise_if_errors",
    "replay_calls",
    "results_object",
    "run_challenge",
    "run_verifiers",
    "score",
    "sealed_executor",
    "sealed_paths",
    "share_key",
    "trivial_rows",
    "verifier_identity",
]
