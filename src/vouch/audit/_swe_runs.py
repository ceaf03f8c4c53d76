"""The SWE audit's runs through the engine: T0 in worlds, calls, mutants, witness validation.

Every run here executes repository or witness code, so every one is a ``RunSpec`` for the
engine with ``vouch.worlds._inrun`` as its entry; what comes back is read as the run's claim.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vouch.audit._runs import CanaryFailed, Fault, vouch_failure
from vouch.audit._sources import Found, RepoSearchRun
from vouch.audit._swe_evidence import best_clause, source_files
from vouch.audit._swe_witness import (
    Candidate,
    Probe,
    arg_shape,
    function_targets,
    iteration_batches,
    member_kinds,
    witness_source,
)
from vouch.audit._witness import incomplete
from vouch.core._audit import (
    ASSERTION_FAILURES,
    ChecklistItem,
    Evidence,
    RunRecord,
    SurvivingMutant,
    T0Result,
    Validation,
    Witness,
)
from vouch.errors import UsageError
from vouch.exec import Call, Executor, Limits, RunResult, RunSpec, Status
from vouch.mutation import kill_matrix, mutate
from vouch.sources._swebench_logs import grade, parse_log
from vouch.worlds import Environment, FileChange, World, generated_files, parse_patch

if TYPE_CHECKING:
    from vouch.audit._swe import SweAuditConfig, _Instance
    from vouch.sources._swe import SweInstance, SweTrial

__all__ = [
    "Runner",
    "WorldEnv",
    "differences",
    "mutation_evidence",
    "record_witness_run",
    "t0_result",
    "witnesses_for_trial",
]

_ENTRY = "vouch.worlds._inrun"
_FOREIGN = "vouch.worlds._foreign:run_inrun"
_PASSING_FAILURES = ASSERTION_FAILURES
_NAME_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError", "NameError")
_WITNESS_DIR = "vouch_witness"
CALLS_PER_RUN = 250
"""Probes run in one ``call_functions`` run: a run that hangs or dies loses these at most."""
IMPLICIT_CLAUSE = "behaviour of G that no sentence of P states (an implicit requirement)"
"""The clause of a witness that matches no clause of the checklist."""


@dataclass(frozen=True)
class WorldEnv:
    """The environment a world's runs use: its interpreter, and the harness's test command."""

    env: Environment
    harness: tuple[str, ...]
    """pytest options of the spec's ``test_cmd`` (e.g. ``-rA``)."""
    test_files: tuple[str, ...]
    """The files the test patch touches: what the harness runs."""
    parser: str | None
    """swebench's log parser name for the repository."""
    services: tuple[str, ...] = ()
    """Local services each run starts on its loopback (``vouch.worlds._services``)."""


def trial_ids(trial: SweTrial) -> dict[str, Any]:
    """The fields of a trial's result that name it."""
    return {"trial_id": trial.trial_id, "task_id": trial.instance_id, "model": trial.model}


HOST_CGROUPS = ("/sys/fs/cgroup",)
"""Hidden from a repository's runs: on a cgroup v1 host, ``cpu.shares`` (1024) makes pylint count
one CPU and skip its ``needs_two_cores`` tests, which the harness's containers (cgroup v2
hosts, no such file) run; the run's CPUs are what ``sched_getaffinity`` says."""


