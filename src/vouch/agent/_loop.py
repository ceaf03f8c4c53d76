"""The agent loop: model replies, tool calls, budgets, and the trace of all of it.

``run_loop`` is the loop over any toolbox with the ``AgentTools`` interface (the trial audit's
witness tools use it too); ``run_agent`` is verifier generation around it.

A reply that is not usable (arguments that are not a JSON object, an unknown tool, text with
no tool call) is answered with an error message to the model and counted in the trace; it
never ends the run. Budgets (VerifierBench appendix E): executions, wall-clock seconds, output
tokens per reply, and a turn cap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vouch.agent._config import HarnessConfig
from vouch.agent._prices import PriceTable
from vouch.agent._provider import Message, Provider, ProviderError, ToolSpec
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


class LoopState(Protocol):
    """The budget state the loop reads of a toolbox."""

    @property
    def executions_used(self) -> int: ...

    @property
    def submitted(self) -> bool:
        """The agent's answer is in: the loop stops before the next model call."""
        ...


class AgentTools(Protocol):
    """What the loop needs of a toolbox: the verifier-writing ``Toolbox``, or the trial audit's
    witness tools (``vouch.audit.function._agent``)."""

    @property
    def specs(self) -> Mapping[str, ToolSpec]: ...

    @property
    def state(self) -> LoopState: ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...


@dataclass(frozen=True)
class LoopResult:
    """How one stretch of the loop ended, and what it spent."""

    reason: str
    """submitted, turns, wall, interrupted or provider_error."""
    error: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    malformed: int = 0
    """Tool calls that could not be run as sent (arguments not a JSON object, unknown tool)."""
    no_tool_call: int = 0
    """Replies with text and no tool call."""


def run_loop(
    tools: AgentTools,
    provider: Provider,
    messages: list[Message],
    *,
    budgets: Budgets,
    config: HarnessConfig,
    trace: TraceWriter,
    prices: PriceTable,
    started: float,
    nudge: str = NUDGE,
    budget_fields: Callable[[], dict[str, Any]] | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> LoopResult:
    """Model turns and tool calls until the toolbox says submitted or a budget ends the stretch.

    ``messages`` is extended in place (a caller may go on with the same conversation). The
    wall-clock budget counts from ``started``; turns count from this call. Raises only what the
    toolbox raises for broken infrastructure; a model endpoint that fails for good ends the
    stretch with reason ``provider_error``.
    """
    tool_list = list(tools.specs.values())
    model = f"{provider.name}/{provider.model}"
    totals = {"input_tokens": 0, "output_tokens": 0, "malformed": 0, "no_tool_call": 0}
    cost: float | None = 0.0
    reason, error = "turns", None
    exhausted: set[str] = set()

    def budget_hit(which: str) -> None:
        if which not in exhausted:
            exhausted.add(which)
            extra = budget_fields() if budget_fields is not None else {}
            trace.event("budget", which=which, **extra, executions_used=tools.state.executions_used)

    turn = 0
    while True:
        if tools.state.submitted:
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
                messages, tool_list, max_output_tokens=budgets.output_tokens_per_reply, effort=config.effort
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
            totals["no_tool_call"] += 1
            trace.event("no_tool_call", turn=turn)
            messages.append(Message("user", nudge))
            trace.event("message", role="user", content=nudge)
            continue
        for call in reply.tool_calls:
            t0 = clock()
            if call.arguments is None:
                outcome = ToolOutcome(
                    "malformed",
                    f"error: tool call {call.name!r} not run: {call.error}. Send the arguments as one JSON object.",
                )
            elif tools.state.submitted:
                outcome = ToolOutcome("error", "error: already submitted; nothing after submit runs")
            else:
                outcome = tools.call(call.name, call.arguments)
            if outcome.status == "malformed":
                totals["malformed"] += 1
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
                executions_used=tools.state.executions_used,
                duration_s=round(clock() - t0, 3),
                result=text,
                data=outcome.data,
            )
            if tools.state.executions_used >= budgets.executions:
                budget_hit("executions")
    return LoopResult(
        reason,
        error,
        turn,
        totals["input_tokens"],
        totals["output_tokens"],
        cost,
        malformed=totals["malformed"],
        no_tool_call=totals["no_tool_call"],
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
    result = run_loop(
        toolbox,
        provider,
        messages,
        budgets=budgets,
        config=config,
        trace=trace,
        prices=prices,
        started=started,
        budget_fields=lambda: {"verifier_written": toolbox.state.verifier is not None},
        stop=stop,
        clock=clock,
    )
    verifier = toolbox.state.verifier
    trace.event(
        "end",
        reason=result.reason,
        submitted=toolbox.state.submitted,
        verifier_written=verifier is not None,
        verifier_hash=verifier_hash(verifier) if verifier is not None else None,
        executions_used=toolbox.state.executions_used,
        turns=result.turns,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost_usd=result.cost_usd,
        wall_s=round(clock() - started, 3),
        error=result.error,
    )
    return AgentResult(task.id, result.reason, verifier, toolbox.state.submitted, result.error)
