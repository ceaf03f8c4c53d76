"""Running V4V over a task set: decisions through the engine, then every check, then exclusions."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vouch.bench import Decision, Task, check_pool, decide_cases, load_task, run_verifiers, share_key
from vouch.errors import UsageError
from vouch.exec import Executor, PoolSet, make_executor
from vouch.store import Store
from vouch.v4v import _checks, _registry
from vouch.v4v._checks import CheckInputs, CheckResult
from vouch.v4v._mutation import MAX_MUTANTS, mutation_check
from vouch.v4v._registry import CHECKS, load_target

Decisions = dict[str, dict[str, tuple[str, str | None]]]
"""task id -> case id -> (decision, reason)."""

Progress = Callable[[str, int, int], None]


def _references(tasks: Sequence[Task]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for task in tasks:
        path = task.root / "reference" / "verifier.py"
        found[task.id] = path.read_text() if path.exists() else None
    return found


def load_for_v4v(tasks_dir: Path) -> tuple[list[Task], list[tuple[str, str]]]:
    """The tasks under ``tasks_dir`` and, apart, those that do not load: (task id, reason) each.

    A task whose ``task.toml`` or a case file does not parse fails V4V with the reason; it does
    not stop the screening of the others.

    Raises:
        UsageError: ``tasks_dir`` is missing or holds no task at all.
    """
    if not tasks_dir.is_dir():
        raise UsageError(f"no such tasks directory: {tasks_dir}")
    tasks: list[Task] = []
    broken: list[tuple[str, str]] = []
    for toml in sorted(tasks_dir.rglob("task.toml")):
        try:
            tasks.append(load_task(toml.parent))
        except UsageError as exc:
            broken.append((toml.parent.name, str(exc)))
    if not tasks and not broken:
        raise UsageError(f"{tasks_dir} holds no task directories (none has a task.toml)")
    return tasks, broken


def run_v4v(
    tasks: Sequence[Task],
    *,
    store: Store,
    checks: Sequence[str] = CHECKS,
    repeat: int = 3,
    threshold: float = _checks.DEFAULT_THRESHOLD,
    seed: int = 0,
    allow_weak: bool = False,
    progress: Progress | None = None,
    max_mutants: int = MAX_MUTANTS,
    broken: Sequence[tuple[str, str]] = (),
    executor_kind: str = "local",
    address: str | None = None,
) -> dict[str, Any]:
    """Run the chosen checks on every task; returns the JSON body (without the envelope).

    The checks are ``V4V_CHECKS``'s (``vouch.v4v._registry``): first the engine stages the
    chosen ones need, then each check's ``run`` on each task, in the registry's order.
    ``executor_kind`` and ``address`` say where the runs happen (``vouch.exec.make_executor``).
    """
    valid = _registry.check_names()
    unknown = sorted(set(checks) - set(valid))
    if unknown:
        raise UsageError(f"unknown checks {unknown}; valid checks: {', '.join(valid)}")
    chosen = [check for check in _registry.V4V_CHECKS if check.name in checks]
    stages = {stage for check in chosen for stage in check.stages}
    repeated = [check.name for check in chosen if "repeats" in check.stages]
    if repeat < 2 and repeated:
        raise UsageError(f"repeat={repeat}: {', '.join(repeated)} needs at least 2 runs")
    references = _references(tasks)

    def pool(hash_seed: str = "0") -> Executor:
        # A pool per preload set: BFCL and HumanEval runs never fork the AgentDojo-warmed pool
        # (with Ray, one per preload set on each node).
        return PoolSet(
            lambda wanted: make_executor(
                executor_kind, address, preload=list(wanted), allow_weak=allow_weak, hash_seed=hash_seed
            )
        )

    def tick(stage: str) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(stage, done, total)

        return report

    stats: dict[str, Any] = {}
    replayed: Decisions = {}
    checked: list[bool] = []

    def proven(executor: Executor) -> Executor:
        # The pool proves it decides a known answer before its first decision (``check_pool``).
        if not checked:
            check_pool(executor)
            checked.append(True)
        return executor

    if "replay" in stages:
        with pool() as executor:
            proven(executor)
            rows, _ = run_verifiers(executor, store, tasks, references, progress=tick("replay"), share=True)
        for row in rows:
            replayed.setdefault(row.task.id, {})[row.case_id] = (row.decision, row.reason)

    repeats: list[Decisions] = [replayed]
    if "repeats" in stages:
        items = [(t, c, references[t.id]) for t in tasks for c in t.cases]
        # Twins (decisions shared between tasks, as in C1) are decided once per run.
        leader: dict[tuple[str, str], int] = {}
        same_as = []
        for i, (task, case, verifier) in enumerate(items):
            key = share_key(task, verifier, case.candidate)
            same_as.append(i if key is None else leader.setdefault(key, i))
        rng = random.Random(seed)
        for run in range(1, repeat):
            order = [i for i in range(len(items)) if same_as[i] == i]
            rng.shuffle(order)
            # A fresh pool per run, with its own hash seed: forked children inherit the zygote's.
            with pool(hash_seed=str(1000 + run)) as executor:
                proven(executor)
                decided = decide_cases(executor, [items[i] for i in order], progress=tick(f"repeat {run + 1}"))
            by_item = dict(zip(order, decided, strict=True))
            decisions: Decisions = {}
            for i, (task, case, _) in enumerate(items):
                result = by_item[same_as[i]]
                decisions.setdefault(task.id, {})[case.id] = (result.decision.value, result.reason)
            repeats.append(decisions)

    mutation: dict[str, CheckResult] = {}
    if "mutants" in stages:
        with pool() as executor:
            proven(executor)
            if not replayed:
                rows, _ = run_verifiers(executor, store, tasks, references, progress=tick("replay"), share=True)
                for row in rows:
                    replayed.setdefault(row.task.id, {})[row.case_id] = (row.decision, row.reason)
            started = time.perf_counter()
            mutation = mutation_check(
                executor,
                store,
                tasks,
                references,
                replayed,
                seed=seed,
                progress=tick("mutants"),
                stats=stats,
                max_mutants=max_mutants,
            )
            stats["mutation_wall_s"] = round(time.perf_counter() - started, 2)

    inputs = CheckInputs(references, replayed, repeats, mutation, threshold, seed)
    runs = [(check.name, load_target(check.run)) for check in chosen]
    rows_out = []
    totals = {name: {"passed": 0, "failed": 0} for name in checks}
    excluded = []
    for task in tasks:
        results: dict[str, CheckResult] = {}  # check name -> result
        if not task.cases:
            results = {name: CheckResult(False, {}, "the task has no cases") for name in checks}
        else:
            results = {name: run(task, inputs) for name, run in runs}
        run_checks = results
        retained = all(r.passed for r in run_checks.values())
        for name, check in results.items():
            totals[name]["passed" if check.passed else "failed"] += 1
        failed = [name for name, r in run_checks.items() if not r.passed]
        if not retained:
            excluded.append({"task_id": task.id, "failed_checks": failed})
        rows_out.append(
            {
                "task_id": task.id,
                "kind": task.spec.kind,
                "source": task.spec.source.benchmark,
                "retained": retained,
                "checks": {name: r.to_dict() for name, r in results.items()},
            }
        )
    for task_id, reason in broken:  # tasks that do not load fail every check, with the reason
        for name in checks:
            totals[name]["failed"] += 1
        excluded.append({"task_id": task_id, "failed_checks": list(checks)})
        not_loaded = {name: CheckResult(False, {}, f"the task does not load: {reason}").to_dict() for name in checks}
        rows_out.append({"task_id": task_id, "kind": None, "source": None, "retained": False, "checks": not_loaded})
    return {
        "tasks": rows_out,
        "totals": totals,
        "excluded": excluded,
        "retained": sum(r["retained"] for r in rows_out),
        "checks_run": list(checks),
        "stats": stats,
        "errors": _errors(replayed, repeats),
    }


def _errors(replayed: Decisions, repeats: list[Decisions]) -> int:
    """How many of the reference's decisions vouch failed to make (ERROR): a V4V result with
    any is incomplete, whatever its checks say."""
    runs = [replayed, *repeats[1:]]
    return sum(d == Decision.ERROR.value for run in runs for cases in run.values() for d, _ in cases.values())
