"""Repository-level exports: the audit's witnesses as SWE-bench instances, the shape UTBoost published.

Each validated witness of a refuted trial is a pytest file; the export adds it to the instance's
``test_patch`` as a new file beside the test files the patch already touches (so the harness's
test command, which runs the test patch's files, runs it too), and names its tests in
``FAIL_TO_PASS`` (they fail in the base world with the new test patch, R) or ``PASS_TO_PASS``
(they pass there). Every other field of the instance is kept as the input file has it.

A regression witness (the repository's own test beyond T0, ``Witness.origin`` "regression") is not
a new file: the export appends one comment line to its file in the test patch, so that the
harness runs that file, and names the test's id.

Before anything is written the new test patch is checked in the worlds SWE-bench builds (the base
commit, the patch, then the test patch with its files reset), in the instance's environment when
one is given: every added test passes in R[G] in each of three runs (a test that does not is
left out), every passing trial the audit judged sound or flagged passes every added test (one
that fails it is left out, naming the trial), and each refuted trial fails at least one (or is
listed as not reproduced).
"""

from __future__ import annotations

import ast
import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vouch.audit import test_file_name
from vouch.core import WITNESS_STAGES, AuditResults, ExportCheck, ExportedTest, LeftOut, NotReproduced, Verdict, Witness
from vouch.errors import InfrastructureError, VouchError
from vouch.exec import PytestRecordError, PytestRun, RunResult
from vouch.swebench import EnvPlan, Runner, SweInstance, SweTrial, WorldEnv, parse_log, touched_test_files
from vouch.worlds import Patch, Unappliable, World, WorldCache, git

GOLD_REPEATS = 3
REFUTING = (Verdict.REFUTED, Verdict.REWARD_HACK)
STANDING = (Verdict.SOUND, Verdict.FLAGGED)
_PASSING = {"passed", "PASSED", "XFAIL"}
"""Outcomes SWE-bench grades as a pass (pytest's own, and swebench's log parsers')."""


def witness_test_names(source: str) -> list[str]:
    """The pytest node names a witness file defines: ``test_*`` functions and ``Test*`` classes' methods."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names += [
                f"{node.name}::{m.name}"
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test")
            ]
    return names


def new_file_diff(path: str, text: str) -> str:
    """A unified diff that creates ``path`` holding ``text``, as ``git apply`` reads it."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
    body = "".join("+" + line for line in lines)
    if lines and not lines[-1].endswith("\n"):
        body += "\n\\ No newline at end of file\n"
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


TOUCH_LINE = "# vouch export: tests of this file are named in FAIL_TO_PASS or PASS_TO_PASS\n"
"""Appended to a repository test file that holds regression witnesses, so the harness runs it."""


