"""Loopback model servers for the agent tests: stdlib HTTP on 127.0.0.1, replaying scripted turns.

``OpenAIServer`` speaks the chat-completions protocol (tool calls included) and ``GET
/v1/models``; ``AnthropicServer`` speaks the Messages API. The real SDKs talk to them.

A script is ``script(request_body) -> Turn``: the scripted model sees the whole request, as a
real one would, and picks its reply (usually by the task named in the first user message and
the number of assistant turns so far).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "test-key"


@dataclass
class Turn:
    """One scripted reply: text and tool calls, or an HTTP error status."""

    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    """(tool name, arguments): a dict is sent as JSON, a str is sent verbatim (malformed on purpose)."""
    status: int = 200
    input_tokens: int = 100
    output_tokens: int = 20


def call(name: str, arguments: Any = None) -> Turn:
    return Turn(calls=[(name, {} if arguments is None else arguments)])


def task_of(body: dict[str, Any]) -> str:
    """The task id named in the first user message."""
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if message.get("role") == "user" and isinstance(content, str):
            found = re.match(r"Task (\S+) \(kind", content)
            if found:
                return found.group(1)
    return "?"


def audit_call(body: dict[str, Any]) -> str:
    """Which call of the audit's model a request is: ``rejudge``, ``checklist`` or a ``witness`` session."""
    system = str(body["messages"][0].get("content") or "")
    if system.startswith("You review"):
        return "rejudge"
    return "checklist" if system.startswith("You decompose") else "witness"


def first_user(body: dict[str, Any]) -> str:
    """The first user message's text."""
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def turn_index(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


class _Server:
    kind = "?"

    def __init__(self, script: Callable[[dict[str, Any]], Turn]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                token = self.headers.get("Authorization", "").removeprefix("Bearer ") or self.headers.get("x-api-key")
                if token != KEY:
                    self._send(401, {"error": {"message": "bad key", "type": "authentication_error"}})
                    return False
                return True

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, server.models())
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append(body)
                turn = server.script(body)
                if turn.status != 200:
                    self._send(turn.status, {"error": {"message": f"scripted {turn.status}", "type": "error"}})
                    return
                self._send(200, server.reply(body, turn))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def models(self) -> dict[str, Any]:
        raise NotImplementedError

    def reply(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        raise NotImplementedError

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class OpenAIServer(_Server):
    kind = "openai"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "test"}]}

    def reply(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        n = turn_index(body)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
                for i, (name, args) in enumerate(turn.calls)
            ]
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if turn.calls else "stop"}],
            "usage": {
                "prompt_tokens": turn.input_tokens,
                "completion_tokens": turn.output_tokens,
                "total_tokens": turn.input_tokens + turn.output_tokens,
            },
        }


class AnthropicServer(_Server):
    kind = "anthropic"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def models(self) -> dict[str, Any]:
        entry = {"id": "scripted", "type": "model", "display_name": "scripted", "created_at": "2025-01-01T00:00:00Z"}
        return {"data": [entry], "has_more": False, "first_id": "scripted", "last_id": "scripted"}

    def reply(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        n = turn_index(body)
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for i, (name, args) in enumerate(turn.calls):
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args})
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": content,
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens},
        }