class Runner:
    """Submits the audit's runs and counts them.

    A world with an environment attached (``attach``) runs in that environment's interpreter,
    started inside the engine run by ``vouch.worlds._foreign``; others run in the pool's own.
    """

    def __init__(self, executor: Executor, timeout_s: float = 120.0) -> None:
        self.executor = executor
        self.timeout_s = timeout_s
        self.limits = Limits(timeout_s=timeout_s, memory_mb=1024)
        # The child interpreter gets its own time within the run's, so its outcome comes back.
        self.foreign_limits = Limits(
            timeout_s=timeout_s + 60, memory_mb=4096, open_files=1024, processes=128, disk_mb=2048
        )
        self.executions = 0
        self.faults: list[Fault] = []
        """Every run that failed for vouch's own reasons (``_runs.vouch_failure``), in order: the
        audit reads which of them fell while a trial (or an instance) was being judged."""
        self.envs: dict[str, WorldEnv] = {}
        self.stage_runs: dict[str, int] = {}
        self.stage_s: dict[str, float] = {}
        """Wall seconds of each stage's batches."""
        self.stage_run_s: dict[str, float] = {}
        """Seconds the runs of each stage took, summed over runs (``vouch audit compare``'s cost)."""

    def attach(self, world: World, env: WorldEnv) -> None:
        """Run ``world``'s tests and calls in ``env`` from now on (generated files written first)."""
        generated_files(world.path)
        self.envs[world.key] = env

    def env_of(self, world: World) -> WorldEnv | None:
        return self.envs.get(world.key)

    def spec(
        self,
        world: World,
        function: str,
        first: Any,
        kwargs: dict[str, Any],
        *,
        name: str,
        files: dict[str, str] | None = None,
    ) -> RunSpec:
        """The RunSpec of one ``_inrun`` function (``run_tests`` or ``call_functions``) in ``world``."""
        env = self.envs.get(world.key)
        if env is None:
            return RunSpec(
                Call(f"{_ENTRY}:{function}", args=(first,), kwargs=kwargs),
                files=files or {},
                limits=self.limits,
                name=name,
            )
        named = {"run_tests": "argv", "call_functions": "calls"}[function]
        return RunSpec(
            Call(
                _FOREIGN,
                args=(str(env.env.python), function, {named: first, **kwargs}, env.env.run_env(world.path)),
                kwargs={
                    "timeout_s": self.timeout_s,
                    "writable": function == "run_tests",
                    "services": list(env.services),
                },
            ),
            files=files or {},
            limits=self.foreign_limits,
            hidden=HOST_CGROUPS,
            name=name,
        )

    def batch(self, specs: Sequence[RunSpec], stage: str) -> list[RunResult]:
        """Run ``specs`` concurrently, counted under ``stage`` (as the function form's stages are)."""
        self.executions += len(specs)
        started = time.monotonic()
        results = self.executor.run_batch(specs)
        self.stage_s[stage] = self.stage_s.get(stage, 0.0) + time.monotonic() - started
        self.stage_runs[stage] = self.stage_runs.get(stage, 0) + len(specs)
        self.stage_run_s[stage] = self.stage_run_s.get(stage, 0.0) + sum(r.duration_s or 0.0 for r in results)
        unwrapped = [_unwrap(spec, result) for spec, result in zip(specs, results, strict=True)]
        for spec, result in zip(specs, unwrapped, strict=True):
            why = vouch_failure(result)
            if why is not None:
                self.faults.append(Fault(stage, spec.name, why, owned=False))
        return unwrapped

    def stages(self) -> dict[str, Any]:
        """The results' record of the stages: runs, wall seconds and run-seconds per stage."""
        return {
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_s.items()},
            "stage_runs": dict(self.stage_runs),
            "stage_run_seconds": {k: round(v, 3) for k, v in self.stage_run_s.items()},
        }

    def t0_batch(
        self,
        jobs: Sequence[tuple[World, list[str] | None, list[str] | None]],
        t0: Sequence[str],
        stage: str = "T0 in R[s]",
    ) -> list[RunResult]:
        """T0 in each (world, files to cover, functions to record), concurrently.

        A world with an environment runs as the harness does: the spec's test command on the
        test patch's files; its result carries the log (``value["log"]``) for the parser.
        """
        specs = []
        for w, cover, rec in jobs:
            env = self.envs.get(w.key)
            if env is None:
                specs.append(
                    self.spec(
                        w,
                        "run_tests",
                        list(t0),
                        {"root": str(w.path), "cover": cover, "record": rec},
                        name=f"t0 {w.key}",
                    )
                )
            else:
                kwargs = {"root": str(w.path), "cover": cover, "record": rec, "harness": list(env.harness)}
                specs.append(self.spec(w, "run_tests", list(env.test_files), kwargs, name=f"t0 {w.key}"))
        return self.batch(specs, stage)

    def call(self, world: World, probes: Sequence[Probe], stage: str = "calls") -> list[dict[str, Any]]:
        """Each probe's outcome in ``world``, ``CALLS_PER_RUN`` probes a run (one batch): a run that
        fails or times out costs its own probes only, which all come back failed."""
        if not probes:
            return []
        chunks = [probes[i : i + CALLS_PER_RUN] for i in range(0, len(probes), CALLS_PER_RUN)]
        specs = [
            self.spec(
                world,
                "call_functions",
                [p.as_call() for p in chunk],
                {"root": str(world.path)},
                name=f"calls {world.key} {n}",
            )
            for n, chunk in enumerate(chunks)
        ]
        out: list[dict[str, Any]] = []
        for chunk, result in zip(chunks, self.batch(specs, stage), strict=True):
            value = result.value if result.ok and isinstance(result.value, list) else None
            if value is None or len(value) != len(chunk):
                why = result.reason or "no outcome"
                value = [{"ok": False, "value": None, "literal": None, "exception": f"run: {why}"} for _ in chunk]
            out.extend(value)
        return out

    def witness_specs(
        self, worlds: Sequence[World], files: dict[str, str], repeats: int, noconftest: bool
    ) -> list[RunSpec]:
        """The runs of the witness files in each world, ``repeats`` times each, world by world."""
        names = sorted(files)
        return [
            self.spec(
                w,
                "run_tests",
                [],
                {"root": str(w.path), "workdir_tests": names, "noconftest": noconftest},
                files=files,
                name=f"witness {w.key}",
            )
            for w in worlds
            for _ in range(repeats)
        ]

    def witness_runs(
        self, worlds: Sequence[World], files: dict[str, str], repeats: int, noconftest: bool, stage: str = "witnesses"
    ) -> list[list[RunResult]]:
        """Run the witness files in each world ``repeats`` times; results per world."""
        results = self.batch(self.witness_specs(worlds, files, repeats, noconftest), stage)
        return [results[i * repeats : (i + 1) * repeats] for i in range(len(worlds))]

    def faults_since(self, mark: int) -> str | None:
        """The reason of the first fault after ``len(self.faults)`` was ``mark``, or None."""
        return self.faults[mark].reason() if len(self.faults) > mark else None


