"""``vouch data build agentdojo``: the user tasks (``_source``), the injection tasks
(``_injection``) or both, by ``subset``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vouch.errors import UsageError
from vouch.sources.agentdojo._injection import build_injection
from vouch.sources.agentdojo._source import SUBSETS, BuildOutput, build_user


def _subset(options: Mapping[str, Any]) -> str:
    subset = options.get("subset") or "user"
    if subset not in SUBSETS:
        raise UsageError(f"subset={subset!r}: unknown AgentDojo subset; valid: {', '.join(SUBSETS)}")
    for key, needs in (("user_tasks", ("user", "all")), ("injection_tasks", ("injection", "all"))):
        if options.get(key) is not None and subset not in needs:
            raise UsageError(f"{key} selects tasks that subset={subset!r} does not build; use subset={needs[0]!r}")
    return str(subset)


def _only(options: Mapping[str, Any], dropped: str) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in (dropped, "subset")}


def build(out_dir: Path, *, seed: int, options: Mapping[str, Any]) -> BuildOutput:
    """Build the AgentDojo tasks: a state and a tool-call task per user task, with their cases.

    Args:
        out_dir: Where the caller will write the tasks; ``build`` itself writes nothing.
        seed: Seeds every random choice (per task, so one task's cases do not depend on another's).
        options: ``suite_version`` (one of ``SUITE_VERSIONS``, default ``"v1.2.2"``), ``suites``
            (subset of ``SUITES``), ``user_tasks`` (``"suite/user_task_N"`` entries to build),
            ``subset`` (``SUBSETS``: ``"injection"`` builds the injection tasks as tasks,
            ``"all"`` both), ``injection_tasks`` (``"suite/injection_task_N"`` entries to build).

    Returns:
        The tasks in a fixed order (user tasks, then injection tasks; suite, then task number;
        state before tool_call), the skipped ones with the reason, and the injection subset's
        manifest entries.

    Raises:
        UsageError: An unknown option, suite or suite version (the message lists the valid ones).
    """
    del out_dir  # the caller writes the TaskFiles
    subset = _subset(options)
    if subset == "user":
        return build_user(seed, _only(options, "injection_tasks"))
    injection = build_injection(seed=seed, options=_only(options, "user_tasks"))
    if subset == "injection":
        return injection
    user = build_user(seed, _only(options, "injection_tasks"))
    return BuildOutput(user.tasks + injection.tasks, user.skipped + injection.skipped, injection.inputs)
