"""``vouch audit swe`` as one library call: read the inputs, find the repositories, build the
environments, then audit the trials (``audit_swe``) or reproduce the harness's verdicts.

``run_swe_command`` takes what the command's options say (``SweCommand``, the same names) and
returns what the command prints and writes (``SweCommandResult``); the command line only parses
options, calls it and prints. A bad input raises ``UsageError`` with the line the command
prints, naming the option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vouch
from vouch.audit._agent_calls import WitnessAgent
from vouch.audit.repository._audit import SWE_PRELOAD, audit_swe
from vouch.audit.repository._model import SweAuditConfig
from vouch.audit.repository._replay import ReplayOutcome, replay_witness
from vouch.core import AuditResults
from vouch.errors import UsageError, VouchError
from vouch.exec import LocalExecutor
from vouch.sources import RunDir, StatusDisagreement, compare_tests_status, read_run_dir
from vouch.store import AuditStore, default_store_path
from vouch.swebench import (
    EnvPlan,
    HarnessReproduction,
    InstanceReproduction,
    RepoEnvs,
    RepoLocator,
    SweInstance,
    SweTrial,
    environment_records,
    load_agents,
    load_environments,
    load_instances,
    plan_environments,
    reproduce_harness,
    siblings_of,
    summarise_reproduction,
)
from vouch.worlds import EnvCache, WorldCache

__all__ = [
    "SweCommand",
    "SweCommandResult",
    "audit_comparison",
    "harness_comparison",
    "replay_swe_witness",
    "run_dir_config",
    "run_swe_command",
]

Note = Callable[[str], None]
"""A line of what the command is doing (plain text, never markup)."""
EnvironmentStep = Callable[[str, int, int], None]
"""An environment being built: ``"<recipe>: <step>"``, steps done, steps in all."""
TrialDone = Callable[[int, int, str], None]
"""A trial judged: how many so far, how many in all, its line."""

ENV_TIMEOUT_S = 900.0
"""A T0 run's time limit in an environment of SWE-bench's (installing and testing a real repository)."""
TIMEOUT_S = 120.0
"""A T0 run's time limit in the pool's own interpreter."""


@dataclass(frozen=True)
class SweCommand:
    """What one ``vouch audit swe`` is asked, by its options' names."""

    instances_file: Path
    predictions_files: tuple[Path, ...] = ()
    """Predictions JSONL files, one per agent say, audited as one run (the A.2 rule counts every
    agent with a patch; the summary has each model's rates)."""
    run_dir: Path | None = None
    """A SWE-bench harness run (``logs/run_evaluation/<run_id>/<model>``) in place of predictions."""
    only: tuple[str, ...] = ()
    """Instance ids to audit (empty: all of them)."""
    harness_only: bool = False
    """Only reproduce the harness's verdicts (needs ``environments_file``)."""
    mode: str = "per-trial"
    rounds: int = 3
    witness_source: str = "offline"
    witness_files: Path | None = None
    witness_dir: Path | None = None
    """Where validated witnesses are written for replay (None: not written)."""
    agent_model: str | None = None
    agent_config: str | None = None
    repo_root: Path | None = None
    """Where a repository named without a path lives (default: the instances file's directory)."""
    repo_map: Mapping[str, str] = field(default_factory=dict)
    """``owner/name`` -> a clone or bare mirror."""
    repo_url: str | None = None
    """A URL template to clone repositories not found locally from."""
    environments_file: Path | None = None
    """SWE-bench's environment specs: each instance runs in a venv of its repo/version."""
    env_dir: Path | None = None
    python: Mapping[str, str] = field(default_factory=dict)
    """Python version (or ``*``) -> interpreter for the environments."""
    timeout_s: float | None = None
    """Seconds per T0 run (None: ``TIMEOUT_S``, ``ENV_TIMEOUT_S`` in environments)."""
    cache_dir: Path | None = None
    store_path: Path | None = None
    k: int = 3
    mutants: int = 8
    regression_files: int = 8
    gold_mutants: int = 8
    seed: int = 0
    workers: int | None = None
    allow_weak_isolation: bool = False


