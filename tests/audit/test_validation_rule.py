"""The one validation rule: which failures count, in which world, how many runs."""

from __future__ import annotations

import pytest

from vouch.audit import AuditConfig
from vouch.audit.function import _witness
from vouch.audit.repository import _runs as repository_runs
from vouch.core import ASSERTION_FAILURES, RunRecord


def _runs(world: str, outcome: str, exception: str | None = None, n: int = 3) -> list[RunRecord]:
    return [RunRecord(world=world, outcome=outcome, exception=exception) for _ in range(n)]  # type: ignore[arg-type]


def test_both_forms_count_the_same_failures_three_runs_a_world() -> None:
    assert ASSERTION_FAILURES == ("AssertionError", "Failed")
    assert repository_runs._PASSING_FAILURES is ASSERTION_FAILURES
    assert AuditConfig().repeats == 3


@pytest.mark.parametrize("exception", ASSERTION_FAILURES)
def test_a_witness_failing_by_an_assertion_every_time_on_s_and_passing_on_g_is_valid(exception: str) -> None:
    assert _witness.judge(_runs("reference", "pass"), _runs("model", "fail", exception), None).valid


@pytest.mark.parametrize(
    ("reference", "model", "why"),
    [
        (_runs("reference", "pass"), _runs("model", "fail", "TypeError"), "by an assertion"),
        (_runs("reference", "pass"), _runs("model", "timeout"), "by an assertion"),
        (
            _runs("reference", "pass"),
            _runs("model", "fail", "AssertionError", 2) + _runs("model", "pass", n=1),
            "by an assertion",
        ),
        (_runs("reference", "pass"), [], "by an assertion"),
        (
            _runs("reference", "pass", n=2) + _runs("reference", "fail", "AssertionError", 1),
            _runs("model", "fail", "AssertionError"),
            "on G",
        ),
    ],
)
def test_anything_else_is_no_refutation(reference: list[RunRecord], model: list[RunRecord], why: str) -> None:
    validation = _witness.judge(reference, model, None)
    assert not validation.valid and why in (validation.reason or "")


def test_an_input_outside_p_is_no_refutation_however_it_runs() -> None:
    validation = _witness.judge(_runs("reference", "pass"), _runs("model", "fail", "AssertionError"), "n < 0")
    assert not validation.valid and "re-judging" in (validation.reason or "")


@pytest.mark.parametrize(("judged", "outcome"), [(True, "error"), (False, "infrastructure")])
def test_an_unreadable_pytest_record_is_vouchs_failure_only_before_judged_code_started(
    judged: bool, outcome: str
) -> None:
    from _results import run_result
    from vouch.audit._validation import FUNCTION, witness_run

    result = run_result(value={"tests": "a record a trial wrote with the frame's nonce"}, judged=judged)
    assert witness_run("model", result, FUNCTION).outcome == outcome