def _unwrap(spec: RunSpec, result: RunResult) -> RunResult:
    """A foreign run's result as if the function had run in the pool: its value, or an error.

    The log and the child's exit code stay beside the value (``value["log"]``) for T0.
    """
    if not isinstance(spec.entry, Call) or spec.entry.target != _FOREIGN or not result.ok:
        return result
    wrapped = result.value if isinstance(result.value, dict) else {}
    inner = wrapped.get("result")
    log = str(wrapped.get("log") or "")
    if wrapped.get("timed_out"):
        return replace(
            result,
            status=Status.TIMEOUT,
            reason=f"the environment's interpreter ran past {spec.limits.timeout_s - 60:.0f} s",
            value=None,
        )
    if inner is None:
        tail = " | ".join(line for line in log.strip().splitlines()[-4:])
        return replace(
            result,
            status=Status.ERROR,
            reason=f"the environment's interpreter exited {wrapped.get('exit_code')} without a result: {tail}"[:400],
            value=None,
        )
    if isinstance(inner, dict):
        inner = {**inner, "log": log, "child_exit_code": wrapped.get("exit_code")}
    return replace(result, value=inner)


def t0_result(world: str, t0: Sequence[str], run: RunResult) -> T0Result:
    """T0Result of one world from a ``run_tests`` run: passed only if every T0 test passed."""
    kind: Any = world
    if not run.ok or not isinstance(run.value, dict):
        return T0Result(
            world=kind,
            passed=False,
            status=run.status.value,
            tests_total=len(t0),
            tests_failed=list(t0),
            reason=f"run {run.status.value}: {run.reason or (run.exception.message if run.exception else '')}"[:300],
        )
    outcomes = run.value.get("outcomes", {})
    passed = [t for t in t0 if outcomes.get(t) == "passed"]
    failed = [t for t in t0 if outcomes.get(t) != "passed"]
    missing = [t for t in failed if t not in outcomes]
    reason = None
    if failed:
        reason = f"{len(failed)} of {len(t0)} T0 tests do not pass" + (
            f" ({len(missing)} not found, e.g. {missing[0]})" if missing else f" (e.g. {failed[0]})"
        )
    return T0Result(
        world=kind,
        passed=not failed,
        status="ok" if not failed else "fail",
        tests_total=len(t0),
        tests_passed=passed,
        tests_failed=failed,
        reason=reason,
    )


