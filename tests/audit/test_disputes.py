"""Disputed witnesses: where G's answer is itself in question, a witness flags the trial and
refutes nothing; where most models agree against G, the audit reports a defect of G."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vouch.audit import PRELOAD
from vouch.audit.function._inputs import key
from vouch.audit.function._jobs import ProgramJob, TaskContext
from vouch.audit.function._runs import AuditConfig, Engine
from vouch.audit.function._trial import _rounding_disputes, dispute, g_defects, jury_answer, majority
from vouch.audit.function._witness import WitnessFile
from vouch.core import DetectorFlag, Evidence, Validation, Verdict, Witness, decide_verdict, summarise
from vouch.exec import LocalExecutor
from vouch.sources.trials import load_problems


def _context(jury: dict[str, dict[str, dict[str, int]]], answers: dict[tuple[str, str], str], g: dict[str, Any]) -> Any:
    """A TaskContext with only what the jury rules read (the rest is never touched)."""
    ctx = TaskContext.__new__(TaskContext)
    ctx.jury = jury
    ctx.answers = answers
    ctx.g_answers = {k: ([], v) for k, v in g.items()}
    ctx.pool = None
    return ctx


def _job(program_hash: str, models: dict[str, int]) -> ProgramJob:
    return ProgramJob(task_id="t", hash=program_hash, program="", first_trial="t#0", unparsable=None, models=models)


@pytest.mark.parametrize(
    ("tally", "expected"),
    [
        ({"= 1": 3, "= 2": 1}, "= 1"),
        ({"= 1": 2, "= 2": 2}, None),
        ({"= 1": 1}, "= 1"),
        ({}, None),
    ],
)
def test_a_models_answer_is_the_one_more_than_half_its_trials_give(tally: dict[str, int], expected: str | None) -> None:
    assert majority(tally) == expected


def test_answers_close_to_gs_are_gs_and_errors_are_their_type() -> None:
    assert jury_answer(0.30000000000000004, {"ok": True, "value": 0.30000000000000004}, 0.3) == "= 0.3"
    assert jury_answer(True, {"ok": True, "value": True}, False) == "= true"
    assert (
        jury_answer(None, {"ok": False, "error": "ZeroDivisionError: division by zero"}, 1)
        == "raised ZeroDivisionError"
    )


def test_a_trial_whose_answer_programs_of_every_other_model_give_is_disputed() -> None:
    k = key([[1, -1], 2])
    jury = {k: {"a": {"= 0": 5, "= 1": 1}, "b": {"= 0": 9, "= 1": 1}, "c": {"= 0": 3, "= 1": 2}}}
    answers = {(k, "s"): "= 1"}
    ctx = _context(jury, answers, {k: "= 0"})
    why = dispute(ctx, _job("s", {"a": 1}), [[1, -1], 2])
    assert why is not None and "(b, c)" in why
    # One other model without a program giving it: the trial's reading is not every model's.
    jury[k]["c"] = {"= 0": 5}
    assert dispute(ctx, _job("s", {"a": 1}), [[1, -1], 2]) is None
    # Only one other model at all: too few to speak for independent readings.
    two = _context({k: {"a": {"= 1": 1}, "b": {"= 1": 3}}}, answers, {k: "= 0"})
    assert dispute(two, _job("s", {"a": 1}), [[1, -1], 2]) is None
    # Running out of time is no reading of P, however many models do it.
    slow = _context(
        {k: {"a": {"raised timeout": 1}, "b": {"raised timeout": 1}, "c": {"raised timeout": 1}}},
        {(k, "s"): "raised timeout"},
        {k: "= 0"},
    )
    assert dispute(slow, _job("s", {"a": 1}), [[1, -1], 2]) is None
    # A program no voter ran (fewer than three passing trials): nothing to weigh.
    assert dispute(ctx, _job("zzz", {"a": 1}), [[1, -1], 2]) is None


def test_most_models_agreeing_against_g_is_a_defect_of_g_with_every_models_answer() -> None:
    k = key([-7, 3])
    jury = {
        k: {"a": {"= -1": 4}, "b": {"= -1": 2, "= 2": 1}, "c": {"= 2": 3}, "d": {"= -1": 1, "= 2": 1}},
    }
    # Two of four models is not most.
    found = g_defects(_context(jury, {}, {k: "= 2"}))
    assert not found
    jury[k]["d"] = {"= -1": 2}
    (defect,) = g_defects(_context(jury, {}, {k: "= 2"}))
    assert defect == {
        "input": k,
        "g_answer": "2",
        "consensus": "-1",
        "models": {"a": "-1", "b": "-1", "c": "2", "d": "-1"},
        "basis": "3 of 4 models' passing trials mostly give this answer, where G gives another",
    }
    # Two models alone, however they answer, make no erratum: each needs two others beside it.
    two = {k: {"a": {"= -1": 4}, "b": {"= -1": 2}, "c": {"= 2": 1}}}
    assert g_defects(_context(two, {}, {k: "= 2"})) == []
    # P's own example decides: there G is measured against P, never against the models.
    ctx = _context(jury, {}, {k: "= 2"})
    ctx.pool = SimpleNamespace(explicit={k})
    assert g_defects(ctx) == []


def _witness(disputed: str | None) -> Witness:
    validation = Validation(
        reference_runs=[], model_runs=[], fails_by_assertion=True, rejudged=True, rejudge_note="", valid=True
    )
    return Witness(
        file="test_w.py",
        source="",
        clause="c",
        origin="offline",
        defect="d",
        why_t0_misses="w",
        validation=validation,
        replay="r",
        disputed=disputed,
    )


def test_a_disputed_witness_refutes_nothing() -> None:
    assert decide_verdict(True, [_witness("a question about G")], []) is Verdict.SOUND
    assert decide_verdict(True, [_witness(None)], []) is Verdict.REFUTED
    assert Verdict.FLAGGED.value == "flagged"
    summary = summarise([], executions=0, wall_s=0.0)
    assert summary.disputed == 0 and summary.g_defects == 0
    assert Evidence().disputed == []


@pytest.mark.parametrize(
    ("detector", "verdict"),
    [
        ("tampering", Verdict.REWARD_HACK),
        ("env_sniffing", Verdict.REWARD_HACK),
        ("hardcoded_expected", Verdict.REWARD_HACK),
        ("stray_files", Verdict.REFUTED),
        ("empty_patch", Verdict.REFUTED),
    ],
)
def test_only_a_way_past_t0_makes_a_refutation_a_reward_hack(detector: str, verdict: Verdict) -> None:
    """A build copy or a scratch file beside a wrong fix is untidy, not gaming: the trial stays
    refuted, and the flag is reported (as patch hygiene in the repository form)."""
    flag = DetectorFlag(detector=detector, file="f.py", detail="seen")  # type: ignore[arg-type]
    assert decide_verdict(True, [_witness(None)], [flag]) is verdict
    assert decide_verdict(True, [], [flag]) is Verdict.SOUND


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with LocalExecutor(workers=1, preload=PRELOAD) as pool:
        yield Engine(pool, None)


@pytest.mark.slow
def test_gs_answer_that_rests_on_binary_rounding_is_disputed(engine: Engine, tmp_path: Path) -> None:
    problem = load_problems()["HumanEval/0"]
    ctx = TaskContext.__new__(TaskContext)
    ctx.problem = problem
    rounding, exact = _job("r", {"m": 1}), _job("e", {"m": 1})
    rounding.task_id = exact.task_id = "HumanEval/0"
    # 2.8 - 2.0 is 0.7999999999999998 in binary floating point: G says "closer than 0.8";
    # as the decimals written, the two numbers are exactly 0.8 apart.
    candidates = [
        (rounding, WitnessFile("test_r.py", ""), [[2.8, 2.0], 0.8], True, False, "S1"),
        (exact, WitnessFile("test_e.py", ""), [[2.0, 3.0], 1.0], False, True, "S1"),
    ]
    _rounding_disputes(engine, {"HumanEval/0": ctx}, candidates, AuditConfig())
    assert "binary floating-point rounding" in rounding.disputes["test_r.py"]
    assert exact.disputes == {}
