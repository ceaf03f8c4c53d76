"""Witness tests: written as pytest files, validated in R[G] and R[s], replayed on demand.

A witness asserts the value P requires (G's output) on one input. A trial that raises on that
input fails the assertion too: the test turns the exception into an AssertionError that names
it, since P asks for a value. What the test imports is only the entry point P defines, so a
failure can never come from a name P never asked for; validation (``_validation``, the rule
both forms share) still checks that every run in R[s] failed by an AssertionError, and every run
in R[G] passed. A replay (``vouch audit replay``) is judged by that rule too (``_validation.replayed``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from vouch.audit._docstring import in_docstring
from vouch.audit._settings import CanaryFailed
from vouch.audit._validation import FUNCTION, Rejudged, validate, witness_run
from vouch.audit.function._prompt import WRAPPERS
from vouch.audit.function._runs import t0_result, t0_spec
from vouch.core import EQUALITY_SOURCE, RunRecord, Validation
from vouch.errors import UsageError
from vouch.exec import Call, Executor, Limits, RunResult, RunSpec, hide_in_runs
from vouch.sources.trials import Problem

MARKER = "# vouch-witness: "
MODEL_FILE = "model_solution.py"
REFERENCE_FILE = "reference_solution.py"
LIMITS = Limits(timeout_s=20.0, memory_mb=512)

_HELPERS = (
    EQUALITY_SOURCE
    + """

_close = _vouch_equal


def _out_of_time(seconds):
    def handler(signum, frame):
        raise AssertionError(f"no answer within {seconds} s, where the reference answers in a small part of that")

    return handler
"""
)


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


@dataclass(frozen=True)
class WitnessFile:
    """A rendered witness: its file name and source."""

    name: str
    source: str


def render(
    *,
    trial_id: str,
    task_id: str,
    entry_point: str,
    clause: str,
    args: Sequence[Any],
    expected: Any,
    index: int,
    wrapper: str | None = None,
    within_s: float | None = None,
) -> WitnessFile:
    """The pytest source of a witness that asserts ``entry_point(*args) == expected`` (tolerantly).

    With ``within_s``, the call must also answer within that many seconds (G answers in a small
    part of it): a trial that runs past it on a valid input fails by an assertion naming the time.
    """
    name = f"test_witness_{safe_name(trial_id)}_{index}.py"
    header = {"task_id": task_id, "trial_id": trial_id, "entry_point": entry_point}
    # T0 compares tuple(candidate(x)) on some tasks: the witness compares as T0 does.
    call = f"{wrapper}({entry_point}(*args))" if wrapper in WRAPPERS else f"{entry_point}(*args)"
    clause_line = in_docstring(clause.replace("\n", " "))
    check = (
        f'    assert _close(actual, expected), f"{entry_point}{{tuple(args)!r}} returned {{actual!r}}; '
        f'P requires {{expected!r}}"'
    )
    timer_on = timer_off = ""
    if within_s is not None:
        # The reference answers this input in a small part of the time: running past it is a defect.
        timer_on = (
            f"        signal.signal(signal.SIGALRM, _out_of_time({within_s!r}))\n"
            f"        signal.setitimer(signal.ITIMER_REAL, {within_s!r})\n"
        )
        timer_off = "    finally:\n        signal.setitimer(signal.ITIMER_REAL, 0)\n"
    body = f'''"""Witness for {trial_id} (vouch audit): a requirement of P that T0 does not check.

Clause of P: {clause_line}
Replay: vouch audit replay {name}
"""
{MARKER}{json.dumps(header)}
import math
import signal

from solution import {entry_point}
{_HELPERS}

def test_{safe_name(trial_id)}_{index}():
    args = {list(args)!r}
    expected = {expected!r}  # what the reference solution returns on this valid input
    try:
{timer_on}        actual = {call}
    except Exception as exc:
        raise AssertionError(f"{entry_point}{{tuple(args)!r}} raised {{exc!r}}; P requires {{expected!r}}") from exc
{timer_off}{check}
'''
    return WitnessFile(name, body)


def validation_spec(
    witness: WitnessFile, program: str, world: str, repeat: int, problem: Problem | None = None
) -> RunSpec:
    """One run of the witness in one world (the program is written as ``solution.py``). With the
    task's ``problem``, the program runs in the benchmark's module as in T0's run (``_host``);
    without it (a replay, which has the witness and the programs alone), as a module."""
    shape = {"test": problem.test, "entry_point": problem.entry_point} if problem is not None else {}
    return RunSpec(
        Call("vouch.audit.function._inrun:run_witness", (witness.name,), shape),
        files={"solution.py": program, witness.name: witness.source},
        limits=LIMITS,
        name=f"witness {witness.name} in {world} #{repeat}",
    )


def record(world: str, result: RunResult) -> RunRecord:
    """What one validation run showed, as a record (``_validation.witness_run`` in the function
    form): ``infrastructure`` when it failed for vouch's own reasons, whatever the world."""
    return witness_run("model" if world == "model" else "reference", result, FUNCTION)


def judge(reference: list[RunRecord], model: list[RunRecord], rejudge: str | None) -> Validation:
    """Validation by the one rule (``_validation.validate``) in the function form: every R[G] run
    passes, every R[s] run fails by an assertion (``ASSERTION_FAILURES``), and re-judging
    (``rejudge`` is the broken precondition, None when the input is valid) holds.

    A G run that stopped (timeout, killed) while none failed and no R[s] run passed leaves the
    witness incomplete: G passed T0 and answered this input during the search.
    """
    note = "input inside the task's domain" if rejudge is None else f"outside the seeds' domain: {rejudge}"
    return validate(reference, model, Rejudged(rejudge is None, note), FUNCTION)


