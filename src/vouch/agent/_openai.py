"""``openai/<model>``: any OpenAI-compatible chat-completions endpoint (hosted, vLLM, Ollama,
llama.cpp's server) through the openai SDK. ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` pick it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import openai

from vouch.agent._provider import (
    Message,
    ModelReply,
    Provider,
    ToolCallRequest,
    ToolSpec,
    Transient,
    Usage,
    parse_arguments,
)
from vouch.errors import InfrastructureError, UsageError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_EFFORTS = ("minimal", "low", "medium", "high")


def _to_openai(message: Message) -> dict[str, Any]:
    if message.role == "assistant":
        if not message.tool_calls:
            return {"role": "assistant", "content": message.content}
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _echo(c)}}
                for c in message.tool_calls
            ],
        }
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    return {"role": message.role, "content": message.content}


def _echo(call: ToolCallRequest) -> str:
    # Some servers (vLLM chat templates) parse the history's arguments and fail on bad JSON: a
    # malformed call goes back as valid JSON that still shows the model what it sent.
    if call.arguments is None:
        return json.dumps({"unparsed_arguments": call.arguments_text})
    return call.arguments_text


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def reply_from_openai(data: Any) -> ModelReply:
    """A chat-completions response (the SDK's object) -> a neutral reply (no retries, no timing)."""
    choice = data.choices[0]
    calls = []
    for index, call in enumerate(choice.message.tool_calls or []):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None) or ""
        raw = getattr(function, "arguments", None) or ""
        # Some servers send the arguments as an object rather than the protocol's JSON text.
        text = raw if isinstance(raw, str) else json.dumps(raw)
        arguments, error = parse_arguments(text)
        calls.append(ToolCallRequest(call.id or f"call_{index}", name, text, arguments, error))
    usage = data.usage
    return ModelReply(
        text=choice.message.content or "",
        tool_calls=tuple(calls),
        usage=Usage(getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0),
        stop_reason=choice.finish_reason,
        duration_s=0.0,
        retries=0,
    )


@dataclass
class OpenAIProvider(Provider):
    """Chat completions with tool calling; the SDK's own retries are off (ours are recorded)."""

    name = "openai"
    base_url: str | None = None
    api_key: str | None = None
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.api_key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY")

    @property
    def client(self) -> Any:
        if self._client is None:
            if not self.api_key:
                raise UsageError(
                    "OPENAI_API_KEY is not set: export it (any non-empty value for a local vLLM, Ollama or "
                    "llama.cpp server) and point OPENAI_BASE_URL at the endpoint"
                )
            self._client = openai.OpenAI(
                api_key=self.api_key, base_url=self.base_url, max_retries=0, timeout=self.retry.timeout_s
            )
        return self._client

    def check(self, timeout_s: float = 10.0) -> None:
        client = self.client
        try:
            client.with_options(timeout=timeout_s).models.list()
        except openai.AuthenticationError:
            raise UsageError(f"OPENAI_API_KEY was refused by {self.base_url} (HTTP 401)") from None
        except openai.APIConnectionError as exc:
            raise InfrastructureError(
                f"cannot reach the model endpoint {self.base_url} (OPENAI_BASE_URL): {exc.__cause__ or exc}"
            ) from None
        except openai.APIStatusError:
            pass  # it answered: some servers have no model list, the chat endpoint may still work

    def _call(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int, effort: str | None
    ) -> ModelReply:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [_to_openai(m) for m in messages],
        }
        # OpenAI's own API takes only max_completion_tokens for reasoning models; servers that
        # mimic the protocol (llama.cpp, older vLLM and Ollama) know max_tokens.
        cap = "max_completion_tokens" if self.base_url == DEFAULT_BASE_URL else "max_tokens"
        kwargs[cap] = max_output_tokens
        if tools:
            kwargs["tools"] = [_tool(t) for t in tools]
        if effort is not None:
            if effort not in _EFFORTS:
                raise UsageError(f"reasoning effort {effort!r} is not one of {', '.join(_EFFORTS)}")
            kwargs["reasoning_effort"] = effort
        try:
            data = self.client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                raise Transient(f"HTTP {exc.status_code} from {self.base_url}") from None
            raise InfrastructureError(
                f"{self.base_url} refused the request for model {self.model!r}: HTTP {exc.status_code}: "
                f"{str(exc.message)[:300]}"
            ) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise Transient(f"{type(exc).__name__} talking to {self.base_url}") from None
        if not getattr(data, "choices", None):
            raise Transient(f"{self.base_url} answered with no choices")
        return reply_from_openai(data)
