"""SWE-bench's reading of a test log, and its grading: which T0 ids passed, and ``resolved``.

The harness runs ``test_cmd`` (``pytest -rA`` and the test_patch's files) and reads the short
summary lines (``PASSED path::test[param]``) with a per-repository parser; the FAIL_TO_PASS and
PASS_TO_PASS ids of an instance are ids as those parsers produced them, so vouch reads its own
logs the same way (the rules of swebench 4.1.0, ``harness/log_parsers/python.py``, rewritten
here) and grades the same way (``harness/grading.py``): a test passes when its id is in the log
as PASSED or XFAIL, fails when it is missing or FAILED/ERROR, and a SKIPPED one counts neither
way; an instance is resolved when every FAIL_TO_PASS and every PASS_TO_PASS test that counts
passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["PARSERS", "Grade", "grade", "parse_log", "parser_for"]

_STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL")
_PASSING = ("PASSED", "XFAIL")
_FAILING = ("FAILED", "ERROR")
_OPTION = re.compile(r"(.*?)\[(.*)\]")

LogParser = Callable[[str], dict[str, str]]


def _pytest(log: str) -> dict[str, str]:
    """Lines that start with a status: the second word is the id (``FAILED x - msg`` too)."""
    found: dict[str, str] = {}
    for line in log.split("\n"):
        if not line.startswith(_STATUSES):
            continue
        if line.startswith("FAILED"):
            line = line.replace(" - ", " ")
        words = line.split()
        if len(words) > 1:
            found[words[1]] = words[0]
    return found


def _pytest_options(log: str) -> dict[str, str]:
    """As ``_pytest``, with a parameter that is an absolute path cut to its last component."""
    found: dict[str, str] = {}
    for name, status in _pytest(log).items():
        match = _OPTION.search(name)
        if match:
            main, option = match.groups()
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                option = "/" + option.split("/")[-1]
            name = f"{main}[{option}]"
        found[name] = status
    return found


def _seaborn(log: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in log.split("\n"):
        if line.startswith("FAILED"):
            words = line.split()
            if len(words) > 1:
                found[words[1]] = "FAILED"
        elif " PASSED " in line:
            words = line.split()
            if len(words) > 1 and words[1] == "PASSED":
                found[words[0]] = "PASSED"
        elif line.startswith("PASSED"):
            words = line.split()
            if len(words) > 1:
                found[words[1]] = "PASSED"
    return found


PARSERS: Mapping[str, LogParser] = {
    "parse_log_pytest": _pytest,
    "parse_log_flask": _pytest,
    "parse_log_xarray": _pytest,
    "parse_log_astroid": _pytest,
    "parse_log_pytest_options": _pytest_options,
    "parse_log_requests": _pytest_options,
    "parse_log_pylint": _pytest_options,
    "parse_log_pydicom": _pytest_options,
    "parse_log_seaborn": _seaborn,
}
"""swebench's parser names (``environments.json`` ``log_parser``) -> vouch's rewrite of each."""


def parser_for(name: str | None) -> LogParser:
    """The parser of that name; None gives the plain pytest one (swebench's default).

    Raises:
        KeyError: An unknown name (the message lists the known ones).
    """
    if name is None:
        return _pytest
    if name not in PARSERS:
        raise KeyError(f"log_parser={name!r} is unknown; known: {', '.join(sorted(PARSERS))}")
    return PARSERS[name]


def parse_log(log: str, parser: str | None = None) -> dict[str, str]:
    """Test id -> status (PASSED, FAILED, SKIPPED, ERROR, XFAIL) as the named parser reads ``log``."""
    return parser_for(parser)(log)


@dataclass(frozen=True)
class Grade:
    """The harness's verdict on one log."""

    resolved: bool
    f2p_passed: tuple[str, ...]
    f2p_failed: tuple[str, ...]
    """Failed or missing from the log."""
    p2p_passed: tuple[str, ...]
    p2p_failed: tuple[str, ...]
    skipped: tuple[str, ...]
    """T0 ids the log reports SKIPPED: counted neither way, as the harness does."""
    missing: tuple[str, ...]
    """T0 ids that appear nowhere in the log (a subset of the failed ones)."""

    @property
    def failed(self) -> tuple[str, ...]:
        return self.f2p_failed + self.p2p_failed


def grade(statuses: Mapping[str, str], fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]) -> Grade:
    """SWE-bench's grading of a status map against an instance's FAIL_TO_PASS and PASS_TO_PASS."""

    def split(ids: Sequence[str]) -> tuple[list[str], list[str]]:
        passed, failed = [], []
        for test in ids:
            status = statuses.get(test)
            if status in _PASSING:
                passed.append(test)
            elif status is None or status in _FAILING:
                failed.append(test)
        return passed, failed

    f2p_ok, f2p_bad = split(fail_to_pass)
    p2p_ok, p2p_bad = split(pass_to_pass)
    t0 = [*fail_to_pass, *pass_to_pass]
    return Grade(
        resolved=not f2p_bad and not p2p_bad,
        f2p_passed=tuple(f2p_ok),
        f2p_failed=tuple(f2p_bad),
        p2p_passed=tuple(p2p_ok),
        p2p_failed=tuple(p2p_bad),
        skipped=tuple(t for t in t0 if statuses.get(t) == "SKIPPED"),
        missing=tuple(t for t in t0 if t not in statuses),
    )