def graded_t0(world: str, t0: Sequence[str], run: RunResult, env: WorldEnv, instance: SweInstance) -> T0Result:
    """T0Result of a world run as the harness runs it: the log read by the repo's parser, graded
    as swebench grades (a SKIPPED test counts neither way), restricted to the ids in ``t0``."""
    if not run.ok or not isinstance(run.value, dict):
        return t0_result(world, t0, run)
    statuses = parse_log(str(run.value.get("log") or ""), env.parser)
    wanted = set(t0)
    graded = grade(
        statuses,
        [t for t in instance.fail_to_pass if t in wanted],
        [t for t in instance.pass_to_pass if t in wanted],
    )
    failed = list(graded.failed)
    reason = None
    if failed:
        missing = [t for t in failed if t not in statuses]
        reason = f"{len(failed)} of {len(t0)} T0 tests do not pass" + (
            f" ({len(missing)} not in the log, e.g. {missing[0]})" if missing else f" (e.g. {failed[0]})"
        )
    kind: Any = world
    return T0Result(
        world=kind,
        passed=not failed,
        status="ok" if not failed else "fail",
        tests_total=len(t0),
        tests_passed=[*graded.f2p_passed, *graded.p2p_passed],
        tests_failed=failed,
        reason=reason,
    )


def mutation_evidence(
    runner: Runner,
    world: World,
    changes: Sequence[FileChange],
    sources: dict[str, str],
    t0: Sequence[str],
    passing: Sequence[str],
    limit: int,
    rng: random.Random,
) -> tuple[int, list[SurvivingMutant]]:
    """Mutants of the trial's changed lines run under T0; the ones no T0 test kills."""
    pool: list[tuple[str, Any]] = []
    for change in changes:
        try:
            mutants = mutate(sources[change.path], lines=change.added_lines)
        except UsageError:  # a trial file libcst cannot parse: it has no mutants
            mutants = []
        pool.extend((change.path, m) for m in mutants)
    if not pool or limit <= 0:
        return 0, []
    chosen = sorted(rng.sample(range(len(pool)), min(limit, len(pool))))
    picked = [pool[i] for i in chosen]
    # In an environment, T0's ids are the harness parser's (an absolute path cut to its last
    # part): run their files, and read the outcomes by node id.
    argv = list(passing) if runner.env_of(world) is None else sorted({t.split("::", 1)[0] for t in passing})
    specs = [
        runner.spec(
            world,
            "run_tests",
            argv,
            {"root": str(world.path), "overlay": {path: mutant.source}},
            name=f"mutant {mutant.id}",
        )
        for path, mutant in picked
    ]
    results = runner.batch(specs, "mutants")
    by_id = {mutant.id: run for (_, mutant), run in zip(picked, results, strict=True)}

    def oracle(mutant: Any, probe: str) -> str:
        run = by_id[mutant.id]
        if not run.ok or not isinstance(run.value, dict):
            return "invalid"
        return "same" if run.value.get("outcomes", {}).get(probe) == "passed" else "different"

    unique = {m.id: m for _, m in picked}
    matrix = kill_matrix(list(unique.values()), list(passing), oracle)
    files = {m.id: path for path, m in picked}
    survivors = [
        SurvivingMutant(
            id=m.id,
            file=files[m.id],
            line=m.location.line,
            operator=m.operator,
            description=m.description,
            diff=m.diff,
        )
        for m in unique.values()
        if m.id in matrix.undetected()
    ]
    return len(unique), survivors


