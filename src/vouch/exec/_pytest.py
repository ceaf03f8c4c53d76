"""Run pytest inside a run and return what it reported, as JSON data; the one pytest collector.

Called through the engine as ``Call("vouch.exec._pytest:run_pytest", args=(argv,))``; pytest
is pre-imported and warmed in the zygote, so a run pays only for collecting and running its
own tests. The outcomes are what pytest reported inside the run: the tests and the code
under test share that process, so a caller that judges code with tests it does not trust
reads these as the run's claims (see docs/design.md, "What a run can forge").

``make_collector`` is the plugin every in-run test execution uses: this module's
``run_pytest``, the audit's witness runs (``vouch.audit.function._inrun``) and the repository worlds'
test runs (``vouch.worlds._inrun``, which loads this file by path in an environment that has
no vouch installed). So it imports nothing but the standard library and, when called, pytest,
and its syntax is what the oldest environment interpreter reads (Python 3.7).

``PytestRun`` is the one record of such a run that crosses the run's boundary: the collector
writes it (``PytestRun.to_json``) and every reader outside the run reads it back
(``PytestRun.from_json``), as pytest's own ``TestReport`` travels between xdist's processes.
A record that does not have its shape raises ``PytestRecordError``: the run's record could not
be read, which says nothing about the tests it ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MESSAGE_CHARS = 400
"""First line of a failure's message, at most this long."""
POOL_ARGS = ["--disable-plugin-autoload"]
"""What every pytest run in vouch's own pool starts with: the plugins installed by vouch's
dependencies (langsmith's, anyio's, hypothesis's) stay out unless a run names one with
``-p NAME``. They tripled the warm pool's memory (30 to 82 MB), and every run pays for that
memory twice, when its process is cloned and when it exits. A repository's own runs
(``vouch.worlds._inrun``) keep their environment's plugins."""


OUTCOMES = ("passed", "failed", "skipped", "error")
"""A test's outcome in a ``PytestRun`` as pytest reports it: ``error`` is a failure outside the
test's call (setup, teardown) or in collection. A plugin of a repository's environment may report
another (pytest-rerunfailures' ``rerun``): it is kept, and is not ``passed``."""


class PytestRecordError(ValueError):
    """A pytest run's record (a run's value) that does not have ``PytestRun``'s shape."""


@dataclass(frozen=True)
class PytestOutcome:
    """What pytest reported of one test (or of a file it could not collect)."""

    outcome: str
    """One of ``OUTCOMES``, or what a plugin reported instead."""
    exception: str | None = None
    """A failure's exception type name (``CollectionError`` for a file pytest could not collect)."""
    message: str | None = None
    """The first line of the exception's message, at most ``MESSAGE_CHARS``."""
    when: str | None = None
    """The phase the failure happened in: ``collect``, ``setup``, ``call`` or ``teardown``."""
    crash: str | None = None
    """The first line of pytest's own crash report (e.g. ``AssertionError: ...``), for a test
    that failed or errored."""


