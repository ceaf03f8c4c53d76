"""AgentDojo's environments as data: suites, snapshots, a frozen clock and call replay.

Everything that touches the ``agentdojo`` package directly lives here. Calls are replayed with
AgentDojo's own ``FunctionsRuntime`` on a deep copy of the task's pre-environment (the suite's
default environment with the injection vectors at their default texts, after the user task's
``init_environment``); no model is involved.

The clock. Three tools read the wall clock: ``send_email`` stamps the new e-mail with
``datetime.now()``, ``create_file`` and ``append_to_file`` stamp the file's ``last_modified``.
Instead of patching ``datetime`` (a module-level stub), every replayed call is followed by
``_pin_clock``, which overwrites exactly those stamps, on objects the call created or touched,
with ``FROZEN_NOW``. FROZEN_NOW lies after every timestamp in the suites' data (the latest is
2024-10-07), so checks such as "the file was modified after it was last modified" still hold.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import functools
import hashlib
import importlib.metadata
import io
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

from vouch.errors import UsageError

try:
    from agentdojo.agent_pipeline.ground_truth_pipeline import (
        GroundTruthPipeline,
    )
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suites
    from agentdojo.task_suite.task_suite import (
        functions_stack_trace_from_messages,
    )
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise UsageError(
        f"the AgentDojo source needs the agentdojo package ({exc}): pip install 'vouch[agentdojo]' "
        "(or pip install agentdojo==0.1.35)"
    ) from exc

AGENTDOJO_PIN = "0.1.35"
SUITE_VERSIONS = ("v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2")
"""The benchmark versions agentdojo 0.1.35 registers."""
DEFAULT_SUITE_VERSION = "v1.2.2"
SUITES = ("banking", "slack", "travel", "workspace")
FROZEN_NOW = datetime.datetime(2025, 1, 1, 12, 0, 0)

_ANY = TypeAdapter(Any)


def agentdojo_version() -> str:
    return importlib.metadata.version("agentdojo")


def check_suite_version(version: str) -> None:
    if version not in SUITE_VERSIONS:
        raise UsageError(
            f"unknown AgentDojo suite version suite_version={version!r}; valid: {', '.join(SUITE_VERSIONS)}"
        )


@functools.cache
def load_suite(suite: str, version: str) -> Any:
    """AgentDojo's ``TaskSuite`` for ``suite`` at benchmark ``version`` (e.g. ``"v1.2.2"``)."""
    check_suite_version(version)
    suites = get_suites(version)
    if suite not in suites:
        raise UsageError(f"unknown AgentDojo suite {suite!r}; valid: {', '.join(sorted(suites))}")
    return suites[suite]


@functools.cache
def _default_environment(suite: str, version: str) -> Any:
    return load_suite(suite, version).load_and_inject_default_environment({})


@functools.cache
def _pre_environment(suite: str, version: str, user_task: str) -> Any:
    task = user_task_of(suite, version, user_task)
    return task.init_environment(_default_environment(suite, version).model_copy(deep=True))


def user_task_of(suite: str, version: str, user_task: str) -> Any:
    tasks = load_suite(suite, version).user_tasks
    if user_task not in tasks:
        raise UsageError(f"unknown user task {user_task!r} of AgentDojo {suite} {version}")
    return tasks[user_task]


@functools.cache
def _pre_copier(suite: str, version: str, user_task: str) -> Callable[[], Any]:
    return copier(_pre_environment(suite, version, user_task))


def pre_environment(suite: str, version: str, user_task: str) -> Any:
    """A fresh copy of the environment the user task starts from."""
    return _pre_copier(suite, version, user_task)()


def copier(env: BaseModel) -> Callable[[], Any]:
    """Fresh deep copies of ``env`` on demand, each as ``model_copy(deep=True)`` would make it.

    The environment is pickled once; each copy is one unpickling, which takes a fifth of a deep
    copy's time on a workspace environment. The reference verifiers give each of a suite's
    checks (up to 15) its own copies of the states, so this is most of a decision's time.
    """
    blob = pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)
    return functools.partial(pickle.loads, blob)


def snapshot(env: BaseModel) -> dict[str, Any]:
    """The environment as JSON data (``model_dump(mode="json")``)."""
    return env.model_dump(mode="json")


def restore_environment(suite: Any, data: dict[str, Any]) -> Any:
    """Rebuild a suite's environment object (``suite`` is a ``load_suite`` result) from ``snapshot(env)``.

    ``model_validate`` alone is not enough: AgentDojo's inbox, calendar and drive rebuild their
    dictionaries from the *initial* lists in validators, which would drop every e-mail, event
    or file the calls created. So every field the snapshot holds is put back afterwards.
    """
    env = suite.environment_type.model_validate(data)
    _put_back(env, data)
    return env


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    # Building a TypeAdapter compiles a validator: once per field type, not once per restore.
    return TypeAdapter(annotation)


