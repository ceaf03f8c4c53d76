"""AgentDojo's injection tasks run as tasks of their own: their environment, replay and check.

AgentDojo runs an injection task as a user task (``benchmark.run_task_without_injection_tasks``,
which reports whether a model can reach the attacker's goal at all) on the suite's default
environment, with the injection vectors at their default texts and no user task's
``init_environment``: ``TaskSuite.run_task_with_pipeline`` gives the injection task's GOAL as
the prompt and judges with the task's ``security_from_traces`` (where implemented) or
``security``. This module does the same, with ``agentdojo._world``'s replay and frozen clock.
A leaf: ``agentdojo._source`` re-exports the replay entry, so that state tasks of both subsets run in
one pool.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import textwrap
from typing import Any

from vouch.errors import UsageError
from vouch.sources.agentdojo._world import (
    _ANY,
    _default_environment,
    _safe,
    _task_number,
    function_calls,
    load_suite,
    run_calls,
    snapshot,
)


def injection_task_ids(suite: str, version: str) -> list[str]:
    return sorted(load_suite(suite, version).injection_tasks, key=_task_number)


def injection_task_of(suite: str, version: str, injection_task: str) -> Any:
    tasks = load_suite(suite, version).injection_tasks
    if injection_task not in tasks:
        raise UsageError(f"unknown injection task {injection_task!r} of AgentDojo {suite} {version}")
    return tasks[injection_task]


def injection_pre_environment(suite: str, version: str, injection_task: str) -> Any:
    """A fresh copy of the environment an injection task starts from: the suite's default one."""
    injection_task_of(suite, version, injection_task)
    return _default_environment(suite, version).model_copy(deep=True)


def replay_injection(calls: list[dict[str, Any]], *, suite: str, version: str, injection_task: str) -> dict[str, Any]:
    """``replay`` (the state tasks' harness entry) for an injection task's environment.

    Returns:
        ``{"pre_state", "post_state", "results"}``, as ``vouch.sources.agentdojo._source.replay``.

    Raises:
        UsageError: An unknown suite, version or injection task.
    """
    env = injection_pre_environment(suite, version, injection_task)
    pre_state = snapshot(env)
    results = run_calls(load_suite(suite, version), env, list(calls))
    return {"pre_state": pre_state, "post_state": snapshot(env), "results": results}


def injection_environments(
    calls: list[dict[str, Any]], *, suite: str, version: str, injection_task: str
) -> tuple[Any, Any]:
    """The pre- and post-environment objects of ``calls`` (the reference verifiers' replay)."""
    pre = injection_pre_environment(suite, version, injection_task)
    post = pre.model_copy(deep=True)
    run_calls(load_suite(suite, version), post, list(calls))
    return pre, post


def injection_ground_truth(suite: str, version: str, injection_task: str) -> list[dict[str, Any]]:
    """The injection task's ground-truth calls on its own environment, as JSON data."""
    task = injection_task_of(suite, version, injection_task)
    calls = task.ground_truth(injection_pre_environment(suite, version, injection_task))
    return [{"function": str(c.function), "args": _ANY.dump_python(dict(c.args), mode="json")} for c in calls]


def own_security(suite: str, version: str, injection_task: str) -> tuple[str, str]:
    """The name and source text of the injection task's own check in the pinned package:
    ``security_from_traces`` where the task's class implements it, else ``security``."""
    from agentdojo.base_tasks import BaseInjectionTask

    task = injection_task_of(suite, version, injection_task)
    own = type(task).security_from_traces is not BaseInjectionTask.security_from_traces
    name = "security_from_traces" if own else "security"
    return name, textwrap.dedent(inspect.getsource(getattr(type(task), name)))


def goal_reached(
    suite: str, version: str, injection_task: str, calls: list[dict[str, Any]], answer: str | None
) -> bool:
    """What the injection task's own check says of ``calls`` and ``answer`` (used to check constructions)."""
    task = injection_task_of(suite, version, injection_task)
    pre, post = injection_environments(calls, suite=suite, version=version, injection_task=injection_task)
    output = answer or ""

    def reached() -> bool:
        a, b = pre.model_copy(deep=True), post.model_copy(deep=True)
        result = task.security_from_traces(output, a, b, function_calls(calls))
        return bool(task.security(output, a, b) if result is None else result)

    # Some of AgentDojo's checks print; a build's stdout may be a JSON report.
    with contextlib.redirect_stdout(io.StringIO()):
        return _safe(reached)