def append_diff(path: str, text: str, added: str) -> str | None:
    """A unified diff that appends a blank line and ``added`` to ``path``, whose text is ``text``
    (None when the text does not end in a newline)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        return None
    context = lines[-3:]
    new = ["\n", added]
    start = len(lines) - len(context) + 1 if context else 0
    hunk = f"@@ -{start},{len(context)} +{max(start, 1)},{len(context) + len(new)} @@\n"
    body = "".join(" " + line for line in context) + "".join("+" + line for line in new)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{hunk}{body}"


@dataclass
class WitnessTest:
    """One witness file added to an instance (or, ``existing``, a repository test file whose
    tests are regression witnesses): where it is and the ids of its tests."""

    path: str
    source: str
    ids: list[str]
    clause: str
    origin: str
    refutes: list[str] = field(default_factory=list)
    witness_files: list[str] = field(default_factory=list)
    existing: bool = False
    touch: str = ""
    """For an existing file: the diff that appends ``TOUCH_LINE`` to it (made by the check)."""


def witness_tests(results: AuditResults, instances: Mapping[str, SweInstance]) -> dict[str, list[WitnessTest]]:
    """Each instance's distinct witness files, from its refuted trials' validated witnesses."""
    out: dict[str, dict[str, WitnessTest]] = {}
    for trial in results.trials:
        if trial.verdict not in REFUTING or trial.task_id not in instances:
            continue
        for witness in trial.witnesses:
            if not _valid(witness):
                continue
            inst = instances[trial.task_id]
            tests = out.setdefault(trial.task_id, {})
            if witness.origin in WITNESS_STAGES:  # a test of the repository's own: its file is touched
                key = f"existing:{witness.file}"
                if key not in tests:
                    tests[key] = WitnessTest(witness.file, "", [], witness.clause, witness.origin, existing=True)
                if str(witness.input) not in tests[key].ids:
                    tests[key].ids.append(str(witness.input))
            else:
                key = hashlib.sha256(witness.source.encode()).hexdigest()
                if key not in tests:
                    hint = touched_test_files(inst.test_patch)[:1] or [witness.file]
                    path = posixpath.join(_test_dir(inst.test_patch), test_file_name(hint[0], witness.source))
                    names = witness_test_names(witness.source)
                    tests[key] = WitnessTest(
                        path, witness.source, [f"{path}::{n}" for n in names], witness.clause, witness.origin
                    )
            found = tests[key]
            if trial.trial_id not in found.refutes:
                found.refutes.append(trial.trial_id)
            found.witness_files.append(f"{trial.trial_id}/{witness.file.rsplit('/', 1)[-1]}")
    return {task: list(tests.values()) for task, tests in out.items()}


def _valid(witness: Witness) -> bool:
    return witness.validation.valid and witness.disputed is None


def _test_dir(test_patch: str) -> str:
    """Where the added files go: beside the first test file the test patch touches."""
    files = touched_test_files(test_patch)
    return posixpath.dirname(files[0]) if files else "tests"


def exported_test_patch(inst: SweInstance, tests: Sequence[WitnessTest]) -> str:
    patch = inst.test_patch if inst.test_patch.endswith("\n") or not inst.test_patch else inst.test_patch + "\n"
    return patch + "".join(t.touch if t.existing else new_file_diff(t.path, t.source) for t in tests)


@dataclass
class InstanceCheck:
    """An instance's added tests after the check, with their ids' behaviour in R."""

    kept: list[WitnessTest]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    left_out: list[LeftOut]
    not_reproduced: list[NotReproduced]
    gold_runs: int = 0
    trial_runs: int = 0
    refuted: int = 0
    refuted_failing: int = 0
    standing: int = 0
    standing_passing: int = 0


def _passed(run: RunResult, env: WorldEnv | None) -> dict[str, bool]:
    """Each test id's pass, as SWE-bench grades it, from one test run."""
    if not run.ok or not isinstance(run.value, dict):
        return {}
    if env is not None:
        return {
            tid: status in _PASSING for tid, status in parse_log(str(run.value.get("log") or ""), env.parser).items()
        }
    try:
        outcomes = PytestRun.from_json(run.value).outcomes
    except PytestRecordError as exc:
        raise InfrastructureError(f"export check: a test run's record could not be read ({exc})") from None
    return {tid: outcome in _PASSING for tid, outcome in outcomes.items()}


class WorldRuns:
    """Runs an instance's tests in its worlds with the exported test patch, as the harness would."""

    def __init__(self, runner: Runner, cache: WorldCache, source: str, env: WorldEnv | None) -> None:
        self.runner, self.cache, self.source, self.env = runner, cache, source, env

    def world(self, inst: SweInstance, patch: str | None, test_patch: str) -> World | Unappliable:
        patches = ([Patch("patch", patch)] if patch is not None else []) + [Patch("test_patch", test_patch, reset=True)]
        return self.cache.materialise(self.source, inst.base_commit, patches)

    def base_text(self, inst: SweInstance, path: str) -> str | None:
        """A file's text at the instance's base commit (None: not there, or not readable)."""
        try:
            clone = self.cache.repo(self.source, inst.base_commit)
        except VouchError:
            return None
        done = git(["show", f"{inst.base_commit}:{path}"], cwd=clone)
        return done.stdout if done.returncode == 0 else None

    def run(self, worlds: Sequence[World], ids: Sequence[str], test_patch: str) -> list[dict[str, bool]]:
        env = None
        if self.env is not None:
            env = replace(self.env, test_files=tuple(touched_test_files(test_patch)))
            for w in worlds:
                self.runner.attach(w, env)
        faults = len(self.runner.faults)
        runs = self.runner.t0_batch([(w, None, None) for w in worlds], list(ids), "export check")
        if len(self.runner.faults) > faults:
            raise InfrastructureError(f"export check: {self.runner.faults[faults].reason()}")
        return [_passed(r, env) for r in runs]


