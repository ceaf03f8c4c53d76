"""The pool's known-answer check: before a verifier is scored, vouch proves it can decide.

A tiny built-in code task (``add``) with a gold and a wrong candidate, and a built-in verifier
that calls the candidate through ``env.call``: through the same path as every scored decision
(a multi-case run, a candidate session per case), it must PASS the gold and FAIL the wrong one.
When it does not, vouch's pool is broken, and any decision it made would say more about vouch
than about the verifier: the command stops with one line instead.
"""

from __future__ import annotations

from pathlib import Path

from vouch.bench._decide import Decision, DecisionResult, Task, decide_cases
from vouch.core import Case, Provenance, SourceInfo, TaskSpec, content_hash
from vouch.errors import InfrastructureError
from vouch.exec import Executor

CANARY_VERIFIER = (
    "def verify(candidate, env):\n"
    "    answer = env.call('add', [2, 3])\n"
    "    return answer['ok'] is True and answer['value'] == 5\n"
)
_GOLD = "def add(a, b):\n    return a + b\n"
_WRONG = "def add(a, b):\n    return a - b\n"


class PoolBroken(InfrastructureError):
    """vouch's pool failed its known-answer check: it cannot be trusted to decide cases."""


def _case(case_id: str, source: str, *, gold: bool) -> Case:
    candidate = {"source": source}
    return Case(
        id=case_id,
        label="positive" if gold else "negative",
        category="gold" if gold else "error",
        subcategory="gold" if gold else "wrong_value",
        candidate=candidate,
        provenance=Provenance(construction="canary", content_hash=content_hash(candidate)),
        rationale="vouch's known-answer check",
    )


def canary_task() -> Task:
    """The built-in task: ``add(a, b)``, a gold and a wrong candidate."""
    spec = TaskSpec(
        id="vouch-canary",
        kind="code",
        source=SourceInfo(benchmark="vouch", version="1", original_id="canary"),
        entry_point="add",
    )
    cases = [_case("gold", _GOLD, gold=True), _case("wrong", _WRONG, gold=False)]
    return Task(root=Path("/nonexistent/vouch-canary"), spec=spec, tools=[], public_tests=None, cases=cases)


def check_pool(executor: Executor) -> None:
    """Decide the built-in task with the built-in verifier; raise ``PoolBroken`` (one line)
    unless the gold is PASS and the wrong candidate FAIL."""
    task = canary_task()
    try:
        results = decide_cases(executor, [(task, case, CANARY_VERIFIER) for case in task.cases])
    except Exception as exc:  # noqa: BLE001 - any failure here is the pool's
        raise PoolBroken(f"vouch's pool failed its known-answer check: {exc}"[:400]) from None
    wanted = [Decision.PASS, Decision.FAIL]
    if [r.decision for r in results] != wanted:
        raise PoolBroken(
            "vouch's pool failed its known-answer check (a built-in verifier on a built-in task must PASS the "
            f"gold and FAIL the wrong candidate; it got {_shown(results)}): no decision was made; check the "
            "installation and the sandbox (vouch exec check)"
        )


class DecisionsFailed(InfrastructureError):
    """Some decisions were ERROR: vouch failed while making them (the others are kept)."""


def raise_if_errors(count: int, what: str = "decisions") -> None:
    """End a command that made ``count`` ERROR decisions with one line (exit 3), after its
    results were written."""
    if count:
        raise DecisionsFailed(
            f"{count} {what} failed for vouch's own reasons (ERROR, with the reason in the results; not "
            "counted for or against any verifier and not stored): run the command again to decide them"
        )


def _shown(results: list[DecisionResult]) -> str:
    return ", ".join(f"{r.decision.value}" + (f" ({r.reason})" if r.reason else "") for r in results)[:300]
