"""The auditing model outside the witness loop: who it is, what it spent, and its two tool-less
calls: the requirements checklist of a task and the re-judging of a witness against P.

Both calls ask for one JSON object. A reply that is not one is answered once with what was
wrong; a second unusable reply is an answer of its own (the checklist falls back to the
offline one, the witness is not confirmed), never a crash. A model endpoint that fails raises
``ModelUnavailable``, which the caller turns into a trial ``error`` (or, for the checklist,
the offline checklist with a note).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vouch.agent import (
    AgentTools,
    HarnessConfig,
    LoopResult,
    Message,
    PriceTable,
    Provider,
    RetryPolicy,
    TraceWriter,
    get_provider,
    load_config,
    load_prices,
    run_loop,
)
from vouch.audit.function._prompt import Assertion
from vouch.core import Budgets, ChecklistItem
from vouch.errors import InfrastructureError

WITNESS_BUDGETS = Budgets(executions=12, wall_s=1800.0, output_tokens_per_reply=8192, turns=20)
"""Per trial: executions (run_witness calls) and wall-clock seconds over all k iterations;
turns per iteration; output tokens per reply. A harness config that sets budgets overrides these."""

REJUDGE_PROMPT = """\
You review one test written to refute a program that claims to solve a task. The task is given
by its prompt P alone. Decide whether the test checks only behaviour that P states or clearly
implies: values P's words or examples determine, on inputs P allows. Answer "no" when the test
relies on anything else: a choice P leaves open (an order, a tie-break, an error message, a
rounding), inputs P excludes, helper names or internals P never defines, the program's source
text, or timing.

