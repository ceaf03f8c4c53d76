"""The one validation rule of a witness, for both forms of the audit.

A witness refutes a trial when it passes in R[G] every time and fails in R[s] every time by an
assertion (``ASSERTION_FAILURES``), and re-judging holds that its input is one P allows. Each run
is first read into a ``RunRecord`` (``witness_run``) from the run's ``PytestRun``; then
``validate`` judges the records of both worlds. Whose outcome each run is decides what a witness
that is not valid means for its trial:

- a run vouch could not run (``infrastructure``, either world: ``vouch.exec.vouch_failure``, a
  pytest record that cannot be read, the judged program's process not set up) decides nothing:
  the witness is incomplete, and its trial ``error`` (vouch's own);
- every R[G] run passed and an R[s] run did not complete (timeout, killed, no test collected)
  while none passed: the trial does not pass a test G passes, but no assertion says which value
  is wrong: incomplete too;
- any other failure is decided: the witness is discarded with the reason.

What differs between the forms is a ``WitnessForm``: how a run of the form is read (which line
describes a failure, whether the program runs apart from its witness), whether a G run that
stopped decides anything, whether a failure on a name P never mentions is told apart, and the
words of each reason. The rule itself is one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vouch.core import ASSERTION_FAILURES, RunRecord, Validation
from vouch.exec import PytestOutcome, PytestRecordError, PytestRun, RunResult, Status, vouch_failure

CHILD_SETUP = "ChildSetupError"
"""The exception a witness run's judge raises when the judged program's process could not be set
up (``vouch.exec._apart``): vouch's failure, reported inside an otherwise complete run."""
INCOMPLETE = ("RunError", "NoTests")
"""``exception`` of a record whose run ended before pytest reported the test: the run was killed,
ran out of memory or crashed as a whole (``RunError``), or pytest collected no test (``NoTests``)."""
NAME_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError", "NameError")
"""Failures on a name: in the repository form, one on a name P never mentions is no refutation."""


@dataclass(frozen=True)
class WitnessForm:
    """What differs between the audit's forms in reading and judging a witness's runs."""

    name: Literal["function", "repository"]
    apart: bool
    """The judged program runs apart from the witness (function form): a ``ChildSetupError`` is
    vouch's failure to set that process up. In the repository form a test may raise any name."""
    failure_line: Literal["crash", "message"]
    """What describes a failing run: pytest's crash line, or the exception's message."""
    fail_needs_assertion: bool
    """A run's record is ``fail`` only when it failed by an assertion (else ``error``); otherwise
    a failed test is ``fail`` whatever its exception (and ``validate`` asks for an assertion)."""
    first_in_run_order: bool
    """The failure that describes a run is its first in the order pytest ran the tests (else the
    first by node id)."""
    stopped_g_decides_nothing: bool
    """A G run that stopped (timeout, killed) while no G run failed and no R[s] run passed leaves
    the witness incomplete: G answered this input before (function form). Otherwise the witness
    is discarded as not passing on G."""


FUNCTION = WitnessForm(
    name="function",
    apart=True,
    failure_line="crash",
    fail_needs_assertion=False,
    first_in_run_order=True,
    stopped_g_decides_nothing=True,
)
REPOSITORY = WitnessForm(
    name="repository",
    apart=False,
    failure_line="message",
    fail_needs_assertion=True,
    first_in_run_order=False,
    stopped_g_decides_nothing=False,
)


@dataclass(frozen=True)
class Rejudged:
    """Re-judging's answer on a witness's input: whether it holds P's preconditions, and why."""

    holds: bool
    note: str


def reported(result: RunResult) -> PytestRun | None:
    """The pytest record of a run that completed, or None: the run failed, or what it reported is
    not a pytest record (``PytestRecordError``); a caller that lists tests lists none then."""
    if not result.ok:
        return None
    try:
        return PytestRun.from_json(result.value)
    except PytestRecordError:
        return None