# --- witnesses ------------------------------------------------------------------------------


def record_witness_run(world: str, run: RunResult, file: str) -> RunRecord:
    """What one run of a witness file did in a world: pass, fail (by an assertion), error, timeout,
    or infrastructure (vouch could not run it: ``_runs.vouch_failure``)."""
    kind: Any = world
    why = vouch_failure(run)
    if why is not None:
        return RunRecord(world=kind, outcome="infrastructure", exception="VouchError", message=why[:300])
    if run.status.value == "timeout":
        return RunRecord(world=kind, outcome="timeout", message=run.reason)
    if not run.ok or not isinstance(run.value, dict):
        return RunRecord(world=kind, outcome="error", exception="RunError", message=(run.reason or "run failed")[:300])
    outcomes = run.value.get("outcomes", {})
    failures = run.value.get("failures", {})
    mine = {k: v for k, v in outcomes.items() if k.split("::", 1)[0].rsplit("/", 1)[-1] == file}
    if not mine:
        return RunRecord(world=kind, outcome="error", exception="NoTests", message=f"{file}: no test ran")
    bad = {k: v for k, v in mine.items() if v != "passed"}
    if not bad:
        return RunRecord(world=kind, outcome="pass")
    node = sorted(bad)[0]
    info = failures.get(node, {})
    exception = info.get("exception")
    outcome: Any = "fail" if bad[node] == "failed" and exception in _PASSING_FAILURES else "error"
    return RunRecord(world=kind, outcome=outcome, exception=exception, message=info.get("message"))


def _validate(
    runs_reference: Sequence[RunResult],
    runs_model: Sequence[RunResult],
    file: str,
    problem: str,
    rejudge: tuple[bool, str],
) -> Validation:
    reference = [record_witness_run("reference", r, file) for r in runs_reference]
    model = [record_witness_run("model", r, file) for r in runs_model]
    by_assertion = bool(model) and all(r.outcome == "fail" for r in model)
    reason = None
    # Whose outcome each run is, as in the function form (``_witness.judge``): a run vouch could
    # not run, or a witness G passes that did not complete in R[s], decides nothing (incomplete).
    complete = True
    vouchs = [r for r in reference + model if r.outcome == "infrastructure"]
    if vouchs:
        reason = f"vouch could not run it in {'R[s]' if vouchs[0].world == 'model' else 'R[G]'}: {vouchs[0].message}"
        complete = False
    elif not all(r.outcome == "pass" for r in reference):
        bad = next(r for r in reference if r.outcome != "pass")
        reason = f"does not pass in R[G] every time ({bad.outcome}: {bad.message or bad.exception})"
    elif not by_assertion and any(incomplete(r) for r in model) and not any(r.outcome == "pass" for r in model):
        bad = next(r for r in model if incomplete(r))
        reason = (
            f"passes in every R[G] run, and did not complete in R[s] ({bad.outcome}: {bad.message}): not passing "
            "a test G passes, yet not failing by an assertion: it neither refutes nor clears the trial"
        )
        complete = False
    elif not by_assertion:
        bad = next(r for r in model if r.outcome != "fail")
        if bad.outcome == "pass":
            reason = "passes in R[s]: no disagreement under pytest"
        elif bad.exception in _NAME_ERRORS and not _named_in(bad.message or "", problem):
            reason = f"fails in R[s] on a name P never mentions ({bad.exception}: {bad.message})"
        else:
            reason = f"fails in R[s] by {bad.exception or bad.outcome}, not by an assertion"
    elif not rejudge[0]:
        reason = f"re-judging: {rejudge[1]}"
    return Validation(
        reference_runs=reference,
        model_runs=model,
        fails_by_assertion=by_assertion,
        rejudged=rejudge[0],
        rejudge_note=rejudge[1],
        valid=reason is None,
        reason=reason,
        complete=complete,
    )


def _named_in(message: str, problem: str) -> bool:
    names = re.findall(r"'([A-Za-z_][\w.]*)'", message)
    return bool(names) and all(n.split(".")[-1] in problem for n in names)


