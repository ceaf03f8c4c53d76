"""The execution engine: isolated, resource-limited, fast runs of untrusted code.

Every run is a child of a warm zygote, in its own user, PID, mount and network
namespaces, as an unprivileged uid, with rlimits, a wall-clock timeout that kills its
whole process tree, a private working directory and a scrubbed environment. Its status
comes from what the parent observed; a call's return value comes back as JSON data.
"""

from __future__ import annotations

from vouch.exec._executor import (
    Executor,
    LocalExecutor,
    PoolInfo,
    Progress,
    check_executor,
    get_executor,
    make_executor,
)
from vouch.exec._faults import Fault, vouch_failure
from vouch.exec._hidden import expose_to_runs, hidden_in_every_run, hide_in_runs
from vouch.exec._pools import PoolSet
from vouch.exec._sandbox import PRIVATE_IN_RUNS, visible_in_runs
from vouch.exec._spec import Call, Entry, ExceptionInfo, Isolation, Limits, RunResult, RunSpec, Script, Status

__all__ = [
    "PRIVATE_IN_RUNS",
    "Call",
    "Entry",
    "ExceptionInfo",
    "Executor",
    "Fault",
    "Isolation",
    "Limits",
    "LocalExecutor",
    "PoolInfo",
    "PoolSet",
    "Progress",
    "RunResult",
    "RunSpec",
    "Script",
    "Status",
    "check_executor",
    "expose_to_runs",
    "get_executor",
    "hidden_in_every_run",
    "hide_in_runs",
    "make_executor",
    "visible_in_runs",
    "vouch_failure",
]