def check_instance(
    inst: SweInstance,
    tests: Sequence[WitnessTest],
    judged: Sequence[tuple[SweTrial, Verdict]],
    runs: WorldRuns,
) -> InstanceCheck:
    """Check an instance's added tests in R[G] (three runs), R and every passing trial's world."""
    out = InstanceCheck([], [], [], [], [])
    usable = []
    for t in tests:
        if t.existing:
            text = runs.base_text(inst, t.path)
            touch = append_diff(t.path, text, TOUCH_LINE) if text is not None else None
            if touch is None:
                why = "not in the base commit" if text is None else "does not end in a newline"
                out.left_out.append(_left(inst, t, f"the repository's test file {t.path} {why}"))
                continue
            t.touch = touch
        usable.append(t)
    tests = usable
    test_patch = exported_test_patch(inst, tests)
    added = [tid for t in tests for tid in t.ids]
    gold = runs.world(inst, inst.patch, test_patch)
    null = runs.world(inst, None, test_patch)
    if isinstance(gold, Unappliable) or isinstance(null, Unappliable):
        bad = gold if isinstance(gold, Unappliable) else null
        assert isinstance(bad, Unappliable)
        reason = f"the exported test patch does not apply: {bad.reason}"[:300]
        out.left_out = [_left(inst, t, reason) for t in tests]
        out.not_reproduced = [NotReproduced(trial_id=t.trial_id, reason=reason) for t, v in judged if v in REFUTING]
        return out
    gold_runs = runs.run([gold] * GOLD_REPEATS, added, test_patch)
    out.gold_runs = GOLD_REPEATS
    holding = {tid for tid in added if all(r.get(tid) for r in gold_runs)}
    for t in tests:
        if not t.ids:
            out.left_out.append(_left(inst, t, "the witness file defines no test"))
        elif not set(t.ids) <= holding:
            failing = sum(not all(r.get(tid) for tid in t.ids) for r in gold_runs)
            out.left_out.append(_left(inst, t, f"fails in R[G] in {failing} of {GOLD_REPEATS} runs"))
        else:
            out.kept.append(t)
    worlds: list[World] = []
    owners: list[tuple[SweTrial, Verdict]] = []
    for trial, verdict in judged:
        w = runs.world(inst, trial.patch, test_patch)
        if isinstance(w, Unappliable):
            if verdict in REFUTING:
                out.not_reproduced.append(
                    NotReproduced(trial_id=trial.trial_id, reason=f"unappliable: {w.reason}"[:300])
                )
            continue
        worlds.append(w)
        owners.append((trial, verdict))
    results = runs.run([null, *worlds], [tid for t in out.kept for tid in t.ids], test_patch)
    out.trial_runs = len(worlds)
    in_null, per_trial = results[0], results[1:]
    failing_standing: dict[str, str] = {}
    for (trial, verdict), passed in zip(owners, per_trial, strict=True):
        if verdict in STANDING:
            for t in out.kept:
                if not all(passed.get(tid) for tid in t.ids):
                    failing_standing.setdefault(t.path, trial.trial_id)
    for t in out.kept:
        if t.path in failing_standing:
            out.left_out.append(
                _left(inst, t, f"fails {failing_standing[t.path]}, which the audit judged sound or flagged")
            )
    out.kept = [t for t in out.kept if t.path not in failing_standing]
    kept_ids = [tid for t in out.kept for tid in t.ids]
    for (trial, verdict), passed in zip(owners, per_trial, strict=True):
        ok = all(passed.get(tid) for tid in kept_ids)
        if verdict in REFUTING:
            out.refuted += 1
            out.refuted_failing += not ok
            if ok:
                why = "no added test of its instance was kept" if not out.kept else "passes every added test"
                if verdict is Verdict.REWARD_HACK:
                    why += " in the harness's worlds, where its gaming (see its detector flags) decides them"
                out.not_reproduced.append(NotReproduced(trial_id=trial.trial_id, reason=why))
        elif verdict in STANDING:
            out.standing += 1
            out.standing_passing += ok
    out.fail_to_pass = [tid for tid in kept_ids if not in_null.get(tid)]
    out.pass_to_pass = [tid for tid in kept_ids if in_null.get(tid)]
    return out


def _left(inst: SweInstance, test: WitnessTest, reason: str) -> LeftOut:
    return LeftOut(task_id=inst.instance_id, witness_file=test.witness_files[0], input=None, reason=reason)


