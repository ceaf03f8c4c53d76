"""The execution engine: isolated, resource-limited, fast runs of untrusted code.

Every run is a child of a warm zygote, in its own user, PID, mount and network
namespaces, as an unprivileged uid, with rlimits, a wall-clock timeout that kills its
whole process tree, a private working directory and a scrubbed environment. Its status
comes from what the parent observed; a call's return value comes back as JSON data
(``to_data``/``from_data``, the one encoding of values across a run's boundary).

This package is the callers' side. What code running inside a run imports of the engine (its
harness helpers, the service channel, a program judged apart, each case in a child of its own)
is ``vouch.exec.runside``.
"""

from __future__ import annotations

from vouch.exec._batches import Batches, StageProgress
from vouch.exec._executor import Executor, LocalExecutor, PoolInfo, Progress
from vouch.exec._faults import Fault, vouch_failure
from vouch.exec._hidden import expose_to_runs, hidden_in_every_run, hide_in_runs
from vouch.exec._pools import PoolSet
from vouch.exec._pytest import PytestOutcome, PytestRecordError, PytestRun
from vouch.exec._registry import check_executor, get_executor, make_executor
from vouch.exec._sandbox import PRIVATE_IN_RUNS, visible_in_runs
from vouch.exec._spec import Call, Entry, ExceptionInfo, Isolation, Limits, RunResult, RunSpec, Script, Status
from vouch.exec._values import DataError, decode, from_data, to_data

__all__ = [
    "PRIVATE_IN_RUNS",
    "Batches",
    "Call",
    "DataError",
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
    "PytestOutcome",
    "PytestRecordError",
    "PytestRun",
    "RunResult",
    "RunSpec",
    "Script",
    "StageProgress",
    "Status",
    "check_executor",
    "decode",
    "expose_to_runs",
    "from_data",
    "get_executor",
    "hidden_in_every_run",
    "hide_in_runs",
    "make_executor",
    "to_data",
    "visible_in_runs",
    "vouch_failure",
]
