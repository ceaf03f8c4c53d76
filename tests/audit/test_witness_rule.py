"""One witness-run record, one validation rule and one counting engine for both forms of the
audit: a run is read from its pytest record, judged by the same rule whatever the form, and
counted by the same engine; a record vouch cannot read is vouch's failure, never a verdict."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from _results import run_result
from vouch.audit._validation import FUNCTION, REPOSITORY, Rejudged, validate
from vouch.audit.function import _witness
from vouch.audit.function._runs import Engine
from vouch.audit.repository import _runs as repository_runs
from vouch.core import RunRecord
from vouch.exec import Batches, Executor, RunResult, RunSpec, Status
from vouch.swebench import Runner
from vouch.worlds import World

FILE = "test_witness_0.py"
NODE = f"vouch_witness/{FILE}::test_it"


def _result(value: Any, status: Status = Status.OK) -> RunResult:
    return run_result(status, value=value)


def _record(outcome: str, exception: str | None = None, message: str = "m") -> dict[str, Any]:
    failures = {NODE: {"exception": exception, "message": message, "when": "call"}} if exception else {}
    return {"exit_code": int(outcome != "passed"), "outcomes": {NODE: outcome}, "failures": failures}


PASSES = _record("passed")
ASSERTS = _record("failed", "AssertionError", "assert 1 == 2")
MALFORMED = [
    {"exit_code": 1, "outcomes": {NODE: 7}},
    {"exit_code": 1, "outcomes": [[NODE, "failed"]]},
    {"exit_code": 1, "outcomes": {NODE: "failed"}, "failures": {NODE: "AssertionError"}},
    {"exit_code": "1", "outcomes": {NODE: "failed"}},
    {"tests": {NODE: {"outcome": "failed", "exception": "AssertionError"}}},
]


@pytest.mark.parametrize("value", MALFORMED)
def test_a_pytest_record_vouch_cannot_read_leaves_the_witness_incomplete_in_the_repository_form(
    value: dict[str, Any],
) -> None:
    validation = repository_runs._validate([_result(PASSES)] * 3, [_result(value)] * 3, FILE, "P", (True, "holds"))
    assert not validation.valid and not validation.complete
    assert validation.reason is not None and validation.reason.startswith("vouch could not run it in R[s]")
    assert all(r.outcome == "infrastructure" for r in validation.model_runs)


@pytest.mark.parametrize("value", MALFORMED)
def test_a_pytest_record_vouch_cannot_read_is_vouchs_failure_in_the_function_form(value: dict[str, Any]) -> None:
    run = _witness.record("model", _result(value))
    assert run.outcome == "infrastructure"
    assert run.message is not None and "pytest record" in run.message


def test_both_forms_read_a_witness_run_from_the_same_record() -> None:
    function_record = {**ASSERTS, "crashes": {NODE: "AssertionError: assert 1 == 2"}}
    assert _witness.record("model", _result(function_record)) == RunRecord(
        world="model", outcome="fail", exception="AssertionError", message="AssertionError: assert 1 == 2"
    )
    assert repository_runs.record_witness_run("model", _result(ASSERTS), FILE) == RunRecord(
        world="model", outcome="fail", exception="AssertionError", message="assert 1 == 2"
    )
    assert repository_runs.record_witness_run("model", _result(PASSES), "test_other.py").exception == "NoTests"


def _runs(world: str, outcome: str, exception: str | None = None, n: int = 3) -> list[RunRecord]:
    return [RunRecord(world=world, outcome=outcome, exception=exception, message="m") for _ in range(n)]  # type: ignore[arg-type]


G_PASSES = _runs("reference", "pass")
S_ASSERTS = _runs("model", "fail", "AssertionError")
CASES = [
    ("refutes", _runs("reference", "pass"), _runs("model", "fail", "AssertionError"), True, True),
    ("pytest.fail", _runs("reference", "pass"), _runs("model", "fail", "Failed"), True, True),
    ("passes in s", _runs("reference", "pass"), _runs("model", "pass"), False, True),
    ("raises in s", _runs("reference", "pass"), _runs("model", "error", "TypeError"), False, True),
    (
        "flaky in s",
        _runs("reference", "pass"),
        S_ASSERTS[:2] + _runs("model", "pass", n=1),
        False,
        True,
    ),
    ("fails on G", _runs("reference", "fail", "AssertionError"), _runs("model", "fail", "AssertionError"), False, True),
    ("stops in s", _runs("reference", "pass"), _runs("model", "timeout"), False, False),
    ("killed in s", _runs("reference", "pass"), _runs("model", "error", "RunError"), False, False),
    (
        "vouch in G",
        _runs("reference", "infrastructure", "VouchError"),
        _runs("model", "fail", "AssertionError"),
        False,
        False,
    ),
    ("vouch in s", _runs("reference", "pass"), _runs("model", "infrastructure", "VouchError"), False, False),
]


@pytest.mark.parametrize(("name", "reference", "model", "valid", "complete"), CASES, ids=[c[0] for c in CASES])
def test_one_rule_decides_every_case_alike_in_both_forms(
    name: str, reference: list[RunRecord], model: list[RunRecord], valid: bool, complete: bool
) -> None:
    holds = Rejudged(True, "holds")
    for form in (FUNCTION, REPOSITORY):
        validation = validate(reference, model, holds, form, problem="P")
        assert (validation.valid, validation.complete) == (valid, complete), form.name
    # Each form's own entry point is this rule.
    assert _witness.judge(reference, model, None).valid == valid
    assert validate(reference, model, Rejudged(False, "outside P"), REPOSITORY, "P").valid is False


def test_a_stopped_g_run_is_the_one_difference_a_form_decides() -> None:
    """G answered the input during the function form's search: a G run that stops decides nothing
    there; a repository test that stops in R[G] is no witness."""
    reference = _runs("reference", "pass", n=2) + _runs("reference", "timeout", n=1)
    model = _runs("model", "fail", "AssertionError")
    holds = Rejudged(True, "holds")
    assert validate(reference, model, holds, FUNCTION).complete is False
    assert validate(reference, model, holds, REPOSITORY, "P").complete is True


class Scripted(Executor):
    """Answers every run with the value its name maps to, at once."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def submit(self, spec: RunSpec, service: Any = None) -> Future[RunResult]:
        future: Future[RunResult] = Future()
        future.set_result(replace(_result(self.values[spec.name]), duration_s=0.5))
        return future

    def close(self) -> None:
        """Nothing to close."""


