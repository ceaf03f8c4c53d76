"""The run side of a decision: load a verifier, give it its ``env``, report what it returned.

Runs inside a sandbox as ``Call("vouch.bench._runenv:decide", ...)``. The verifier file is
``verifier.py`` in the run's working directory. Everything the env executes (the candidate for
a code task, a replay for a state task) is a request over the service channel, answered by
the caller with a separate sandboxed run: the verifier never shares a process with what it
judges.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from vouch.exec._harness import load_module_file
from vouch.exec._service import request

VERIFIER_FILE = "verifier.py"


class NoVerifyFunction(Exception):
    """The verifier file defines no callable ``verify``."""


class ReplayFailed(Exception):
    """The harness could not replay the candidate's calls to build the states."""


def _replay(spec: dict[str, Any], candidate: Any) -> dict[str, Any]:
    """State tasks: replay the candidate's calls on the pre-state with the task's replay entry.

    Harness code running the benchmark's own tool functions on the candidate's calls (data, not
    code). It runs when the verifier first reads ``env.pre_state`` or ``env.post_state``: a
    verifier that never reads them (one that replays by itself) does not pay for the snapshots.
    """
    try:
        module_name, _, function = spec["entry"].partition(":")
        replay = getattr(importlib.import_module(module_name), function)
        calls = candidate.get("calls", []) if isinstance(candidate, dict) else []
        states: dict[str, Any] = replay(calls, **spec.get("kwargs", {}))
    except Exception as exc:  # noqa: BLE001 - any failure here is the harness's, reported as such
        raise ReplayFailed(f"{type(exc).__name__}: {exc}") from None
    return states


class ToolCallRunEnv:
    """``env`` of a tool_call task."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools


class StateRunEnv(ToolCallRunEnv):
    """``env`` of a state task; ``run_public`` replays calls in a separate run.

    The states come from ``pre_state``/``post_state`` when given, else from the task's replay
    entry run here (``replay``: trusted verifiers in a pool that has the benchmark), else from
    the caller over the service channel (sealed runs).
    """

    def __init__(
        self,
        tools: list[dict[str, Any]],
        pre_state: dict[str, Any] | None = None,
        post_state: dict[str, Any] | None = None,
        *,
        replay: dict[str, Any] | None = None,
        candidate: Any = None,
    ) -> None:
        super().__init__(tools)
        given = pre_state is not None or post_state is not None
        self._states = {"pre_state": pre_state or {}, "post_state": post_state or {}} if given else None
        self._replay_spec = replay
        self._candidate = candidate

    def _state(self, key: str) -> dict[str, Any]:
        if self._states is None:
            if self._replay_spec is not None:
                self._states = _replay(self._replay_spec, self._candidate)
            else:
                # A sealed run cannot import the benchmark: the caller replays and sends the states.
                try:
                    self._states = request({"op": "states"})
                except Exception as exc:  # noqa: BLE001 - the caller's replay failed; say so as the in-run path does
                    raise ReplayFailed(f"{type(exc).__name__}: {exc}") from None
        value: dict[str, Any] = self._states.get(key, {})
        return value

    @property
    def pre_state(self) -> dict[str, Any]:
        return self._state("pre_state")

    @property
    def post_state(self) -> dict[str, Any]:
        return self._state("post_state")

    def run_public(self, calls: list[dict[str, Any]]) -> dict[str, Any]:
        answer: dict[str, Any] = request({"op": "run_public", "calls": calls})
        return answer

    def reset(self) -> dict[str, Any]:
        """The pre-state again (each run_public starts from a fresh copy anyway)."""
        return self.pre_state


class CodeRunEnv:
    """``env`` of a code task; ``call`` and ``run_public`` run the candidate in separate runs."""

    def __init__(self, entry_point: str | None) -> None:
        self.entry_point = entry_point

    def call(self, function: str, args: list[Any], timeout: float = 3.0) -> dict[str, Any]:
        answer: dict[str, Any] = request({"op": "call", "function": function, "args": list(args), "timeout": timeout})
        return answer

    def run_public(self, tests: list[str] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = request({"op": "run_public", "tests": tests})
        return answer


def make_env(kind: str, env_data: dict[str, Any], candidate: Any = None) -> Any:
    if kind == "code":
        return CodeRunEnv(env_data.get("entry_point"))
    tools = env_data.get("tools", [])
    if kind == "state":
        return StateRunEnv(
            tools,
            env_data.get("pre_state"),
            env_data.get("post_state"),
            replay=env_data.get("replay"),
            candidate=candidate,
        )
    return ToolCallRunEnv(tools)


def decide(kind: str, candidate: Any, env_data: dict[str, Any]) -> dict[str, Any]:
    """Import ``verifier.py``, call ``verify(candidate, env)``, describe what it returned."""
    env = make_env(kind, env_data, candidate)
    module = load_module_file(VERIFIER_FILE, "verifier")
    verify = getattr(module, "verify", None)
    if not callable(verify):
        raise NoVerifyFunction(f"{VERIFIER_FILE} defines no callable verify(candidate, env)")
    result = verify(candidate, env)
    if type(result) is bool:
        return {"bool": result}
    return {"bool": None, "type": type(result).__name__, "repr": repr(result)[:200]}
