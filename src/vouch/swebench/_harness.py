"""Reproduce the SWE-bench harness's verdicts: T0 in R[G], R[s] and R, graded as swebench grades.

Per instance, three worlds (base + test patch; + gold; + the agent's patch), each run in the
instance's environment as the harness runs it (the spec's ``test_cmd`` on the test patch's
files, through the engine: no network, limits, the repository's own conftest), each log read
with the repository's swebench parser and graded. The gold world must come out resolved, the
agent's world as the harness said (``resolved`` in the predictions). Where they do not, each
T0 test that differs is listed with a cause read from its failure: network, timing, path,
read-only file system, missing from the log, or the exception itself.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from vouch.exec import Executor, PytestOutcome, PytestRecordError, PytestRun, RunResult
from vouch.swebench._env import EnvPlan
from vouch.swebench._instances import SweInstance, SweTrial
from vouch.swebench._logs import Grade, grade, parse_log
from vouch.swebench._runner import Runner
from vouch.worlds import Patch, Unappliable, World, WorldCache

__all__ = [
    "HARNESS_SCHEMA_VERSION",
    "ConditionRun",
    "HarnessReproduction",
    "InstanceReproduction",
    "TestDifference",
    "classify",
    "environment_records",
    "reproduce_harness",
]

HARNESS_SCHEMA_VERSION = 1
Cause = Literal["network", "timing", "path", "read-only", "missing", "environment", "other"]

_NETWORK = re.compile(
    r"ConnectionError|ConnectTimeout|NewConnectionError|MaxRetryError|Max retries|Network is unreachable|"
    r"Connection refused|Name or service not known|gaierror|Temporary failure in name resolution|httpbin|"
    r"nodename nor servname|No address associated|URLError|ProxyError"
)
_TIMING = re.compile(r"Timeout|timed out|took too long|DeadlineExceeded|Flaky", re.IGNORECASE)
_READ_ONLY = re.compile(r"Read-only file system|EROFS|PermissionError|Permission denied")
_ENVIRONMENT = re.compile(r"ModuleNotFoundError|ImportError|No module named|DistributionNotFound|VersionConflict")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConditionRun(_Model):
    """T0 in one world, graded as the harness grades."""

    world: Literal["gold", "agent", "null"] = Field(description="R[G], R[s] or R (each with the test patch).")
    status: str = Field(description="ok, or how the run ended (error, timeout, memory, killed, unappliable).")
    resolved: bool | None = Field(description="Every FAIL_TO_PASS and PASS_TO_PASS test passed (null: no log).")
    f2p_failed: list[str] = Field(default_factory=list, description="FAIL_TO_PASS ids failed or missing.")
    p2p_failed: list[str] = Field(default_factory=list, description="PASS_TO_PASS ids failed or missing.")
    skipped: list[str] = Field(default_factory=list, description="T0 ids reported SKIPPED (counted neither way).")
    tests_in_log: int = Field(default=0, description="Test ids the parser read from the log.")
    duration_s: float = Field(default=0.0, description="Wall time of the run.")
    reason: str | None = Field(default=None, description="Why there is no graded log, one line.")


class TestDifference(_Model):
    """A T0 test whose outcome differs from what the harness's verdict implies."""

    test: str = Field(description="The T0 id (as the harness's parser spells it).")
    world: Literal["gold", "agent", "null"] = Field(description="Where it did not pass.")
    cause: Cause = Field(description="network, timing, path, read-only, missing, environment or other.")
    detail: str = Field(description="The failure's exception and message, or what is missing.")


class InstanceReproduction(_Model):
    """One instance: did vouch's run of the harness reach the harness's verdicts?"""

    instance_id: str
    repo: str
    version: str | None
    status: Literal["ok", "error"] = Field(description="error: no environment or no world (reason says why).")
    reason: str | None = Field(default=None, description="Why the instance could not be run, one line.")
    environment: str | None = Field(default=None, description="The environment's key.")
    harness_resolved: bool | None = Field(description="The official harness's verdict on the agent's patch.")
    gold: ConditionRun | None = None
    agent: ConditionRun | None = None
    null: ConditionRun | None = None
    gold_reproduced: bool = Field(default=False, description="The gold world came out resolved.")
    agent_reproduced: bool = Field(default=False, description="The agent's world came out as the harness said.")
    agent_reproduced_excluding_gold_failures: bool = Field(
        default=False,
        description="The agent's world came out as the harness said once the T0 ids that fail with the gold "
        "patch too (this machine's artefacts: network, paths) are left out.",
    )
    differences: list[TestDifference] = Field(default_factory=list)
    world_build_s: float = Field(default=0.0, description="Seconds spent materialising the three worlds.")


