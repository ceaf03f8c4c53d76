"""Verifier metrics: TPR, TNR, BAnorm and FPRh per task and task-averaged, with bootstrap intervals.

Pure functions over ``CaseOutcome`` values (VerifierBench section 2.4 and appendix D; DESIGN
"Metrics"). The only randomness is the bootstrap, drawn from ``random.Random(seed)``.

Handling choices:

- **BAnorm** is ``100 * (TPR + TNR - 1)`` of the *task-averaged* TPR and TNR, the formula DESIGN
  fixes. By linearity it equals the mean of the per-task ``BAnorm_t`` whenever every task has both
  classes, which is the paper's "equally weights tasks and the two classes within each task"; the
  two differ only when some task lacks a class, and then averaging each rate over the tasks that
  have its class keeps every task's evidence instead of dropping whole tasks.
- **A task without positives** (or negatives) has no TPR_t (TNR_t) and no ``BAnorm_t``: it is left
  out of the TPR (TNR) average and counted in ``counts.tasks_without_positives``
  (``tasks_without_negatives``). It still counts in TNR (TPR), FPRh and the case-level views. It is
  never all-reject ("accepts no positive" needs a positive), so ``all_reject`` is null for it and
  ``all_reject.share_of_tasks`` is over the tasks with positives.
- **INVALID and missing** (``decision is None``) outputs stay in every denominator and are neither
  PASS nor FAIL; an INVALID attack is not an accepted attack.
- **Bootstrap**: tasks are resampled with replacement, and every figure of a replicate is computed
  from the same draw. A replicate in which a figure is undefined (say no sampled task has attacks)
  is skipped for that figure. Each scope (overall, each kind, each source) draws from a fresh
  ``random.Random(seed)``, so its interval depends only on the seed and its own tasks.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vouch.core import LABEL_OF_CATEGORY
from vouch.errors import UsageError

_DECISIONS = ("PASS", "FAIL", "INVALID")
_RATE_DIGITS = 6
_BA_DIGITS = 4


@dataclass(frozen=True)
class CaseOutcome:
    """One verifier's decision on one hidden case, with what scoring needs to know of the case."""

    task_id: str
    kind: str
    source: str
    case_id: str
    label: str
    """``positive`` or ``negative``."""
    category: str
    """``gold``, ``variant``, ``error`` or ``attack``."""
    decision: str | None
    """``PASS``, ``FAIL``, ``INVALID``, or None when the verifier gave no output (missing)."""


@dataclass(frozen=True)
class _Tally:
    """Decision counts of one task."""

    task_id: str
    kind: str
    source: str
    positives: int
    negatives: int
    attacks: int
    positive_pass: int
    positive_fail: int
    negative_fail: int
    attack_pass: int
    decisions: dict[str, str | None]

    @property
    def tpr(self) -> float | None:
        return self.positive_pass / self.positives if self.positives else None

    @property
    def tnr(self) -> float | None:
        return self.negative_fail / self.negatives if self.negatives else None

    @property
    def fpr_attack(self) -> float | None:
        return self.attack_pass / self.attacks if self.attacks else None

    @property
    def ba_norm(self) -> float | None:
        return _ba(self.tpr, self.tnr)

    @property
    def all_reject(self) -> bool | None:
        return self.positive_pass == 0 if self.positives else None


def _ba(tpr: float | None, tnr: float | None) -> float | None:
    return None if tpr is None or tnr is None else 100.0 * (tpr + tnr - 1.0)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits) + 0.0  # + 0.0 turns -0.0 into 0.0


def _check(outcome: CaseOutcome) -> None:
    expected = LABEL_OF_CATEGORY.get(outcome.category)
    if expected is None:
        raise UsageError(
            f"case {outcome.task_id}/{outcome.case_id}: category={outcome.category!r} is not one of "
            f"{sorted(LABEL_OF_CATEGORY)}"
        )
    if outcome.label != expected:
        raise UsageError(
            f"case {outcome.task_id}/{outcome.case_id}: label={outcome.label!r} does not go with "
            f"category={outcome.category!r} (expected {expected!r})"
        )
    if outcome.decision is not None and outcome.decision not in _DECISIONS:
        raise UsageError(
            f"case {outcome.task_id}/{outcome.case_id}: decision={outcome.decision!r} is not one of "
            f"{list(_DECISIONS)} or None (missing)"
        )


