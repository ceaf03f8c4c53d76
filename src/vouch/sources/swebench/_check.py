"""The reference verifier of a SWE-bench code task, run: T0 in the world of a candidate patch.

A candidate's world is the base commit with the candidate's patch, then the test patch applied
as SWE-bench's harness applies it (the files it touches reset first); T0 is the instance's
FAIL_TO_PASS and PASS_TO_PASS there, run and graded as the repository form of the audit runs
them (``vouch.swebench.Runner``: the spec's test command in the instance's environment,
through the engine; the log read with the repository's swebench parser). A patch that does not
apply is FAIL, as the harness counts it, and so is a test run that ends without a log (the
patched package no longer imports, a timeout); only a world that cannot be made (a missing
commit) is INVALID.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vouch.errors import UsageError
from vouch.exec import Executor, PytestRecordError, PytestRun, RunResult
from vouch.swebench import EnvPlan, Runner, SweInstance, WorldEnv, classify, graded_t0, parse_log, t0_result, unwrap
from vouch.worlds import Environment, Patch, Unappliable, World, WorldCache

__all__ = [
    "WORLDS_FILE",
    "T0Decision",
    "T0Job",
    "WorldSetup",
    "run_public",
    "run_t0",
    "withheld_paths",
    "worlds_record",
]

_CHECK_VERSION = 1
"""Part of every stored decision's key: a change of how T0 is judged invalidates them."""


@dataclass(frozen=True)
class WorldSetup:
    """Where an instance's worlds come from and what runs them."""

    worlds: WorldCache
    sources: dict[str, str]
    """instance_id -> repository (local path or URL)."""
    plan: EnvPlan | None
    """Environments per instance; None: tests run in the pool's own interpreter (node ids)."""
    timeout_s: float

    def env(self, instance_id: str) -> WorldEnv | None:
        return self.plan.envs.get(instance_id) if self.plan is not None else None


@dataclass(frozen=True)
class T0Job:
    """One candidate patch of one instance, judged on the T0 ids given."""

    instance: SweInstance
    name: str
    patch: str
    t0: tuple[str, ...]


@dataclass(frozen=True)
class T0Decision:
    """PASS, FAIL or INVALID, why, and the T0 ids that did not pass (with a cause each)."""

    decision: str
    reason: str | None
    failed: tuple[str, ...] = ()
    causes: tuple[tuple[str, str, str], ...] = ()
    """(test id, cause, detail) of each failed id, as the harness reproduction classifies it."""
    graded: bool = True
    """T0's log was read and graded (False: the run ended without one, or there was no world)."""
    stored: bool = False
    """Read from the check store (not run again)."""


