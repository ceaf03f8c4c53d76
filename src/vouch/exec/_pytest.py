"""Run pytest inside a run and return what it reported, as JSON data; the one pytest collector.

Called through the engine as ``Call("vouch.exec._pytest:run_pytest", args=(argv,))``; pytest
is pre-imported and warmed in the zygote, so a run pays only for collecting and running its
own tests. The outcomes are what pytest reported inside the run: the tests and the code
under test share that process, so a caller that judges code with tests it does not trust
reads these as the run's claims (see docs/design.md, "What a run can forge").

``make_collector`` is the plugin every in-run test execution uses: this module's
``run_pytest``, the audit's witness runs (``vouch.audit._inrun``) and the repository worlds'
test runs (``vouch.worlds._inrun``, which loads this file by path in an environment that has
no vouch installed). So it imports nothing but the standard library and, when called, pytest,
and its syntax is what the oldest environment interpreter reads (Python 3.7).
"""

from __future__ import annotations

from typing import Any

MESSAGE_CHARS = 400
"""First line of a failure's message, at most this long."""
POOL_ARGS = ["--disable-plugin-autoload"]
"""What every pytest run in vouch's own pool starts with: the plugins installed by vouch's
dependencies (langsmith's, anyio's, hypothesis's) stay out unless a run names one with
``-p NAME``. They tripled the warm pool's memory (30 to 82 MB), and every run pays for that
memory twice, when its process is cloned and when it exits. A repository's own runs
(``vouch.worlds._inrun``) keep their environment's plugins."""


def make_collector() -> Any:
    """A pytest plugin that records, per test id, ``outcome`` (``passed``, ``failed``,
    ``skipped``, or ``error`` for a failure outside the test's call or in collection) and, for a
    failure, ``exception`` (the type's name), ``message`` (the exception's first line), ``crash``
    (the first line of pytest's own crash report, e.g. ``AssertionError: ...``) and ``when``.

    A test keeps its first outcome that is not ``passed`` (a test that fails and then errors in
    teardown stays ``failed``)."""
    import pytest

    class Collector:
        def __init__(self) -> None:
            self.tests: dict[str, dict[str, Any]] = {}

        @property
        def outcomes(self) -> dict[str, str]:
            return {nodeid: entry["outcome"] for nodeid, entry in self.tests.items()}

        @property
        def failures(self) -> dict[str, dict[str, str]]:
            return {
                nodeid: {"exception": e["exception"], "message": e["message"], "when": e["when"]}
                for nodeid, e in self.tests.items()
                if e.get("exception") is not None
            }

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            outcome = yield
            report = outcome.get_result()
            if call.excinfo is None or not report.failed:
                return
            entry = self.tests.setdefault(report.nodeid, {"outcome": "passed"})
            if entry.get("exception") is None:
                exc = call.excinfo.value
                text = str(exc).strip()
                entry["exception"] = type(exc).__name__
                entry["message"] = (text.splitlines()[0] if text else "")[:MESSAGE_CHARS]
                entry["when"] = call.when

        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.when != "call" and report.outcome == "passed":
                return
            entry = self.tests.setdefault(report.nodeid, {"outcome": "passed"})
            if entry["outcome"] != "passed":
                return
            outcome = report.outcome
            if report.when != "call" and outcome == "failed":
                outcome = "error"
            entry["outcome"] = outcome
            if outcome in ("failed", "error"):
                crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
                text = str(getattr(crash, "message", report.longrepr) or "")
                entry["crash"] = text.splitlines()[0][:MESSAGE_CHARS] if text else None

        def pytest_collectreport(self, report: Any) -> None:
            if report.outcome != "failed":
                return
            lines = str(report.longrepr).strip().splitlines()
            self.tests[report.nodeid or "<collection>"] = {
                "outcome": "error",
                "exception": "CollectionError",
                "message": (lines[-1] if lines else "")[:MESSAGE_CHARS],
                "crash": str(report.longrepr)[-300:],
                "when": "collect",
            }

    return Collector()


def run_pytest(argv: list[str]) -> dict[str, Any]:
    """``pytest.main(argv)`` with the collector; returns the exit code and per-test outcomes."""
    import pytest

    collector = make_collector()
    exit_code = pytest.main([*POOL_ARGS, *argv], plugins=[collector])
    outcomes = collector.outcomes
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return {"exit_code": int(exit_code), "outcomes": outcomes, "counts": counts}
