"""Regression witnesses: the repository's own tests beyond T0 that reach the changed code.

SWE-bench runs only the test files the test patch touches. The issue asks for a fix, and nothing
in it allows breaking what worked: a test of the repository's other files that reach the changed
modules, passing in R and in R[G] every time and failing in R[s] every time (by an assertion,
the one validation rule), is a witness against the trial.

Which files reach the change is read from the import graph of R[G]'s source: a test file that
imports a changed module, or a module that imports one at any depth, ranked by that depth and
then by the file's name naming a changed module; ``SweAuditConfig.regression_files`` of them are
run. Per instance they run once in R[G] and once in R; the tests passing in both are kept. Left
out and counted: tests failing in R[G] but passing in R (behaviour the fix changes on purpose),
failing in both (the network, this machine), passing in R[G] only (behaviour the fix adds),
skipped, and files whose run did not complete. Per passing trial the kept tests' files run once
in R[s]; each kept test that does not pass there is validated as every witness is, ``repeats``
runs in R[G] and in R[s] (a flaky test is discarded then, with its runs).
"""

from __future__ import annotations

import ast
import os
import random
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from vouch.audit._validation import REPOSITORY, Rejudged, validate, witness_run
from vouch.audit.repository._evidence import is_debris, source_files
from vouch.audit.repository._model import RegressionSuite
from vouch.audit.repository._runs import overlay_runs
from vouch.audit.repository._witness import (
    disagreement,
    function_targets,
    module_name,
    recorded_probes,
    string_pool,
    with_mutants,
)
from vouch.core import Evidence, RunRecord, Validation, Witness
from vouch.errors import UsageError
from vouch.exec import PytestRecordError, PytestRun, RunResult
from vouch.mutation import Mutant, mutate
from vouch.swebench import Runner
from vouch.worlds import World, parse_patch, read_world_text

if TYPE_CHECKING:
    from vouch.audit.repository._model import Instance, SweAuditConfig

__all__ = ["REGRESSION_CLAUSE", "prepare_regression", "regression_witnesses", "related_tests"]

REGRESSION_CLAUSE = (
    "P asks for the issue to be fixed; nothing in it allows breaking behaviour the repository's "
    "own tests check and G keeps"
)
FILES_PER_RUN = 2
"""Test files in one engine run: a file that hangs costs its run's files only."""
SUITE_CALLS = 20
"""Calls of each changed function or method the related suite made that are probed."""
SUITE_MUTANTS = 8
"""Mutants of each such call probed (T0's calls get ``_witness._MAX_PER_CALL``)."""
RECORD_BUDGET_S = 60.0
"""Seconds of a related run with its calls recorded (``run_tests``' ``record_budget_s``)."""
MAX_VALIDATED = 12
"""Kept tests failing in R[s] validated per trial (a trial that breaks collection fails them all)."""

_TEST_DIRS = frozenset({"test", "tests", "testing"})
_NOT_TESTS = frozenset(
    {"data", "regrtest_data", "functional", "fixtures", "examples", "example", "doc", "docs", "build", "dist"}
)
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist", "vouch_witness"})


def _python_files(root: Path) -> list[str]:
    out: list[str] = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        rel = Path(here).relative_to(root)
        out.extend(str(rel / n) if str(rel) != "." else n for n in sorted(names) if n.endswith(".py"))
    return out