Reply with one JSON object and nothing else:
{"answer": "yes" or "no", "reason": "<one sentence>"}
"""

CHECKLIST_PROMPT = """\
You decompose a programming task's prompt P into a requirements checklist: atomic, testable
clauses, each one thing the function must do. Mark each clause "explicit" when P states it (in
words or by an example) and "implicit" when P only implies it (e.g. the return type, behaviour
on an empty input that P's words determine). Map each clause to the ids of the official test
assertions that check it (an empty list when none does).

Reply with one JSON object and nothing else:
{"clauses": [{"text": "<the clause>", "kind": "explicit" or "implicit", "covered_by": ["L10", ...]}, ...]}
"""


class ModelUnavailable(Exception):
    """The auditing model's endpoint failed for this request (retries used up, request refused)."""


@dataclass
class AgentUsage:
    """What the auditing model was asked and what it spent over a run (``config.agent`` in results)."""

    sessions: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    malformed_calls: int = 0
    """Tool calls whose arguments were not a JSON object, or named no tool: answered and counted."""
    replies_without_tool_call: int = 0
    unusable_json_replies: int = 0
    """Checklist and re-judging replies that were not the JSON object asked for."""
    provider_errors: int = 0

    def add_cost(self, cost: float | None) -> None:
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost


@dataclass
class WitnessAgent:
    """The auditing model and its harness settings, shared by every trial of a run."""

    provider: Provider
    harness: HarnessConfig
    prices: PriceTable = field(default_factory=load_prices)
    stop: threading.Event | None = None
    """Set to end every session at its next turn (Ctrl-C)."""
    concurrency: int = 1
    """Trial sessions at once (model calls overlap; engine batches go one at a time)."""
    usage: AgentUsage = field(default_factory=AgentUsage)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def model(self) -> str:
        return f"{self.provider.name}/{self.provider.model}"

    @property
    def budgets(self) -> Budgets:
        return self.harness.budgets if self.harness.budgets is not None else WITNESS_BUDGETS

    def count(self, cost_usd: float | None = 0.0, **amounts: int) -> None:
        """Add to the usage totals (sessions may run in threads)."""
        with self._lock:
            for name, amount in amounts.items():
                setattr(self.usage, name, getattr(self.usage, name) + amount)
            self.usage.add_cost(cost_usd)

    def converse(
        self, tools: AgentTools, messages: list[Message], trace: TraceWriter, started: float, nudge: str
    ) -> LoopResult:
        """One iteration of a witness session: the loop until the agent submits, gives up or a
        budget ends; usage counted.

        Raises:
            ModelUnavailable: the endpoint refused a request.
            InfrastructureError: the engine itself failed under a tool (``tools.engine_error``).
        """
        try:
            result = run_loop(
                tools,
                self.provider,
                messages,
                budgets=self.budgets,
                config=self.harness,
                trace=trace,
                prices=self.prices,
                started=started,
                nudge=nudge,
                stop=self.stop,
            )
        except InfrastructureError as exc:
            if exc is getattr(tools, "engine_error", None):
                raise
            self.count(provider_errors=1)  # the endpoint refused a request (not retried, not ProviderError)
            raise ModelUnavailable(str(exc)) from None
        self.count(
            result.cost_usd,
            model_calls=result.turns,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            malformed_calls=result.malformed,
            replies_without_tool_call=result.no_tool_call,
            provider_errors=1 if result.reason == "provider_error" else 0,
        )
        return result

    def ask(self, messages: list[Message], trace: TraceWriter, purpose: str) -> str:
        """One tool-less model call, traced; the reply's text.

        Raises:
            ModelUnavailable: the endpoint failed for good or refused the request.
        """
        for m in messages[-1:] if len(messages) > 2 else messages:
            trace.event("message", purpose=purpose, role=m.role, content=m.content)
        try:
            reply = self.provider.complete(
                messages, [], max_output_tokens=self.budgets.output_tokens_per_reply, effort=self.harness.effort
            )
        except InfrastructureError as exc:  # ProviderError, or a request the endpoint refused
            self.count(provider_errors=1)
            trace.event("provider_error", purpose=purpose, error=str(exc))
            raise ModelUnavailable(str(exc)) from None
        cost = self.prices.cost(self.model, reply.usage.input_tokens, reply.usage.output_tokens)
        self.count(cost, model_calls=1, input_tokens=reply.usage.input_tokens, output_tokens=reply.usage.output_tokens)
        trace.event(
            "model_reply",
            purpose=purpose,
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
            cost_usd=cost,
            duration_s=round(reply.duration_s, 3),
            retries=reply.retries,
        )
        trace.event("message", purpose=purpose, role="assistant", content=reply.text)
        return reply.text


def discarded_message(iteration: int, k: int, reason: str | None) -> str:
    """What the agent is told when its witness ``iteration`` of ``k`` was discarded."""
    return (
        f"Your witness {iteration} was discarded: {reason}.\n"
        f"Submission {iteration + 1} of {k}: write another witness (this clause or another), or give_up."
    )


def witness_agent(
    model: str, config_name: str | None = None, *, prices: PriceTable | None = None, concurrency: int = 1
) -> WitnessAgent:
    """The auditing model ``PROVIDER/MODEL`` with a harness config (built-in name or .toml file).

    The config gives effort, budgets, request timeout, retries and the tool-result cap; the
    system prompt is always the witness prompt (a harness config's prompt is for verifiers).

    Raises:
        UsageError: a bad model spec, provider or config.
    """
    harness = load_config(config_name) if config_name else HarnessConfig(name="witness")
    retry = RetryPolicy(max_retries=harness.max_retries, timeout_s=harness.request_timeout_s)
    provider = get_provider(model, retry=retry)
    stop = threading.Event()
    return WitnessAgent(provider, harness, prices if prices is not None else load_prices(), stop, concurrency)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply holds: the whole text, a fenced block, or the outermost braces."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    return None


@dataclass(frozen=True)
class Answer:
    """A reply read as asked: its value, or what was wrong with it (then ``value`` is None)."""

    value: Any
    problem: str | None = None


def _ask_json(
    agent: WitnessAgent,
    messages: list[Message],
    trace: TraceWriter,
    purpose: str,
    read: Callable[[dict[str, Any]], Answer],
) -> Answer:
    """Ask, and read the reply's JSON object with ``read``; on a problem, say so once and ask again."""
    answer = Answer(None, "no reply")
    for attempt in range(2):
        text = agent.ask(messages, trace, purpose)
        obj = json_object(text)
        answer = read(obj) if obj is not None else Answer(None, "the reply holds no JSON object")
        if answer.problem is None:
            return answer
        agent.count(unusable_json_replies=1)
        trace.event("unusable_reply", purpose=purpose, attempt=attempt + 1, problem=answer.problem)
        messages += [
            Message("assistant", text),
            Message("user", f"error: {answer.problem}. Reply with the one JSON object asked for, and nothing else."),
        ]
    return answer


@dataclass(frozen=True)
class Rejudgement:
    """The model's answer on whether a witness checks only behaviour P states or implies."""

    confirmed: bool
    note: str


FUNCTION_ACCESS = "it imports the function under test from `solution`"
"""How a function-level witness reaches the code (``rejudge``'s default ``access``)."""


def rejudge(
    agent: WitnessAgent,
    prompt: str,
    clause: str,
    source: str,
    trace: TraceWriter,
    *,
    access: str = FUNCTION_ACCESS,
) -> Rejudgement:
    """Show the model P, the clause and the witness (nothing else) and read its yes/no.

    Args:
        agent: The auditing model.
        prompt: P.
        clause: The clause of P the witness says it checks.
        source: The witness.
        trace: Where the call is traced.
        access: How the test reaches the code under test, shown beside it (the SWE form: the
            repository's modules, not ``solution``).

    Raises:
        ModelUnavailable: the endpoint failed.
    """
    messages = [
        Message("system", REJUDGE_PROMPT),
        Message(
            "user",
            f"P (the task prompt):\n```python\n{prompt}```\n\nThe clause of P the test says it checks: {clause}\n\n"
            f"The test ({access}):\n```python\n{source}\n```",
        ),
    ]

    def read(obj: dict[str, Any]) -> Answer:
        said = obj.get("answer")
        if isinstance(said, bool):
            said = "yes" if said else "no"
        if not isinstance(said, str) or said.strip().lower() not in ("yes", "no"):
            return Answer(None, f'"answer" must be "yes" or "no", got {said!r}')
        reason = str(obj.get("reason") or "").strip() or "(no reason given)"
        return Answer(Rejudgement(said.strip().lower() == "yes", f"model: {said.strip().lower()}: {reason}"))

    answer = _ask_json(agent, messages, trace, "rejudge", read)
    verdict = answer.value or Rejudgement(False, f"re-judging got no usable answer from the model ({answer.problem})")
    trace.event("rejudge", confirmed=verdict.confirmed, note=verdict.note)
    return verdict


@dataclass(frozen=True)
class ModelChecklist:
    """The checklist the model gave, or None with why the offline one stands."""

    items: list[ChecklistItem] | None
    note: str


def model_checklist(
    agent: WitnessAgent, prompt: str, asserts: Sequence[Assertion], trace: TraceWriter
) -> ModelChecklist:
    """Ask the model for P's checklist, each clause mapped to T0's assertion ids (``L<line>``).

    Clauses with an empty text or a kind other than explicit/implicit are left out, as are
    assertion ids T0 does not have; a reply with no usable clause is unusable.
    """
    listing = "\n".join(f"{a.tag}: {a.source}" for a in asserts) or "(T0 has no assertion)"
    messages = [
        Message("system", CHECKLIST_PROMPT),
        Message("user", f"P:\n```python\n{prompt}```\n\nThe official test assertions (T0), by id:\n{listing}"),
    ]
    return _checklist(agent, messages, {a.tag for a in asserts}, trace, "assertion id")


SWE_CHECKLIST_PROMPT = """\
You decompose a repository task's issue text P into a requirements checklist: atomic, testable
clauses, each one thing the changed code must do. Mark each clause "explicit" when P states it
(in words or by an example) and "implicit" when P only implies it. Map each clause to the ids of
the official tests (T0, pytest node ids) that check it (an empty list when none does).

Reply with one JSON object and nothing else:
{"clauses": [{"text": "<the clause>", "kind": "explicit" or "implicit", "covered_by": ["t.py::test_a", ...]}, ...]}
"""


def swe_checklist(
    agent: WitnessAgent, problem: str, t0_sources: Mapping[str, str], t0: Sequence[str], trace: TraceWriter
) -> ModelChecklist:
    """Ask the model for the checklist of a SWE instance's P, each clause mapped to T0 test ids.

    Args:
        agent: The auditing model.
        problem: P, the issue text.
        t0_sources: Source of each T0 test by node id (tests whose source was not found are
            listed by id alone).
        t0: T0's node ids: the only ids a clause may name.
        trace: Where the call is traced.
    """
    listing = "\n\n".join(
        f"{node}:\n```python\n{t0_sources[node]}\n```" if t0_sources.get(node) else f"{node}: (source not found)"
        for node in t0
    )
    messages = [
        Message("system", SWE_CHECKLIST_PROMPT),
        Message("user", f"P:\n```\n{problem.strip()}\n```\n\nThe official tests (T0), by id:\n{listing or '(none)'}"),
    ]
    return _checklist(agent, messages, set(t0), trace, "test id")


def _checklist(
    agent: WitnessAgent, messages: list[Message], tags: set[str], trace: TraceWriter, what: str
) -> ModelChecklist:
    """Ask for a checklist and read it: clauses with a text and a kind, test ids among ``tags``."""
    dropped: list[str] = []

    def read(obj: dict[str, Any]) -> Answer:
        clauses = obj.get("clauses")
        if not isinstance(clauses, list) or not clauses:
            return Answer(None, '"clauses" must be a non-empty list')
        items: list[ChecklistItem] = []
        dropped.clear()
        for raw in clauses:
            if not isinstance(raw, dict):
                dropped.append(f"a clause that is not an object ({type(raw).__name__})")
                continue
            text, kind, covered = raw.get("text"), raw.get("kind"), raw.get("covered_by") or []
            if not isinstance(text, str) or not text.strip() or kind not in ("explicit", "implicit"):
                dropped.append(f"clause {str(text)[:40]!r} (kind {kind!r})")
                continue
            ids = [str(c) for c in covered] if isinstance(covered, list) else []
            dropped.extend(f"unknown {what} {c!r}" for c in ids if c not in tags)
            items.append(
                ChecklistItem(
                    id=f"M{len(items) + 1}",
                    text=text.strip(),
                    kind=kind,
                    origin="model",
                    covered_by=[c for c in ids if c in tags],
                )
            )
        if not items:
            return Answer(None, "no clause had a text and a kind of explicit or implicit")
        return Answer(items)

    try:
        answer = _ask_json(agent, messages, trace, "checklist", read)
    except ModelUnavailable as exc:
        return ModelChecklist(None, f"the model's checklist failed ({exc}); the offline checklist is used")
    items = answer.value
    if items is None:
        return ModelChecklist(
            None, f"the model's checklist was unusable ({answer.problem}); the offline checklist is used"
        )
    note = f"checklist from {agent.model} ({len(items)} clauses)"
    if dropped:
        note += f"; left out: {', '.join(dropped[:5])}" + (" ..." if len(dropped) > 5 else "")
    return ModelChecklist(items, note)
