"""Trace analysis: what VerifierBench sections 3.3 and 4 ask a generation run to make visible.

Budgets exhausted (and exhausted before the first verifier was written), executions used, and
self-tests that never saw a complete positive PASS: a ``self_test`` on a candidate the agent
meant as valid (``expect = "valid"``) on which its verifier returned True.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_STEP_CHARS = 1500
_MAX_STEPS = 300


class TaskAnalysis(BaseModel):
    """The analysis of one task's trace (``<out>/<task_id>/done.json`` and the results file)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="The task.")
    kind: str = Field(description="tool_call, state or code.")
    source: str | None = Field(default=None, description="The task's benchmark.")
    end_reason: str = Field(description="submitted, turns, wall, interrupted or provider_error.")
    submitted: bool = Field(description="The agent called submit with a verifier written.")
    verifier_written: bool = Field(description="write_verifier succeeded at least once.")
    verifier_versions: int = Field(description="How many times the verifier was (re)written.")
    executions_used: int = Field(description="run_python, run_public, self_test and challenge calls run.")
    executions_budget: int = Field(description="The execution budget.")
    turns: int = Field(description="Model replies.")
    turns_budget: int = Field(description="The turn cap.")
    tool_calls: dict[str, int] = Field(description="Calls per tool name (malformed ones under their given name).")
    malformed_tool_calls: int = Field(
        description="Tool calls with arguments that are not a JSON object, or an unknown tool."
    )
    replies_without_tool_call: int = Field(description="Replies with text only.")
    truncated_replies: int = Field(description="Replies cut by the output-token cap.")
    refused_executions: int = Field(description="Execution requests refused because the budget was spent.")
    budget_exhausted: bool = Field(description="Some budget (executions, wall, turns) ran out.")
    exhausted: list[str] = Field(description="Which budgets ran out, in order.")
    exhausted_before_verifier: bool = Field(description="The first budget ran out before any verifier was written.")
    self_tests: int = Field(description="self_test calls that ran.")
    positive_self_tests: int = Field(description="Self-tests on candidates the agent meant as valid.")
    positive_self_test_passes: int = Field(description="Of those, how many its verifier gave PASS.")
    negative_self_tests: int = Field(description="Self-tests on candidates the agent meant as invalid.")
    negative_self_test_fails: int = Field(description="Of those, how many its verifier gave FAIL.")
    invalid_self_tests: int = Field(description="Self-tests whose decision was INVALID.")
    never_positive_pass: bool = Field(
        description="No self-test ever saw a complete positive PASS (true also when none was tried)."
    )
    final_verifier_positive_pass: bool = Field(
        description="A positive self-test gave PASS on the verifier as finally written."
    )
    input_tokens: int = Field(description="Input tokens over every reply.")
    output_tokens: int = Field(description="Output tokens over every reply.")
    cost_usd: float | None = Field(description="Dollars by the price table; null when the model has no price.")
    model_calls: int = Field(description="Model requests that got a reply.")
    retries: int = Field(description="Requests retried after a 429, 5xx or timeout.")
    wall_s: float = Field(description="Seconds from start to end.")
    error: str | None = Field(default=None, description="Why the task stopped early, when infrastructure failed.")
    trace: list[dict[str, Any]] = Field(default_factory=list, description="A condensed trace for the viewer.")


def _cut(text: Any, limit: int = _STEP_CHARS) -> str:
    shown = str(text)
    return shown if len(shown) <= limit else shown[:limit] + f"... [{len(shown) - limit} more chars]"