def witness_run(
    world: str, result: RunResult, form: WitnessForm, file: str | None = None, nodeid: str | None = None
) -> RunRecord:
    """What one run of a witness did in a world: ``pass``, ``fail``, ``error``, ``timeout``, or
    ``infrastructure`` (vouch could not run it, or could not read what the run reported).

    ``file`` restricts the run's tests to those of the file with that base name; ``nodeid`` to
    that one test (a repository's own test run among others).
    """
    kind: Any = world
    why = vouch_failure(result)
    if why is not None:
        return RunRecord(world=kind, outcome="infrastructure", exception="VouchError", message=why[:300])
    if result.status is Status.TIMEOUT:
        return RunRecord(world=kind, outcome="timeout", exception=None, message=result.reason)
    if not result.ok or not isinstance(result.value, dict):
        reason = result.reason if form.name == "function" else (result.reason or "run failed")[:300]
        return RunRecord(world=kind, outcome="error", exception="RunError", message=reason)
    try:
        run = PytestRun.from_json(result.value)
    except PytestRecordError as exc:
        if result.judged:
            # Judged code ran in this process and could write the record: an unreadable one is
            # the run's own outcome, never evidence that vouch failed.
            message = f"the run's pytest record is not one vouch writes: {exc}"
            return RunRecord(world=kind, outcome="error", exception="RunError", message=message[:300])
        message = f"vouch could not read the run's pytest record: {exc}"
        return RunRecord(world=kind, outcome="infrastructure", exception="VouchError", message=message[:300])
    tests: Mapping[str, PytestOutcome]
    if nodeid is not None:
        tests = {nodeid: run.tests[nodeid]} if nodeid in run.tests else {}
        broken = run.tests.get(nodeid.split("::", 1)[0])
        if not tests and broken is not None and broken.when == "collect":
            # Its file did not collect: no test of it ran, which decides nothing about the test.
            message = f"{nodeid.split('::', 1)[0]} does not collect: {broken.message}"
            return RunRecord(world=kind, outcome="error", exception="NoTests", message=message[:300])
    else:
        tests = run.tests if file is None else run.in_file(file)
    if not tests:
        message = "pytest collected no test" if file is None and nodeid is None else f"{nodeid or file}: no test ran"
        return RunRecord(world=kind, outcome="error", exception="NoTests", message=message)
    failed = {nodeid: t for nodeid, t in tests.items() if t.outcome != "passed"}
    if form.apart and any(t.exception == CHILD_SETUP for t in failed.values()):
        return RunRecord(
            world=kind,
            outcome="infrastructure",
            exception="VouchError",
            message="the judged program's process could not be set up",
        )
    if not failed:
        return RunRecord(world=kind, outcome="pass")
    first = failed[next(iter(failed)) if form.first_in_run_order else sorted(failed)[0]]
    return _failing(kind, first, form)


def _failing(kind: Any, test: PytestOutcome, form: WitnessForm) -> RunRecord:
    if form.failure_line == "message":
        exception = test.exception
        by_assertion = test.outcome == "failed" and exception in ASSERTION_FAILURES
        outcome: Any = "fail" if by_assertion else "error"
        return RunRecord(world=kind, outcome=outcome, exception=exception, message=test.message)
    message = test.crash or ""
    exception = test.exception or message.split(":", 1)[0].strip() or "Error"
    outcome = "fail" if test.outcome == "failed" else "error"
    return RunRecord(world=kind, outcome=outcome, exception=exception, message=message[:200])


def incomplete(record: RunRecord) -> bool:
    """The run did not complete: it timed out, was killed, or ran no test (never an assertion)."""
    return record.outcome == "timeout" or (record.outcome == "error" and record.exception in INCOMPLETE)


