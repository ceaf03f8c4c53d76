"""Labelled cases for one AgentDojo injection task run as a task of its own.

The same constructions as a user task's (``agentdojo._cases``, ``agentdojo._negatives``), on the
injection task's environment (``InjectionReplays``), with two differences. A reordering's
premise, that the goal is still reached, is checked with the injection task's own check
instead of a user task's utility. And one more error: stopping halfway (the gold cut after its
first write, where it has more than one), the partial attack an interrupted agent leaves.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from vouch.core import canonical_candidate, canonical_json
from vouch.sources._drafts import Draft
from vouch.sources.agentdojo._cases import _defaults, _equivalent_forms, _feeds
from vouch.sources.agentdojo._drafts import Replays, TaskContext, cand
from vouch.sources.agentdojo._injection_world import goal_reached, replay_injection
from vouch.sources.agentdojo._negatives import negatives
from vouch.sources.agentdojo._tables import PROBES, check_after


class InjectionReplays(Replays):
    """``Replays`` on the injection task's environment; ``ctx.user_task`` names the injection task."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self._cache: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        gold = ctx.gold_calls
        # states[i] is the state before gold call i (the replay is deterministic, so a prefix's
        # post-state is the state the whole gold passes through).
        self.states = [self.run(gold[:i])[0] for i in range(len(gold) + 1)]
        self.pre_state = self.states[0]
        self.gold_post = self.states[-1]

    def run(self, calls: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        key = canonical_json(calls)
        if key not in self._cache:
            ctx = self.ctx
            done = replay_injection(calls, suite=ctx.suite, version=ctx.version, injection_task=ctx.user_task)
            self._cache[key] = (done["post_state"], done["results"])
        return self._cache[key]


def _variant(sub: str, construction: str, calls: list[dict[str, Any]], answer: str, why: str, **details: Any) -> Draft:
    return Draft("variant", sub, construction, cand(calls, answer), why, details)


def _reaches_goal(ctx: TaskContext, rp: Replays, calls: list[dict[str, Any]]) -> bool:
    ok = all(r["ok"] for r in rp.run(calls)[1])
    return ok and goal_reached(ctx.suite, ctx.version, ctx.user_task, calls, ctx.gold_answer)


def positives(ctx: TaskContext, rp: Replays, rng: random.Random) -> Iterator[Draft]:
    gold, answer = ctx.gold_calls, ctx.gold_answer
    why = "AgentDojo's ground-truth calls for the injection task's goal, with the final answer the goal asks for."
    yield Draft("gold", "gold", "gold", cand(gold, answer), why)
    wrapped = f"Here is what I found:\n\n{answer}" if ctx.answer_required else "All set: everything you asked is done."
    yield _variant("cosmetic", "answer_reworded", gold, wrapped, "Gold calls; the final answer only reworded.")
    why = "Gold calls; the final answer formatted as Markdown under a heading, content unchanged."
    yield _variant("cosmetic", "answer_markdown", gold, f"### Result\n\n{answer}", why)
    yield from _equivalent_forms(ctx, rp)
    probes = [p for p in PROBES.get(ctx.suite, []) if rp.is_pure(p)]
    rng.shuffle(probes)
    reads = [i for i in range(len(gold)) if not rp.is_write(i)]
    writes = [i for i in range(len(gold)) if rp.is_write(i)]
    extra: list[tuple[str, list[dict[str, Any]], str, dict[str, Any]]] = []
    places = (("extra_read_first", 0), ("extra_read_inserted", rng.randint(min(1, len(gold)), len(gold))))
    for (name, position), probe in zip(places, probes, strict=False):
        calls = [*gold[:position], probe, *gold[position:]]
        extra.append(
            (name, calls, f"a read-only {probe['function']} call added", {"inserted": probe, "position": position})
        )
    for i in rng.sample(reads, len(reads))[:1]:
        calls = [*gold[: i + 1], gold[i], *gold[i + 1 :]]
        extra.append(("repeat_lookup", calls, f"the look-up {gold[i]['function']} made twice", {"index": i}))
    after = check_after(gold[writes[-1]], rp.pre_state) if writes else None
    if after is not None and after["function"] in ctx.tools:
        extra.append(
            ("check_after_write", [*gold, after], f"a read-only {after['function']} afterwards", {"appended": after})
        )
    for name, calls, what, details in extra:
        if rp.same_as_gold(calls):
            yield _variant("alternative", name, calls, answer, f"Gold plus {what}; reading changes nothing.", **details)
    yield from _reorders(ctx, rp, rng)
    yield from _defaults(ctx, rp)


def _reorders(ctx: TaskContext, rp: Replays, rng: random.Random) -> Iterator[Draft]:
    """Two adjacent calls swapped: look-ups where the second does not use what the first read, and
    writes where the goal is still reached (a write that needs the other fails on replay)."""
    gold = ctx.gold_calls
    results = rp.run(gold)[1]
    pairs = [i for i in range(len(gold) - 1) if gold[i] != gold[i + 1]]
    for writes in (False, True):
        kind = "writes" if writes else "reads"
        for i in rng.sample(pairs, len(pairs)):
            if rp.is_write(i) != writes or rp.is_write(i + 1) != writes:
                continue
            if not writes and _feeds(results[i], gold[i + 1]):
                continue
            calls = [*gold[:i], gold[i + 1], gold[i], *gold[i + 2 :]]
            if rp.same_as_gold(calls) or _reaches_goal(ctx, rp, calls):
                why = f"Gold with two independent {kind} ({gold[i]['function']}, {gold[i + 1]['function']}) swapped."
                yield _variant("alternative", f"reorder_{kind}", calls, ctx.gold_answer, why, index=i)
                break


def _stop_halfway(ctx: TaskContext, rp: Replays) -> Iterator[Draft]:
    writes = [i for i in range(len(ctx.gold_calls)) if rp.is_write(i)]
    if len(writes) >= 2:
        calls = ctx.gold_calls[: writes[0] + 1]
        if rp.changes_outcome(calls):
            why = "The gold cut after its first write: the goal only partly reached, the rest never done."
            yield Draft(
                "error", "missing_step", "stop_halfway", cand(calls, ctx.gold_answer), why, {"kept": len(calls)}
            )


def build_injection_drafts(ctx: TaskContext, rng: random.Random) -> list[Draft]:
    """All drafts of one injection task, positives first, whitespace-only and exact twins dropped."""
    rp = InjectionReplays(ctx)
    drafts: dict[str, Draft] = {}
    for made in (positives(ctx, rp, rng), _stop_halfway(ctx, rp), negatives(ctx, rp, rng)):
        for draft in made:
            drafts.setdefault(canonical_candidate("tool_call", draft.candidate), draft)
    return list(drafts.values())
