"""The verifier contract: what a verifier is given and must return (DESIGN, "Verifier contract").

A verifier is a Python file defining ``verify(candidate, env) -> bool``. Only a real ``bool``
decides (``type(result) is bool``); an exception, a timeout, an exit before returning or any
other value is INVALID. ``candidate`` is JSON data in its kind's schema (see ``_task``):

* ``tool_call``: ``{"calls": [{"function": str, "args": {...}}, ...], "final_answer": str | None}``
* ``state``: the same payload;
* ``code``: ``{"source": str}`` (function level) or ``{"patch": str}`` (repository level).

``env`` is one of the protocols below, by kind. Every method that executes something does so in
a separate sandboxed run and returns its outcome as data: judged code never runs in the
verifier's process.
"""

from __future__ import annotations

from typing import Any, Protocol


class ToolCallEnv(Protocol):
    """``env`` of a ``tool_call`` task."""

    tools: list[dict[str, Any]]
    """The public tool schemas (name, description, parameters as JSON Schema)."""


class StateEnv(ToolCallEnv, Protocol):
    """``env`` of a ``state`` task: the environment before and after the candidate's calls."""

    pre_state: dict[str, Any]
    """JSON snapshot of the environment before the calls."""
    post_state: dict[str, Any]
    """JSON snapshot after the harness replayed the candidate's calls on the pre-state."""

    def run_public(self, calls: list[dict[str, Any]]) -> dict[str, Any]:
        """Replay other calls on a fresh copy of the pre-state.

        Returns ``{"post_state": {...}, "results": [{"function", "ok", "value", "error"}, ...]}``.
        """
        ...


class CodeEnv(Protocol):
    """``env`` of a ``code`` task."""

    entry_point: str
    """The function the candidate must define (function-level tasks)."""

    def call(self, function: str, args: list[Any], timeout: float = 3.0) -> dict[str, Any]:
        """Run ``function(*args)`` of the candidate in a separate sandbox.

        Returns ``{"ok": bool, "value": JSON data or None, "error": str | None}``.
        """
        ...

    def run_public(self, tests: list[str] | None = None) -> dict[str, Any]:
        """Run the task's public tests (or the named ones) with the candidate in place.

        Returns ``{"ok": bool, "outcomes": {test id: "passed" | "failed" | "error"}}``.
        """
        ...


class Verifier(Protocol):
    """A verifier's ``verify`` function."""

    def __call__(self, candidate: dict[str, Any], env: Any) -> bool: ...