def _is_test_file(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    if not (name.startswith("test_") or name.endswith("_test.py")) or name == "conftest.py":
        return False
    folders = parts[:-1]
    if any(p in _NOT_TESTS for p in folders):
        return False
    return not folders or any(p in _TEST_DIRS for p in folders)


def _imports(text: str, module: str, package: bool) -> set[str]:
    """The module names a source imports by name: ``import a.b`` names ``a.b``; ``from a import b``
    names ``a`` and ``a.b`` (which may be a module). A package a name passes through (``a`` of
    ``a.b``) is not counted: its ``__init__`` runs, but the source does not use it by that name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    here = module.split(".") if package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join([*up, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return names


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1][: -len(".py")]
    return name.removeprefix("test_").removesuffix("_test")


def related_tests(
    root: Path, changed: Sequence[str], exclude: Collection[str], limit: int, mentions: Collection[str] = ()
) -> list[str]:
    """The test files under ``root`` that reach a module of ``changed`` through the import graph,
    nearest first (a file importing a changed module, then one importing such an importer, ...);
    at one depth, files whose name names a changed module come first, then those that name the
    changed functions and classes (``mentions``) most often. ``exclude`` (T0's files) are never
    chosen; at most ``limit`` files."""
    files = _python_files(root)
    modules: dict[str, str] = {}
    for path in files:
        modules.setdefault(module_name(path), path)
    targets = {module_name(p) for p in changed if p.endswith(".py")}
    imports: dict[str, set[str]] = {}
    named: dict[str, int] = {}
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(mentions))) + r")\b") if mentions else None
    for path in files:
        try:
            text = read_world_text(root, path)
        except (OSError, UnicodeDecodeError):
            continue
        imports[path] = _imports(text, module_name(path), path.endswith("__init__.py"))
        if pattern is not None and _is_test_file(path):
            named[path] = len(pattern.findall(text))
    # Depth of every module from the changed ones, walking importers outwards (breadth first).
    depth = {m: 0 for m in targets if m in modules}
    frontier = set(depth)
    level = 0
    while frontier:
        level += 1
        reached = {
            module_name(path)
            for path, names in imports.items()
            if not _is_test_file(path) and module_name(path) not in depth and names & frontier
        }
        for m in reached:
            depth[m] = level
        frontier = reached
    names = {m.rsplit(".", 1)[-1] for m in targets}
    ranked = []
    for path, imported in imports.items():
        if not _is_test_file(path) or path in exclude:
            continue
        near = [depth[m] for m in imported if m in depth]
        if near:
            ranked.append((min(near), _stem(path) not in names, -named.get(path, 0), path))
    return [path for *_, path in sorted(ranked)[:limit]]


def _chunks(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _spec_kwargs(runner: Runner, world: World, record: Sequence[str]) -> dict[str, object]:
    env = runner.env_of(world)
    kwargs: dict[str, object] = {"root": str(world.path)}
    if env is not None:
        kwargs["harness"] = list(env.harness)
    if record:
        kwargs |= {"record": list(record), "record_budget_s": RECORD_BUDGET_S}
    return kwargs


def _runs(
    runner: Runner, jobs: Sequence[tuple[World, list[str]]], stage: str, record: Sequence[str] = ()
) -> list[RunResult]:
    """Each (world, test files or ids) run once, in one batch; ``record``: the calls of these
    targets are recorded in the runs (``run_tests``' ``record``)."""
    specs = [
        runner.spec(world, "run_tests", argv, _spec_kwargs(runner, world, record), name=f"regression {world.key} {n}")
        for n, (world, argv) in enumerate(jobs)
    ]
    return runner.batch(specs, stage)


def _collection_error(run: RunResult, path: str) -> str:
    """The error pytest reported for a file it could not collect in ``run``."""
    test = PytestRun.from_json(run.value).tests.get(path)
    return (test.message or test.outcome) if test is not None else "not collected"


def _outcomes(run: RunResult) -> dict[str, str] | None:
    """Each test's outcome in a run, or None when the run did not complete with a pytest record."""
    if not run.ok or not isinstance(run.value, dict):
        return None
    try:
        return dict(PytestRun.from_json(run.value).outcomes)
    except PytestRecordError:
        return None


def prepare_regression(inst: Instance, runner: Runner, config: SweAuditConfig, trials_changed: Iterable[str]) -> None:
    """Choose the related test files (``related_tests`` from the gold patch's and the trials'
    changed modules) and run them in R[G] and R: ``inst.regression`` holds the tests passing in
    both, and why the others are left out."""
    assert inst.reference is not None and inst.null is not None
    changed = sorted(
        {c.path for c in source_files(parse_patch(inst.spec.patch))} | {p for p in trials_changed if not is_debris(p)}
    )
    t0_files = {node.split("::", 1)[0] for node in inst.spec.t0}
    t0_files |= {c.path for c in parse_patch(inst.spec.test_patch)}
    # The functions and classes G's added lines are in: a test file that names them checks them.
    mentions = {
        part
        for change in source_files(parse_patch(inst.spec.patch))
        for target in function_targets(_read(inst.reference, change.path), change.path, change.added_lines)
        for part in target.partition("::")[2].split(".")
        if not part.startswith("_")
    }
    ranked = related_tests(inst.reference.path, changed, t0_files, 2 * config.regression_files, mentions)
    files, spares = ranked[: config.regression_files], ranked[config.regression_files :]
    suite = RegressionSuite(files=files)
    inst.regression = suite
    if files:
        _related_stage(inst, runner, config, suite, changed, spares)
    else:
        suite.census = "regression: no test file beyond T0's reaches the changed modules"
    _gold_mutants(inst, suite, runner, config)
    if suite.gold_mutants:
        suite.census += (
            f"; G's mutants: {suite.gold_mutants} run, {suite.gold_survivors} pass T0, "
            f"{suite.gold_killed} of those fail a kept test, {suite.gold_probed} answer a probe otherwise than G"
        )
        if suite.gold_missed:
            suite.census += f" (T0 lets through: {', '.join(suite.gold_missed)[:400]})"


def _related_stage(
    inst: Instance,
    runner: Runner,
    config: SweAuditConfig,
    suite: RegressionSuite,
    changed: Sequence[str],
    spares: Sequence[str],
) -> None:
    """The related files in R[G] (their calls recorded) and R, the kept tests, the suite's calls
    as probes, and the census line."""
    assert inst.reference is not None
    files = suite.files
    # The calls the suite makes into the changed modules are recorded in R[G] (then probed as T0's are).
    targets = [t for path in changed for t in function_targets(_read(inst.reference, path), path)]
    recorded = _run_related(inst, runner, suite, files, targets)
    if suite.uncollected and spares:
        # Files the environment cannot import (a dependency's later release) give way, once, to
        # the next related files.
        instead = spares[: len(suite.uncollected)]
        suite.files = [*files, *instead]
        suite.replaced = len(instead)
        recorded += _run_related(inst, runner, suite, instead, targets)
    suite.probes = _suite_probes(inst, runner, config, recorded)
    kept_files = sorted({n.split("::", 1)[0] for n in suite.kept})
    shown = "; ".join(f"{n} {why}" for why, n in sorted(suite.left_out.items())) or "none left out"
    suite.census = (
        f"regression: {len(suite.files)} related test files ({', '.join(suite.files[:4])}"
        f"{', ...' if len(suite.files) > 4 else ''}); "
        f"{len(suite.kept)} tests in {len(kept_files)} files pass in R[G] and R; {shown}; "
        f"{suite.probes} probes from their calls into the changed modules"
    )
    if suite.uncollected:
        first, error = next(iter(suite.uncollected.items()))
        suite.census += (
            f"; {len(suite.uncollected)} files do not collect in R[G] ({', '.join(suite.uncollected)[:200]}; "
            f"{first}: {error[:160]})"
        )
        if suite.replaced:
            suite.census += f", {suite.replaced} more related files run in their place"
    if suite.incomplete:
        suite.census += f"; runs that did not complete: {'; '.join(suite.incomplete)[:300]}"


def _run_related(
    inst: Instance, runner: Runner, suite: RegressionSuite, files: Sequence[str], targets: Sequence[str]
) -> list[RunResult]:
    """Run ``files`` in R[G] (their calls into ``targets`` recorded) and in R, two to a run; the
    tests passing in both join ``suite.kept``, the others are counted by why, and the files pytest
    cannot collect in R[G] go to ``suite.uncollected``. Returns the R[G] runs."""
    assert inst.reference is not None and inst.null is not None
    chunks = _chunks(files, FILES_PER_RUN)
    runs = [
        *_runs(runner, [(inst.reference, c) for c in chunks], "regression suite in R[G]", record=targets),
        *_runs(runner, [(inst.null, c) for c in chunks], "regression suite in R"),
    ]
    left = suite.left_out
    for chunk, ref_run, null_run in zip(chunks, runs[: len(chunks)], runs[len(chunks) :], strict=True):
        ref, null = _outcomes(ref_run), _outcomes(null_run)
        if ref is None or null is None:
            bad = ref_run if ref is None else null_run
            left["run did not complete"] = left.get("run did not complete", 0) + 1
            suite.incomplete.append(f"{', '.join(chunk)}: {bad.status.value} {(bad.reason or '')[:160]}")
            continue
        for nodeid, outcome in ref.items():
            if nodeid in chunk and outcome != "passed":  # a file's own record: pytest could not collect it
                suite.uncollected[nodeid] = _collection_error(ref_run, nodeid)
                continue
            if outcome == "passed" and null.get(nodeid) == "passed":
                suite.kept.append(nodeid)
                continue
            why = (
                "skipped"
                if outcome == "skipped" or null.get(nodeid) == "skipped"
                else "fails in R[G] and passes in R (changed on purpose)"
                if outcome != "passed" and null.get(nodeid) == "passed"
                else "passes in R[G] only (the fix adds it)"
                if outcome == "passed"
                else "fails in R[G] and in R (network, this machine)"
            )
            left[why] = left.get(why, 0) + 1
    return runs[: len(chunks)]


def _gold_mutants(inst: Instance, suite: RegressionSuite, runner: Runner, config: SweAuditConfig) -> None:
    """SWE-ABS's idea, offline: mutants of the gold patch's added lines (``config.gold_mutants``
    of them, seeded) run under T0 in R[G]; those T0 does not kill run under the kept related
    tests and answer the instance's probes. Counts what T0 misses of G's own behaviour and how
    much of it the repository's own tests and the probes tell apart; ``suite.killers`` are the
    tests that kill one, ``suite.probe_killers`` a probe that does for each mutant a probe kills
    (lightweight task analysis adds both to T1)."""
    assert inst.reference is not None and inst.t0_reference is not None
    if config.gold_mutants <= 0:
        return
    pool: list[tuple[str, Mutant]] = []
    for change in source_files(parse_patch(inst.spec.patch)):
        try:
            mutants = mutate(_read(inst.reference, change.path), lines=change.added_lines)
        except UsageError:  # a file libcst cannot parse has no mutants
            continue
        pool.extend((change.path, m) for m in mutants)
    if not pool:
        return
    rng = random.Random(f"{config.seed}:{inst.spec.instance_id}:gold")
    picked = [pool[i] for i in sorted(rng.sample(range(len(pool)), min(config.gold_mutants, len(pool))))]
    passing = list(inst.t0_reference.tests_passed)
    in_env = runner.env_of(inst.reference) is not None
    t0_argv = sorted({t.split("::", 1)[0] for t in passing}) if in_env else passing
    kept_files = sorted({n.split("::", 1)[0] for n in suite.kept})
    t0_runs = overlay_runs(runner, inst.reference, t0_argv, picked, "G's mutants under T0")
    survivors = []
    for (path, mutant), run in zip(picked, t0_runs, strict=True):
        outcomes = _outcomes(run)
        if outcomes is not None and all(outcomes.get(t) == "passed" for t in passing):
            survivors.append((path, mutant))
    suite.gold_mutants, suite.gold_survivors = len(picked), len(survivors)
    suite.gold_missed = [f"{path}:{m.location.line} {_one_line(m.description)}" for path, m in survivors]
    if not survivors:
        return
    _probe_mutants(inst, suite, runner, survivors)
    if not kept_files:
        return
    related = overlay_runs(runner, inst.reference, kept_files, survivors, "G's mutants under the related tests")
    for run in related:
        outcomes = _outcomes(run)
        if outcomes is None:
            continue
        failing = [n for n in suite.kept if outcomes.get(n) not in (None, "passed")]
        if failing:
            suite.gold_killed += 1
            suite.killers.extend(n for n in failing if n not in suite.killers)


def _probe_mutants(
    inst: Instance, suite: RegressionSuite, runner: Runner, survivors: Sequence[tuple[str, Mutant]]
) -> None:
    """The instance's probes (T0's calls, the suite's and their variations, as R[G] answered them)
    in R[G] with each surviving mutant of G imported in place of its file: the first probe a
    mutant answers otherwise joins ``suite.probe_killers``, the mutant's answer as the actual one.
    A probe counts only when R[G], run again without the mutant, answers it as it did before (a
    call whose answer varies from run to run, a random nonce, tells nothing of the mutant)."""
    assert inst.reference is not None
    probes = [p for p, _ in inst.probes]
    if not probes:
        return
    expected = {id(p): ref for p, ref in inst.probes}
    chosen: set[tuple[object, ...]] = set()
    for path, mutant in survivors:
        outcomes = runner.call(inst.reference, probes, "G's mutants on the probes", overlay={path: mutant.source})
        found = (disagreement(p, ref, got) for (p, ref), got in zip(inst.probes, outcomes, strict=True))
        # A run vouch could not complete says nothing of the mutant.
        killing = [c for c in found if c is not None and not c.actual.startswith("raised run:")]
        if killing:
            again = runner.call(inst.reference, [c.probe for c in killing], "G's mutants on the probes")
            steady = zip(killing, again, strict=True)
            killing = [c for c, got in steady if disagreement(c.probe, expected[id(c.probe)], got) is None]
        if not killing:
            continue
        suite.gold_probed += 1
        keys = [(c.probe.file, c.probe.qualname, c.probe.args, c.probe.kwargs) for c in killing]
        if chosen.isdisjoint(keys):  # one probe a mutant, none twice: a probe chosen before kills it too
            chosen.add(keys[0])
            edit = f"{path}:{mutant.location.line} {_one_line(mutant.description)}"
            suite.probe_killers.append(replace(killing[0], notes=(edit,)))


def _one_line(text: str, limit: int = 100) -> str:
    """A mutant's edit on one line, its middle clipped (an edit that drops a literal shows the
    whole literal, and ends by saying what it did)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[: limit // 2]} ... {flat[-(limit // 2) + 5 :]}"


def _read(world: World, path: str) -> str:
    try:
        return read_world_text(world.path, path)
    except (OSError, UnicodeDecodeError):
        return ""


def _suite_probes(inst: Instance, runner: Runner, config: SweAuditConfig, runs: Sequence[RunResult]) -> int:
    """The calls into the changed modules the related suite made in R[G], and their mutants
    (``SUITE_MUTANTS`` a call), as the differential's probes beside T0's: those on which R[G]
    returns join ``inst.probes``. Returns how many joined."""
    assert inst.reference is not None
    calls: dict[str, list[dict[str, object]]] = {}
    for run in runs:
        if run.ok and isinstance(run.value, dict):
            for target, records in (run.value.get("calls") or {}).items():
                calls.setdefault(str(target), []).extend(records)
    recorded = recorded_probes(calls, origin="suite", per_target=SUITE_CALLS)
    if not recorded:
        return 0
    seen = {(p.file, p.qualname, p.args, p.kwargs) for p, _ in inst.probes}
    rng = random.Random(f"{config.seed}:{inst.spec.instance_id}:suite")
    pool = string_pool(inst.spec.problem_statement, recorded)
    probes = with_mutants(recorded, pool, rng, limit=SUITE_MUTANTS, seen=seen)
    outcomes = runner.call(inst.reference, probes, "suite calls in R[G]")
    joined = [(p, o) for p, o in zip(probes, outcomes, strict=True) if o.get("ok")]
    inst.probes.extend(joined)
    return len(joined)


def _test_source(world: World, nodeid: str) -> str:
    """The test function's source for the witness record (the whole node id when it is not found)."""
    path, _, rest = nodeid.partition("::")
    name = rest.split("::")[-1].split("[", 1)[0]
    try:
        text = read_world_text(world.path, path)
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return f"# {nodeid}\n"
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            segment = ast.get_source_segment(text, node)
            if segment:
                return f"# {nodeid} (the repository's own test)\n{segment}\n"
    return f"# {nodeid}\n"


def regression_witnesses(
    inst: Instance,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
    tests: Collection[str] | None = None,
) -> list[Witness]:
    """The kept regression tests that do not pass in the trial's world R[s], each validated
    (``repeats`` runs of it in R[G] and in R[s]); appends the stage's census to ``evidence.steps``.

    ``tests``: only these of the kept tests, run by node id (lightweight T1: the ones that kill
    G's mutants); by default every kept test, run by file."""
    suite = inst.regression
    if suite is None or inst.reference is None:
        return []
    chosen = suite.kept if tests is None else [n for n in suite.kept if n in tests]
    if not chosen:
        if tests is None:
            evidence.steps.append(suite.census)
        return []
    if tests is None:
        chunks = _chunks(sorted({n.split("::", 1)[0] for n in chosen}), FILES_PER_RUN)
        census = suite.census
    else:
        chunks = [chosen]
        census = f"T1: {len(chosen)} of the repository's own tests that kill G's mutants T0 misses"
    runs = _runs(runner, [(world, c) for c in chunks], "regression suite in R[s]")
    failing: list[str] = []
    incomplete: list[str] = []
    uncollected: list[str] = []
    for chunk, run in zip(chunks, runs, strict=True):
        outcomes = _outcomes(run)
        if outcomes is None:
            incomplete.append(f"{', '.join(chunk)[:160]}: {run.status.value}")
            continue
        in_chunk = set(chunk)
        failing.extend(
            n for n in chosen if (n in in_chunk or n.split("::", 1)[0] in in_chunk) and outcomes.get(n) != "passed"
        )
        files = {n.split("::", 1)[0] for n in chunk}
        uncollected.extend(f for f in sorted(files) if outcomes.get(f) == "error")  # a file's own record: no collection
    line = f"{census}; in R[s]: {len(failing)} kept tests do not pass"
    if uncollected:
        line += f"; files that collect in R[G] and not in R[s]: {', '.join(uncollected)}"
    if incomplete:
        line += f"; runs that did not complete: {'; '.join(incomplete)[:300]}"
    checked = failing[:MAX_VALIDATED]
    if len(failing) > len(checked):
        line += f" ({len(checked)} validated)"
    evidence.steps.append(line)
    if not checked:
        return []
    repeats = config.repeats
    jobs = [(inst.reference, checked)] * repeats + [(world, checked)] * repeats
    runs = _runs(runner, jobs, "regression witnesses")
    out = []
    rejudged = Rejudged(True, "a test of the repository's own suite, passing in R and in R[G]: behaviour P keeps")
    for nodeid in checked:
        reference = [witness_run("reference", r, REPOSITORY, nodeid=nodeid) for r in runs[:repeats]]
        model = [witness_run("model", r, REPOSITORY, nodeid=nodeid) for r in runs[repeats:]]
        validation = validate(reference, model, rejudged, REPOSITORY, inst.spec.problem_statement)
        out.append(_witness(inst, world, nodeid, model, validation))
    return out


def _witness(inst: Instance, world: World, nodeid: str, model: Sequence[RunRecord], validation: Validation) -> Witness:
    failure = next((r for r in model if r.outcome != "pass"), None)
    shown = f"{failure.exception}: {failure.message}" if failure else "passes"
    return Witness(
        file=nodeid.split("::", 1)[0],
        source=_test_source(world, nodeid),
        clause=REGRESSION_CLAUSE,
        origin="regression",
        why_t0_misses="SWE-bench runs only the test files the test patch touches; this test is in another file",
        input=nodeid,
        expected="passes (as in R and R[G])",
        actual=shown[:300],
        defect=(
            f"the repository's own test {nodeid} passes without the fix and with G, "
            f"and fails with the trial: {shown[:200]}"
        ),
        validation=validation,
        replay=(
            f"python -m pytest '{nodeid}' in R[s] (base commit, the trial's patch, the test patch) and in R[G]; "
            f"vouch audit swe --only {inst.spec.instance_id} runs it again"
        ),
        why_valid="the test passes in R and in R[G] every time: P asks for a fix, not for this behaviour to change",
    )
