"""C6, mutation testing: the suite must detect every mutant of the reference verifier.

A mutant is detected when some case gets a different *valid* decision from it than from the
reference (PASS against FAIL); a crash or INVALID detects nothing (VerifierBench B.3). Each
mutant's decisions run through the engine like any verifier's, and are stored like any other
decision, so a re-run decides nothing twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vouch.bench import Decision, Task, decide_cases
from vouch.core import Case
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.mutation import Mutant, kill_matrix, mutate
from vouch.v4v._checks import CheckResult

MAX_MUTANTS = 40
"""Mutants per task at most (a seeded sample beyond that, reported in the evidence)."""


def mutants_of(source: str, rng: random.Random, limit: int = MAX_MUTANTS) -> tuple[list[Mutant], int]:
    """The reference verifier's mutants (inside ``verify`` when it defines one), at most ``limit``."""
    try:
        found = mutate(source, function="verify")
    except UsageError:
        found = mutate(source)
    if not found:
        found = mutate(source)
    total = len(found)
    if total > limit:
        found = sorted(rng.sample(found, limit), key=lambda m: m.id)
    return found, total


def mutation_check(
    executor: Executor,
    tasks: Sequence[Task],
    references: Mapping[str, str | None],
    reference_decisions: Mapping[str, Mapping[str, tuple[str, str | None]]],
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, CheckResult]:
    """Run C6 on every task with a reference verifier; results by task id."""
    rng = random.Random(seed)
    plans: dict[str, tuple[list[Mutant], int]] = {}
    items: list[tuple[Task, Case, str | None]] = []
    for task in tasks:
        source = references.get(task.id)
        if source is None:
            continue
        mutants, total = mutants_of(source, rng)
        plans[task.id] = (mutants, total)
        for mutant in mutants:
            items.extend((task, case, mutant.source) for case in task.cases)
    decisions = decide_cases(executor, items, progress=progress)
    by_key: dict[tuple[str, str | None, str], str] = {}
    for (task, case, source), result in zip(items, decisions, strict=True):
        by_key[(task.id, source, case.id)] = result.decision.value

    results: dict[str, CheckResult] = {}
    valid = {Decision.PASS.value, Decision.FAIL.value}
    for task in tasks:
        if task.id not in plans:
            results[task.id] = CheckResult(False, {}, "no reference/verifier.py to mutate")
            continue
        mutants, total = plans[task.id]
        original = reference_decisions[task.id]

        def oracle(mutant: Mutant, case_id: str, task: Task = task, original: Any = original) -> str:
            got = by_key[(task.id, mutant.source, case_id)]
            before = original[case_id][0]
            if got not in valid or before not in valid:
                return "invalid"
            return "different" if got != before else "same"

        matrix = kill_matrix(mutants, [c.id for c in task.cases], oracle)
        undetected = [m for m in mutants if not matrix.detected(m.id)]
        passed = bool(mutants) and not undetected
        evidence = {
            "mutants": len(mutants),
            "mutants_total": total,
            "sampled": total > len(mutants),
            "detected": len(mutants) - len(undetected),
            "undetected": [
                {"id": m.id, "operator": m.operator, "description": m.description, "diff": m.diff} for m in undetected
            ],
        }
        reason = None
        if not mutants:
            reason = "no mutant could be made of the reference verifier"
        elif undetected:
            reason = f"{len(undetected)} of {len(mutants)} mutants go undetected by the suite"
        results[task.id] = CheckResult(passed, evidence, reason)
    return results
