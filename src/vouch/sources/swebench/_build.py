"""``vouch data build swebench``: the build driver of SWE-bench code tasks.

Loads the instances (and predictions, labels), finds each repository and environment with the
repository form's own functions (``RepoLocator``, ``plan_environments``), makes each
instance's cases (``swebench._tasks``), runs T0 with the gold patch once to calibrate, writes
the task directories and the manifest, and runs the reference verifier on every case
(``swebench._check``). Every instance that cannot be built is one line in the report's
``skipped`` and the build goes on; T0 decisions are kept in the cache (``<cache>/checks``), so
a build that was stopped resumes where it was.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import vouch
from vouch.core import FlaggedCase, Manifest, write_task
from vouch.errors import UsageError, VouchError
from vouch.exec import Executor
from vouch.sources._registry import BuildReport, _prepare_out
from vouch.sources.swebench._check import WORLDS_FILE, T0Decision, T0Job, WorldSetup, run_t0, worlds_record
from vouch.sources.swebench._tasks import (
    BENCHMARK,
    Labels,
    SwebenchOptions,
    TaskBuild,
    file_hash,
    instance_cases,
    load_labels,
    read_texts,
    task_files,
    trials_by_instance,
)
from vouch.swebench import (
    RepoLocator,
    SweInstance,
    SweTrial,
    load_environments,
    load_instances,
    load_predictions,
    plan_environments,
    siblings_of,
)
from vouch.worlds import EnvCache, WorldCache

__all__ = ["build_options", "build_swebench"]

Line = Callable[[str], None]
Tick = Callable[[int, int], None]


def build_options(options: SwebenchOptions) -> dict[str, Any]:
    """What the manifest records of the options (the inputs by content, not by path)."""
    record: dict[str, Any] = {"instances": file_hash(options.instances)}
    for name, path in (("predictions", options.predictions), ("labels", options.labels)):
        if path is not None:
            record[name] = file_hash(path)
    if options.environments is not None:
        record["environments"] = file_hash(options.environments)
    if options.only:
        record["only"] = sorted(options.only)
    return record


def _cache_root(options: SwebenchOptions) -> Path:
    return (options.cache or Path.cwd() / ".vouch").resolve()


def _load(options: SwebenchOptions) -> tuple[list[SweInstance], list[SweInstance], list[SweTrial], Labels]:
    """(the instances to build, every instance of the file, the trials, the labels)."""
    instances = every = load_instances(options.instances)
    trials = load_predictions(options.predictions, instances) if options.predictions is not None else []
    labels = load_labels(options.labels) if options.labels is not None else Labels()
    if options.only:
        known = {i.instance_id for i in instances}
        unknown = sorted(set(options.only) - known)
        if unknown:
            raise UsageError(f"--only {unknown[0]}: not in {options.instances}")
        instances = [i for i in instances if i.instance_id in set(options.only)]
    return instances, every, trials, labels


def _calibrate(inst: SweInstance, decision: T0Decision) -> tuple[dict[str, str] | None, str]:
    """From the gold's T0 here: the PASS_TO_PASS ids to leave out, or why the instance is ill-formed."""
    if not decision.graded:
        return None, f"T0 with the gold patch did not run to a log: {decision.reason}"
    causes = {t: f"{c}: {d}".rstrip(": ") for t, c, d in decision.causes}
    f2p = [t for t in decision.failed if t in set(inst.fail_to_pass)]
    if f2p:
        detail = "; ".join(f"{t} ({causes.get(t, 'fails')})" for t in f2p[:3])
        return None, f"ill-formed here: {len(f2p)} FAIL_TO_PASS id(s) do not pass with the gold patch: {detail}"[:500]
    return {t: causes.get(t, "fails with the gold patch") for t in decision.failed}, ""