def _put_back(obj: BaseModel, data: dict[str, Any]) -> None:
    for name, field in type(obj).model_fields.items():
        if name not in data:
            continue
        current = getattr(obj, name)
        if isinstance(current, BaseModel) and isinstance(data[name], dict):
            _put_back(current, data[name])
            continue
        value = _adapter(field.annotation or Any).validate_python(data[name])  # type: ignore[arg-type]
        if value != current:
            setattr(obj, name, value)


# --- the clock --------------------------------------------------------------------------------


def _clock_marks(env: BaseModel) -> dict[str, Any]:
    marks: dict[str, Any] = {}
    for name in type(env).model_fields:
        part = getattr(env, name)
        if hasattr(part, "emails") and hasattr(part, "account_email"):
            marks[name] = set(part.emails)
        elif hasattr(part, "files") and hasattr(part, "account_email"):
            marks[name] = {fid: f.last_modified for fid, f in part.files.items()}
    return marks


def _pin_clock(env: BaseModel, before: dict[str, Any]) -> None:
    for name, seen in before.items():
        part = getattr(env, name)
        if isinstance(seen, set):
            for eid, email in part.emails.items():
                if eid not in seen:
                    email.timestamp = FROZEN_NOW
        else:
            for fid, file in part.files.items():
                if fid not in seen or file.last_modified != seen[fid]:
                    file.last_modified = FROZEN_NOW


# --- replay ---------------------------------------------------------------------------------


