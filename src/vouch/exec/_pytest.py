"""Run pytest inside a run and return what it reported, as JSON data.

Called through the engine as ``Call("vouch.exec._pytest:run_pytest", args=(argv,))``; pytest
is pre-imported and warmed in the zygote, so a run pays only for collecting and running its
own tests. The outcomes are what pytest reported inside the run: the tests and the code
under test share that process, so a caller that judges code with tests it does not trust
reads these as the run's claims (see docs/design.md, "What a run can forge").
"""

from __future__ import annotations

from typing import Any


class _Collector:
    """A pytest plugin that records each test's outcome."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.outcome != "passed":
            previous = self.outcomes.get(report.nodeid)
            if previous in (None, "passed"):
                outcome = report.outcome
                if report.when != "call" and report.outcome == "failed":
                    outcome = "error"
                self.outcomes[report.nodeid] = outcome

    def pytest_collectreport(self, report: Any) -> None:
        if report.outcome == "failed":
            self.outcomes[report.nodeid or "<collection>"] = "error"


def run_pytest(argv: list[str]) -> dict[str, Any]:
    """``pytest.main(argv)`` with a collector; returns the exit code and per-test outcomes."""
    import pytest

    collector = _Collector()
    exit_code = pytest.main(list(argv), plugins=[collector])
    counts: dict[str, int] = {}
    for outcome in collector.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return {"exit_code": int(exit_code), "outcomes": collector.outcomes, "counts": counts}
