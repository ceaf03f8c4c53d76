"""AgentDojo's injection tasks as a subset of their own (``vouch data build agentdojo --subset injection``).

VerifierBench counts AgentDojo as two subsets: user tasks and injection tasks. Here each
injection task of the workspace, travel, banking and slack suites becomes a ``state`` and a
``tool_call`` task, as a user task does (``agentdojo._source``): the instruction is the injection
task's GOAL, the environment the suite's default one (as AgentDojo runs an injection task as a
user task, ``agentdojo._injection_world``), and the reference verifier the task's own check
(``security_from_traces`` where implemented, else ``security``), embedded as ``CHECK`` for V4V's
mutations. Cases come from the injection task's ground truth (``agentdojo._injection_cases``).

An injection task whose ground truth does not reach its own goal by its own check is skipped and
recorded as ``upstream/agentdojo-<suite>-<injection task>`` in the manifest's ``source_versions``;
one short of the per-task minima as ``skipped/<task id>``. Task ids are
``agentdojo-<suite>-injection_task_<N>-state`` and ``-toolcall``; ``source.subset`` is
``injection:<suite>/<version>``.
"""

from __future__ import annotations

import functools
import random
import re
import textwrap
from collections.abc import Mapping
from typing import Any

from vouch.sources._drafts import shortfall, to_cases
from vouch.sources.agentdojo._drafts import TaskContext
from vouch.sources.agentdojo._gold import CONFIRMATION
from vouch.sources.agentdojo._injection_cases import build_injection_drafts
from vouch.sources.agentdojo._injection_world import (
    goal_reached,
    injection_ground_truth,
    injection_task_ids,
    injection_task_of,
    own_security,
)
from vouch.sources.agentdojo._source import (
    CHECK_HELPERS,
    BuildOutput,
    Origin,
    _options,
    _task_id,
    pick_tasks,
    suite_environment,
    task_files,
)

__all__ = ["REPLAY_ENTRY", "build_injection", "injection_verifier_source"]

REPLAY_ENTRY = "vouch.sources.agentdojo._source:replay_injection"
"""Re-exported by ``agentdojo._source``, so that a pool deciding both subsets' state tasks is one pool."""


def build_injection(*, seed: int, options: Mapping[str, Any]) -> BuildOutput:
    """Build the injection subset: a state and a tool-call task per injection task, with their cases.

    Args:
        seed: Seeds every random choice (per task, as for user tasks).
        options: ``suite_version``, ``suites``, ``limit`` (as for user tasks) and ``injection_tasks``
            (``"suite/injection_task_N"`` entries to build).

    Returns:
        The tasks (suite, then task number; state before tool_call), the skipped ones with the
        reason, and the same as ``skipped/`` and ``upstream/`` entries for the manifest.

    Raises:
        UsageError: An unknown option, suite, suite version or injection task.
    """
    opts = _options({k: v for k, v in options.items() if k != "injection_tasks"})
    version = opts.suite_version
    picked = pick_tasks(options, "injection_tasks", injection_task_ids, version, opts.suites)
    out = BuildOutput([], [], {})
    for suite in opts.suites:
        tools, environment = suite_environment(suite, version)
        truths = {i: injection_ground_truth(suite, version, i) for i in injection_task_ids(suite, version)}
        for injection_task in truths:
            if picked is not None and f"{suite}/{injection_task}" not in picked:
                continue
            ids = [_task_id(suite, injection_task, kind) for kind in ("state", "tool_call")]
            ctx = _context(suite, version, injection_task, tools, truths)
            if not goal_reached(suite, version, injection_task, ctx.gold_calls, ctx.gold_answer):
                reason = (
                    f"{version} {injection_task}'s ground truth ({len(ctx.gold_calls)} calls) does not reach "
                    "its goal by its own security check"
                )
                out.inputs[f"upstream/agentdojo-{suite}-{injection_task}"] = reason
                out.skipped.extend((task_id, reason) for task_id in ids)
                continue
            drafts = build_injection_drafts(ctx, random.Random(f"{seed}:{suite}:{injection_task}"))
            short = shortfall(drafts)
            if short is not None:
                out.inputs.update({f"skipped/{task_id}": short for task_id in ids})
                out.skipped.extend((task_id, short) for task_id in ids)
                continue
            origin = Origin(
                task=injection_task,
                subset=f"injection:{suite}/{version}",
                replay=REPLAY_ENTRY,
                replay_args={"suite": suite, "version": version, "injection_task": injection_task},
                check_name=own_security(suite, version, injection_task)[0],
                verifier=functools.partial(injection_verifier_source, suite, version, injection_task),
            )
            cases = to_cases(drafts)
            out.tasks.extend(task_files(ctx, origin, kind, cases, environment) for kind in ("state", "tool_call"))
    return out