class EnvironmentRecord(_Model):
    name: str = Field(description="repo version.")
    key: str | None = Field(description="The recipe's hash (the environment's directory name).")
    built: bool = Field(description="Built by this run (false: found in the cache).")
    seconds: float = Field(description="Seconds spent building or finding it.")
    installs: int = Field(description="pip installs run by this run (0 when cached).")
    python: str | None = None
    error: str | None = None
    notes: list[str] = Field(default_factory=list, description="What the recipe mapped or left out.")


class HarnessReproduction(_Model):
    """``vouch audit swe --harness-only`` results (kind ``swe-harness``)."""

    kind: Literal["swe-harness"] = "swe-harness"
    schema_version: int = HARNESS_SCHEMA_VERSION
    vouch_version: str
    seed: int = 0
    config: dict[str, Any]
    instances: list[InstanceReproduction]
    environments: list[EnvironmentRecord]
    summary: dict[str, Any]


def environment_records(plan: EnvPlan) -> list[EnvironmentRecord]:
    """The plan's environments (built, found or failed) as records for the results file."""
    out = [
        EnvironmentRecord(
            name=name,
            key=env.key,
            built=env.built,
            seconds=round(env.build_s, 1),
            installs=env.installs,
            python=env.python_version,
            notes=list(plan.notes.get(name, ())),
        )
        for name, env in sorted(plan.built.items())
    ]
    out.extend(
        EnvironmentRecord(name=name, key=f.key, built=False, seconds=0.0, installs=0, error=f"{f.step}: {f.reason}")
        for name, f in sorted(plan.failed.items())
    )
    return out


def _failure_of(test: str, failures: Mapping[str, PytestOutcome]) -> str | None:
    info = failures.get(test)
    if info is None:
        stem = test.split("[", 1)[0]
        info = next((v for k, v in failures.items() if k.split("[", 1)[0] == stem), None)
    if info is None:
        return None
    return f"{info.exception}: {info.message}"


def classify(
    test: str, statuses: Mapping[str, str], failures: Mapping[str, PytestOutcome], log: str
) -> tuple[Cause, str]:
    """Why a T0 test did not pass: read from its failure (``PytestRun.failures``), its id, and the log."""
    detail = _failure_of(test, failures)
    if test not in statuses:
        stem = test.split("[", 1)[0]
        siblings = [k for k in statuses if k.split("[", 1)[0] == stem and k != test]
        if "[" in test and siblings:
            return "path", f"not in the log under this id; its parametrisation reads e.g. {siblings[0]}"
        if detail is None:
            return "missing", "not in the log (not collected, or the run stopped before it)"
    text = detail or ""
    if not text:
        # No structured failure: look for the test's section of the log.
        at = log.find(test.split("::")[-1])
        text = log[at : at + 2000] if at >= 0 else ""
    checks: tuple[tuple[re.Pattern[str], Cause], ...] = (
        (_NETWORK, "network"),
        (_READ_ONLY, "read-only"),
        (_ENVIRONMENT, "environment"),
    )
    for pattern, cause in checks:
        found = pattern.search(text)
        if found:
            return cause, (detail or found.group(0))[:300]
    if _TIMING.search(test) or _TIMING.search(text):
        return "timing", (detail or "timeout")[:300]
    return "other", (detail or statuses.get(test, "no detail"))[:300]


