"""What every benchmark source's case constructions share: a case before it has its id (a draft),
the picking of drafts and the numbering that makes them cases.

Two shapes of draft exist because two families of sources name their constructions differently:
``Draft`` carries its category (AgentDojo, tau2), ``NamedDraft`` derives it from the first word of
its construction's name (BFCL, ACEBench: ``alt-call-order`` is a variant). Both become cases
through ``to_cases``, which numbers ids the way the source's built tasks have always had them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vouch.core import Case, Category, Provenance, TaskFiles, content_hash
from vouch.sources._registry import MIN_ATTACKS, MIN_NEGATIVES, MIN_POSITIVES, MIN_VARIANTS


@dataclass(frozen=True)
class Draft:
    """A case before it gets its id: what it is, how it was built, why it has its label."""

    category: Category
    subcategory: str
    construction: str
    candidate: dict[str, Any]
    rationale: str
    details: dict[str, Any] = field(default_factory=dict)
    derived_from: str | None = "gold"
    """The case this one was built from (none for the gold, nor for a candidate built from nothing)."""


NAME_CATEGORIES: Mapping[str, Category] = {
    "gold": "gold",
    "alt": "variant",
    "cosmetic": "variant",
    "err": "error",
    "hack": "attack",
    "process": "attack",
}
"""The first word of a ``NamedDraft``'s construction name -> its category."""


@dataclass(frozen=True)
class NamedDraft:
    """A draft whose construction ``name`` is also its id stem and, by its first word, its category."""

    name: str
    subcategory: str
    candidate: dict[str, Any]
    rationale: str
    details: dict[str, Any] = field(default_factory=dict)
    derived_from: str | None = "gold"

    @property
    def category(self) -> Category:
        return NAME_CATEGORIES[self.name.split("-")[0]]

    def draft(self) -> Draft:
        """The same draft in the common shape."""
        return Draft(
            self.category, self.subcategory, self.name, self.candidate, self.rationale, self.details, self.derived_from
        )


def round_robin(drafts: Sequence[NamedDraft], k: int, rng: random.Random) -> list[NamedDraft]:
    """Up to ``k`` drafts, one construction at a time (in first-seen order), random within each."""
    groups: dict[str, list[NamedDraft]] = {}
    for draft in drafts:
        groups.setdefault(draft.name, []).append(draft)
    queues = [rng.sample(g, len(g)) for g in groups.values()]
    picked: list[NamedDraft] = []
    while len(picked) < k and any(queues):
        for queue in queues:
            if queue and len(picked) < k:
                picked.append(queue.pop(0))
    return picked


def spread_over(
    queues: Mapping[str, list[Any]], limit: int, build: Callable[[Any], TaskFiles | str]
) -> tuple[list[TaskFiles], list[tuple[str, str]]]:
    """Up to ``limit`` tasks spread evenly over the queues (the first ones one more when it does
    not divide); a queue that runs out of buildable entries leaves its share to the others, taken
    in turn. ``build`` gives a task or why the entry (its ``task_id``) was skipped."""
    tasks: list[TaskFiles] = []
    skipped: list[tuple[str, str]] = []

    def take_one(name: str) -> bool:
        while queues[name]:
            entry = queues[name].pop(0)
            task = build(entry)
            if isinstance(task, str):
                skipped.append((entry.task_id, task))
            else:
                tasks.append(task)
                return True
        return False

    names = list(queues)
    for i, name in enumerate(names):
        share = limit // len(names) + (1 if i < limit % len(names) else 0)
        for _ in range(share):
            if not take_one(name):
                break
    progressed = True
    while len(tasks) < limit and progressed:
        progressed = False
        for name in names:
            if len(tasks) < limit and take_one(name):
                progressed = True
    return tasks, skipped


Numbering = Literal["first-bare", "bare-when-alone"]


def to_cases(drafts: Sequence[Draft | NamedDraft], numbering: Numbering = "first-bare") -> list[Case]:
    """The drafts as cases, in order, with their ids.

    ``first-bare`` (AgentDojo, tau2): the stem is ``gold`` or ``CATEGORY-CONSTRUCTION``; its first
    case keeps it bare, later ones are ``-2``, ``-3``. ``bare-when-alone`` (BFCL, ACEBench): the
    stem is the construction's name, bare when picked once, else every one numbered from ``-1``.
    """
    common = [d.draft() if isinstance(d, NamedDraft) else d for d in drafts]
    if numbering == "first-bare":
        stems = ["gold" if d.category == "gold" else f"{d.category}-{d.construction}" for d in common]
    else:
        stems = [d.construction for d in common]
    total = {stem: stems.count(stem) for stem in stems}
    seen: dict[str, int] = {}
    cases = []
    for draft, stem in zip(common, stems, strict=True):
        seen[stem] = seen.get(stem, 0) + 1
        if numbering == "first-bare":
            case_id = stem if seen[stem] == 1 else f"{stem}-{seen[stem]}"
        else:
            case_id = stem if total[stem] == 1 else f"{stem}-{seen[stem]}"
        cases.append(case_of(draft, case_id))
    return cases


def case_of(draft: Draft, case_id: str) -> Case:
    """One case: positive for a gold or a variant, negative otherwise."""
    return Case(
        id=case_id,
        label="positive" if draft.category in ("gold", "variant") else "negative",
        category=draft.category,
        subcategory=draft.subcategory,
        candidate=draft.candidate,
        provenance=Provenance(
            construction=draft.construction,
            derived_from=None if draft.category == "gold" else draft.derived_from,
            content_hash=content_hash(draft.candidate),
            details=draft.details,
        ),
        rationale=draft.rationale,
    )


def shortfall(drafts: Sequence[Draft]) -> str | None:
    """What a task's drafts lack of the minima every task needs (positives, non-gold variants,
    negatives, attacks), or None when they have enough."""
    positives = [d for d in drafts if d.category in ("gold", "variant")]
    variants = [d for d in drafts if d.category == "variant"]
    negatives = [d for d in drafts if d.category in ("error", "attack")]
    attacks = [d for d in drafts if d.category == "attack"]
    short = [
        f"{len(found)} {what} (needs {need})"
        for found, what, need in (
            (positives, "positives", MIN_POSITIVES),
            (variants, "non-gold variants", MIN_VARIANTS),
            (negatives, "negatives", MIN_NEGATIVES),
            (attacks, "attacks", MIN_ATTACKS),
        )
        if len(found) < need
    ]
    return "; ".join(short) if short else None
