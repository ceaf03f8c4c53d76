"""``anthropic/<model>``: the Messages API through the anthropic SDK (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``). Reasoning effort maps to an extended-thinking budget."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import anthropic

from vouch.agent._provider import (
    Message,
    ModelReply,
    Provider,
    ToolCallRequest,
    ToolSpec,
    Transient,
    Usage,
)
from vouch.errors import InfrastructureError, UsageError

DEFAULT_BASE_URL = "https://api.anthropic.com"
THINKING_BUDGETS = {"minimal": None, "low": None, "medium": 4096, "high": 16384}
"""Effort -> extended-thinking budget in tokens (None: no thinking); capped below the reply cap."""


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.native is not None:
        return list(message.native)  # thinking blocks and signatures go back unchanged
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        arguments = call.arguments if call.arguments is not None else {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def to_anthropic(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Neutral messages -> (system prompt, Messages API messages); tool results become user turns."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            out.append({"role": "assistant", "content": _blocks(message)})
            continue
        if message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
        else:
            block = {"type": "text", "text": message.content}
        # Consecutive user-side blocks (several tool results) share one user turn.
        if out and out[-1]["role"] == "user":
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return system, out


def reply_from_anthropic(data: Any) -> ModelReply:
    """A Messages API response (the SDK's object) -> a neutral reply."""
    texts, calls, native = [], [], []
    for block in data.content:
        dumped = block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else dict(block)
        native.append(dumped)
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else None
            error = None if arguments is not None else f"input must be a JSON object, got {type(block.input).__name__}"
            calls.append(ToolCallRequest(block.id, block.name, repr(block.input), arguments, error))
    usage = data.usage
    return ModelReply(
        text="\n".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(getattr(usage, "input_tokens", 0) or 0, getattr(usage, "output_tokens", 0) or 0),
        stop_reason=data.stop_reason,
        duration_s=0.0,
        retries=0,
        native=native,
    )


@dataclass
class AnthropicProvider(Provider):
    """Messages API with tool use; the SDK's own retries are off (ours are recorded)."""

    name = "anthropic"
    base_url: str | None = None
    api_key: str | None = None
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        self.api_key = self.api_key if self.api_key is not None else os.environ.get("ANTHROPIC_API_KEY")

    @property
    def client(self) -> Any:
        if self._client is None:
            if not self.api_key:
                raise UsageError("ANTHROPIC_API_KEY is not set: export it (ANTHROPIC_BASE_URL picks another endpoint)")
            self._client = anthropic.Anthropic(
                api_key=self.api_key, base_url=self.base_url, max_retries=0, timeout=self.retry.timeout_s
            )
        return self._client

    def check(self, timeout_s: float = 10.0) -> None:
        client = self.client
        try:
            client.with_options(timeout=timeout_s).models.list(limit=1)
        except anthropic.AuthenticationError:
            raise UsageError(f"ANTHROPIC_API_KEY was refused by {self.base_url} (HTTP 401)") from None
        except anthropic.APIConnectionError as exc:
            raise InfrastructureError(
                f"cannot reach the model endpoint {self.base_url} (ANTHROPIC_BASE_URL): {exc.__cause__ or exc}"
            ) from None
        except anthropic.APIStatusError:
            pass  # it answered

    def request(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int, effort: str | None
    ) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for this conversation."""
        system, converted = to_anthropic(messages)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_output_tokens, "messages": converted}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        if effort is not None:
            if effort not in THINKING_BUDGETS:
                raise UsageError(f"reasoning effort {effort!r} is not one of {', '.join(THINKING_BUDGETS)}")
            budget = THINKING_BUDGETS[effort]
            if budget is not None and max_output_tokens > 1024:
                kwargs["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_output_tokens - 1024)}
        return kwargs

    def _call(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int, effort: str | None
    ) -> ModelReply:
        kwargs = self.request(messages, tools, max_output_tokens, effort)
        try:
            data = self.client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                raise Transient(f"HTTP {exc.status_code} from {self.base_url}") from None
            raise InfrastructureError(
                f"{self.base_url} refused the request for model {self.model!r}: HTTP {exc.status_code}: "
                f"{str(exc.message)[:300]}"
            ) from None
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            raise Transient(f"{type(exc).__name__} talking to {self.base_url}") from None
        return reply_from_anthropic(data)