@dataclass
class SweCommandResult:
    """What ``vouch audit swe`` found: the audit's results, or with ``harness_only`` the harness's
    reproduction; either way written as the command's ``--json``."""

    trials: int
    """The trials read (after ``only``; from a run directory, those it audits)."""
    run: RunDir | None = None
    plan: EnvPlan | None = None
    results: AuditResults | None = None
    reproduction: HarnessReproduction | None = None
    comparison: list[dict[str, Any]] | None = None
    """With a run directory: per instance, the tests the harness and vouch judged differently
    (also in the results' ``config["run_dir"]["tests_status"]``)."""

    def to_json(self) -> str:
        """The results file: the audit's results, or the harness reproduction."""
        written = self.reproduction if self.reproduction is not None else self.results
        assert written is not None
        return written.model_dump_json(indent=2) + "\n"


def _quiet(_line: str) -> None:
    pass


def run_swe_command(
    command: SweCommand,
    *,
    agent: WitnessAgent | None = None,
    note: Note = _quiet,
    environment_step: EnvironmentStep | None = None,
    trial_done: TrialDone | None = None,
) -> SweCommandResult:
    """Audit SWE-bench-format trials (or reproduce the harness's verdicts on them), as the command does.

    Args:
        command: The inputs and settings.
        agent: The auditing model, for ``witness_source="agent"``.
        note: Gets each line of what is being done (a run directory read, a repository not
            found, an environment built or failed, the harness reproduction's progress).
        environment_step: Gets each step of an environment being built.
        trial_done: Gets each judged trial's line.

    Raises:
        UsageError: An input cannot be read, or the options ask for something the inputs do not have.
    """
    instances = load_instances(command.instances_file)
    every = list(instances)
    run: RunDir | None = None
    if command.run_dir is not None:
        run = read_run_dir(command.run_dir, instances)
        # The audit judges the trials the harness resolved; harness_only compares every graded one.
        trials = run.trials if command.harness_only else [t for t in run.trials if t.harness_resolved]
        in_run = {t.instance_id for t in trials}
        instances = [i for i in instances if i.instance_id in in_run]
        note(
            f"run {run.run_id} of {run.model}: {len(run.reports)} graded instances "
            f"({sum(r.resolved for r in run.reports.values())} resolved), {len(run.ungraded)} ungraded; "
            f"{len(trials)} trials"
        )
        if not trials:
            raise UsageError(f"--run-dir {command.run_dir}: no resolved instance to audit (try --harness-only)")
    elif command.predictions_files:
        trials = load_agents(command.predictions_files, instances)
    else:
        raise UsageError("give --instances FILE and --predictions FILE or --run-dir DIR (or --replay WITNESS)")
    if command.only:
        unknown = sorted(set(command.only) - {i.instance_id for i in instances})
        if unknown:
            raise UsageError(f"--only {unknown[0]}: not in {command.instances_file}")
        instances = [i for i in instances if i.instance_id in set(command.only)]
        trials = [t for t in trials if t.instance_id in set(command.only)]
    if command.harness_only and command.environments_file is None:
        raise UsageError("--harness-only needs --environments FILE (SWE-bench's environment specs)")
    repo_root = command.repo_root if command.repo_root is not None else command.instances_file.resolve().parent
    locator = RepoLocator(root=repo_root, mapping=dict(command.repo_map), url=command.repo_url)
    cache = WorldCache(command.cache_dir)
    plan: EnvPlan | None = None
    if command.environments_file is not None:
        specs = load_environments(command.environments_file)
        sources: dict[str, str] = {}
        missing: dict[str, str] = {}
        for inst in instances:
            try:
                sources[inst.instance_id] = locator.locate(inst)
            except VouchError as exc:
                missing[inst.instance_id] = str(exc)
                note(f"{inst.instance_id}: error: {exc}")
        # The other instances of the file choose each version's environment too (its newest base
        # commit), so a run on some of them finds what a run on all of them built.
        siblings, where = siblings_of(instances, every, locator)
        plan = _environments(command, instances, sources | where, specs, cache, note, environment_step, siblings)
        plan.errors.update(missing)  # each said once: here (not found) or as its run's line (no environment)
    else:
        sources = {i.instance_id: locator.locate(i) for i in instances}
    done = SweCommandResult(trials=len(trials), run=run, plan=plan)
    if command.harness_only:
        assert plan is not None
        done.reproduction = _reproduce(command, instances, trials, sources, plan, cache, note, run)
        if run is not None:
            done.comparison = done.reproduction.config["run_dir"]["tests_status"]
        return done
    done.results = _audit(command, instances, trials, sources, plan, cache, agent, trial_done, repo_root)
    if run is not None:
        done.comparison = audit_comparison(run, done.results)
        done.results.config["run_dir"] = {**run_dir_config(run, len(trials)), "tests_status": done.comparison}
    return done