def run_calls(suite: Any, env: BaseModel, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``calls`` on ``env`` in order (mutating it); one result dict per call."""
    runtime = FunctionsRuntime(suite.tools)
    results: list[dict[str, Any]] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        args = call.get("args", {}) if isinstance(call, dict) else None
        if not isinstance(function, str) or not isinstance(args, dict):
            results.append({"function": str(function), "ok": False, "value": None, "error": "malformed call"})
            continue
        before = _clock_marks(env)
        value, error = runtime.run_function(env, function, args)
        _pin_clock(env, before)
        results.append(
            {
                "function": function,
                "ok": error is None,
                "value": None if error is not None else _ANY.dump_python(value, mode="json"),
                "error": error,
            }
        )
    return results


def replay(calls: list[dict[str, Any]], *, suite: str, version: str, user_task: str) -> dict[str, Any]:
    """Replay ``calls`` on a fresh copy of the user task's pre-environment (the state tasks' harness entry).

    A call that fails (unknown tool, invalid arguments, an error raised by the tool) is reported
    in its result and the calls after it still run, as in an agent loop. No model is involved.

    Args:
        calls: ``[{"function": name, "args": {...}}, ...]`` in the order they were made.
        suite: banking, slack, travel or workspace.
        version: The AgentDojo benchmark version, e.g. ``"v1.2.2"``.
        user_task: The user task whose pre-environment to start from, e.g. ``"user_task_3"``.

    Returns:
        ``{"pre_state", "post_state", "results"}``: JSON snapshots of the environment before and
        after the calls, and per call ``{"function", "ok", "value", "error"}`` (``value`` is the
        tool's return value as JSON data).

    Raises:
        UsageError: An unknown suite, version or user task.
    """
    env = pre_environment(suite, version, user_task)
    pre_state = snapshot(env)
    results = run_calls(load_suite(suite, version), env, list(calls))
    return {"pre_state": pre_state, "post_state": snapshot(env), "results": results}


def replay_environments(calls: list[dict[str, Any]], *, suite: str, version: str, user_task: str) -> tuple[Any, Any]:
    """``replay`` without the snapshots: the pre- and post-environment objects themselves.

    The reference verifiers use it: rebuilding the objects from JSON snapshots re-validates every
    e-mail address of a workspace (most of a decision's time); replaying the calls again on the
    (cached) pre-environment gives the same objects, as the replay is deterministic.
    """
    pre = pre_environment(suite, version, user_task)
    post = pre_environment(suite, version, user_task)
    run_calls(load_suite(suite, version), post, list(calls))
    return pre, post


def tool_schemas(suite: Any) -> list[dict[str, Any]]:
    """The suite's tools as public schemas: name, description, parameters (JSON Schema)."""
    return [
        {"name": f.name, "description": f.description, "parameters": f.parameters.model_json_schema()}
        for f in suite.tools
    ]


def function_calls(calls: list[dict[str, Any]]) -> list[Any]:
    """Candidate calls as AgentDojo ``FunctionCall`` traces."""
    return [FunctionCall(function=str(c["function"]), args=dict(c.get("args") or {})) for c in calls]


def ground_truth_calls(suite: str, version: str, user_task: str) -> list[dict[str, Any]]:
    """The user task's ground-truth calls, as AgentDojo's GroundTruthPipeline makes them."""
    task = user_task_of(suite, version, user_task)
    runtime = FunctionsRuntime(load_suite(suite, version).tools)
    env = pre_environment(suite, version, user_task)
    before = _clock_marks(env)
    _, _, _, messages, _ = GroundTruthPipeline(task).query(task.PROMPT, runtime, env)
    _pin_clock(env, before)
    return [
        {"function": str(c.function), "args": _ANY.dump_python(dict(c.args), mode="json")}
        for c in functions_stack_trace_from_messages(messages)
    ]


def injection_calls(suite: str, version: str, user_task: str) -> dict[str, list[dict[str, Any]]]:
    """Each injection task's ground-truth calls on the user task's pre-environment (empty ones left out)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for inj_id, inj in sorted(load_suite(suite, version).injection_tasks.items(), key=lambda kv: _task_number(kv[0])):
        calls = inj.ground_truth(pre_environment(suite, version, user_task))
        if calls:
            out[inj_id] = [
                {"function": str(c.function), "args": _ANY.dump_python(dict(c.args), mode="json")} for c in calls
            ]
    return out


def _task_number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[-1])


def user_task_ids(suite: str, version: str) -> list[str]:
    return sorted(load_suite(suite, version).user_tasks, key=_task_number)


@dataclass(frozen=True)
class Checks:
    """What AgentDojo's own checks say about one candidate (used only to check constructions)."""

    utility: bool
    violated: tuple[str, ...]


def agentdojo_checks(
    suite: str, version: str, user_task: str, calls: list[dict[str, Any]], answer: str | None
) -> Checks:
    """Run the user task's utility and every injection task's security on a replay of ``calls``."""
    suite_obj = load_suite(suite, version)
    task = user_task_of(suite, version, user_task)
    post = pre_environment(suite, version, user_task)
    run_calls(suite_obj, post, calls)
    pre, post_copy = _pre_copier(suite, version, user_task), copier(post)
    traces = function_calls(calls)
    output = answer or ""

    def utility() -> bool:
        a, b = pre(), post_copy()
        result = task.utility_from_traces(output, a, b, traces)
        if result is None:
            result = task.utility(output, a, b)
        return bool(result)

    def reached(inj: Any) -> bool:
        a, b = pre(), post_copy()
        result = inj.security_from_traces(output, a, b, traces)
        if result is None:
            result = inj.security(output, a, b)
        return bool(result)

    # Some of AgentDojo's checks print; a build's stdout may be a JSON report.
    with contextlib.redirect_stdout(io.StringIO()):
        violated = tuple(
            i for i, inj in sorted(suite_obj.injection_tasks.items()) if _safe(lambda inj=inj: reached(inj))
        )
        return Checks(utility=_safe(utility), violated=violated)


def _safe(check: Any) -> bool:
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - a check that cannot read a state does not hold on it
        return False


def warm(version: str = DEFAULT_SUITE_VERSION) -> None:
    """Fill the caches a run would otherwise fill each time: suites, their default and per-task
    pre-environments, and the validators restoring a snapshot builds. Called once in the
    engine's zygote (``preload=["vouch.sources.agentdojo._world:warm"]``), whose runs inherit them.
    It also makes the suites' DeepDiff partials remember their results (``remember_diffs``)."""
    for suite_name in SUITES:
        suite = load_suite(suite_name, version)
        for user_task in suite.user_tasks:
            _pre_copier(suite_name, version, user_task)
        restore_environment(suite, snapshot(_default_environment(suite_name, version)))
    remember_diffs()


class RememberedDiff:
    """One of AgentDojo's DeepDiff partials (``WorkspaceDeepDiff``, ``TravelDeepDiff``: a diff
    of two whole environments, 50-350 ms each), remembering its last results by the content of
    what it compares (their pickles). Each call returns its own deep copy of the result, so a
    check that changes a diff changes nothing another check sees.

    V4V's C6 decides a case with every live mutant of a task in one run, and each mutant's
    check diffs the same two states: the first diffs them, the others copy that diff (a few ms).
    The diff is a function of the two objects' content, so the decisions are the same."""

    KEEP = 8

    def __init__(self, diff: Callable[..., Any]) -> None:
        self.diff = diff
        self._seen: dict[bytes, Any] = {}
        self.computed = 0

    def __call__(self, t1: Any, t2: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            key = hashlib.sha256(pickle.dumps((t1, t2, args, sorted(kwargs.items())), protocol=5)).digest()
        except Exception:  # noqa: BLE001 - what cannot be pickled is diffed each time
            return self.diff(t1, t2, *args, **kwargs)
        found = self._seen.get(key)
        if found is None:
            found = self.diff(t1, t2, *args, **kwargs)
            self.computed += 1
            if len(self._seen) >= self.KEEP:
                self._seen.pop(next(iter(self._seen)))
            self._seen[key] = found
        return copy.deepcopy(found)


_DIFFS = ("WorkspaceDeepDiff", "TravelDeepDiff")


def remember_diffs() -> None:
    """Put ``RememberedDiff`` in place of the suites' DeepDiff partials, in the module that
    defines each and in every loaded module that imported it (modules imported later import
    the remembering one)."""
    import sys

    originals: dict[int, RememberedDiff] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("agentdojo.default_suites") or module is None:
            continue
        for attr in _DIFFS:
            value = getattr(module, attr, None)
            if isinstance(value, functools.partial):
                remembered = originals.setdefault(id(value), RememberedDiff(value))
                setattr(module, attr, remembered)