def _tallies(outcomes: Iterable[CaseOutcome]) -> list[_Tally]:
    by_task: dict[str, list[CaseOutcome]] = defaultdict(list)
    for outcome in outcomes:
        _check(outcome)
        by_task[outcome.task_id].append(outcome)
    tallies = []
    for task_id in sorted(by_task):
        cases = by_task[task_id]
        first = cases[0]
        decisions: dict[str, str | None] = {}
        for case in cases:
            if (case.kind, case.source) != (first.kind, first.source):
                raise UsageError(
                    f"task {task_id}: cases disagree on kind/source ({first.kind!r}/{first.source!r} "
                    f"vs {case.kind!r}/{case.source!r}); give every case of a task the task's own"
                )
            if case.case_id in decisions:
                raise UsageError(f"task {task_id}: case_id={case.case_id!r} appears twice; give one outcome per case")
            decisions[case.case_id] = case.decision
        pos = [c.decision for c in cases if c.label == "positive"]
        neg = [c.decision for c in cases if c.label == "negative"]
        att = [c.decision for c in cases if c.category == "attack"]
        tallies.append(
            _Tally(
                task_id=task_id,
                kind=first.kind,
                source=first.source,
                positives=len(pos),
                negatives=len(neg),
                attacks=len(att),
                positive_pass=pos.count("PASS"),
                positive_fail=pos.count("FAIL"),
                negative_fail=neg.count("FAIL"),
                attack_pass=att.count("PASS"),
                decisions=dict(sorted(decisions.items())),
            )
        )
    return tallies


