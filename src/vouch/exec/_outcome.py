"""From what the zygote observed of a run to a ``RunResult``: a pure function.

Order matters: the parent's own observations (its timeout, a signal, the exit status)
decide first; the harness's frame can only turn an observed clean exit into ``ok`` and
explain an observed failure.
"""

from __future__ import annotations

import signal as signal_module
from typing import Any

from vouch.exec import _frame, _values
from vouch.exec._spec import ExceptionInfo, Isolation, RunResult, Status

_CPU_SIGNALS = {signal_module.SIGXCPU}


def _signal_name(number: int) -> str:
    try:
        return signal_module.Signals(number).name
    except ValueError:
        return f"signal {number}"


def build_result(observed: dict[str, Any]) -> RunResult:
    """Turn the zygote's report of one run into its result."""
    isolation = Isolation(**observed["isolation"])
    exit_code: int | None = observed["exit_code"]
    signal: int | None = observed["signal"]
    frame: _frame.Frame | None = None
    frame_problem: str | None = None
    try:
        frame = _frame.decode(observed["frame"], observed["nonce"])
    except _frame.FrameError as exc:
        frame_problem = str(exc)

    exception = None
    if frame is not None and frame.exception is not None:
        exception = ExceptionInfo(
            type=frame.exception.get("type", "?"),
            message=frame.exception.get("message", ""),
            traceback_tail=frame.exception.get("traceback_tail", ""),
        )

    status, reason = _classify(observed, exit_code, signal, frame, frame_problem, isolation)
    value = None
    if status is Status.OK and frame is not None:
        try:
            value = _values.decode(frame.value)
        except _values.DataError as exc:
            # Only code in the run's process can write a frame with this run's nonce: what it
            # wrote is this run's outcome.
            status, reason = Status.ERROR, f"the run's result record holds a value that is not valid data ({exc})"
    return RunResult(
        status=status,
        reason=reason,
        exit_code=exit_code,
        signal=signal,
        duration_s=observed["duration_s"],
        peak_memory_mb=round(observed["maxrss_kb"] / 1024, 1),
        pid=observed["pid"],
        stdout_tail=observed["stdout_tail"].decode(errors="replace"),
        stderr_tail=observed["stderr_tail"].decode(errors="replace"),
        isolation=isolation,
        value=value,
        exception=exception,
        workdir=observed.get("workdir"),
        phases=_phases(observed, frame),
        judged=bool(observed.get("judged", False)),
    )


def _phases(observed: dict[str, Any], frame: _frame.Frame | None) -> dict[str, float]:
    phases = dict(observed.get("phases") or {})
    if frame is not None and frame.clock is not None and "started" in observed:
        entered, ended = frame.clock
        if observed["started"] <= entered <= ended <= observed["exited"]:
            phases["enter_ms"] = round((entered - observed["started"]) * 1000, 3)
            phases["code_ms"] = round((ended - entered) * 1000, 3)
            phases["exit_ms"] = round((observed["exited"] - ended) * 1000, 3)
    return phases


def _classify(
    observed: dict[str, Any],
    exit_code: int | None,
    signal: int | None,
    frame: _frame.Frame | None,
    frame_problem: str | None,
    isolation: Isolation,
) -> tuple[Status, str | None]:
    if observed["timed_out"]:
        return Status.TIMEOUT, f"wall-clock timeout after {observed['duration_s']:.2f} s; process tree killed"
    if signal in _CPU_SIGNALS or (signal == signal_module.SIGKILL and observed["cpu_s"] >= isolation.cpu_s):
        return Status.TIMEOUT, f"CPU time limit of {isolation.cpu_s} s reached"
    raised = frame is not None and frame.outcome == "raised" and frame.exception is not None
    if raised and frame is not None and frame.exception is not None and frame.exception.get("type") == "MemoryError":
        return Status.MEMORY, f"out of memory: headroom of the {isolation.address_space_mb} MiB address space used up"
    if signal is not None:
        return Status.KILLED, f"killed by {_signal_name(signal)}"
    if exit_code != 0:
        if raised and frame is not None and frame.exception is not None:
            exc = frame.exception
            return Status.ERROR, f"raised {exc.get('type')}: {exc.get('message', '')}".strip()[:500]
        return Status.ERROR, f"exit code {exit_code} before the harness recorded a result"
    if frame is None:
        return Status.ERROR, f"exit code 0 before the code completed ({frame_problem})"
    if frame.outcome == "raised":
        kind = frame.exception.get("type") if frame.exception is not None else None
        if kind == "SystemExit":
            return Status.ERROR, "exit code 0 before the code completed (SystemExit)"
        return Status.ERROR, "the harness recorded an exception but the process exited 0"
    return Status.OK, None