def build_swebench(
    out: Path,
    options: SwebenchOptions,
    *,
    seed: int,
    executor: Executor,
    check: bool = True,
    force: bool = False,
    line: Line | None = None,
    tick: Tick | None = None,
) -> BuildReport:
    """Build SWE-bench code tasks into ``out``; see the module docstring.

    Args:
        out: The task set's directory.
        options: Instances, predictions, labels, repositories, environments, caches.
        seed: Chooses the dropped block and the mutants of each instance.
        executor: The engine (every T0 runs through it).
        check: Run the reference verifier on every case and flag disagreements.
        force: Replace a different build in ``out``.
        line: Called with one line per instance and per bad input.
        tick: Progress of the check, (done, total).

    Returns:
        The report: manifest, skipped instances (id, reason), seconds.
    """
    say = line or (lambda _: None)
    started = time.monotonic()
    instances, every, trials, labels = _load(options)
    record = build_options(options)
    cache = _cache_root(options)
    worlds = WorldCache(cache / "worlds")
    locator = RepoLocator(root=options.repo_root or options.instances.resolve().parent, mapping=options.repo_map)
    skipped: list[tuple[str, str]] = []

    def skip(iid: str, reason: str) -> None:
        skipped.append((iid, reason))
        say(f"{iid}: skipped: {reason}")

    sources: dict[str, str] = {}
    for inst in instances:
        try:
            sources[inst.instance_id] = locator.locate(inst)
        except VouchError as exc:
            skip(inst.instance_id, str(exc))
    plan = None
    if options.environments is not None:
        specs = load_environments(options.environments)
        envs = EnvCache(options.env_dir or cache / "envs", python=dict(options.python))
        located = [i for i in instances if i.instance_id in sources]
        # The file's other instances choose each version's environment too, as in vouch audit swe.
        siblings, where = siblings_of(located, every, locator)
        plan = plan_environments(
            located,
            sources | where,
            specs,
            worlds,
            envs,
            progress=lambda text, *_: say(f"environment {text}"),
            siblings=siblings,
        )
        for inst in located:
            if inst.instance_id in plan.errors:
                skip(inst.instance_id, plan.errors[inst.instance_id])
        for name, env in sorted(plan.built.items()):
            say(f"environment {name}: Python {env.python_version}, " + ("built" if env.built else "cached"))
    setup = WorldSetup(
        worlds=worlds,
        sources=sources,
        plan=plan,
        timeout_s=options.timeout_s or (900.0 if plan is not None else 120.0),
    )
    by_instance = trials_by_instance(trials)
    builds: list[TaskBuild] = []
    ready = [i for i in instances if i.instance_id not in dict(skipped)]
    made: list[tuple[SweInstance, list[Any], str]] = []
    for inst in ready:
        try:
            texts = read_texts(worlds, sources[inst.instance_id], inst)
        except (VouchError, OSError) as exc:
            skip(inst.instance_id, str(exc))
            continue
        rng = random.Random(f"{seed}:{inst.instance_id}")
        cases, gold = instance_cases(inst, texts, by_instance.get(inst.instance_id, []), labels, rng)
        made.append((inst, cases, gold))
    # The gold's T0 here, once per instance: which PASS_TO_PASS ids this machine cannot pass.
    store = cache / "checks"
    say(f"T0 with the gold patch of {len(made)} instances (which PASS_TO_PASS ids fail here) ...")
    gold_runs = run_t0(executor, setup, [T0Job(i, "gold", g, tuple(i.t0)) for i, _, g in made], store=store)
    for (inst, cases, gold), decision in zip(made, gold_runs, strict=True):
        left_out, why = _calibrate(inst, decision)
        if left_out is None:
            skip(inst.instance_id, why)
            continue
        world_env = setup.env(inst.instance_id)
        builds.append(
            TaskBuild(
                inst=inst,
                cases=cases,
                gold=gold,
                left_out=left_out,
                agents=labels.agents.get(inst.instance_id),
                environment=world_env.env.key if world_env is not None else None,
            )
        )
        note = f"; {len(left_out)} PASS_TO_PASS ids left out of T0 (fail with the gold patch here)" if left_out else ""
        say(f"{inst.instance_id}: {len(cases)} cases{note}")

    _prepare_out(out, BENCHMARK, seed, record, force)
    tasks = [task_files(b) for b in builds]
    digest = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: t.spec.id):
        digest.update(write_task(out, task).encode())
    flagged: list[FlaggedCase] = []
    decisions: dict[str, dict[str, Any]] = {}
    if check:
        jobs = [
            T0Job(b.inst, c.id, c.candidate["patch"], b.t0) for b in builds for c in b.cases if c.category != "gold"
        ]
        owners = [(b, c) for b in builds for c in b.cases if c.category != "gold"]
        results = run_t0(executor, setup, jobs, store=store, progress=tick)
        for b in builds:
            gold_case = next(c for c in b.cases if c.category == "gold")
            # The gold passes T0 by construction once the ids it fails here are left out.
            decisions.setdefault(b.inst.instance_id, {})[gold_case.id] = {"decision": "PASS"}
        for (b, case), result in zip(owners, results, strict=True):
            decisions.setdefault(b.inst.instance_id, {})[case.id] = {
                "decision": result.decision,
                "reason": result.reason,
                "failed": list(result.failed[:20]),
            }
            expected = "PASS" if case.label == "positive" else "FAIL"
            if result.decision != expected:
                flagged.append(
                    FlaggedCase(
                        task_id=f"swebench-{b.inst.instance_id}",
                        case_id=case.id,
                        label=case.label,
                        reference_decision=result.decision,
                        reason=result.reason,
                    )
                )
    counts: dict[str, dict[str, int]] = {"by_kind": {}, "by_category": {}, "by_label": {}}
    for task in tasks:
        counts["by_kind"][task.spec.kind] = counts["by_kind"].get(task.spec.kind, 0) + 1
        for case in task.cases:
            counts["by_category"][case.category] = counts["by_category"].get(case.category, 0) + 1
            counts["by_label"][case.label] = counts["by_label"].get(case.label, 0) + 1
    versions = {"swebench-instances": record["instances"]}
    versions.update({f"swebench-{k}": v for k, v in record.items() if k in ("predictions", "labels", "environments")})
    manifest = Manifest(
        builder_version=vouch.__version__,
        source=BENCHMARK,
        source_versions=versions,
        seed=seed,
        options=record,
        tasks=len(tasks),
        cases=sum(len(t.cases) for t in tasks),
        counts={k: dict(sorted(v.items())) for k, v in counts.items()},
        content_hash="sha256:" + digest.hexdigest(),
        flagged=sorted(flagged, key=lambda f: (f.task_id, f.case_id)),
    )
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    seconds = time.monotonic() - started
    details = {
        "kind": "swebench-build",
        "schema_version": 1,
        "vouch_version": vouch.__version__,
        "seconds": round(seconds, 1),
        "skipped": [{"instance_id": i, "reason": r} for i, r in skipped],
        "left_out_of_t0": {b.inst.instance_id: b.left_out for b in builds if b.left_out},
        "decisions": decisions,
    }
    worlds_file = worlds_record(setup, [b.inst.instance_id for b in builds])
    (out / WORLDS_FILE).write_text(json.dumps(worlds_file, indent=2, sort_keys=True) + "\n")
    (out / "swebench-build.json").write_text(json.dumps(details, indent=2, sort_keys=True) + "\n")
    return BuildReport(manifest=manifest, skipped=skipped, seconds=seconds)
