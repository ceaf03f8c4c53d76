"""Providers against loopback servers: the real openai and anthropic SDKs over real HTTP."""

from __future__ import annotations

import json
import socket

import pytest
from loopback import KEY, AnthropicServer, OpenAIServer, Turn, call

from vouch.agent import Message, ProviderError, RetryPolicy, ToolSpec, get_provider
from vouch.agent._anthropic import AnthropicProvider
from vouch.agent._openai import OpenAIProvider
from vouch.errors import InfrastructureError, UsageError

TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
CONVERSATION = [
    Message("system", "be brief"),
    Message("user", "Task t (kind: code). Go."),
]


def _openai(server: OpenAIServer, **kw: object) -> OpenAIProvider:
    provider = get_provider(
        "openai/scripted", retry=RetryPolicy(max_retries=2, base_s=0.0), base_url=server.url, api_key=KEY, **kw
    )
    assert isinstance(provider, OpenAIProvider)
    provider.sleep = lambda _s: None
    return provider


def test_openai_tool_calls_usage_and_request_mapping() -> None:
    turns = iter([Turn(text="looking", calls=[("read_file", {"path": "instruction.md"}), ("read_file", "{not json")])])
    with OpenAIServer(lambda body: next(turns)) as server:
        provider = _openai(server)
        provider.check()
        reply = provider.complete(CONVERSATION, TOOLS, max_output_tokens=123, effort="high")
    good, bad = reply.tool_calls
    assert (good.name, good.arguments, good.error) == ("read_file", {"path": "instruction.md"}, None)
    assert bad.arguments is None and "not valid JSON" in (bad.error or "")
    assert bad.arguments_text == "{not json"
    assert reply.text == "looking" and reply.usage.input_tokens == 100 and reply.usage.output_tokens == 20
    [sent] = server.requests
    assert sent["max_tokens"] == 123 and sent["reasoning_effort"] == "high"
    assert sent["tools"][0]["function"]["name"] == "read_file"
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]


def test_openai_echoes_tool_calls_and_results_back() -> None:
    with OpenAIServer(lambda body: call("submit")) as server:
        provider = _openai(server)
        first = provider.complete(CONVERSATION, TOOLS, max_output_tokens=10)
        history = [
            *CONVERSATION,
            Message("assistant", "", first.tool_calls),
            Message("tool", "submitted", tool_call_id=first.tool_calls[0].id),
        ]
        provider.complete(history, TOOLS, max_output_tokens=10)
    sent = server.requests[1]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == first.tool_calls[0].id
    assert sent[3] == {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "submitted"}


def test_openai_retries_429_and_5xx_then_answers() -> None:
    turns = iter([Turn(status=429), Turn(status=503), call("submit")])
    with OpenAIServer(lambda body: next(turns)) as server:
        reply = _openai(server).complete(CONVERSATION, TOOLS, max_output_tokens=10)
    assert reply.retries == 2 and reply.tool_calls[0].name == "submit"
    assert len(server.requests) == 3


def test_openai_gives_up_after_its_retries() -> None:
    with (
        OpenAIServer(lambda body: Turn(status=500)) as server,
        pytest.raises(ProviderError, match="gave up after 3 attempts"),
    ):
        _openai(server).complete(CONVERSATION, TOOLS, max_output_tokens=10)
    assert len(server.requests) == 3