def _rejudge(probe: Probe, recorded: dict[tuple[str, str], list[Probe]]) -> tuple[bool, str]:
    """Offline re-judging: the input keeps the types of a call T0 made, and R[G] returns on it."""
    peers = recorded.get((probe.file, probe.qualname), [])
    if probe.origin == "t0":
        return True, "the input is one T0 itself passes; R[G] returns on it"

    def shape(p: Probe) -> list[str]:
        return [arg_shape(a) for a in p.args] + [f"{k}:{arg_shape(v)}" for k, v in p.kwargs]

    if any(shape(p) == shape(probe) for p in peers):
        return True, "argument types match a call T0 made, and R[G] returns on the input (inside P's preconditions)"
    return False, "the input's argument types match no call T0 made: outside the preconditions P implies"


def offline_repo_search(run: RepoSearchRun) -> Found:
    """The ``offline`` source in the repository form: the differential on the recorded and varied
    T0 calls, at most k generate-and-validate rounds."""
    return Found(witnesses_for_trial(run.inst, run.trial, run.world, run.evidence, run.runner, run.config))


def files_repo_search(run: RepoSearchRun) -> Found:
    """The ``files`` source in the repository form: the user's pytest files of the instance."""
    return Found(_file_witnesses(run.inst, run.trial, run.world, run.evidence, run.runner, run.config))


def witnesses_for_trial(
    inst: _Instance,
    trial: SweTrial,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
) -> list[Witness]:
    """Candidate witnesses for a passing trial, each validated; at most k rounds (offline)."""
    assert inst.reference is not None
    if config.witness_source == "files":
        return _file_witnesses(inst, trial, world, evidence, runner, config)
    candidates = differences(inst, world, evidence, runner)
    recorded: dict[tuple[str, str], list[Probe]] = {}
    for p, _ in inst.probes:
        if p.origin == "t0":
            recorded.setdefault((p.file, p.qualname), []).append(p)
    out: list[Witness] = []
    for round_no, batch in enumerate(iteration_batches(candidates, config.k), 1):
        evidence.witness_iterations = round_no
        files, meta = probe_tests(inst, evidence.checklist, batch, prefix="test_witness", start=len(out))
        ref_runs, model_runs = runner.witness_runs([inst.reference, world], files, config.repeats, noconftest=True)
        for name, cand, clause in meta:
            validation = _validate(
                ref_runs, model_runs, name, inst.spec.problem_statement, _rejudge(cand.probe, recorded)
            )
            out.append(
                probe_witness(
                    name,
                    files,
                    cand,
                    clause,
                    actual=cand.actual if not cand.same_result else cand.actual_state,
                    defect=_defect(cand),
                    why_t0_misses=_why_missed(cand.probe),
                    validation=validation,
                    replay="not written: pass --witness-out DIR (or --json) to write it for replay",
                    iteration=round_no,
                )
            )
        if any(w.validation.valid for w in out):
            break
    return out


def probe_tests(
    inst: _Instance, checklist: Sequence[ChecklistItem], candidates: Sequence[Candidate], *, prefix: str, start: int = 0
) -> tuple[dict[str, str], list[tuple[str, Candidate, ChecklistItem | None]]]:
    """A witness file per candidate, asserting R[G]'s answer on its input (``<prefix>_<n>.py``
    under the witness directory), and per file its name, candidate and the clause of P it checks."""
    files: dict[str, str] = {}
    meta: list[tuple[str, Candidate, ChecklistItem | None]] = []
    kinds: dict[str, dict[str, str]] = {}
    for n, cand in enumerate(candidates, start):
        clause = best_clause(checklist, [cand.probe.qualname, cand.probe.shown(), cand.expected])
        name = f"{prefix}_{n}.py"
        text = clause.text if clause else IMPLICIT_CLAUSE
        file = cand.probe.file
        if file not in kinds:  # how a member is called, read from R[G]'s source
            kinds[file] = member_kinds(_file_text(inst.reference, file)) if inst.reference is not None else {}
        kind = kinds[file].get(cand.probe.qualname, "function")
        files[f"{_WITNESS_DIR}/{name}"] = witness_source(
            cand, instance_id=inst.spec.instance_id, clause=text, index=n, kind=kind
        )
        meta.append((name, cand, clause))
    return files, meta


