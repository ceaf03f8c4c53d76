"""The audit's summary as a user reads it: the corrected rate never counts an undecided trial as
passing, and gives the range when some are undecided; reasons are printed escaped."""

from __future__ import annotations

import io

from rich.console import Console

import vouch
from vouch.audit import AuditResults, TrialResult, Verdict, summarise
from vouch.cli._audit import print_summary


def _printed(trials: list[TrialResult]) -> str:
    results = AuditResults(
        vouch_version=vouch.__version__,
        benchmark="humaneval",
        trials=trials,
        summary=summarise(trials, executions=1, wall_s=0.1),
    )
    out = io.StringIO()
    print_summary(results, Console(file=out, width=300))
    return out.getvalue()


def _trial(n: int, verdict: Verdict, model: str = "m", reason: str | None = None) -> TrialResult:
    return TrialResult(
        trial_id=f"T/1#{n}", task_id="T/1", model=model, benchmark_pass=True, verdict=verdict, reason=reason
    )


def test_the_corrected_rate_counts_an_undecided_trial_as_failing_and_shows_the_range() -> None:
    text = _printed(
        [
            _trial(0, Verdict.SOUND),
            _trial(1, Verdict.SOUND, "n"),
            _trial(2, Verdict.REFUTED),
            _trial(3, Verdict.ERROR, "n", reason="the program's process ended\x1b[2J\n0 refuted"),
        ]
    )
    assert "resolution rate 100.0% -> corrected 50.0% (range 50.0% to 75.0%: 1 undecided" in text
    # Per model: n's undecided trial is in its own range.
    assert "50.0% (range 50.0% to 100.0%: 1 undecided" in text
    assert "\x1b" not in text and "\\x1b[2J\\n0 refuted" in text


def test_without_undecided_trials_the_line_is_the_rate_alone() -> None:
    text = _printed([_trial(0, Verdict.SOUND), _trial(1, Verdict.REFUTED)])
    assert "-> corrected 50.0% (50.0% of passing refuted)" in text and "range" not in text