def _condition(
    world: str, run: RunResult | Unappliable, inst: SweInstance, parser: str | None
) -> tuple[ConditionRun, Grade | None, dict[str, str], dict[str, PytestOutcome], str]:
    kind: Any = world
    if isinstance(run, Unappliable):
        return ConditionRun(world=kind, status="unappliable", resolved=None, reason=run.reason[:300]), None, {}, {}, ""
    if not run.ok or not isinstance(run.value, dict):
        why = run.reason or (run.exception.message if run.exception else "no outcome")
        return (
            ConditionRun(
                world=kind, status=run.status.value, resolved=None, duration_s=run.duration_s, reason=why[:300]
            ),
            None,
            {},
            {},
            "",
        )
    log = str(run.value.get("log") or "")
    statuses = parse_log(log, parser)
    graded = grade(statuses, inst.fail_to_pass, inst.pass_to_pass)
    try:
        failures = PytestRun.from_json(run.value).failures
    except PytestRecordError:  # no structured failure to read: each is read from the log
        failures = {}
    return (
        ConditionRun(
            world=kind,
            status="ok",
            resolved=graded.resolved,
            f2p_failed=list(graded.f2p_failed),
            p2p_failed=list(graded.p2p_failed),
            skipped=list(graded.skipped),
            tests_in_log=len(statuses),
            duration_s=round(run.duration_s, 2),
        ),
        graded,
        statuses,
        failures,
        log,
    )


ProgressLine = Callable[[str], None]


def reproduce_harness(
    instances: Sequence[SweInstance],
    trials: Sequence[SweTrial],
    *,
    executor: Executor,
    worlds: WorldCache,
    sources: Mapping[str, str],
    plan: EnvPlan,
    timeout_s: float = 900.0,
    progress: ProgressLine | None = None,
    with_null: bool = True,
    on_record: Callable[[InstanceReproduction], None] | None = None,
) -> list[InstanceReproduction]:
    """Run T0 as the harness does in the null, gold and agent worlds of every instance.

    Args:
        instances: The instances.
        trials: One trial per instance (its patch and ``harness_resolved``); the first is used.
        executor: The engine.
        worlds: World cache.
        sources: instance_id -> repository source.
        plan: The instances' environments (``plan_environments``).
        timeout_s: Wall-clock limit of one T0 run.
        progress: One line per instance.
        with_null: Also run the null world R (base + test patch): FAIL_TO_PASS should fail there.
        on_record: Called with each instance's record as soon as it is made (a long run keeps
            what it did if stopped).

    Returns:
        One record per instance, in order; an instance without an environment or worlds is
        ``error`` with the reason, and the others go on.
    """
    runner = Runner(executor, timeout_s=timeout_s)
    by_instance: dict[str, SweTrial] = {}
    for trial in trials:
        by_instance.setdefault(trial.instance_id, trial)
    out: list[InstanceReproduction] = []
    for inst in instances:
        record = _reproduce_one(inst, by_instance.get(inst.instance_id), runner, worlds, sources, plan, with_null)
        out.append(record)
        if on_record is not None:
            on_record(record)
        if progress is not None:
            gold = record.gold.resolved if record.gold else None
            agent = record.agent.resolved if record.agent else None
            progress(
                f"{inst.instance_id}: {record.status}"
                + (
                    f" ({record.reason})"
                    if record.reason
                    else f"; gold resolved {gold}, agent {agent} (harness {record.harness_resolved})"
                )
            )
    return out


