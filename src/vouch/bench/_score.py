"""Scoring: decisions of a verifier set on every hidden case (stored as they come), then metrics.

A decision is keyed by content: the verifier's source hash and a case key over what the
decision can depend on (the task's spec and public environment, and the candidate; never the
label). An unchanged (verifier, case) is never run twice; a run killed halfway resumes.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vouch.bench._decide import (
    CallAnswers,
    Decision,
    DecisionResult,
    Task,
    decide_cases,
    decide_verifiers,
)
from vouch.bench._metrics import CaseOutcome, score
from vouch.bench._share import share_key
from vouch.core import Case, canonical_candidate, canonical_json
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.store import Store, StoredDecision

BASELINES = ("always_pass", "always_fail", "random", "gold_exact_match", "reference")
MISSING = "missing"
MISSING_VERIFIER = "missing verifier"


def verifier_hash(source: str | None) -> str:
    if source is None:
        return MISSING
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest()


def case_key(task: Task, candidate: dict[str, Any]) -> str:
    material = {
        "spec": task.spec.model_dump(mode="json"),
        "tools": task.tools,
        "public_tests": task.public_tests,
        "candidate": candidate,
    }
    return "sha256:" + hashlib.sha256(canonical_json(material).encode()).hexdigest()


def load_verifiers(verifiers_dir: Path, tasks: Sequence[Task]) -> dict[str, str | None]:
    """``<DIR>/<task_id>/verifier.py`` per task; None where it is missing."""
    if not verifiers_dir.is_dir():
        raise UsageError(f"no such verifiers directory: {verifiers_dir}")
    found: dict[str, str | None] = {}
    for task in tasks:
        path = verifiers_dir / task.id / "verifier.py"
        try:
            found[task.id] = path.read_text()
        except FileNotFoundError:
            found[task.id] = None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
    return found


@dataclass(frozen=True)
class DecisionRow:
    task: Task
    case_id: str
    decision: str
    reason: str | None


def run_verifiers(
    executor: Executor,
    store: Store,
    tasks: Sequence[Task],
    verifiers: Mapping[str, str | None],
    *,
    hide: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    share: bool = False,
) -> tuple[list[DecisionRow], int]:
    """Decide every case of every task with its verifier; returns the rows and how many ran
    (``share``: see ``decide_stored``)."""
    items = [(task, case, verifiers.get(task.id)) for task in tasks for case in task.cases]
    decided, ran = decide_stored(executor, store, items, hide=hide, progress=progress, share=share)
    rows = [DecisionRow(task, case.id, d.decision, d.reason) for (task, case, _), d in zip(items, decided, strict=True)]
    return rows, ran


def decide_stored(
    executor: Executor,
    store: Store,
    items: Sequence[tuple[Task, Case, str | None]],
    *,
    hide: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    call_answers: CallAnswers | None = None,
    share: bool = False,
) -> tuple[list[StoredDecision], int]:
    """Decide (task, case, verifier source) items, each once ever: what the store holds is read,
    the rest runs and is stored as it comes. Returns the decisions in input order and how many ran.

    With ``share`` (V4V), items whose verifiers cannot tell their tasks apart (``share_key``:
    AgentDojo's state and tool_call twins) are decided once, and the decision is stored for
    each of them."""
    keys = [(verifier_hash(v), case_key(t, c.candidate)) for t, c, v in items]
    shares = [share_key(t, v, c.candidate) if share else None for t, c, v in items]
    stored = store.get_many([*keys, *(s for s in shares if s is not None)])
    decided: dict[int, StoredDecision] = {}
    leaders: dict[tuple[str, str], int] = {}
    followers: dict[int, int] = {}  # item -> the item whose run decides it
    todo: list[int] = []
    for i, key in enumerate(keys):
        shared = shares[i]
        found = _stored(store, stored, items[i], key, shared)
        if found is not None:
            decided[i] = found
        elif shared is not None and shared in leaders:
            followers[i] = leaders[shared]
        else:
            if shared is not None:
                leaders[shared] = i
            todo.append(i)

    def save(local: int, result: DecisionResult) -> None:
        if result.decision is Decision.ERROR:
            return  # vouch's failure is no decision: the next run makes it again
        index = todo[local]
        row = StoredDecision(result.decision.value, result.reason, result.duration_s)
        _put(store, items[index], keys[index], row)
        if shares[index] is not None:
            _put(store, items[index], shares[index], row)  # type: ignore[arg-type]

    def tick(done: int, _total: int) -> None:
        if progress is not None:
            progress(len(decided) + done, len(items) - len(followers))

    if progress is not None:
        progress(len(decided), len(items) - len(followers))
    if todo:
        results = decide_cases(
            executor, [items[i] for i in todo], hide=hide, progress=tick, on_result=save, call_answers=call_answers
        )
        for local, result in enumerate(results):
            decided[todo[local]] = StoredDecision(result.decision.value, result.reason, result.duration_s)
    for i, leader in followers.items():
        decided[i] = decided[leader]
        if decided[i].decision != Decision.ERROR.value:
            _put(store, items[i], keys[i], decided[i])
    return [decided[i] for i in range(len(items))], len(todo)


def _stored(
    store: Store,
    stored: Mapping[tuple[str, str], StoredDecision],
    item: tuple[Task, Case, str | None],
    key: tuple[str, str],
    shared: tuple[str, str] | None,
) -> StoredDecision | None:
    """What the store holds for an item: under its own key, or under its shared key (then also
    written under its own, so that later reads find it there)."""
    if key in stored:
        return stored[key]
    if shared is not None and shared in stored:
        _put(store, item, key, stored[shared])
        return stored[shared]
    return None


def _put(store: Store, item: tuple[Task, Case, str | None], key: tuple[str, str], row: StoredDecision) -> None:
    task, case, _ = item
    store.put(key[0], key[1], task.id, case.id, row.decision, row.reason, row.duration_s)


def decide_stored_verifiers(
    executor: Executor,
    store: Store,
    batch: Sequence[tuple[Task, Case, Sequence[str]]],
    *,
    call_answers: CallAnswers | None = None,
    share: bool = False,
) -> tuple[list[list[StoredDecision]], int]:
    """Decide each (task, case, verifiers) (V4V's C6: a task's mutants on one case): what the
    store holds is read, the rest of an entry's verifiers are decided in one run
    (``decide_verifiers``) and stored. With ``share`` (``decide_stored``), an entry that needs a
    decision another entry will make (its twin's) waits for it and reads it from the store.
    Returns the decisions per entry, in the verifiers' order, and how many ran."""
    rows: list[list[StoredDecision | None]] = [[None] * len(verifiers) for _, _, verifiers in batch]
    pending = list(range(len(batch)))
    ran = 0
    while pending:
        todo: list[tuple[int, list[int]]] = []
        claimed: set[tuple[str, str]] = set()
        deferred: list[int] = []
        keys: dict[int, list[tuple[str, str]]] = {}
        shares: dict[int, list[tuple[str, str] | None]] = {}
        for n in pending:
            task, case, verifiers = batch[n]
            ck = case_key(task, case.candidate)
            keys[n] = [(verifier_hash(v), ck) for v in verifiers]
            shares[n] = [share_key(task, v, case.candidate) if share else None for v in verifiers]
            stored = store.get_many([*keys[n], *(k for k in shares[n] if k is not None)])
            have = rows[n]
            for i, key in enumerate(keys[n]):
                have[i] = _stored(store, stored, (task, case, verifiers[i]), key, shares[n][i])
            needed = [i for i, d in enumerate(have) if d is None]
            wanted = {shares[n][i] for i in needed} - {None}
            if wanted & claimed and todo:
                deferred.append(n)
                continue
            claimed |= wanted  # type: ignore[arg-type]
            if needed:
                todo.append((n, needed))
        decided = decide_verifiers(
            executor,
            [(batch[n][0], batch[n][1], [batch[n][2][i] for i in needed]) for n, needed in todo],
            call_answers=call_answers,
        )
        for (n, needed), results in zip(todo, decided, strict=True):
            task, case, verifiers = batch[n]
            for i, result in zip(needed, results, strict=True):
                made = StoredDecision(result.decision.value, result.reason, result.duration_s)
                rows[n][i] = made
                ran += 1
                if result.decision is Decision.ERROR:
                    continue  # never stored: the next run decides it again
                _put(store, (task, case, verifiers[i]), keys[n][i], made)
                if shares[n][i] is not None:
                    _put(store, (task, case, verifiers[i]), shares[n][i], made)  # type: ignore[arg-type]
        pending = deferred
    return [[d for d in row if d is not None] for row in rows], ran


def trivial_rows(name: str, tasks: Sequence[Task], seed: int) -> list[DecisionRow]:
    """Decisions of the trivial baselines, which run no code: always PASS, always FAIL, seeded
    random, and gold-exact-match (PASS only for the gold's candidate, whitespace aside)."""
    rng = random.Random(seed)
    rows = []
    for task in tasks:
        gold = next((c for c in task.cases if c.category == "gold"), None)
        gold_key = canonical_candidate(task.spec.kind, gold.candidate) if gold is not None else None
        for case in task.cases:
            if name == "always_pass":
                decision = Decision.PASS
            elif name == "always_fail":
                decision = Decision.FAIL
            elif name == "random":
                decision = Decision.PASS if rng.random() < 0.5 else Decision.FAIL
            elif name == "gold_exact_match":
                same = canonical_candidate(task.spec.kind, case.candidate) == gold_key
                decision = Decision.PASS if same else Decision.FAIL
            else:
                raise UsageError(f"unknown baseline {name!r}; valid baselines: {', '.join(BASELINES)}")
            rows.append(DecisionRow(task, case.id, decision.value, None))
    return rows


def results_object(
    rows: Sequence[DecisionRow], *, name: str, seed: int, excluded: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Metrics over ``rows``, plus what the report's drill-down shows per case.

    ERROR rows (vouch could not decide the case) are no verdict about the verifier: they are
    left out of every metric and listed apart under ``errors``."""
    outcomes = []
    errors: list[dict[str, Any]] = []
    details: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        case = next(c for c in row.task.cases if c.id == row.case_id)
        if row.decision == Decision.ERROR.value:
            errors.append({"task_id": row.task.id, "case_id": case.id, "reason": row.reason})
        else:
            outcomes.append(
                CaseOutcome(
                    task_id=row.task.id,
                    kind=row.task.spec.kind,
                    source=row.task.spec.source.benchmark,
                    case_id=case.id,
                    label=case.label,
                    category=case.category,
                    # DESIGN: a task whose verifier is missing counts, with every output missing.
                    decision=None if row.reason == MISSING_VERIFIER else row.decision,
                )
            )
        details.setdefault(row.task.id, []).append(
            {
                "case_id": case.id,
                "label": case.label,
                "category": case.category,
                "subcategory": case.subcategory,
                "rationale": case.rationale,
                "decision": row.decision,
                "reason": row.reason,
            }
        )
    result = score(outcomes, seed=seed, excluded=excluded)
    for task in result["tasks"]:
        task["cases"] = details.get(task["task_id"], [])
    result["verifier_set"] = name
    result["errors"] = errors
    return result