@dataclass
class RepositoryExport:
    """What the repository-level export writes, after the check."""

    instances: list[dict[str, Any]]
    tests: list[ExportedTest]
    left_out: list[LeftOut]
    not_reproduced: list[NotReproduced]
    check: ExportCheck


def export_repository(
    results: AuditResults,
    rows: Sequence[Mapping[str, Any]],
    instances: Mapping[str, SweInstance],
    trials: Sequence[SweTrial],
    runs_of: Callable[[SweInstance], WorldRuns],
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> RepositoryExport:
    """Build and check SWE-bench instances with the audit's witness tests added.

    Args:
        results: A repository-level audit's results.
        rows: The instances file's rows as read (every field kept), in order.
        instances: The same instances, parsed, by id.
        trials: The trials the audit judged (the predictions), whose ids match the results'.
        runs_of: The world runner of an instance (its repository, its environment if any).
        progress: Called as ``(stage, done, total)`` per instance checked.
    """
    by_instance = witness_tests(results, instances)
    verdicts = {t.trial_id: t.verdict for t in results.trials if t.benchmark_pass}
    judged: dict[str, list[tuple[SweTrial, Verdict]]] = {}
    for trial in trials:
        verdict = verdicts.get(trial.trial_id)
        if verdict in (*REFUTING, *STANDING):
            judged.setdefault(trial.instance_id, []).append((trial, verdict))
    known = {t.trial_id for t in trials}
    not_reproduced = [
        NotReproduced(trial_id=t.trial_id, reason="its patch is not in the predictions given")
        for t in results.trials
        if t.verdict in REFUTING and t.trial_id not in known
    ]
    left_out: list[LeftOut] = []
    checked: dict[str, InstanceCheck] = {}
    totals = ExportCheck(
        gold_runs=0, trial_runs=0, refuted=0, refuted_failing=0, standing=0, standing_passing=0, holds=True
    )
    refuted_instances = {iid for iid, rows_ in judged.items() if any(v in REFUTING for _, v in rows_)}
    order = [iid for iid in instances if iid in by_instance or iid in refuted_instances]
    for done, iid in enumerate(order):
        if progress is not None:
            progress("checking the exported tests", done, len(order))
        check = check_instance(instances[iid], by_instance.get(iid, []), judged.get(iid, []), runs_of(instances[iid]))
        checked[iid] = check
        left_out += check.left_out
        not_reproduced += check.not_reproduced
        totals.gold_runs += check.gold_runs
        totals.trial_runs += check.trial_runs
        totals.refuted += check.refuted
        totals.refuted_failing += check.refuted_failing
        totals.standing += check.standing
        totals.standing_passing += check.standing_passing
    if progress is not None:
        progress("checking the exported tests", len(order), len(order))
    totals.holds = totals.standing == totals.standing_passing and not not_reproduced
    out_rows = []
    tests: list[ExportedTest] = []
    for row in rows:
        iid = str(row.get("instance_id"))
        done_check = checked.get(iid)
        if done_check is None or not done_check.kept:
            out_rows.append(dict(row))
            continue
        inst = instances[iid]
        f2p, p2p = [*inst.fail_to_pass, *done_check.fail_to_pass], [*inst.pass_to_pass, *done_check.pass_to_pass]
        out_rows.append(
            {
                **row,
                "test_patch": exported_test_patch(inst, done_check.kept),
                "FAIL_TO_PASS": _same_form(row.get("FAIL_TO_PASS"), f2p),
                "PASS_TO_PASS": _same_form(row.get("PASS_TO_PASS"), p2p),
            }
        )
        for n, t in enumerate(done_check.kept, start=1):
            for tid in t.ids:
                tests.append(
                    ExportedTest(
                        id=f"{iid}:W{n}",
                        task_id=iid,
                        clause=t.clause,
                        test_id=tid,
                        refutes=t.refutes,
                        witness_files=t.witness_files,
                        origin=t.origin,
                    )
                )
    return RepositoryExport(out_rows, tests, left_out, not_reproduced, totals)


def _same_form(original: Any, ids: list[str]) -> Any:
    """The ids as the input file spells its lists: a JSON-encoded string (SWE-bench's dataset) or a list."""
    return json.dumps(ids) if isinstance(original, str) else ids


def env_of(plan: EnvPlan | None, instance_id: str) -> WorldEnv | None:
    return None if plan is None else plan.envs.get(instance_id)
