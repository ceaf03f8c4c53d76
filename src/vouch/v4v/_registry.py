"""V4V's checks, declared in one place: what each is called, how it runs and how it is reported.

``vouch.v4v.run_v4v`` runs the entries (``run``, after the engine ``stages`` they need) and
the V4V page (``vouch.report``) shows them (``label``, ``evidence``); nothing else lists the
checks. This module imports nothing of vouch but ``vouch.errors``: the page reads it without
importing the engine.
Functions are named as ``module:function`` and imported only by whoever calls them.
docs/extending.md says how to add a check.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vouch.errors import UsageError

STAGES = ("replay", "repeats", "mutants")
"""What ``run_v4v`` computes through the engine before any check runs, when a chosen check
needs it: ``replay``, the reference verifier's decision on every case (in a pool of its own);
``repeats``, the same decisions again in fresh pools with other hash seeds and orders;
``mutants``, the mutation check's results (with the reference's decisions, made in the same
pool when no ``replay`` stage ran)."""


@dataclass(frozen=True)
class V4VCheck:
    """One V4V check."""

    name: str
    """The check's key in ``vouch v4v --json`` and in ``--checks``."""
    label: str
    """What the V4V page calls it: its number in the paper's order, then its name."""
    summary: str
    """What a task must satisfy to pass it, as the page's glossary says it."""
    run: str
    """``module:function`` called as ``function(task, inputs)`` with a ``vouch.v4v._checks.CheckInputs``;
    returns the task's ``CheckResult``."""
    evidence: str | None
    """``module:function`` that renders the check's evidence on the V4V page (``function(evidence)``
    returns the HTML and the evidence keys it showed); None: a key/value table of it."""
    stages: tuple[str, ...] = ()
    """The ``STAGES`` its ``run`` reads from the inputs."""


_CHECKS = "vouch.v4v._checks"
_PAGE = "vouch.report._v4v"

V4V_CHECKS: tuple[V4VCheck, ...] = (
    V4VCheck(
        name="replay",
        label="C1 replay",
        summary="the reference verifier's decision on every case equals the case's label; the gold passes.",
        run=f"{_CHECKS}:run_replay",
        evidence=f"{_PAGE}:replay_evidence",
        stages=("replay",),
    ),
    V4VCheck(
        name="repeatability",
        label="C2 repeatability",
        summary="runs in fresh pools, with other hash seeds and case orders, give identical decisions.",
        run=f"{_CHECKS}:run_repeatability",
        evidence=f"{_PAGE}:repeatability_evidence",
        stages=("replay", "repeats"),
    ),
    V4VCheck(
        name="provenance",
        label="C3 provenance",
        summary=(
            "every case's content hash matches; positives trace to the gold; every case records how it was built."
        ),
        run=f"{_CHECKS}:run_provenance",
        evidence=f"{_PAGE}:problems_evidence",
    ),
    V4VCheck(
        name="label_consistency",
        label="C4 input-label consistency",
        summary=(
            "no two cases with the same canonical candidate and different labels; category agrees with label; "
            "candidates fit their kind's schema."
        ),
        run=f"{_CHECKS}:run_label_consistency",
        evidence=f"{_PAGE}:problems_evidence",
    ),
    V4VCheck(
        name="trivial_baselines",
        label="C5 trivial baselines",
        summary=(
            "always PASS, always FAIL, gold-exact-match, shape-only and the mean of seeded random score at most "
            "the threshold BAnorm."
        ),
        run=f"{_CHECKS}:run_trivial_baselines",
        evidence=f"{_PAGE}:trivial_baselines_evidence",
    ),
    V4VCheck(
        name="mutation",
        label="C6 mutation testing",
        summary=(
            "every mutant of the reference verifier gets a different valid decision (PASS against FAIL) on some "
            "case, or is shown equivalent; a crash or INVALID detects nothing."
        ),
        run=f"{_CHECKS}:run_mutation",
        evidence=f"{_PAGE}:mutation_evidence",
        stages=("mutants",),
    ),
)
"""V4V's checks in the paper's order (VerifierBench section 2.3): the order they run, are
written and are shown in."""

CHECKS = tuple(check.name for check in V4V_CHECKS)
"""The checks' names, in order."""


def check_names() -> tuple[str, ...]:
    """The checks' names, in order (``V4V_CHECKS`` as it is now)."""
    return tuple(check.name for check in V4V_CHECKS)


def find_check(name: str) -> V4VCheck | None:
    """The check called ``name``, or None (a results file may carry checks this vouch does not know)."""
    return next((check for check in V4V_CHECKS if check.name == name), None)


def v4v_check(name: str) -> V4VCheck:
    """The check called ``name``.

    Raises:
        UsageError: no check has that name; the message lists the valid ones.
    """
    check = find_check(name)
    if check is None:
        raise UsageError(f"unknown check {name!r}; valid checks: {', '.join(check_names())}")
    return check


def load_target(target: str) -> Callable[..., Any]:
    """The function a ``module:function`` target names, imported now."""
    module, _, function = target.partition(":")
    loaded: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return loaded