def replay_swe_witness(
    path: Path,
    *,
    cache_dir: Path | None = None,
    repeats: int = 3,
    workers: int | None = None,
    allow_weak_isolation: bool = False,
) -> ReplayOutcome:
    """Re-run one written witness in R[G] and R[s] (``vouch audit swe --replay``).

    Raises:
        UsageError: The witness or its replay plan is missing or malformed.
    """
    with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak_isolation) as executor:
        return replay_witness(path, executor=executor, cache=WorldCache(cache_dir), repeats=repeats)


def _environments(
    command: SweCommand,
    instances: list[SweInstance],
    sources: dict[str, str],
    specs: Mapping[str, RepoEnvs],
    cache: WorldCache,
    note: Note,
    step: EnvironmentStep | None,
    siblings: list[SweInstance],
) -> EnvPlan:
    """Every repo/version's environment, each said in a line once built, found or failed."""
    envs = EnvCache(command.env_dir, python=dict(command.python))
    located = [i for i in instances if i.instance_id in sources]
    plan = plan_environments(located, sources, specs, cache, envs, progress=step, siblings=siblings)
    for name, env in sorted(plan.built.items()):
        how = f"built in {env.build_s:.0f} s ({env.installs} pip installs)" if env.built else "cached"
        note(f"environment {name}: Python {env.python_version}, {how}")
        for line in plan.notes.get(name, ()):
            note(f"  note: {line}")
    for name, failure in sorted(plan.failed.items()):
        note(f"environment {name}: failed at {failure.step}: {failure.reason}")
    return plan


def _audit(
    command: SweCommand,
    instances: list[SweInstance],
    trials: list[SweTrial],
    sources: dict[str, str],
    plan: EnvPlan | None,
    cache: WorldCache,
    agent: WitnessAgent | None,
    trial_done: TrialDone | None,
    repo_root: Path,
) -> AuditResults:
    config = SweAuditConfig(
        mode=command.mode,
        rounds=command.rounds,
        witness_source=command.witness_source,
        witness_files=command.witness_files,
        repo_root=repo_root,
        k=command.k,
        mutants=command.mutants,
        regression_files=command.regression_files,
        gold_mutants=command.gold_mutants,
        seed=command.seed,
        timeout_s=command.timeout_s or (ENV_TIMEOUT_S if plan is not None else TIMEOUT_S),
        witness_dir=command.witness_dir.resolve() if command.witness_dir is not None else None,
        agent_model=command.agent_model if agent is not None else None,
        agent_config=command.agent_config if agent is not None else None,
    )
    judged = 0

    def progress(line: str) -> None:
        nonlocal judged
        judged += 1
        if trial_done is not None:
            trial_done(judged, len(trials), line)

    store = AuditStore(command.store_path or default_store_path())
    try:
        with LocalExecutor(
            workers=command.workers, preload=SWE_PRELOAD, allow_weak=command.allow_weak_isolation
        ) as executor:
            return audit_swe(
                instances,
                trials,
                executor=executor,
                cache=cache,
                config=config,
                progress=progress,
                store=store,
                agent=agent,
                sources=sources or None,
                environments=plan,
            )
    finally:
        store.close()