def _reproduce_one(
    inst: SweInstance,
    trial: SweTrial | None,
    runner: Runner,
    worlds: WorldCache,
    sources: Mapping[str, str],
    plan: EnvPlan,
    with_null: bool = True,
) -> InstanceReproduction:
    base: dict[str, Any] = {
        "instance_id": inst.instance_id,
        "repo": inst.repo,
        "version": inst.version,
        "harness_resolved": trial.harness_resolved if trial else None,
    }
    env = plan.envs.get(inst.instance_id)
    if env is None:
        return InstanceReproduction(**base, status="error", reason=plan.errors.get(inst.instance_id, "no environment"))
    tests = Patch("test_patch", inst.test_patch, reset=True)
    started = time.monotonic()
    try:
        null = worlds.materialise(sources[inst.instance_id], inst.base_commit, [tests])
        gold = worlds.materialise(sources[inst.instance_id], inst.base_commit, [Patch("patch", inst.patch), tests])
        agent: World | Unappliable | None = None
        if trial is not None:
            agent = worlds.materialise(
                sources[inst.instance_id], inst.base_commit, [Patch("model_patch", trial.patch), tests]
            )
    except Exception as exc:  # noqa: BLE001 - a missing commit, a clone that fails: this instance only
        return InstanceReproduction(**base, status="error", environment=env.env.key, reason=str(exc)[:400])
    built_s = time.monotonic() - started
    if isinstance(null, Unappliable) or isinstance(gold, Unappliable):
        bad = null if isinstance(null, Unappliable) else gold
        assert isinstance(bad, Unappliable)
        return InstanceReproduction(
            **base,
            status="error",
            environment=env.env.key,
            reason=f"unappliable: {bad.reason}"[:400],
            world_build_s=built_s,
        )
    runnable = [w for w in (null if with_null else None, gold, agent) if isinstance(w, World)]
    for w in runnable:
        runner.attach(w, env)
    runs = runner.t0_batch([(w, None, None) for w in runnable], [], "T0 as the harness runs it")
    by_key = {w.key: r for w, r in zip(runnable, runs, strict=True)}
    null_c = _condition("null", by_key[null.key], inst, env.parser)[0] if with_null else None
    gold_c, gold_g, gold_s, gold_f, gold_log = _condition("gold", by_key[gold.key], inst, env.parser)
    agent_c = None
    differences: list[TestDifference] = []
    if gold_g is not None:
        for test in gold_g.failed:
            cause, detail = classify(test, gold_s, gold_f, gold_log)
            differences.append(TestDifference(test=test, world="gold", cause=cause, detail=detail))
    agent_ok = False
    agent_lenient = False
    if agent is not None:
        agent_run: RunResult | Unappliable = agent if isinstance(agent, Unappliable) else by_key[agent.key]
        agent_c, agent_g, agent_s, agent_f, agent_log = _condition("agent", agent_run, inst, env.parser)
        if agent_g is not None and trial is not None and trial.harness_resolved is not None:
            agent_ok = agent_g.resolved == trial.harness_resolved
            if gold_g is not None:
                excused = set(gold_g.failed)
                lenient = not [t for t in agent_g.failed if t not in excused]
                agent_lenient = lenient == trial.harness_resolved
            if not agent_ok and trial.harness_resolved:
                for test in agent_g.failed:
                    cause, detail = classify(test, agent_s, agent_f, agent_log)
                    differences.append(TestDifference(test=test, world="agent", cause=cause, detail=detail))
        elif isinstance(agent, Unappliable) and trial is not None and trial.harness_resolved is False:
            agent_ok = agent_lenient = True  # the harness cannot have resolved a patch that does not apply
    return InstanceReproduction(
        **base,
        status="ok",
        environment=env.env.key,
        gold=gold_c,
        agent=agent_c,
        null=null_c,
        gold_reproduced=gold_c.resolved is True,
        agent_reproduced=agent_ok,
        agent_reproduced_excluding_gold_failures=agent_lenient,
        differences=differences,
        world_build_s=round(built_s, 2),
    )


def summarise_reproduction(records: Sequence[InstanceReproduction]) -> dict[str, Any]:
    """Counts for the summary table."""
    ok = [r for r in records if r.status == "ok"]
    both = [r for r in ok if r.gold_reproduced and r.agent_reproduced]
    causes: dict[str, int] = {}
    for r in records:
        for d in r.differences:
            causes[d.cause] = causes.get(d.cause, 0) + 1
    return {
        "instances": len(records),
        "with_environment": len(ok),
        "gold_reproduced": sum(1 for r in ok if r.gold_reproduced),
        "agent_reproduced": sum(1 for r in ok if r.agent_reproduced),
        "both_reproduced": len(both),
        "agent_reproduced_excluding_gold_failures": sum(1 for r in ok if r.agent_reproduced_excluding_gold_failures),
        "gold_failures_all_explained": sum(
            1
            for r in ok
            if not r.gold_reproduced
            and r.gold is not None
            and r.gold.resolved is not None
            and all(d.cause in ("network", "path", "timing") for d in r.differences if d.world == "gold")
        ),
        "errors": len(records) - len(ok),
        "difference_causes": causes,
    }
