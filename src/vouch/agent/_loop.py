"""The agent loop: model replies, tool calls, budgets, and the trace of all of it.

A reply that is not usable (arguments that are not a JSON object, an unknown tool, text with
no tool call) is answered with an error message to the model and counted in the trace; it
never ends the run. Budgets (VerifierBench appendix E): executions, wall-clock seconds, output
tokens per reply, and a turn cap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from vouch.agent._config import HarnessConfig
from vouch.agent._prices import PriceTable
from vouch.agent._provider import Message, Provider, ProviderError
from vouch.agent._tools import Toolbox, ToolOutcome, verifier_hash
from vouch.agent._trace import TraceWriter
from vouch.bench import Task
from vouch.core import Budgets
from vouch.exec import Executor

NUDGE = "error: your reply had no tool call. Work only through the tools; call submit when the verifier is done."


@dataclass(frozen=True)
class AgentResult:
    """How one task's generation ended."""

    task_id: str
    reason: str
    """submitted, turns, wall, interrupted or provider_error."""
    verifier: str | None
    submitted: bool
    error: str | None


def budgets_for(task: Task, config: HarnessConfig) -> Budgets:
    """The config's budgets when it sets them, else the task's own."""
    return config.budgets if config.budgets is not None else task.spec.budgets


def _first_message(task: Task, toolbox: Toolbox, budgets: Budgets) -> str:
    instruction = toolbox.workspace.text("instruction.md") or "(no instruction.md)"
    files = ", ".join(toolbox.workspace.files)
    return (
        f"Task {task.id} (kind: {task.spec.kind}). Public files: {files}.\n"
        f"Budgets: {budgets.executions} executions, {budgets.wall_s:.0f} s, {budgets.turns} turns, "
        f"{budgets.output_tokens_per_reply} output tokens per reply.\n\n"
        f"The instruction the solver was given:\n\n{instruction}"
    )


def run_agent(
    task: Task,
    provider: Provider,
    config: HarnessConfig,
    executor: Executor,
    trace: TraceWriter,
    *,
    hidden: tuple[str, ...],
    prices: PriceTable,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AgentResult:
    """Let the model write a verifier for ``task`` within its budgets, tracing every step.

    Raises only for broken infrastructure the run cannot go on without (the engine); a model
    endpoint that fails for good ends the task with reason ``provider_error``.
    """
    budgets = budgets_for(task, config)
    toolbox = Toolbox(task, executor, config, executions=budgets.executions, hidden=hidden)
    tools = list(toolbox.specs.values())
    model = f"{provider.name}/{provider.model}"
    started = clock()
    trace.event(
        "start",
        task_id=task.id,
        kind=task.spec.kind,
        source=task.spec.source.benchmark,
        model=model,
        config=config.model_dump(mode="json"),
        budgets=budgets.model_dump(mode="json"),
        tools=[t.name for t in tools],
    )
    messages = [Message("system", config.system_prompt), Message("user", _first_message(task, toolbox, budgets))]
    for m in messages:
        trace.event("message", role=m.role, content=m.content)
    totals = {"input_tokens": 0, "output_tokens": 0}
    cost: float | None = 0.0
    reason, error = "turns", None
    exhausted: set[str] = set()

    def budget_hit(which: str) -> None:
        if which not in exhausted:
            exhausted.add(which)
            trace.event(
                "budget",
                which=which,
                verifier_written=toolbox.state.verifier is not None,
                executions_used=toolbox.state.executions_used,
            )

    turn = 0
    while True:
        if toolbox.state.submitted:
            reason = "submitted"
            break
        if stop is not None and stop.is_set():
            reason = "interrupted"
            break
        if clock() - started >= budgets.wall_s:
            reason = "wall"
            budget_hit("wall")
            break
        if turn >= budgets.turns:
            reason = "turns"
            budget_hit("turns")
            break
        turn += 1
        try:
            reply = provider.complete(
                messages, tools, max_output_tokens=budgets.output_tokens_per_reply, effort=config.effort
            )
        except ProviderError as exc:
            reason, error = "provider_error", str(exc)
            break
        reply_cost = prices.cost(model, reply.usage.input_tokens, reply.usage.output_tokens)
        totals["input_tokens"] += reply.usage.input_tokens
        totals["output_tokens"] += reply.usage.output_tokens
        cost = None if cost is None or reply_cost is None else cost + reply_cost
        trace.event(
            "model_reply",
            turn=turn,
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
            cost_usd=reply_cost,
            duration_s=round(reply.duration_s, 3),
            retries=reply.retries,
            stop_reason=reply.stop_reason,
        )
        assistant = Message("assistant", reply.text, reply.tool_calls, native=reply.native)
        messages.append(assistant)
        trace.event(
            "message",
            role="assistant",
            content=reply.text,
            tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments_text} for c in reply.tool_calls],
        )
        if not reply.tool_calls:
            trace.event("no_tool_call", turn=turn)
            messages.append(Message("user", NUDGE))
            trace.event("message", role="user", content=NUDGE)
            continue
        for call in reply.tool_calls:
            t0 = clock()
            if call.arguments is None:
                outcome = ToolOutcome(
                    "malformed",
                    f"error: tool call {call.name!r} not run: {call.error}. Send the arguments as one JSON object.",
                )
            elif toolbox.state.submitted:
                outcome = ToolOutcome("error", "error: already submitted; nothing after submit runs")
            else:
                outcome = toolbox.call(call.name, call.arguments)
            text = outcome.text
            if len(text) > config.max_result_chars:
                text = (
                    text[: config.max_result_chars]
                    + f"\n[... cut: {len(text) - config.max_result_chars} more characters]"
                )
            messages.append(Message("tool", text, tool_call_id=call.id))
            trace.event(
                "tool",
                turn=turn,
                id=call.id,
                name=call.name,
                arguments=call.arguments if call.arguments is not None else call.arguments_text,
                status=outcome.status,
                counted=outcome.counted,
                executions_used=toolbox.state.executions_used,
                duration_s=round(clock() - t0, 3),
                result=text,
                data=outcome.data,
            )
            if toolbox.state.executions_used >= budgets.executions:
                budget_hit("executions")
    verifier = toolbox.state.verifier
    trace.event(
        "end",
        reason=reason,
        submitted=toolbox.state.submitted,
        verifier_written=verifier is not None,
        verifier_hash=verifier_hash(verifier) if verifier is not None else None,
        executions_used=toolbox.state.executions_used,
        turns=turn,
        input_tokens=totals["input_tokens"],
        output_tokens=totals["output_tokens"],
        cost_usd=cost,
        wall_s=round(clock() - started, 3),
        error=error,
    )
    return AgentResult(task.id, reason, verifier, toolbox.state.submitted, error)
