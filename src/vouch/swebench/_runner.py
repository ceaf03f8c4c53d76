"""T0 of a SWE-bench instance in a world, run through the engine as the harness runs it.

Every run here executes repository or test code, so every one is a ``RunSpec`` for the engine
with ``vouch.worlds._inrun`` as its entry; a world with an environment attached runs in that
environment's interpreter (``vouch.worlds._foreign``), with the spec's test command on the test
patch's files, and its log is graded as swebench grades it. What comes back is read as the run's
claim. The audit's repository form and the task builder's check of candidate patches both run
T0 here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from vouch.core import T0Result
from vouch.exec import (
    Batches,
    Call,
    Executor,
    Limits,
    PytestRecordError,
    PytestRun,
    RunResult,
    RunSpec,
    Status,
    vouch_failure,
)
from vouch.swebench._logs import grade, parse_log
from vouch.worlds import Environment, World, generated_files

if TYPE_CHECKING:
    from vouch.swebench._instances import SweInstance

__all__ = [
    "CALLS_PER_RUN",
    "HOST_CGROUPS",
    "CallProbe",
    "Runner",
    "WorldEnv",
    "graded_t0",
    "t0_result",
    "unwrap",
]

_ENTRY = "vouch.worlds._inrun"
_FOREIGN = "vouch.worlds._foreign:run_inrun"
CALLS_PER_RUN = 250
"""Probes run in one ``call_functions`` run: a run that hangs or dies loses these at most."""


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


HOST_CGROUPS = ("/sys/fs/cgroup",)
"""Hidden from a repository's runs: on a cgroup v1 host, ``cpu.shares`` (1024) makes pylint count
one CPU and skip its ``needs_two_cores`` tests, which the harness's containers (cgroup v2
hosts, no such file) run; the run's CPUs are what ``sched_getaffinity`` says."""


class CallProbe(Protocol):
    """A function call to make in a world (the audit's probes): its ``call_functions`` request."""

    def as_call(self) -> dict[str, Any]: ...


class Runner(Batches):
    """Submits the runs of T0, witnesses and calls in SWE-bench worlds, and counts them
    (``vouch.exec.Batches``, the counting engine the function form's stages share).

    A world with an environment attached (``attach``) runs in that environment's interpreter,
    started inside the engine run by ``vouch.worlds._foreign``; others run in the pool's own.
    ``faults`` holds every run that failed for vouch's own reasons (``vouch.exec.vouch_failure``,
    or a test run whose pytest record cannot be read), in order: the audit reads which of them
    fell while a trial (or an instance) was being judged.
    """

    def __init__(self, executor: Executor, timeout_s: float = 120.0) -> None:
        super().__init__(executor)
        self.timeout_s = timeout_s
        self.limits = Limits(timeout_s=timeout_s, memory_mb=1024)
        # The child interpreter gets its own time within the run's, so its outcome comes back.
        self.foreign_limits = Limits(
            timeout_s=timeout_s + 60, memory_mb=4096, open_files=1024, processes=128, disk_mb=2048
        )
        self.envs: dict[str, WorldEnv] = {}

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
        """Run ``specs`` concurrently, counted under ``stage`` (as the function form's stages are);
        a foreign run's result is its inner one (``unwrap``)."""
        return self.run_counted(specs, stage, read=unwrap, fault_of=_fault_of)

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

    def call(
        self,
        world: World,
        probes: Sequence[CallProbe],
        stage: str = "calls",
        overlay: dict[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Each probe's outcome in ``world``, ``CALLS_PER_RUN`` probes a run (one batch): a run that
        fails or times out costs its own probes only, which all come back failed. ``overlay``
        (relative path -> source) is imported in place of those files (a mutant)."""
        if not probes:
            return []
        chunks = [probes[i : i + CALLS_PER_RUN] for i in range(0, len(probes), CALLS_PER_RUN)]
        specs = [
            self.spec(
                world,
                "call_functions",
                [p.as_call() for p in chunk],
                {"root": str(world.path), **({"overlay": overlay} if overlay else {})},
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


def _fault_of(spec: RunSpec, result: RunResult) -> str | None:
    """Why a run failed for vouch's own reasons: ``vouch_failure``, or a test run that completed
    with a value that is not a pytest record (``PytestRun``) before any judged code started in
    it (after, the repository's code could have written the record: the run's own outcome)."""
    why = vouch_failure(result)
    if why is not None or not result.ok or not _runs_tests(spec) or result.judged:
        return why
    try:
        PytestRun.from_json(result.value)
    except PytestRecordError as exc:
        return f"the run's pytest record could not be read: {exc}"
    return None


def _runs_tests(spec: RunSpec) -> bool:
    entry = spec.entry
    if not isinstance(entry, Call):
        return False
    if entry.target == _FOREIGN:
        return len(entry.args) > 1 and entry.args[1] == "run_tests"
    return entry.target == f"{_ENTRY}:run_tests"


def unwrap(spec: RunSpec, result: RunResult) -> RunResult:
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
    try:
        outcomes = PytestRun.from_json(run.value).outcomes
    except PytestRecordError as exc:
        # vouch cannot read what the run reported: ``Runner.batch`` keeps it as a fault, which
        # leaves the judgement resting on it undecided.
        return T0Result(
            world=kind,
            passed=False,
            status="error",
            tests_total=len(t0),
            tests_failed=list(t0),
            reason=f"the run's pytest record could not be read: {exc}"[:300],
        )
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