def _store_key(world: World, job: T0Job, env: WorldEnv | None) -> str:
    parts = [str(_CHECK_VERSION), world.key, env.env.key if env else "own", "\n".join(job.t0)]
    if env is not None and env.services:  # the runs had local services (requests: httpbin)
        parts.append(",".join(env.services))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _stored(store: Path | None, key: str) -> T0Decision | None:
    if store is None or not (store / f"{key}.json").is_file():
        return None
    try:
        data = json.loads((store / f"{key}.json").read_text())
        return T0Decision(
            decision=str(data["decision"]),
            reason=data.get("reason"),
            failed=tuple(data.get("failed", ())),
            causes=tuple(tuple(c) for c in data.get("causes", ())),
            stored=True,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(store: Path | None, key: str, decision: T0Decision) -> None:
    if store is None:
        return
    store.mkdir(parents=True, exist_ok=True)
    data = {
        "decision": decision.decision,
        "reason": decision.reason,
        "failed": list(decision.failed),
        "causes": [list(c) for c in decision.causes],
    }
    tmp = store / f"{key}.json.tmp"
    tmp.write_text(json.dumps(data))
    tmp.replace(store / f"{key}.json")


def _judge(job: T0Job, run: RunResult, env: WorldEnv | None) -> T0Decision:
    if not run.ok or not isinstance(run.value, dict):
        # The harness counts a test run that ends without a log (the package no longer imports,
        # a timeout) as not resolved: FAIL, not INVALID. The engine raises when it is the
        # infrastructure that failed.
        why = run.reason or (run.exception.message if run.exception else "no outcome")
        return T0Decision("FAIL", f"T0 run {run.status.value}: {why}"[:300], graded=False)
    try:
        record = PytestRun.from_json(run.value)
    except PytestRecordError as exc:  # vouch cannot read what the run reported: no decision
        return T0Decision("INVALID", f"the T0 run's pytest record could not be read: {exc}"[:300], graded=False)
    result = graded_t0("model", job.t0, run, env, job.instance) if env else t0_result("model", job.t0, run)
    if result.passed:
        return T0Decision("PASS", None)
    failed = tuple(result.tests_failed)
    causes: list[tuple[str, str, str]] = []
    if env is not None:
        log = str(run.value.get("log") or "")
        statuses = parse_log(log, env.parser)
        for test in failed[:20]:
            cause, detail = classify(test, statuses, record.failures, log)
            causes.append((test, cause, detail))
    else:
        outcomes = record.outcomes
        causes = [(t, "missing" if t not in outcomes else str(outcomes[t]), "") for t in failed[:20]]
    return T0Decision("FAIL", result.reason, failed, tuple(causes))


def run_t0(
    executor: Executor,
    setup: WorldSetup,
    jobs: Sequence[T0Job],
    *,
    store: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[T0Decision]:
    """T0 in the world of each job's patch; decisions in job order.

    Args:
        executor: The engine.
        setup: Worlds, repositories and environments.
        jobs: The candidates.
        store: A directory keeping each decision by world, environment and T0 (a re-run reads
            them instead of running again); None keeps nothing.
        progress: Called with (done, total) as batches finish.

    Returns:
        One decision per job. A world that cannot be made (a missing commit) is INVALID with the
        reason; a patch that does not apply is FAIL.
    """
    runner = Runner(executor, timeout_s=setup.timeout_s)
    out: list[T0Decision | None] = [None] * len(jobs)
    pending: list[tuple[int, World, WorldEnv | None, str]] = []
    for i, job in enumerate(jobs):
        inst = job.instance
        patches = [Patch("candidate", job.patch), Patch("test_patch", inst.test_patch, reset=True)]
        try:
            world = setup.worlds.materialise(setup.sources[inst.instance_id], inst.base_commit, patches)
        except Exception as exc:  # noqa: BLE001 - a missing commit or clone: this job only
            out[i] = T0Decision("INVALID", f"no world: {exc}"[:300], graded=False)
            continue
        if isinstance(world, Unappliable):
            out[i] = T0Decision("FAIL", f"unappliable: {world.reason}"[:300])
            continue
        env = setup.env(inst.instance_id)
        key = _store_key(world, job, env)
        found = _stored(store, key)
        if found is not None:
            out[i] = found
            continue
        if env is not None:
            runner.attach(world, env)
        pending.append((i, world, env, key))
    done = len(jobs) - len(pending)
    if progress is not None:
        progress(done, len(jobs))
    # One batch per instance's T0 (the runner passes one T0 list per batch), in job order.
    groups: dict[tuple[str, ...], list[tuple[int, World, WorldEnv | None, str]]] = {}
    for item in pending:
        groups.setdefault(jobs[item[0]].t0, []).append(item)
    for t0, items in groups.items():
        runs = runner.t0_batch([(w, None, None) for _, w, _, _ in items], list(t0), "T0 of the cases")
        for (i, _, env, key), run in zip(items, runs, strict=True):
            decision = _judge(jobs[i], run, env)
            out[i] = decision
            if decision.graded:  # a run without a log (a timeout under load) is tried again next time
                _store(store, key, decision)
        done += len(items)
        if progress is not None:
            progress(done, len(jobs))
    return [d if d is not None else T0Decision("INVALID", "not run", graded=False) for d in out]


# --- env.run_public of a SWE-bench task --------------------------------------------------------

WORLDS_FILE = "swebench-worlds.json"
"""Beside a build's task directories: where each instance's worlds and environment are on this
machine (paths, so it is not part of the build's content hash)."""
_STATUS = {"PASSED": "passed", "XFAIL": "xfailed", "SKIPPED": "skipped", "FAILED": "failed", "ERROR": "error"}


def worlds_record(setup: WorldSetup, instance_ids: Sequence[str]) -> dict[str, Any]:
    """The worlds file's content for ``instance_ids`` (written by the build)."""
    instances: dict[str, Any] = {}
    for iid in instance_ids:
        env = setup.env(iid)
        instances[iid] = {
            "source": setup.sources[iid],
            "env": None
            if env is None
            else {
                **env.env.record(),
                "harness": list(env.harness),
                "test_files": list(env.test_files),
                "parser": env.parser,
                "services": list(env.services),
            },
        }
    return {
        "kind": "swebench-worlds",
        "schema_version": 1,
        "cache": str(setup.worlds.root),
        "timeout_s": setup.timeout_s,
        "instances": instances,
    }


def withheld_paths(task_root: Path) -> list[str]:
    """What a verifier under test must not read for a SWE-bench task: the world cache (its
    worlds hold the gold patch and the test patch) and the instance's repository (its history
    holds the upstream fix). Empty when the task has no worlds file beside it."""
    try:
        data = json.loads((task_root.parent / WORLDS_FILE).read_text())
        iid = json.loads((task_root / "reference" / "instance.json").read_text())["instance_id"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    entry = (data.get("instances") or {}).get(iid) or {}
    paths = [str(data.get("cache") or ""), str(entry.get("source") or "")]
    return [p for p in paths if p and "://" not in p and Path(p).exists()]


def _setup_for(task_root: Path, instance_id: str) -> WorldSetup:
    path = task_root.parent / WORLDS_FILE
    try:
        data = json.loads(path.read_text())
        entry = data["instances"][instance_id]
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{path}: no world record of {instance_id} ({exc}); rebuild the task set here") from None
    env = None
    if entry.get("env"):
        e = entry["env"]
        env = WorldEnv(
            env=Environment.from_record(e),
            harness=tuple(e["harness"]),
            test_files=tuple(e["test_files"]),
            parser=e["parser"],
            services=tuple(e.get("services") or ()),
        )
    plan = EnvPlan(envs={instance_id: env}, errors={}, built={}, failed={}, notes={}) if env is not None else None
    return WorldSetup(
        worlds=WorldCache(data["cache"]),
        sources={instance_id: entry["source"]},
        plan=plan,
        timeout_s=float(data.get("timeout_s", 900.0)),
    )


def run_public(
    executor: Executor,
    task_root: Path,
    patch: str,
    tests: Sequence[str] | None = None,
    *,
    hidden: bool = False,
    nested: bool = True,
) -> dict[str, Any]:
    """``env.run_public(tests)`` of a SWE-bench task: tests in the world of ``patch``.

    The world is the candidate's world as T0 sees it (the test patch applied after the
    candidate's patch); the harness's test command runs once, and the outcome of each requested
    id is read from its log. ``tests=None`` asks for the public tests (PASS_TO_PASS, as the
    task's ``environment/public_tests.json`` lists them). Ids outside the public ones are
    answered only with ``hidden=True`` (the reference verifier's runs): a verifier under test
    never learns the outcome of a FAIL_TO_PASS test, even by naming it.

    Args:
        executor: The engine.
        task_root: The task directory (its build's worlds file is beside it).
        patch: The candidate's unified diff.
        tests: Test ids; None for the public tests.
        hidden: Also answer for FAIL_TO_PASS ids.
        nested: Run as a nested run (the caller is a service handler of a verifier's run).

    Returns:
        ``{"ok": every requested test passed (xfailed, skipped), "outcomes": {id: passed |
        xfailed | skipped | failed | error | missing | not public}, "error": str | None}``.
    """
    instance = json.loads((task_root / "reference" / "instance.json").read_text())
    repo = json.loads((task_root / "environment" / "repo.json").read_text())
    public = json.loads((task_root / "environment" / "public_tests.json").read_text())
    iid = instance["instance_id"]
    allowed = set(public) | (set(instance["FAIL_TO_PASS"]) if hidden else set())
    wanted = list(public) if tests is None else [str(t) for t in tests]
    outcomes: dict[str, str] = {t: "not public" for t in wanted if t not in allowed}
    run_ids = [t for t in wanted if t in allowed]
    if not run_ids:
        return {"ok": not outcomes, "outcomes": outcomes, "error": None if not outcomes else "no public test named"}
    setup = _setup_for(task_root, iid)
    inst = SweInstance(
        instance_id=iid,
        repo=repo["repo"],
        base_commit=repo["base_commit"],
        problem_statement="",
        patch="-",
        test_patch=instance["test_patch"],
        FAIL_TO_PASS=instance["FAIL_TO_PASS"],
        PASS_TO_PASS=instance["PASS_TO_PASS"],
        version=repo.get("version"),
    )
    patches = [Patch("candidate", patch), Patch("test_patch", inst.test_patch, reset=True)]
    world = setup.worlds.materialise(setup.sources[iid], inst.base_commit, patches)
    if isinstance(world, Unappliable):
        return {"ok": False, "outcomes": {t: "missing" for t in wanted}, "error": f"unappliable: {world.reason}"}
    runner = Runner(executor, timeout_s=setup.timeout_s)
    env = setup.env(iid)
    if env is not None:
        runner.attach(world, env)
        kwargs = {"root": str(world.path), "cover": None, "record": None, "harness": list(env.harness)}
        spec = runner.spec(world, "run_tests", list(env.test_files), kwargs, name=f"run_public {world.key}")
    else:
        kwargs = {"root": str(world.path), "cover": None, "record": None}
        spec = runner.spec(world, "run_tests", run_ids, kwargs, name=f"run_public {world.key}")
    spec = replace(spec, nested=nested)
    run = unwrap(spec, executor.run(spec))
    if not run.ok or not isinstance(run.value, dict):
        why = run.reason or (run.exception.message if run.exception else "no outcome")
        return {"ok": False, "outcomes": {t: "missing" for t in wanted}, "error": f"{run.status.value}: {why}"[:300]}
    if env is not None:
        statuses = parse_log(str(run.value.get("log") or ""), env.parser)
        found = {t: _STATUS.get(statuses[t], statuses[t].lower()) for t in run_ids if t in statuses}
    else:
        try:
            got = PytestRun.from_json(run.value).outcomes
        except PytestRecordError as exc:
            error = f"the run's pytest record could not be read: {exc}"[:300]
            return {"ok": False, "outcomes": {t: "missing" for t in wanted}, "error": error}
        found = {t: str(got[t]) for t in run_ids if t in got}
    outcomes.update({t: found.get(t, "missing") for t in run_ids})
    ok = all(outcomes[t] in ("passed", "xfailed", "skipped") for t in wanted)
    return {"ok": ok, "outcomes": {t: outcomes[t] for t in wanted}, "error": None}
