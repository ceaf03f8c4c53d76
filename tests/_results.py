"""A ``RunResult`` as the engine would return it, for tests that feed a reader a run's outcome
without running anything."""

from __future__ import annotations

from typing import Any

from vouch.exec import Isolation, RunResult, Status

ISOLATION = Isolation("full", True, True, True, False, True, True, 1000, 100000, (), "0", 10, 512, 64, 64, 256)
"""The isolation report of a run in full isolation."""


def run_result(
    status: Status = Status.OK,
    *,
    reason: str | None = None,
    value: Any = None,
    seconds: float = 0.01,
    judged: bool = False,
) -> RunResult:
    """A finished run's result: its status and reason, the value it returned, its wall time."""
    return RunResult(
        status=status,
        reason=reason,
        exit_code=None,
        signal=None,
        duration_s=seconds,
        peak_memory_mb=0.0,
        pid=4242,
        stdout_tail="",
        stderr_tail="",
        isolation=ISOLATION,
        value=value,
        judged=judged,
    )