def _reproduce(
    command: SweCommand,
    instances: list[SweInstance],
    trials: list[SweTrial],
    sources: dict[str, str],
    plan: EnvPlan,
    cache: WorldCache,
    note: Note,
    run: RunDir | None,
) -> HarnessReproduction:
    """T0 in R, R[G] and R[s] as SWE-bench runs it, for every instance with a repository."""
    timeout_s = command.timeout_s or ENV_TIMEOUT_S
    located = [i for i in instances if i.instance_id in sources]
    with LocalExecutor(workers=command.workers, preload=SWE_PRELOAD, allow_weak=command.allow_weak_isolation) as ex:
        records = reproduce_harness(
            located, trials, executor=ex, worlds=cache, sources=sources, plan=plan, timeout_s=timeout_s, progress=note
        )
    records.extend(
        InstanceReproduction(
            instance_id=i.instance_id,
            repo=i.repo,
            version=i.version,
            status="error",
            reason=plan.errors.get(i.instance_id, "repository not found"),
            harness_resolved=next((t.harness_resolved for t in trials if t.instance_id == i.instance_id), None),
        )
        for i in instances
        if i.instance_id not in sources
    )
    config: dict[str, Any] = {"timeout_s": timeout_s, "environments": sorted(plan.built)}
    if run is not None:
        config["run_dir"] = {**run_dir_config(run, len(trials)), "tests_status": harness_comparison(run, records)}
    return HarnessReproduction(
        vouch_version=vouch.__version__,
        config=config,
        instances=records,
        environments=environment_records(plan),
        summary=summarise_reproduction(records),
    )


def run_dir_config(run: RunDir, audited: int) -> dict[str, Any]:
    """What was read from the run directory, for the results file's config."""
    return {
        "path": str(run.path),
        "run_id": run.run_id,
        "model": run.model,
        "graded": len(run.reports),
        "resolved": sum(r.resolved for r in run.reports.values()),
        "audited": audited,
        "ungraded": run.ungraded,
    }


def _row(
    instance_id: str,
    run: RunDir,
    vouch_ran: bool,
    diffs: Sequence[StatusDisagreement],
    why: str | None,
    not_compared: Sequence[str] = (),
) -> dict[str, Any]:
    report = run.reports[instance_id]
    return {
        "instance_id": instance_id,
        "harness_resolved": report.resolved,
        "harness_tests_status": report.has_tests_status,
        "vouch_ran_t0": vouch_ran,
        "disagreements": [{"test": d.test, "harness": d.harness, "vouch": d.vouch} for d in diffs],
        "not_compared": sorted(not_compared),
        "reason": why,
    }


def harness_comparison(run: RunDir, records: Sequence[InstanceReproduction]) -> list[dict[str, Any]]:
    """Per instance of a ``harness_only`` run: the tests vouch's R[s] and the harness's judged differently."""
    rows = []
    for record in records:
        if record.instance_id not in run.reports:
            continue
        agent = record.agent
        if agent is None or agent.resolved is None:
            why = record.reason or (agent.reason if agent else None) or "no graded run of the agent's world"
            rows.append(_row(record.instance_id, run, False, [], why))
            continue
        failed = set(agent.f2p_failed) | set(agent.p2p_failed)
        diffs = compare_tests_status(run.reports[record.instance_id], failed, set(agent.skipped))
        rows.append(_row(record.instance_id, run, True, diffs, None, agent.skipped))
    return rows


def audit_comparison(run: RunDir, results: AuditResults) -> list[dict[str, Any]]:
    """Per audited trial: the tests vouch's run of T0 in R[s] and the harness's judged differently.

    A T0 id vouch neither passed nor failed (skipped, or left out of T0 because it fails with and
    without G on this machine) is not compared.
    """
    rows = []
    for trial in results.trials:
        if trial.task_id not in run.reports:
            continue
        t0 = next((r for r in trial.evidence.t0 if r.world == "model"), None)
        if t0 is None or not (t0.tests_passed or t0.tests_failed):
            rows.append(_row(trial.task_id, run, False, [], trial.reason or "vouch did not run T0 in R[s]"))
            continue
        report = run.reports[trial.task_id]
        ran = set(t0.tests_passed) | set(t0.tests_failed)
        left_out = (report.passed | report.failed) - ran
        diffs = compare_tests_status(report, set(t0.tests_failed), left_out)
        rows.append(_row(trial.task_id, run, True, diffs, None, sorted(left_out)))
    return rows