def probe_witness(
    name: str, files: dict[str, str], cand: Candidate, clause: ChecklistItem | None, **fields: Any
) -> Witness:
    """The witness of one of ``probe_tests``' files (the offline source), with ``fields`` besides."""
    return Witness(
        file=name,
        source=files[f"{_WITNESS_DIR}/{name}"],
        clause=clause.text if clause else IMPLICIT_CLAUSE,
        clause_id=clause.id if clause else None,
        origin="offline",
        input=cand.probe.shown(),
        expected=cand.expected_literal or cand.expected,
        **fields,
    )


def differences(inst: _Instance, world: World, evidence: Evidence, runner: Runner) -> list[Candidate]:
    """The offline differential: the probes of the modules the trial changed on which R[s]
    answers differently from R[G] (one batch in R[s]; R[G]'s answers were recorded once per
    instance): a different result, a raise, or (a method) a receiver left otherwise.

    Sets ``evidence.candidates_tried`` to the number of probes run, and records in
    ``evidence.steps`` how many targets the changed modules have and how many were probeable.
    """
    assert inst.reference is not None
    changed_files = {p.file for p, _ in inst.probes if _file_text(inst.reference, p.file) != _file_text(world, p.file)}
    probes = [(p, o) for p, o in inst.probes if p.file in changed_files]
    outcomes = runner.call(world, [p for p, _ in probes])
    candidates = []
    for (probe, ref), got in zip(probes, outcomes, strict=True):
        actual = (got.get("literal") or got["value"]) if got.get("ok") else f"raised {got.get('exception')}"
        same_result = bool(got.get("ok")) and got["value"] == ref["value"]
        same_state = not got.get("ok") or got.get("state") == ref.get("state")
        if same_result and same_state:
            continue
        candidates.append(
            Candidate(
                probe,
                ref["value"],
                ref.get("literal"),
                actual,
                expected_state=None if same_state else ref.get("state"),
                actual_state=None if same_state else got.get("state"),
                same_result=same_result,
            )
        )
    evidence.candidates_tried = len(probes)
    evidence.steps.append(_probe_census(inst, world, len(probes), len(candidates)))
    return candidates


def _probe_census(inst: _Instance, world: World, probes: int, disagreeing: int) -> str:
    """One line on the differential's reach in the modules whose text differs between R[G] and
    R[s]: targets (functions and class members), how many had a T0 call rebuilt and answered in
    R[G], probes run, and disagreements."""
    assert inst.reference is not None
    files = {c.path for c in source_files(parse_patch(inst.spec.patch))} | {p.file for p, _ in inst.probes}
    files = {f for f in files if _file_text(inst.reference, f) != _file_text(world, f)}
    targets = [t for f in sorted(files) for t in function_targets(_file_text(inst.reference, f), f)]
    members = [t for t in targets if "." in t.partition("::")[2]]
    probed = {f"{p.file}::{p.qualname}" for p, _ in inst.probes if p.origin == "t0" and p.file in files}
    probed_members = [t for t in probed if "." in t.partition("::")[2]]
    # How many T0 calls the recorder could not rebuild, where the instance kept the count.
    skipped = inst.calls_skipped
    unbuilt = sum(n for t, n in skipped.items() if t.partition("::")[0] in files)
    return (
        f"differential: {len(targets)} targets in the changed modules ({len(members)} class members); "
        f"{len(probed)} probeable (a T0 call rebuilt and answered in R[G]; {len(probed_members)} members)"
        + (f"; {unbuilt} T0 calls not rebuildable" if skipped else "")
        + f"; {probes} probes run in R[s], {disagreeing} disagreeing"
    )