def _context(
    suite: str, version: str, injection_task: str, tools: list[dict[str, Any]], truths: dict[str, list[dict[str, Any]]]
) -> TaskContext:
    """The constructions' view of an injection task (``user_task`` holds the injection task's id);
    ``truths`` holds every injection task's ground truth (the others' are its attacks)."""
    task = injection_task_of(suite, version, injection_task)
    source_answer = str(task.GROUND_TRUTH_OUTPUT).strip()
    from_source = re.search(r"\w", source_answer) is not None
    return TaskContext(
        suite=suite,
        version=version,
        user_task=injection_task,
        prompt=textwrap.dedent(str(task.GOAL)).strip(),
        gold_calls=[dict(c) for c in truths[injection_task]],
        gold_answer=source_answer if from_source else CONFIRMATION,
        answer_required=from_source,
        answer_from_source=from_source,
        injections={i: calls for i, calls in truths.items() if calls and i != injection_task},
        tools={t["name"]: t["parameters"] for t in tools},
    )


_VERIFIER = '''"""Reference verifier: AgentDojo @SUITE@ @INJECTION_TASK@ (benchmark @VERSION@), own task, @KIND@.

PASS iff the injection task's own check (security_from_traces where the task implements it,
else security) reports its goal reached on the environment before and after the candidate's
calls. The environment is the suite's default one, as AgentDojo runs an injection task as a
user task. @STATES_DOC@
"""

from __future__ import annotations

import sys
import types
from typing import Any

from vouch.sources.agentdojo._source import function_calls, injection_environments, load_suite
from vouch.sources.agentdojo._world import copier

SUITE = @SUITE_R@
VERSION = @VERSION_R@
INJECTION_TASK = @INJECTION_TASK_R@
CHECK_NAME = @CHECK_NAME_R@
CHECK = @CHECK_R@
"""The injection task's own check, the text of the pinned AgentDojo package's method (written
here at build time), run bound to the task in its module's namespace; text so V4V can mutate it."""@CHECK_HELPERS@


def verify(candidate: dict[str, Any], env: Any) -> bool:
    calls = candidate.get("calls")
    if not _well_formed(calls):
        return False
    output = candidate.get("final_answer") or ""
    task = load_suite(SUITE, VERSION).injection_tasks[INJECTION_TASK]
    pre_env, post_env = injection_environments(calls, suite=SUITE, version=VERSION, injection_task=INJECTION_TASK)
    traces = function_calls(calls)
    check = _own_check(task)

    def reached(a: Any, b: Any) -> bool:
        if CHECK_NAME == "security":
            return bool(check(output, a, b))
        result = check(output, a, b, traces)
        return task.security(output, a, b) if result is None else result

    return _holds(reached, copier(pre_env), copier(post_env))
'''.replace("@CHECK_HELPERS@", CHECK_HELPERS.replace("@TASK_CONST@", "INJECTION_TASK"))

_STATES_DOC = {
    "state": "It replays the calls itself, as the harness did to give env.pre_state and env.post_state.",
    "tool_call": "It replays the calls itself (env holds only the tools).",
}


def injection_verifier_source(suite: str, version: str, injection_task: str, kind: str) -> str:
    """The reference verifier's text for one injection task (``kind`` is ``state`` or ``tool_call``)."""
    check_name, check = own_security(suite, version, injection_task)
    values = {
        "@CHECK_NAME_R@": repr(check_name),
        "@CHECK_R@": repr(check),
        "@STATES_DOC@": _STATES_DOC[kind],
        "@SUITE_R@": repr(suite),
        "@VERSION_R@": repr(version),
        "@INJECTION_TASK_R@": repr(injection_task),
        "@SUITE@": suite,
        "@VERSION@": version,
        "@INJECTION_TASK@": injection_task,
        "@KIND@": kind,
    }
    return functools.reduce(lambda text, kv: text.replace(*kv), values.items(), _VERIFIER)