def condensed(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a reader wants in a viewer: messages, tool calls with results, budget events."""
    steps: list[dict[str, Any]] = []
    for e in events:
        kind = e.get("type")
        if kind == "message":
            calls = "".join(
                f"\n-> {c.get('name')}({_cut(c.get('arguments', ''), 300)})" for c in e.get("tool_calls") or []
            )
            steps.append(
                {
                    "t": e.get("t"),
                    "kind": e.get("role", "?"),
                    "title": e.get("role", "?"),
                    "body": _cut(str(e.get("content") or "") + calls),
                }
            )
        elif kind == "tool":
            title = f"{e.get('name')} [{e.get('status')}]" + (" (1 execution)" if e.get("counted") else "")
            body = f"args: {_cut(e.get('arguments', ''), 600)}\n\n{_cut(e.get('result', ''))}"
            steps.append({"t": e.get("t"), "kind": "tool", "title": title, "body": body})
        elif kind in ("budget", "no_tool_call", "end"):
            fields = {k: v for k, v in e.items() if k not in ("type", "t")}
            steps.append({"t": e.get("t"), "kind": kind, "title": kind, "body": _cut(fields)})
    if len(steps) > _MAX_STEPS:
        half = _MAX_STEPS // 2
        skipped = {"t": None, "kind": "gap", "title": "...", "body": f"{len(steps) - _MAX_STEPS} steps left out"}
        steps = [*steps[:half], skipped, *steps[-half:]]
    return steps


def analyze(events: Sequence[dict[str, Any]]) -> TaskAnalysis:
    """The analysis of one trace's events (as written by the agent loop)."""
    start: dict[str, Any] = next((e for e in events if e.get("type") == "start"), {})
    end: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "end"), {})
    budgets = start.get("budgets", {})
    tools = [e for e in events if e.get("type") == "tool"]
    replies = [e for e in events if e.get("type") == "model_reply"]
    budget_events = [e for e in events if e.get("type") == "budget"]
    writes = [e for e in tools if e.get("name") == "write_verifier" and e.get("status") == "ok"]
    tests = [e for e in tools if e.get("name") == "self_test" and e.get("status") == "ok"]
    positive = [e for e in tests if e.get("data", {}).get("expect") == "valid"]
    negative = [e for e in tests if e.get("data", {}).get("expect") == "invalid"]
    positive_pass = [e for e in positive if e.get("data", {}).get("decision") == "PASS"]
    final_hash = end.get("verifier_hash")
    costs: list[float | None] = [e.get("cost_usd") for e in replies]
    exhausted = list(dict.fromkeys(e.get("which", "?") for e in budget_events))
    return TaskAnalysis(
        task_id=str(start.get("task_id", "?")),
        kind=str(start.get("kind", "?")),
        source=start.get("source"),
        end_reason=str(end.get("reason", "interrupted")),
        submitted=bool(end.get("submitted", False)),
        verifier_written=bool(writes),
        verifier_versions=len(writes),
        executions_used=sum(1 for e in tools if e.get("counted")),
        executions_budget=int(budgets.get("executions", 0)),
        turns=len(replies),
        turns_budget=int(budgets.get("turns", 0)),
        tool_calls=dict(Counter(str(e.get("name")) for e in tools)),
        malformed_tool_calls=sum(1 for e in tools if e.get("status") == "malformed"),
        replies_without_tool_call=sum(1 for e in events if e.get("type") == "no_tool_call"),
        truncated_replies=sum(1 for e in replies if e.get("stop_reason") in ("length", "max_tokens")),
        refused_executions=sum(1 for e in tools if e.get("status") == "refused"),
        budget_exhausted=bool(exhausted),
        exhausted=exhausted,
        exhausted_before_verifier=bool(budget_events) and not budget_events[0].get("verifier_written", False),
        self_tests=len(tests),
        positive_self_tests=len(positive),
        positive_self_test_passes=len(positive_pass),
        negative_self_tests=len(negative),
        negative_self_test_fails=sum(1 for e in negative if e.get("data", {}).get("decision") == "FAIL"),
        invalid_self_tests=sum(1 for e in tests if e.get("data", {}).get("decision") == "INVALID"),
        never_positive_pass=not positive_pass,
        final_verifier_positive_pass=final_hash is not None
        and any(e.get("data", {}).get("verifier_hash") == final_hash for e in positive_pass),
        input_tokens=sum(int(e.get("input_tokens", 0)) for e in replies),
        output_tokens=sum(int(e.get("output_tokens", 0)) for e in replies),
        cost_usd=None if not costs or any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6),
        model_calls=len(replies),
        retries=sum(int(e.get("retries", 0)) for e in replies),
        wall_s=float(end.get("wall_s", events[-1].get("t", 0.0) if events else 0.0)),
        error=end.get("error"),
        trace=condensed(events),
    )


def summarize(analyses: Sequence[TaskAnalysis]) -> dict[str, Any]:
    """Totals over tasks: counts of each finding, executions, tokens, cost."""
    n = len(analyses)
    costs = [a.cost_usd for a in analyses]

    def count(attr: str) -> int:
        return sum(1 for a in analyses if getattr(a, attr))

    return {
        "tasks": n,
        "submitted": count("submitted"),
        "verifiers_written": count("verifier_written"),
        "budget_exhausted": count("budget_exhausted"),
        "exhausted_before_verifier": count("exhausted_before_verifier"),
        "never_positive_pass": count("never_positive_pass"),
        "malformed_tool_calls": sum(a.malformed_tool_calls for a in analyses),
        "executions_used": sum(a.executions_used for a in analyses),
        "executions_mean": (sum(a.executions_used for a in analyses) / n) if n else None,
        "input_tokens": sum(a.input_tokens for a in analyses),
        "output_tokens": sum(a.output_tokens for a in analyses),
        "cost_usd": None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6),
        "wall_s": round(sum(a.wall_s for a in analyses), 3),
    }