def test_openai_client_errors_are_not_retried() -> None:
    with (
        OpenAIServer(lambda body: Turn(status=400)) as server,
        pytest.raises(InfrastructureError, match="HTTP 400"),
    ):
        _openai(server).complete(CONVERSATION, TOOLS, max_output_tokens=10)
    assert len(server.requests) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("spec", "env", "error", "message"),
    [
        ("openai/m", {}, UsageError, "OPENAI_API_KEY is not set"),
        ("anthropic/m", {}, UsageError, "ANTHROPIC_API_KEY is not set"),
        ("openai/m", {"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": "unreachable"}, InfrastructureError, "OPENAI_BASE_URL"),
        (
            "anthropic/m",
            {"ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": "unreachable"},
            InfrastructureError,
            "ANTHROPIC_BASE_URL",
        ),
    ],
)
def test_check_names_the_variable_or_url(spec, env, error, message, monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    for name, value in env.items():
        monkeypatch.setenv(name, url if value == "unreachable" else value)
    provider = get_provider(spec)
    with pytest.raises(error, match=message) as caught:
        provider.check(timeout_s=2.0)
    assert "\n" not in str(caught.value)
    if "unreachable" in env.values():
        assert url in str(caught.value)


def test_check_reports_a_refused_key() -> None:
    with OpenAIServer(lambda body: call("submit")) as server:
        provider = get_provider("openai/m", base_url=server.url, api_key="wrong")
        with pytest.raises(UsageError, match="OPENAI_API_KEY was refused"):
            provider.check()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "must be PROVIDER/MODEL"),
        ("openai/", "must be PROVIDER/MODEL"),
        ("mistral/large", "valid providers: openai, anthropic"),
    ],
)
def test_bad_model_specs(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        get_provider(spec)


# --- anthropic -----------------------------------------------------------------------------


def _anthropic(server: AnthropicServer) -> AnthropicProvider:
    provider = get_provider(
        "anthropic/scripted", retry=RetryPolicy(max_retries=2, base_s=0.0), base_url=server.url, api_key=KEY
    )
    assert isinstance(provider, AnthropicProvider)
    provider.sleep = lambda _s: None
    return provider


def test_anthropic_request_and_reply_mapping() -> None:
    turns = iter(
        [Turn(status=529), Turn(text="reading", calls=[("read_file", {"path": "a"}), ("read_file", {"path": "b"})])]
    )
    with AnthropicServer(lambda body: next(turns)) as server:
        provider = _anthropic(server)
        provider.check()
        reply = provider.complete(CONVERSATION, TOOLS, max_output_tokens=8000, effort="high")
        a, b = reply.tool_calls
        history = [
            *CONVERSATION,
            Message("assistant", reply.text, reply.tool_calls, native=reply.native),
            Message("tool", "text of a", tool_call_id=a.id),
            Message("tool", "text of b", tool_call_id=b.id),
        ]
        turns = iter([call("submit")])
        provider.complete(history, TOOLS, max_output_tokens=8000)
    assert reply.retries == 1 and reply.text == "reading"
    assert (a.name, a.arguments) == ("read_file", {"path": "a"})
    first, second = server.requests[1], server.requests[2]
    assert first["system"] == "be brief" and first["max_tokens"] == 8000
    assert first["tools"][0]["input_schema"]["properties"] == {"path": {"type": "string"}}
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 8000 - 1024}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert [blk["type"] for blk in second["messages"][1]["content"]] == ["text", "tool_use", "tool_use"]
    results = second["messages"][2]["content"]
    assert [(r["type"], r["tool_use_id"], r["content"]) for r in results] == [
        ("tool_result", a.id, "text of a"),
        ("tool_result", b.id, "text of b"),
    ]


def test_anthropic_refused_key_and_client_error() -> None:
    with AnthropicServer(lambda body: Turn(status=400)) as server:
        with pytest.raises(UsageError, match="ANTHROPIC_API_KEY was refused"):
            get_provider("anthropic/m", base_url=server.url, api_key="wrong").check()
        with pytest.raises(InfrastructureError, match="HTTP 400"):
            _anthropic(server).complete(CONVERSATION, TOOLS, max_output_tokens=10)


def test_openai_echoes_a_malformed_call_as_valid_json() -> None:
    turns = iter([Turn(calls=[("read_file", "{oops")]), call("submit")])
    with OpenAIServer(lambda body: next(turns)) as server:
        provider = _openai(server)
        first = provider.complete(CONVERSATION, TOOLS, max_output_tokens=10)
        [bad] = first.tool_calls
        history = [
            *CONVERSATION,
            Message("assistant", "", first.tool_calls),
            Message("tool", "error", tool_call_id=bad.id),
        ]
        provider.complete(history, TOOLS, max_output_tokens=10)
    echoed = server.requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(echoed) == {"unparsed_arguments": "{oops"}


def test_openai_arguments_sent_as_an_object_are_accepted() -> None:
    class Lenient(OpenAIServer):
        def reply(self, body, turn):
            out = super().reply(body, turn)
            out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"path": "x"}
            return out

    with Lenient(lambda body: call("read_file", {"path": "x"})) as server:
        reply = _openai(server).complete(CONVERSATION, TOOLS, max_output_tokens=10)
    assert reply.tool_calls[0].arguments == {"path": "x"}
