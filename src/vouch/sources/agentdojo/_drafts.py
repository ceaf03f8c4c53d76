"""Drafts of cases and the replays they are checked on, shared by the AgentDojo constructions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vouch.core import canonical_json
from vouch.sources.agentdojo._tables import without_logs
from vouch.sources.agentdojo._world import load_suite, pre_environment, run_calls, snapshot


@dataclass(frozen=True)
class TaskContext:
    """One user task with its gold, as the constructions see it."""

    suite: str
    version: str
    user_task: str
    prompt: str
    gold_calls: list[dict[str, Any]]
    gold_answer: str
    answer_required: bool
    answer_from_source: bool
    """True when the gold answer is AgentDojo's own GROUND_TRUTH_OUTPUT (a terse list of facts)."""
    injections: dict[str, list[dict[str, Any]]]
    tools: dict[str, dict[str, Any]]
    """Tool name -> parameters JSON Schema."""


class Replays:
    """Post-states of call lists on the task's pre-state, cached by the calls' canonical text."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self._cache: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        env = pre_environment(ctx.suite, ctx.version, ctx.user_task)
        self.pre_state = snapshot(env)
        # States along the gold: states[i] is the state before gold call i.
        self.states = [self.pre_state]
        suite = load_suite(ctx.suite, ctx.version)
        for call in ctx.gold_calls:
            run_calls(suite, env, [call])
            self.states.append(snapshot(env))
        self.gold_post = self.states[-1]

    def run(self, calls: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        key = canonical_json(calls)
        if key not in self._cache:
            env = pre_environment(self.ctx.suite, self.ctx.version, self.ctx.user_task)
            results = run_calls(load_suite(self.ctx.suite, self.ctx.version), env, calls)
            self._cache[key] = (snapshot(env), results)
        return self._cache[key]

    def same_as_gold(self, calls: list[dict[str, Any]]) -> bool:
        post, results = self.run(calls)
        return post == self.gold_post and all(r["ok"] for r in results)

    def is_pure(self, call: dict[str, Any]) -> bool:
        """True if ``call`` succeeds on the pre-state and changes nothing."""
        post, results = self.run([call])
        return post == self.pre_state and results[0]["ok"]

    def changes_outcome(self, calls: list[dict[str, Any]]) -> bool:
        return self.run(calls)[0] != self.gold_post

    def is_write(self, index: int) -> bool:
        """True if gold call ``index`` changes the state beyond access logs."""
        suite = self.ctx.suite
        return without_logs(suite, self.states[index]) != without_logs(suite, self.states[index + 1])


def cand(calls: list[dict[str, Any]], answer: str | None) -> dict[str, Any]:
    return {"calls": [{"function": c["function"], "args": dict(c["args"])} for c in calls], "final_answer": answer}


def with_args(call: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return {"function": call["function"], "args": args}


def replace_call(calls: list[dict[str, Any]], index: int, new: dict[str, Any]) -> list[dict[str, Any]]:
    return [new if i == index else c for i, c in enumerate(calls)]


def strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for v in data.values():
            yield from strings(v)
    elif isinstance(data, list):
        for v in data:
            yield from strings(v)