@dataclass(frozen=True)
class PytestRun:
    """A pytest run's exit code and each test's outcome, by node id in the order pytest ran them."""

    exit_code: int
    tests: Mapping[str, PytestOutcome]

    @property
    def outcomes(self) -> dict[str, str]:
        """Each test's outcome by node id."""
        return {nodeid: test.outcome for nodeid, test in self.tests.items()}

    @property
    def failures(self) -> dict[str, PytestOutcome]:
        """The tests whose failure carries an exception, by node id."""
        return {nodeid: test for nodeid, test in self.tests.items() if test.exception is not None}

    @property
    def counts(self) -> dict[str, int]:
        """How many tests had each outcome."""
        counts: dict[str, int] = {}
        for test in self.tests.values():
            counts[test.outcome] = counts.get(test.outcome, 0) + 1
        return counts

    def in_file(self, name: str) -> dict[str, PytestOutcome]:
        """The tests of the file whose base name is ``name``, by node id."""
        return {nodeid: t for nodeid, t in self.tests.items() if nodeid.split("::", 1)[0].rsplit("/", 1)[-1] == name}

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data: ``exit_code``, ``outcomes`` (node id to outcome), ``failures``
        (node id to ``exception``, ``message`` and ``when``, for the tests whose failure carries an
        exception), ``crashes`` (node id to pytest's crash line) and ``counts``."""
        return {
            "exit_code": self.exit_code,
            "outcomes": self.outcomes,
            "failures": {
                nodeid: {"exception": t.exception, "message": t.message, "when": t.when}
                for nodeid, t in self.failures.items()
            },
            "crashes": {nodeid: t.crash for nodeid, t in self.tests.items() if t.crash is not None},
            "counts": self.counts,
        }

    @classmethod
    def from_json(cls, data: object) -> PytestRun:
        """Read a record written by ``to_json`` (or a run's value that holds one beside other keys).

        Raises:
            PytestRecordError: ``data`` does not have the record's shape; the message says which part.
        """
        if not isinstance(data, dict):
            raise PytestRecordError(f"a pytest run's record is a JSON object, not {type(data).__name__}")
        exit_code = data.get("exit_code")
        if not isinstance(exit_code, int) or isinstance(exit_code, bool):
            raise PytestRecordError(f"the record has exit_code={_shown(exit_code)}; an integer is required")
        outcomes = _mapping(data, "outcomes", required=True)
        failures = _mapping(data, "failures", required=False)
        crashes = _mapping(data, "crashes", required=False)
        for nodeid, outcome in outcomes.items():
            if not isinstance(outcome, str):
                raise PytestRecordError(
                    f"the record gives {_shown(nodeid)} the outcome {_shown(outcome)}; a string is required"
                )
        for part, entries in (("failures", failures), ("crashes", crashes)):
            stray = next((nodeid for nodeid in entries if nodeid not in outcomes), None)
            if stray is not None:
                raise PytestRecordError(f"the record has {part} of {_shown(stray)}, a test without an outcome")
        tests = {}
        for nodeid, outcome in outcomes.items():
            failure = failures.get(nodeid, {})
            if not isinstance(failure, dict):
                raise PytestRecordError(
                    f"the record has failures[{_shown(nodeid)}]={_shown(failure)}; an object is required"
                )
            fields = {name: failure.get(name) for name in ("exception", "message", "when")}
            fields["crash"] = crashes.get(nodeid)
            for name, value in fields.items():
                if value is not None and not isinstance(value, str):
                    raise PytestRecordError(
                        f"the record has {name}={_shown(value)} for {_shown(nodeid)}; a string or null is required"
                    )
            tests[nodeid] = PytestOutcome(outcome=outcome, **fields)
        return cls(exit_code=exit_code, tests=tests)


def _mapping(data: dict[str, Any], key: str, required: bool) -> dict[str, Any]:
    value = data.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise PytestRecordError(f"the record has {key}={_shown(value)}; an object keyed by node id is required")
    return value


def _shown(value: object) -> str:
    """A value of a record as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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

        def record(self, exit_code: int) -> PytestRun:
            """What the run reported, as the one record of a pytest run."""
            return PytestRun(
                exit_code=int(exit_code),
                tests={
                    nodeid: PytestOutcome(
                        outcome=e["outcome"],
                        exception=e.get("exception"),
                        message=e.get("message"),
                        when=e.get("when"),
                        crash=e.get("crash"),
                    )
                    for nodeid, e in self.tests.items()
                },
            )

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
    """``pytest.main(argv)`` with the collector; returns its record (``PytestRun.to_json``)."""
    import pytest

    collector = make_collector()
    exit_code = pytest.main([*POOL_ARGS, *argv], plugins=[collector])
    record: PytestRun = collector.record(exit_code)
    return record.to_json()
