"""The reference verifier of a SWE-bench code task, run: T0 in the world of a candidate patch.

A candidate's world is the base commit with the candidate's patch, then the test patch applied
as SWE-bench's harness applies it (the files it touches reset first); T0 is the instance's
FAIL_TO_PASS and PASS_TO_PASS there, run and graded by the repository form of the audit
(``vouch.audit._swe_runs.Runner``: the spec's test command in the instance's environment,
through the engine; the log read with the repository's swebench parser). A patch that does not
apply is FAIL, as the harness counts it; a run that ends without a log (timeout, crash) is
INVALID with its reason.

This module joins the task builder (``sources``) to the repository form's runner (``audit``):
it is imported by the command line only, so the builder itself stays below ``audit``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vouch.audit._swe_env import EnvPlan
from vouch.audit._swe_harness import classify
from vouch.audit._swe_runs import Runner, WorldEnv, graded_t0, t0_result
from vouch.exec import Executor, RunResult
from vouch.sources._swe import SweInstance
from vouch.sources._swebench_logs import parse_log
from vouch.worlds import Patch, Unappliable, World, WorldCache

__all__ = ["T0Decision", "T0Job", "WorldSetup", "run_t0"]

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
    stored: bool = False
    """Read from the check store (not run again)."""


def _store_key(world: World, job: T0Job, env: WorldEnv | None) -> str:
    parts = [str(_CHECK_VERSION), world.key, env.env.key if env else "own", "\n".join(job.t0)]
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
        why = run.reason or (run.exception.message if run.exception else "no outcome")
        return T0Decision("INVALID", f"T0 run {run.status.value}: {why}"[:300])
    result = graded_t0("model", job.t0, run, env, job.instance) if env else t0_result("model", job.t0, run)
    if result.passed:
        return T0Decision("PASS", None)
    failed = tuple(result.tests_failed)
    causes: list[tuple[str, str, str]] = []
    if env is not None:
        log = str(run.value.get("log") or "")
        statuses = parse_log(log, env.parser)
        failures = run.value.get("failures") or {}
        for test in failed[:20]:
            cause, detail = classify(test, statuses, failures, log)
            causes.append((test, cause, detail))
    else:
        outcomes = run.value.get("outcomes", {})
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
            out[i] = T0Decision("INVALID", f"no world: {exc}"[:300])
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
            if decision.decision != "INVALID":
                _store(store, key, decision)
        done += len(items)
        if progress is not None:
            progress(done, len(jobs))
    return [d if d is not None else T0Decision("INVALID", "not run") for d in out]