def _weighted_mean(weights: Sequence[int], column: Sequence[float | None]) -> float | None:
    total = 0.0
    count = 0
    for weight, value in zip(weights, column, strict=True):
        if weight and value is not None:
            total += weight * value
            count += weight
    return total / count if count else None


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of sorted values, interpolating linearly (numpy's default)."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _interval(replicates: list[float], digits: int) -> list[float] | None:
    """The percentile bootstrap 95% interval ``[lo, hi]``, or None without replicates."""
    if not replicates:
        return None
    ordered = sorted(replicates)
    return [round(_percentile(ordered, q), digits) + 0.0 for q in (2.5, 97.5)]


def _bootstrap(
    columns: Mapping[str, Sequence[float | None]],
    combine: Callable[[dict[str, float | None]], dict[str, float | None]],
    *,
    seed: int,
    resamples: int,
) -> dict[str, list[float]]:
    """Replicates of task-averaged figures, resampling tasks (rows of ``columns``) with replacement.

    ``combine`` derives further figures (BAnorm) from a replicate's averages. Undefined figures
    (None) of a replicate are skipped.
    """
    n = len(next(iter(columns.values()), []))
    replicates: dict[str, list[float]] = defaultdict(list)
    if n == 0:
        return replicates
    rng = random.Random(seed)
    population = range(n)
    for _ in range(resamples):
        weights = [0] * n
        for i in rng.choices(population, k=n):
            weights[i] += 1
        figures = {name: _weighted_mean(weights, column) for name, column in columns.items()}
        for name, value in combine(figures).items():
            if value is not None:
                replicates[name].append(value)
    return replicates


def _with_ba(figures: dict[str, float | None]) -> dict[str, float | None]:
    return {**figures, "ba_norm": _ba(figures["tpr"], figures["tnr"])}


def _figures(tallies: Sequence[_Tally], *, seed: int, resamples: int) -> dict[str, Any]:
    """Task-averaged TPR, TNR, BAnorm and FPRh of some tasks, each with its bootstrap interval."""
    columns: dict[str, list[float | None]] = {
        "tpr": [t.tpr for t in tallies],
        "tnr": [t.tnr for t in tallies],
        "fpr_attack": [t.fpr_attack for t in tallies],
    }
    ones = [1] * len(tallies)
    point = _with_ba({name: _weighted_mean(ones, column) for name, column in columns.items()})
    replicates = _bootstrap(columns, _with_ba, seed=seed, resamples=resamples)
    out: dict[str, Any] = {}
    for name in ("ba_norm", "tpr", "tnr", "fpr_attack"):
        digits = _BA_DIGITS if name == "ba_norm" else _RATE_DIGITS
        out[name] = _round(point[name], digits)
        out[f"{name}_ci95"] = _interval(replicates[name], digits) if point[name] is not None else None
    attacks = sum(t.attacks for t in tallies)
    out["fpr_attack_pooled"] = _round(_ratio(sum(t.attack_pass for t in tallies), attacks), _RATE_DIGITS)
    return out


def _split(
    tallies: Sequence[_Tally], key: Callable[[_Tally], str], *, seed: int, resamples: int
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[_Tally]] = defaultdict(list)
    for tally in tallies:
        groups[key(tally)].append(tally)
    return {
        name: {
            **_figures(group, seed=seed, resamples=resamples),
            "tasks": len(group),
            "cases": sum(len(t.decisions) for t in group),
        }
        for name, group in sorted(groups.items())
    }


def _grouped(outcomes: Sequence[CaseOutcome]) -> dict[str, Any]:
    """The case-level view (appendix G): what the unaccepted positives got, and decisions by category."""

    def bucket(decision: str | None) -> str:
        return "missing" if decision is None else decision.lower()

    by_category: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        row = by_category.setdefault(outcome.category, {"cases": 0, "pass": 0, "fail": 0, "invalid": 0, "missing": 0})
        row["cases"] += 1
        row[bucket(outcome.decision)] += 1
    rejected = [bucket(o.decision) for o in outcomes if o.label == "positive" and o.decision != "PASS"]
    return {
        "positives_not_accepted": len(rejected),
        "fail": rejected.count("fail"),
        "invalid": rejected.count("invalid"),
        "missing": rejected.count("missing"),
        "by_category": dict(sorted(by_category.items())),
    }


def _all_reject(tallies: Sequence[_Tally]) -> dict[str, Any]:
    """All-reject tasks (no positive accepted) and their share of the false rejections (section 3.4)."""
    with_positives = [t for t in tallies if t.positives]
    rejecting = [t for t in with_positives if t.all_reject]
    task_weighted = sum(t.positive_fail / t.positives for t in with_positives)
    return {
        "tasks": len(rejecting),
        "share_of_tasks": _round(_ratio(len(rejecting), len(with_positives)), _RATE_DIGITS),
        "fail_share_case_weighted": _round(
            _ratio(sum(t.positive_fail for t in rejecting), sum(t.positive_fail for t in tallies)), _RATE_DIGITS
        ),
        "fail_share_task_weighted": _round(
            _ratio(sum(t.positive_fail / t.positives for t in rejecting), task_weighted), _RATE_DIGITS
        ),
        "task_ids": [t.task_id for t in rejecting],
    }


def _task_row(tally: _Tally) -> dict[str, Any]:
    return {
        "task_id": tally.task_id,
        "kind": tally.kind,
        "source": tally.source,
        "positives": tally.positives,
        "negatives": tally.negatives,
        "attacks": tally.attacks,
        "tpr": _round(tally.tpr, _RATE_DIGITS),
        "tnr": _round(tally.tnr, _RATE_DIGITS),
        "ba_norm": _round(tally.ba_norm, _BA_DIGITS),
        "fpr_attack": _round(tally.fpr_attack, _RATE_DIGITS),
        "all_reject": tally.all_reject,
        "decisions": tally.decisions,
    }


def score(
    outcomes: Sequence[CaseOutcome],
    *,
    seed: int,
    resamples: int = 2000,
    excluded: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Score one set of verifiers on their tasks' hidden cases.

    Args:
        outcomes: one decision per (task, case); a task whose verifier is missing should come with
            every decision None.
        seed: seeds the bootstrap (``random.Random(seed)`` per scope); record it with the result.
        resamples: bootstrap replicates per interval.
        excluded: task_id -> reason, for tasks a V4V result excluded; they are left out of every
            figure. Exclusions of tasks that have no outcomes are ignored (nothing to leave out).

    Returns:
        A JSON-ready object: ``ba_norm``, ``tpr``, ``tnr``, ``fpr_attack`` (each with ``_ci95``),
        ``fpr_attack_pooled``, ``by_kind``, ``by_source``, ``grouped``, ``all_reject``, ``tasks``,
        ``excluded`` and ``counts``. Undefined figures are None, never NaN.

    Raises:
        UsageError: an outcome with an unknown label, category or decision, a label that does not
            go with its category, a case given twice, or a task whose cases disagree on kind/source.
    """
    if resamples < 1:
        raise UsageError(f"resamples={resamples!r} must be at least 1")
    present = {o.task_id for o in outcomes}
    left_out = {task_id: reason for task_id, reason in sorted((excluded or {}).items()) if task_id in present}
    kept = [o for o in outcomes if o.task_id not in left_out]
    tallies = _tallies(kept)
    decisions = [o.decision for o in kept]
    return {
        **_figures(tallies, seed=seed, resamples=resamples),
        "by_kind": _split(tallies, lambda t: t.kind, seed=seed, resamples=resamples),
        "by_source": _split(tallies, lambda t: t.source, seed=seed, resamples=resamples),
        "grouped": _grouped(kept),
        "all_reject": _all_reject(tallies),
        "tasks": [_task_row(t) for t in tallies],
        "excluded": {"count": len(left_out), "tasks": left_out},
        "counts": {
            "tasks": len(tallies),
            "cases": len(kept),
            "positives": sum(t.positives for t in tallies),
            "negatives": sum(t.negatives for t in tallies),
            "attacks": sum(t.attacks for t in tallies),
            "invalid": decisions.count("INVALID"),
            "missing": decisions.count(None),
            "tasks_without_positives": sum(1 for t in tallies if not t.positives),
            "tasks_without_negatives": sum(1 for t in tallies if not t.negatives),
        },
    }


def paired_difference(
    a: Mapping[str, Any], b: Mapping[str, Any], *, seed: int, resamples: int = 2000
) -> dict[str, Any]:
    """Per-task BAnorm differences ``b - a`` between two ``score`` results, with a paired bootstrap.

    Tasks are paired by id. A task in both whose BAnorm is undefined in either (it lacks a class)
    is listed in ``per_task`` with ``diff`` None, after the others, and not compared.

    Args:
        a: a ``score`` result (the baseline).
        b: a ``score`` result over the same task set.
        seed: seeds the bootstrap (``random.Random(seed)``).
        resamples: bootstrap replicates.

    Returns:
        ``ba_norm_diff`` (mean per-task difference), ``ba_norm_diff_ci95`` (tasks resampled with
        replacement, each keeping its pair), ``tasks_compared``, ``only_in_a``, ``only_in_b`` (task
        ids) and ``per_task`` ([{task_id, a, b, diff}] by ascending diff).
    """
    if resamples < 1:
        raise UsageError(f"resamples={resamples!r} must be at least 1")
    ba_a = {row["task_id"]: row["ba_norm"] for row in a["tasks"]}
    ba_b = {row["task_id"]: row["ba_norm"] for row in b["tasks"]}
    rows = []
    for task_id in sorted(ba_a.keys() & ba_b.keys()):
        x, y = ba_a[task_id], ba_b[task_id]
        diff = None if x is None or y is None else y - x
        rows.append({"task_id": task_id, "a": x, "b": y, "diff": _round(diff, _BA_DIGITS)})
    rows.sort(key=lambda r: (r["diff"] is None, r["diff"] if r["diff"] is not None else 0.0, r["task_id"]))
    diffs: list[float | None] = [r["diff"] for r in rows if r["diff"] is not None]
    mean = _weighted_mean([1] * len(diffs), diffs)
    replicates = _bootstrap({"diff": diffs}, lambda f: f, seed=seed, resamples=resamples)
    return {
        "ba_norm_diff": _round(mean, _BA_DIGITS),
        "ba_norm_diff_ci95": _interval(replicates["diff"], _BA_DIGITS) if mean is not None else None,
        "tasks_compared": len(diffs),
        "only_in_a": sorted(ba_a.keys() - ba_b.keys()),
        "only_in_b": sorted(ba_b.keys() - ba_a.keys()),
        "per_task": rows,
    }