CANARY = Problem(
    task_id="vouch/canary",
    prompt='def vouch_canary_double(n: int) -> int:\n    """Return n doubled."""\n',
    entry_point="vouch_canary_double",
    canonical_solution="    return 2 * n\n",
    test="def check(candidate):\n    assert candidate(2) == 4\n",
)
"""vouch's own known-answer task for the canary: G doubles, T0 checks one input."""
CANARY_WRONG = CANARY.prompt + "    return n + 2\n"
"""A known-wrong program: it passes T0 (2 + 2 == 2 * 2) and is wrong on every other input."""


def canary(executor: Executor) -> None:
    """Prove the pool can judge before the audit judges anything: T0 passes on the canary's G and
    on its known-wrong program, and a witness (``vouch_canary_double(5) == 10``) validates through
    the same path as every witness: it passes on G and fails on the wrong program by an assertion.

    Raises:
        CanaryFailed: Any of these came out otherwise; the message names the run and what it did.
    """
    witness = render(
        trial_id="vouch/canary#0",
        task_id=CANARY.task_id,
        entry_point=CANARY.entry_point,
        clause="Return n doubled.",
        args=[5],
        expected=10,
        index=0,
    )
    specs = [
        t0_spec(CANARY.reference, CANARY, "canary: T0 on G"),
        t0_spec(CANARY_WRONG, CANARY, "canary: T0 on the wrong program"),
        validation_spec(witness, CANARY.reference, "R[G]", 0, CANARY),
        validation_spec(witness, CANARY_WRONG, "R[s]", 0, CANARY),
    ]
    results = executor.run_batch(specs)
    for spec, result in zip(specs[:2], results[:2], strict=True):
        t0 = t0_result("reference", result, 1)
        if not t0.passed:
            raise CanaryFailed(f"the pool failed the canary: {spec.name} did not pass ({t0.reason})")
    validation = judge([record("reference", results[2])], [record("model", results[3])], None)
    if not validation.valid:
        raise CanaryFailed(f"the pool failed the canary: its witness did not validate ({validation.reason})")


def write(directory: Path, witness: WitnessFile, model_program: str, reference_program: str) -> Path:
    """Write a witness with both worlds' programs beside it, so that ``vouch audit replay`` can run it.

    The witness root (``directory``'s parent) holds G's values and every trial's defects: from
    the first witness on, it is hidden from every run this process starts.
    """
    hide_in_runs(directory.parent)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / witness.name).write_text(witness.source)
    (directory / MODEL_FILE).write_text(model_program)
    (directory / REFERENCE_FILE).write_text(reference_program)
    return directory / witness.name


@dataclass(frozen=True)
class ReplayPlan:
    witness: WitnessFile
    model_program: str
    reference_program: str


def load_replay(path: Path) -> ReplayPlan:
    """A written witness and its worlds' programs, for replay.

    Raises:
        UsageError: The file is not a vouch witness, or a world's program is missing beside it.
    """
    if not path.is_file():
        raise UsageError(f"witness {path}: no such file")
    source = path.read_text()
    if MARKER not in source:
        raise UsageError(f"witness {path}: not a vouch witness (no '{MARKER.strip()}' line)")
    programs = []
    for name in (MODEL_FILE, REFERENCE_FILE):
        other = path.parent / name
        if not other.is_file():
            raise UsageError(f"witness {path}: {name} is missing beside it; re-run the audit to write it")
        programs.append(other.read_text())
    return ReplayPlan(WitnessFile(path.name, source), programs[0], programs[1])


class ImplicitFile(NamedTuple):
    """A file of a trial's patch that Python or pytest loads without a test asking for it."""

    path: str
    why: str


_STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")
_PYTEST_CONFIG = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
_TEST_RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "vouch"})


def implicit_files(paths: Iterable[str]) -> list[ImplicitFile]:
    """The files among ``paths`` (those a repository-level trial's patch adds or changes, relative
    to the repository root) that could decide a witness's outcome in R[s] from the trial's side.

    In the repository form the witness runs with pytest inside the trial's world, so a conftest,
    a pytest configuration, an interpreter start-up file or a module shadowing the standard
    library or the test runner would be loaded by the witness's own process (docs/design.md,
    "The audit's threat model"). A detector flags them; it never refutes by itself.
    """
    found = []
    for raw in paths:
        path = raw.removeprefix("a/").removeprefix("b/").lstrip("/")
        name = path.rsplit("/", 1)[-1]
        top = path.split("/", 1)[0]
        module = top.removesuffix(".py")
        if name == "conftest.py":
            found.append(ImplicitFile(path, "a conftest: pytest loads its hooks and fixtures for every test below it"))
        elif name in _STARTUP_FILES:
            found.append(ImplicitFile(path, f"{name} runs at interpreter start-up"))
        elif name.endswith(".pth"):
            found.append(ImplicitFile(path, "a .pth file: site runs its import lines at start-up"))
        elif name in _PYTEST_CONFIG and "/" not in path:
            found.append(ImplicitFile(path, "pytest configuration at the root (addopts, plugins, deselection)"))
        elif ((module in sys.stdlib_module_names and module != "test") or module in _TEST_RUNNER_MODULES) and (
            path == f"{module}.py" or path.startswith(f"{module}/")
        ):
            found.append(ImplicitFile(path, f"shadows the module {module!r} for every import from the root"))
    return found