def _defect(cand: Candidate) -> str:
    if cand.same_result:
        return (
            f"{cand.probe.shown()} leaves its receiver as {(cand.actual_state or '')[:200]} in the trial; the "
            f"reference leaves {(cand.expected_state or '')[:200]}"
        )
    text = (
        f"{cand.probe.shown()} gives {cand.actual[:200]} in the trial; the reference gives "
        f"{(cand.expected_literal or cand.expected)[:200]}"
    )
    if cand.expected_state is not None:
        text += f", and leaves its receiver as {cand.expected_state[:200]}"
    return text


def _why_missed(probe: Probe) -> str:
    if probe.origin == "t0":
        return "T0 makes this very call, but its assertions do not check the part of the result that differs"
    return (
        f"T0 only calls {probe.qualname} on inputs where the trial agrees with G; this one is a T0 call, {probe.origin}"
    )


def _file_text(world: World, path: str) -> str:
    try:
        return (world.path / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _file_witnesses(
    inst: _Instance,
    trial: SweTrial,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
) -> list[Witness]:
    assert inst.reference is not None and config.witness_files is not None
    folder = Path(config.witness_files) / inst.spec.instance_id
    paths = sorted(folder.glob("test_*.py")) if folder.is_dir() else []
    if not paths:
        return []
    files = {f"{_WITNESS_DIR}/{p.name}": p.read_text(encoding="utf-8") for p in paths}
    touches_conftest = any(f.path.endswith("conftest.py") for f in _all_changes(trial.patch))
    ref_runs, model_runs = runner.witness_runs([inst.reference, world], files, config.repeats, touches_conftest)
    evidence.witness_iterations = 1
    evidence.candidates_tried = len(paths)
    out = []
    for path in paths:
        source = files[f"{_WITNESS_DIR}/{path.name}"]
        clause = best_clause(evidence.checklist, [source])
        validation = _validate(
            ref_runs, model_runs, path.name, inst.spec.problem_statement, (True, "user-supplied witness: trusted as P")
        )
        failing = next((r for r in validation.model_runs if r.outcome != "pass"), None)
        out.append(
            Witness(
                file=path.name,
                source=source,
                clause=clause.text if clause else IMPLICIT_CLAUSE,
                clause_id=clause.id if clause else None,
                origin="files",
                actual=failing.message if failing else None,
                defect=f"{path.name} fails in the trial: {failing.message if failing else 'passes'}",
                why_t0_misses="T0 does not include this check",
                validation=validation,
                replay=f"vouch audit swe --witness-source files (the file is {path})",
            )
        )
    return out


def _all_changes(patch: str) -> list[FileChange]:
    return parse_patch(patch)


CANARY_MODULE = "vouch_canary_double.py"
CANARY_WITNESS = "test_vouch_canary.py"


def canary(runner: Runner, root: Path) -> None:
    """Prove the pool can judge a repository before the audit judges any: a two-file repository
    of vouch's own (``vouch_canary_double``) in a correct and a known-wrong version under ``root``
    (a directory runs can read: the world cache), and a witness that must pass in the first and
    fail by an assertion in the second, through the validation path every witness takes.

    Raises:
        CanaryFailed: It came out otherwise; the message says what the runs did.
    """
    worlds = []
    for name, body in (("correct", "return 2 * n"), ("wrong", "return n + 2")):
        path = root / "canary" / name
        path.mkdir(parents=True, exist_ok=True)
        (path / CANARY_MODULE).write_text(f"def double(n):\n    {body}\n")
        for part in (path, path.parent):
            part.chmod(0o755)
        (path / CANARY_MODULE).chmod(0o644)
        worlds.append(World(path=path, key=f"vouch-canary-{name}", commit="", patches=()))
    files = {
        f"{_WITNESS_DIR}/{CANARY_WITNESS}": "from vouch_canary_double import double\n\n\n"
        "def test_double():\n    assert double(5) == 10\n"
    }
    specs = runner.witness_specs(worlds, files, 1, noconftest=True)
    results = [_unwrap(spec, r) for spec, r in zip(specs, runner.executor.run_batch(specs), strict=True)]
    validation = _validate(results[:1], results[1:], CANARY_WITNESS, "", (True, "vouch's own canary"))
    if not validation.valid:
        raise CanaryFailed(f"the pool failed the canary: its witness did not validate ({validation.reason})")