def validate(
    reference: Sequence[RunRecord],
    model: Sequence[RunRecord],
    rejudged: Rejudged,
    form: WitnessForm,
    problem: str | None = None,
) -> Validation:
    """The witness-run judgement: valid (it refutes the trial), not valid with the reason, or
    incomplete (``complete=False``: vouch's own failure, or a run that did not complete).

    ``reference`` are the witness's runs in R[G] (one per repeat), ``model`` its runs in R[s].
    ``problem`` (P's text), when given, tells a failure on a name P never mentions apart.
    """
    reference, model = list(reference), list(model)
    by_assertion = bool(model) and all(r.outcome == "fail" and r.exception in ASSERTION_FAILURES for r in model)
    reason = None
    complete = True
    vouchs = [r for r in reference + model if r.outcome == "infrastructure"]
    if vouchs:
        reason = f"vouch could not run it in {_world(vouchs[0])}: {vouchs[0].message}"
        complete = False
    elif not all(r.outcome == "pass" for r in reference):
        reason, complete = _not_passing_on_g(reference, model, form)
    elif not by_assertion:
        reason, complete = _not_failing_on_s(model, form, problem)
    elif not rejudged.holds:
        reason = (
            f"re-judging rejected the input: {rejudged.note}"
            if form.name == "function"
            else f"re-judging: {rejudged.note}"
        )
    return Validation(
        reference_runs=reference,
        model_runs=model,
        fails_by_assertion=by_assertion,
        rejudged=rejudged.holds,
        rejudge_note=rejudged.note,
        valid=reason is None,
        reason=reason,
        complete=complete,
    )


REPLAYED = Rejudged(True, "re-judged when the audit validated the witness")
"""Re-judging's answer on a replayed witness: its input is the one the audit re-judged."""


def replayed(
    reference: Sequence[RunRecord], model: Sequence[RunRecord], form: WitnessForm, problem: str | None = None
) -> Validation:
    """A replayed witness judged by the same rule as in the audit (``validate``): it holds when
    the validation is valid; vouch could not run it when a run is ``infrastructure``; it is
    undecided when a run did not complete (``complete`` false otherwise), and does not hold for
    any other reason (a failure in R[s] that is no assertion among them)."""
    return validate(reference, model, REPLAYED, form, problem)


def _not_passing_on_g(reference: list[RunRecord], model: list[RunRecord], form: WitnessForm) -> tuple[str, bool]:
    passes = sum(r.outcome == "pass" for r in reference)
    if form.stopped_g_decides_nothing:
        stopped = [r for r in reference if incomplete(r) and r.exception != "NoTests"]
        if stopped and not any(r.outcome == "fail" for r in reference) and not any(r.outcome == "pass" for r in model):
            # G passed T0 and answered this input during the search: a run of it that stops
            # (a timeout, a kill) is no evidence that the witness is wrong, nor that the trial is right.
            return (
                f"did not complete in R[G] ({stopped[0].outcome}: {stopped[0].message}); "
                f"passed {passes} of {len(reference)}"
            ), False
    if form.name == "function":
        return f"flaky or failing on G: passed {passes} of {len(reference)} runs in R[G]", True
    bad = next(r for r in reference if r.outcome != "pass")
    return f"does not pass in R[G] every time ({bad.outcome}: {bad.message or bad.exception})", True


def _not_failing_on_s(model: list[RunRecord], form: WitnessForm, problem: str | None) -> tuple[str, bool]:
    kinds = sorted({f"{r.outcome}:{r.exception}" for r in model})
    stopped = [r for r in model if incomplete(r)]
    if stopped and not any(r.outcome == "pass" for r in model):
        shown = ", ".join(kinds) if form.name == "function" else f"{stopped[0].outcome}: {stopped[0].message}"
        return (
            f"passes in every R[G] run, and did not complete in R[s] ({shown}): not passing a test "
            "G passes, yet not failing by an assertion: it neither refutes nor clears the trial"
        ), False
    bad = next((r for r in model if not (r.outcome == "fail" and r.exception in ASSERTION_FAILURES)), None)
    if form.name == "function" or bad is None:
        return f"does not fail in R[s] by an assertion every time ({', '.join(kinds)})", True
    if bad.outcome == "pass":
        return "passes in R[s]: no disagreement under pytest", True
    if problem is not None and bad.exception in NAME_ERRORS and not _named_in(bad.message or "", problem):
        return f"fails in R[s] on a name P never mentions ({bad.exception}: {bad.message})", True
    return f"fails in R[s] by {bad.exception or bad.outcome}, not by an assertion", True


def _named_in(message: str, problem: str) -> bool:
    names = re.findall(r"'([A-Za-z_][\w.]*)'", message)
    return bool(names) and all(n.split(".")[-1] in problem for n in names)


def _world(record: RunRecord) -> str:
    return "R[s]" if record.world == "model" else "R[G]"
