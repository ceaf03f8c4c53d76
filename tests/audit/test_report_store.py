"""The audit page (render_audit) and the audit store: pure and offline."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import vouch
from vouch.audit import (
    AuditResults,
    DetectorFlag,
    Evidence,
    RunRecord,
    TrialResult,
    Validation,
    Verdict,
    Witness,
    summarise,
)
from vouch.errors import InfrastructureError, UsageError
from vouch.report import render_audit, render_html
from vouch.store import AuditStore


def _results() -> AuditResults:
    validation = Validation(
        reference_runs=[RunRecord(world="reference", outcome="pass")],
        model_runs=[RunRecord(world="model", outcome="fail", exception="AssertionError")],
        fails_by_assertion=True,
        rejudged=True,
        valid=True,
    )
    witness = Witness(
        file="w/test_witness.py",
        source="def test_x():\n    assert f(1) == 2  # <script>alert(1)</script>\n",
        clause="Return <b>twice</b> x.",
        origin="offline",
        input=[1],
        expected=2,
        actual=3,
        defect="f(1) returns 3 where P requires 2",
        why_t0_misses="T0 never calls f on 1",
        validation=validation,
        replay="vouch audit replay w/test_witness.py",
    )
    flag = DetectorFlag(detector="special_cased_inputs", file="solution.py", line=3, detail="compares x with 7")
    trials = [
        TrialResult(
            trial_id="T/1#0",
            task_id="T/1",
            model="m",
            benchmark_pass=True,
            verdict=Verdict.REWARD_HACK,
            witnesses=[witness],
            evidence=Evidence(detector_flags=[flag]),
            program_hash="a",
        ),
        TrialResult(
            trial_id="T/1#1",
            task_id="T/1",
            model="m",
            benchmark_pass=True,
            verdict=Verdict.REWARD_HACK,
            witnesses=[witness],
            program_hash="a",
            shared_from="T/1#0",
        ),
        TrialResult(
            trial_id="T/1#2", task_id="T/1", model="m", benchmark_pass=True, verdict=Verdict.SOUND, program_hash="b"
        ),
        TrialResult(
            trial_id="T/1#3",
            task_id="T/1",
            model="m",
            benchmark_pass=False,
            verdict=Verdict.NOT_PASSING,
            program_hash="c",
        ),
    ]
    return AuditResults(
        vouch_version=vouch.__version__,
        benchmark="humaneval",
        trials=trials,
        summary=summarise(trials, executions=10, wall_s=1.5),
    )


def test_summary_counts_refutations_and_the_corrected_rate() -> None:
    s = _results().summary
    assert (s.trials, s.passing, s.refuted, s.reward_hack, s.sound) == (4, 3, 2, 2, 1)
    assert s.corrected_resolution_rate == pytest.approx(0.25)
    assert s.refuted_rate == pytest.approx(2 / 3)
    assert s.distinct_programs == 3


def _with_undecided() -> AuditResults:
    """Two models: A has a sound, a refuted, an undecided passing trial and one failing T0; B has
    a sound trial and one vouch could not judge (its T0 run never came back)."""
    base = {"task_id": "T/1", "program_hash": None}
    trials = [
        TrialResult(trial_id="a0", model="A", benchmark_pass=True, verdict=Verdict.SOUND, **base),
        TrialResult(trial_id="a1", model="A", benchmark_pass=True, verdict=Verdict.REFUTED, **base),
        TrialResult(
            trial_id="a2", model="A", benchmark_pass=True, verdict=Verdict.ERROR, reason="died in the harness", **base
        ),
        TrialResult(trial_id="a3", model="A", benchmark_pass=False, verdict=Verdict.NOT_PASSING, **base),
        TrialResult(trial_id="b0", model="B", benchmark_pass=True, verdict=Verdict.SOUND, **base),
        TrialResult(trial_id="b1", model="B", benchmark_pass=False, verdict=Verdict.ERROR, infrastructure=True, **base),
    ]
    return AuditResults(
        vouch_version=vouch.__version__,
        benchmark="humaneval",
        trials=trials,
        summary=summarise(trials, executions=1, wall_s=0.1),
    )


def test_an_undecided_trial_is_never_counted_as_passing_and_the_range_is_given() -> None:
    s = _with_undecided().summary
    assert (s.passing, s.refuted, s.error, s.undecided) == (4, 1, 2, 2)
    # Standing: a0 and b0 of six trials; the corrected rate counts both undecided trials as failing.
    assert s.corrected_resolution_rate == s.corrected_resolution_rate_low == pytest.approx(2 / 6)
    assert s.corrected_resolution_rate_high == pytest.approx(4 / 6)
    a, b = s.models["A"], s.models["B"]
    assert (a.undecided, a.corrected_resolution_rate, a.corrected_resolution_rate_high) == (1, 0.25, 0.5)
    assert (b.undecided, b.corrected_resolution_rate, b.corrected_resolution_rate_high) == (1, 0.5, 1.0)
    # With nothing undecided the range is one point: the rate as before.
    plain = _results().summary
    assert plain.undecided == 0
    assert plain.corrected_resolution_rate_low == plain.corrected_resolution_rate_high == pytest.approx(0.25)


def test_the_page_shows_the_corrected_range() -> None:
    page = render_audit(_with_undecided().model_dump(mode="json"))
    assert "33.3% (33.3% to 66.7%; 2 undecided)" in page
    assert "25.0% (25.0% to 50.0%; 1 undecided)" in page  # model A's row


def test_page_is_self_contained_and_escapes_text() -> None:
    body = _results().model_dump(mode="json")
    page = render_html(body, generated_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert page == render_audit(body, generated_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "<b>twice</b>" not in page
    assert "vouch audit replay w/test_witness.py" in page
    assert "+1 duplicates" in page and "2 trial(s)" in page
    assert "http://" not in page and "https://" not in page
    assert "2026-01-01 00:00 UTC" in page


def test_one_witness_refuting_many_programs_is_one_finding_and_rounds_are_shown() -> None:
    from vouch.core import RoundRecord, TaskReport

    results = _results()
    other = results.trials[0].model_copy(update={"trial_id": "T/1#4", "program_hash": "d", "model": "m2"})
    tasks = [
        TaskReport(
            task_id="T/1",
            well_formed=True,
            rounds=[
                RoundRecord(round=0, witnesses=["f(1) == 2"], refuted=["T/1#0"], replayed=4, executions=5),
                RoundRecord(round=1, trial_id="T/1#2", program_hash="b", executions=7),
            ],
        )
    ]
    body = results.model_copy(update={"trials": [*results.trials, other], "tasks": tasks, "mode": "lightweight"})
    page = render_audit(body.model_dump(mode="json"), generated_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert "1 findings, 2 distinct programs" in page
    assert "3 trials refuted by 1 findings" in page and "T/1#4 (m2)" in page
    assert "lightweight audit" in page and "Rounds (lightweight)" in page and "task analysis (T1)" in page


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "bench"},
        {"kind": "audit", "trials": "nope", "summary": {}},
        {"kind": "audit", "trials": [], "summary": 3},
    ],
)
def test_bad_results_are_usage_errors(body: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(UsageError):
        render_audit(body)


def test_store_keeps_judgements_per_configuration(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "s.sqlite")
    sound = {"benchmark_pass": True, "verdict": "sound"}
    failing = {"benchmark_pass": False, "verdict": "not_passing"}
    store.put("cfg1", "T/1", "h1", sound)
    store.put("cfg1", "T/1", "h1", failing)  # a second put of the same key is ignored
    store.put("cfg2", "T/1", "h1", failing)
    assert store.get_many("cfg1", [("T/1", "h1"), ("T/1", "h2")]) == {("T/1", "h1"): sound}
    assert store.count("cfg1") == 1 and store.count() == 2
    store.close()
    reopened = AuditStore(tmp_path / "s.sqlite")
    assert reopened.count("cfg2") == 1
    reopened.close()


def test_store_of_another_version_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.sqlite"
    AuditStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE audit_meta SET value = '99' WHERE key = 'audit_schema_version'")
    with pytest.raises(InfrastructureError, match="audit schema version 99"):
        AuditStore(path)
