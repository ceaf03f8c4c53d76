"""Variants and violations of a call trace (kinds ``tool_call`` and ``state``).

Which call reads and which writes decides most derivations. For a ``state`` task the
challenger finds out by running the public environment (the task's replay entry, through the
engine): a call whose step leaves the state unchanged reads, and every claim a derivation
makes ("same effect", "changes the state") is checked by replaying the derived trace before
the verifier ever sees it. A ``tool_call`` task has no environment to run, so the tool's name
decides (``get_``, ``list_``, ``search_`` read; ``send_``, ``update_``, ``delete_`` write),
and a task whose instruction asks for the function calls themselves as the answer (BFCL)
permits no extra call at all. Every choice among several options uses the seeded ``rng``.
"""

from __future__ import annotations

import random
from typing import Any

from vouch.bench._challenge_drafts import (
    CALLS_ARE_ANSWER,
    PER_CONSTRUCTION,
    PERMITTED,
    VIOLATIONS,
    WRITE_VERBS,
    Context,
    Draft,
    copy_calls,
    verb,
)
from vouch.bench._challenge_public import (
    Derivations,
    Derived,
    Skipped,
    instruction_of,
    numbers_in,
    same_json,
    schemas_by_name,
)
from vouch.bench._decide import Task, replay_spec
from vouch.core import canonical_json
from vouch.errors import InfrastructureError
from vouch.exec import Executor


class _Replays:
    """Replays of call lists on the task's public environment, batched and cached.

    A replay is the harness's (the task's replay entry: the benchmark's own environment, the
    calls as data), as for a decision's states: it reads the benchmark's data, which a verifier's
    run may not (tau2 keeps its databases and policies beside its tasks' answers).
    """

    def __init__(self, executor: Executor, task: Task) -> None:
        self.executor, self.task = executor, task
        self._cache: dict[str, dict[str, Any]] = {}

    def runs(self, lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        todo = {canonical_json(c): c for c in lists if canonical_json(c) not in self._cache}
        specs = [replay_spec(self.task, calls, nested=False) for calls in todo.values()]
        for key, result in zip(todo, self.executor.run_batch(specs), strict=True):
            if not result.ok or not isinstance(result.value, dict):
                raise InfrastructureError(
                    f"replaying calls on the public environment of {self.task.id} failed: {result.reason}"
                )
            self._cache[key] = result.value
        return [self._cache[canonical_json(c)] for c in lists]


# --- checking the drafts on the public environment -----------------------------------------


def _holds(ctx: Context, draft: Draft, replay: dict[str, Any]) -> str | None:
    """None when the replay backs the draft's claim, else why it does not."""
    assert ctx.results is not None
    results = replay.get("results", [])
    same_state = same_json(replay.get("post_state"), ctx.post_state)
    new_calls_ok = all(r.get("ok") for r, o in zip(results, draft.origin, strict=False) if o is None)
    if draft.role == "permitted":
        if not same_state:
            return "replaying it leaves another post-state than the candidate's"
        if not new_calls_ok:
            return "an added or changed call fails on the public environment"
        for r, o in zip(results, draft.origin, strict=False):
            if o is not None and not same_json(r.get("value"), ctx.results[o].get("value")):
                return f"call {o} ({ctx.calls[o]['function']}) returns something else in the new trace"
        return None
    if same_state:
        return "replaying it leaves the same post-state as the candidate: no requirement is violated"
    if draft.construction == "unauthorised_write" and not new_calls_ok:
        return "the added call fails on the public environment"
    return None


def derive_calls(
    task: Task, candidate: dict[str, Any], executor: Executor, rng: random.Random, hidden: tuple[str, ...]
) -> Derivations:
    """Permitted variants and violations of a call trace, checked on replays for state tasks."""
    instruction = instruction_of(task)
    calls = copy_calls(candidate.get("calls") or [])
    state = task.spec.kind == "state"
    replays = _Replays(executor, task) if state else None
    ctx = Context(
        task=task,
        calls=calls,
        answer=candidate.get("final_answer"),
        instruction=instruction,
        numbers=numbers_in(instruction),
        schemas=schemas_by_name(task.tools),
        descriptions={
            t["name"]: str(t.get("description") or "") for t in task.tools if isinstance(t, dict) and "name" in t
        },
        calls_are_answer=(not state) and CALLS_ARE_ANSWER in instruction.lower(),
        rng=rng,
        writes=[verb(c["function"]) in WRITE_VERBS for c in calls],
        evidence="by replay on the public environment" if state else "by its name",
    )
    if replays is not None:
        prefixes = replays.runs([calls[:k] for k in range(len(calls) + 1)])
        ctx.results = prefixes[-1].get("results", [])
        ctx.post_state = prefixes[-1].get("post_state")
        states = [p.get("post_state") for p in prefixes]
        ctx.writes = [not same_json(states[k], states[k + 1]) for k in range(len(calls))]
    drafts = [d for make in (*PERMITTED, *VIOLATIONS) for d in make(ctx)]
    checked: list[str | None] = [None] * len(drafts)
    if replays is not None:
        outcomes = replays.runs([d.calls for d in drafts])
        checked = [_holds(ctx, d, r) for d, r in zip(drafts, outcomes, strict=True)]
    derived: list[Derived] = []
    skipped: list[Skipped] = []
    taken: dict[str, int] = {}
    for draft, problem in zip(drafts, checked, strict=True):
        cap = PER_CONSTRUCTION.get(draft.construction, 2)
        if taken.get(draft.construction, 0) >= cap:
            continue
        if problem is not None:
            skipped.append(Skipped(draft.construction, f"{draft.how}: {problem}"))
            continue
        taken[draft.construction] = taken.get(draft.construction, 0) + 1
        evidence = dict(draft.evidence)
        if replays is not None:
            evidence["checked_by"] = "replay on the public environment"
        derived.append(
            Derived(
                id=f"{draft.construction}-{taken[draft.construction]}",
                role=draft.role,
                construction=draft.construction,
                candidate={"calls": draft.calls, "final_answer": draft.answer},
                how=draft.how,
                why=draft.why,
                evidence=evidence,
            )
        )
    made = {d.construction for d in derived}
    skipped = [s for s in skipped if s.construction not in made]
    made |= {s.construction for s in skipped}
    if ctx.calls_are_answer:
        made |= {"unauthorised_write"}
    for name, reason in _NOT_APPLICABLE.items():
        if name not in made:
            skipped.append(Skipped(name, reason))
    return Derivations(derived, skipped)


_NOT_APPLICABLE = {
    "omit_optional": "no optional argument of the candidate equals its schema default",
    "equivalent_number": "no numeric argument whose schema type has another spelling",
    "key_order": "no call with two or more arguments",
    "answer_whitespace": "no free-text final answer",
    "reorder_independent": "no two adjacent calls found independent",
    "add_read_only": "no read-only call to add (or the calls themselves are the answer)",
    "drop_required_step": "no state-changing call to drop",
    "change_required_value": "no argument of a required step has a value the instruction states",
    "unauthorised_write": "no unrequested call found that changes the state",
}
