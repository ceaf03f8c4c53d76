"""How far the offline input pool reaches, without the rest of the audit: a quick loop for tuning.

Runs only what the offline witness source needs to find a difference (T0 in R[G] and R[s], the
task's pool through G, every passing program on its pool, the ambiguity rule over the pool) and
scores "some valid input separates the trial from G" against the labels: the recall ceiling of
the witness search and the precision of its raw differences. The full audit (witnesses,
minimising, validation) then decides; ``audit_recall.py`` scores that.

    .venv/bin/python benchmarks/audit_pool.py --samples S [S2] --labels L [L2] [--workers 2] [--tasks-every 1]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from audit_recall import merged_labels, widen
from vouch.audit import PRELOAD
from vouch.audit.function import _inputs, _offline, _trial
from vouch.audit.function._audit import _tasks_stage
from vouch.audit.function._jobs import ProgramJob
from vouch.audit.function._preconditions import ArgRule, Preconditions
from vouch.audit.function._runs import AuditConfig, Engine, t0_result, t0_spec
from vouch.audit.function._trial import _differential_stage, _prepare_pools
from vouch.exec import LocalExecutor
from vouch.sources.trials._samples import load_problems, load_samples, merge, program_hash


def naive_plan(
    prompt: str,
    params: Sequence[str],
    seeds: Sequence[list[Any]],
    seed_outputs: Sequence[Any],
    rng: random.Random,
    *,
    count: int,
    **_: Any,
) -> tuple[Preconditions, list[tuple[int, list[Any]]], set[str], set[str]]:
    """The naive pool, in place of ``_offline.plan_pool``: ``count`` distinct inputs made by one to
    three type-preserving edits of a random seed (``_inputs.mutate_value``), with no domain but the
    arguments' types; G still answers each, and an input G rejects is dropped."""
    rules = Preconditions(tuple(ArgRule(name, frozenset()) for name in params), frozenset())
    seen = {_inputs.key(s) for s in seeds}
    planned: list[tuple[int, list[Any]]] = []
    for _ in range(count * 20):
        if len(planned) >= count or not seeds:
            break
        args = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(args))
            args[i] = _inputs.mutate_value(args[i], rng)
        k = _inputs.key(args)
        if k not in seen:
            seen.add(k)
            planned.append((1, args))
    return rules, planned, set(), set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=Path, nargs="+", required=True, help="one labels file per samples file")
    parser.add_argument("--samples", type=Path, nargs="+", required=True, help="audited as one run, in order")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks-every", type=int, default=1, help="every n-th labelled task (a faster slice)")
    parser.add_argument("--task", action="append", default=None, help="only this task (repeatable; debugging)")
    parser.add_argument("--show", type=int, default=0, help="print up to N missed g_reachable trials per task")
    parser.add_argument("--json", type=Path, default=None, help="write per-trial rows here")
    parser.add_argument("--domain", action="store_true", help="print each task's domain (its preconditions)")
    parser.add_argument("--no-ambiguity", action="store_true", help="switch TestJack's A.2 rule off (to see its share)")
    parser.add_argument(
        "--naive", type=int, default=0, metavar="N", help="the naive baseline: N mutants of the seeds, no domain"
    )
    parser.add_argument("--widen", nargs="*", default=[], metavar="NAME=VALUE", help="the domain's widening")
    args = parser.parse_args()
    widen(args.widen)
    if args.naive:
        _offline.plan_pool = partial(naive_plan, count=args.naive)  # type: ignore[assignment]
    if args.no_ambiguity:
        _trial._contested = lambda voters, differing: set()
    labels = merged_labels(args.samples, args.labels)
    problems = load_problems()
    loaded = merge([load_samples(path, problems) for path in args.samples])
    tasks = sorted({r["task_id"] for r in labels.values()}, key=lambda t: int(t.split("/")[1]))[:: args.tasks_every]
    if args.task:
        tasks = [t for t in tasks if t in args.task]
    keep = set(tasks)
    trials = [t for t in loaded.trials if t.task_id in keep]
    model_of = {t.trial_id: t.model for t in trials}
    groups: dict[tuple[str, str], ProgramJob] = {}
    members: dict[tuple[str, str], list[str]] = defaultdict(list)
    for t in trials:
        program = t.program(problems[t.task_id])
        h = program_hash(program)
        job = groups.setdefault(
            (t.task_id, h),
            ProgramJob(t.task_id, h, program, t.trial_id, None, first_line=t.first_line(problems[t.task_id])),
        )
        job.models[t.model] = job.models.get(t.model, 0) + 1
        members[(t.task_id, h)].append(t.trial_id)
    config = AuditConfig()
    started = time.monotonic()
    with LocalExecutor(workers=args.workers, preload=PRELOAD) as executor:
        engine = Engine(executor, None)
        contexts = _tasks_stage(engine, problems, tasks, config)
        jobs = list(groups.values())
        results = engine.run([t0_spec(j.program, contexts[j.task_id].problem, "T0") for j in jobs], "T0 in R[s]")
        for job, result in zip(jobs, results, strict=True):
            job.t0 = t0_result("model", result, len(contexts[job.task_id].asserts))
        passing = [j for j in jobs if j.t0 is not None and j.t0.passed and contexts[j.task_id].report.well_formed]
        _prepare_pools(engine, contexts, {j.task_id for j in passing}, config)
        _differential_stage(engine, contexts, passing, config)
    wall = time.monotonic() - started
    found = Counter[str]()
    rows = []
    per_task: dict[str, Counter[str]] = defaultdict(Counter)
    for job in passing:
        for trial_id in members[(job.task_id, job.hash)]:
            label = labels.get(trial_id)
            if label is None:
                continue
            hit = bool(job.diffs)
            kind = ("reachable" if label["g_reachable"] else "wrong" if label["wrong"] else "right") + (
                "+hit" if hit else ""
            )
            found[kind] += 1
            per_task[job.task_id][kind] += 1
            rows.append(
                {
                    "trial_id": trial_id,
                    "model": model_of[trial_id],
                    "kind": kind,
                    "diff": None if not hit else [repr(job.diffs[0].args)[:200], repr(job.diffs[0].expected)[:80]],
                }
            )
    reachable = found["reachable"] + found["reachable+hit"]
    hits = found["reachable+hit"] + found["wrong+hit"] + found["right+hit"]
    true_hits = found["reachable+hit"] + found["wrong+hit"]
    pool_sizes = [len(c.pool.inputs) for c in contexts.values() if c.pool is not None]
    print(f"{len(tasks)} tasks, {len(trials)} trials, {len(jobs)} programs, {len(passing)} passing; {wall:.0f} s")
    print(f"executions {engine.executions}; pool sizes: total {sum(pool_sizes)}, max {max(pool_sizes, default=0)}")
    print(f"recall ceiling: {found['reachable+hit']}/{reachable} = {found['reachable+hit'] / max(reachable, 1):.1%}")
    print(f"raw precision: {true_hits}/{hits} = {true_hits / max(hits, 1):.1%} (right+hit {found['right+hit']})")
    print(f"{'task':<14}{'reach':>6}{'hit':>5}{'right+hit':>10}  note")
    for task in tasks:
        c = per_task[task]
        r = c["reachable"] + c["reachable+hit"]
        if r or c["right+hit"]:
            note = contexts[task].pool_note or ""
            size = len(contexts[task].pool.inputs) if contexts[task].pool is not None else 0  # type: ignore[union-attr]
            contested = len(contexts[task].contested)
            counts = f"{task:<14}{r:>6}{c['reachable+hit']:>5}{c['right+hit']:>10}"
            print(f"{counts}  pool {size} contested {contested} {note[:50]}")
            if args.domain and contexts[task].pool is not None:
                print(f"    domain: {contexts[task].pool.rules.describe()}")  # type: ignore[union-attr]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