def _specs(runner: Runner, names: Iterable[str]) -> list[RunSpec]:
    world = World(path=Path("/nonexistent"), key="w", commit="", patches=())
    return [runner.spec(world, "run_tests", [], {"root": "/nonexistent"}, name=name) for name in names]


def test_both_forms_count_with_one_engine_and_a_test_run_vouch_cannot_read_is_a_fault() -> None:
    values = {"good": PASSES, "forged": {"exit_code": 0, "outcomes": {NODE: 1}}}
    runner = Runner(Scripted(values))
    engine = Engine(Scripted(values), None)
    assert isinstance(runner, Batches) and isinstance(engine, Batches)
    results = runner.batch(_specs(runner, ["good", "forged"]), "witnesses")
    assert [r.value for r in results] == [values["good"], values["forged"]]
    assert [f.run for f in runner.faults] == ["forged"]
    assert runner.faults_since(0) is not None and "pytest record" in (runner.faults_since(0) or "")
    engine.run(_specs(runner, ["good", "forged"]), "witnesses")
    assert engine.faults == []  # the function form's stages read their records where they judge them
    for counted in (runner, engine):
        assert counted.executions == 2
        assert counted.stages()["stage_runs"] == {"witnesses": 2}
        assert counted.stages()["stage_run_seconds"] == {"witnesses": 1.0}


REPLAYS = [
    ("refutes", _runs("reference", "pass"), _runs("model", "fail", "AssertionError"), "witness holds", 0),
    # The function form reads any failed test as "fail": the rule asks for an assertion.
    ("fails in s by a TypeError", _runs("reference", "pass"), _runs("model", "fail", "TypeError"), "does NOT hold", 1),
    ("passes in s", _runs("reference", "pass"), _runs("model", "pass"), "does NOT hold", 1),
    ("fails on G", _runs("reference", "fail", "AssertionError"), S_ASSERTS, "does NOT hold", 1),
    ("times out in s", _runs("reference", "pass"), _runs("model", "timeout"), "undecided", 4),
    ("killed in s", _runs("reference", "pass"), _runs("model", "error", "RunError"), "undecided", 4),
    ("vouch in s", _runs("reference", "pass"), _runs("model", "infrastructure", "VouchError"), "could not run", 3),
]


@pytest.mark.parametrize(("name", "reference", "model", "says", "code"), REPLAYS, ids=[r[0] for r in REPLAYS])
def test_a_replay_is_judged_by_the_audits_rule(
    name: str, reference: list[RunRecord], model: list[RunRecord], says: str, code: int
) -> None:
    """``vouch audit replay`` (both forms) answers as validation does: a witness the audit discards
    does not hold, and one whose runs did not complete is undecided, never "does NOT hold"."""
    from vouch.audit._validation import replayed
    from vouch.cli._audit import replay_answer

    for form in (FUNCTION, REPOSITORY):
        validation = replayed(reference, model, form)
        assert validation.valid == (code == 0)
        answer, exit_code = replay_answer(validation)
        assert (says in answer, exit_code) == (True, code), (form.name, answer)


def test_the_second_rule_is_gone() -> None:
    assert not hasattr(_witness, "holds")
