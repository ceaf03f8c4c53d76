"""Model providers: one ABC, neutral messages, retries with backoff, and a lazy registry.

The agent loop speaks a provider-neutral conversation (``Message``) and gets back a
``ModelReply`` with tool calls whose arguments may be malformed: a provider never raises on a
bad tool call, it reports it (``ToolCallRequest.error``) so the loop can answer the model.
Broken infrastructure (no key, no endpoint, retries used up) raises ``ProviderError``.
"""

from __future__ import annotations

import importlib
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from vouch.errors import InfrastructureError, UsageError

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: its name, what it does and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call as the model made it; ``arguments`` is None when they did not parse."""

    id: str
    name: str
    arguments_text: str
    arguments: dict[str, Any] | None
    error: str | None = None
    """Why the call cannot be run as made (arguments not a JSON object); None when it can."""


@dataclass(frozen=True)
class Message:
    """One message of the conversation, in a provider-neutral form."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    """Assistant messages: the calls made."""
    tool_call_id: str | None = None
    """Tool messages: which call this answers."""
    native: Any = None
    """Assistant messages: the provider's own form of the reply, echoed back verbatim (Anthropic's
    thinking blocks must be returned unchanged)."""


@dataclass(frozen=True)
class Usage:
    """Tokens of one reply."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ModelReply:
    """What one model call returned."""

    text: str
    tool_calls: tuple[ToolCallRequest, ...]
    usage: Usage
    stop_reason: str | None
    duration_s: float
    retries: int
    native: Any = None


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff on 429, 5xx, timeouts and dropped connections."""

    max_retries: int = 5
    base_s: float = 1.0
    max_s: float = 60.0
    timeout_s: float = 600.0
    """Per request."""


class ProviderError(InfrastructureError):
    """The model endpoint failed in a way retries did not fix."""


class Transient(Exception):
    """Raised by a provider's ``_call`` for a failure worth retrying (429, 5xx, timeout)."""


@dataclass
class Provider(ABC):
    """A model behind an API. Subclasses map neutral messages to their SDK and back."""

    model: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    sleep: Callable[[float], None] = time.sleep

    name: ClassVar[str] = "?"

    @abstractmethod
    def check(self, timeout_s: float = 10.0) -> None:
        """Raise UsageError (no key, key refused) or InfrastructureError (unreachable) in one line."""

    @abstractmethod
    def _call(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int, effort: str | None
    ) -> ModelReply:
        """One request, no retry; raise ``Transient`` for what backoff may fix."""

    def complete(
        self, messages: list[Message], tools: list[ToolSpec], *, max_output_tokens: int, effort: str | None = None
    ) -> ModelReply:
        """One model reply, retrying transient failures with exponential backoff and jitter."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                reply = self._call(messages, tools, max_output_tokens, effort)
            except Transient as exc:
                if attempt >= self.retry.max_retries:
                    raise ProviderError(
                        f"{self.name}/{self.model}: gave up after {attempt + 1} attempts: {exc}"
                    ) from None
                delay = min(self.retry.max_s, self.retry.base_s * 2**attempt)
                self.sleep(delay * (0.5 + self.rng.random() / 2))
                attempt += 1
                continue
            return ModelReply(
                text=reply.text,
                tool_calls=reply.tool_calls,
                usage=reply.usage,
                stop_reason=reply.stop_reason,
                duration_s=time.monotonic() - started,
                retries=attempt,
                native=reply.native,
            )


def parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments text -> (object, None) or (None, why it is not an object)."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


PROVIDERS: dict[str, str] = {
    "openai": "vouch.agent._openai:OpenAIProvider",
    "anthropic": "vouch.agent._anthropic:AnthropicProvider",
}
"""Provider name -> "module:class", imported only when asked for."""


def get_provider(spec: str, *, retry: RetryPolicy | None = None, **options: Any) -> Provider:
    """``"openai/gpt-4o"`` -> a provider; an unknown name lists the valid ones.

    Raises:
        UsageError: no ``/`` in ``spec``, or an unknown provider name.
    """
    name, sep, model = spec.partition("/")
    if not sep or not model:
        raise UsageError(
            f"--model {spec!r} must be PROVIDER/MODEL, e.g. openai/gpt-4o; providers: {', '.join(PROVIDERS)}"
        )
    target = PROVIDERS.get(name)
    if target is None:
        raise UsageError(f"unknown model provider {name!r} in {spec!r}; valid providers: {', '.join(PROVIDERS)}")
    module, _, cls_name = target.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    provider: Provider = cls(model=model, retry=retry or RetryPolicy(), **options)
    return provider
