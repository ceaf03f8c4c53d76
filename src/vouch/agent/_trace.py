"""Traces: one JSONL file per task, one event per line, written as the agent goes.

Event types (every event has ``type`` and ``t``, seconds since the task started):

- ``start``: task_id, kind, source, model, config (the whole harness config), budgets, tools
- ``message``: a system, user or assistant message: role, content, tool_calls [{id, name, arguments}]
- ``model_reply``: turn, input_tokens, output_tokens, cost_usd, duration_s, retries, stop_reason
- ``tool``: turn, id, name, arguments, status (ok, error, refused, malformed), counted (spent an
  execution), executions_used, duration_s, result (the text the model got), data (structured:
  a self-test's decision, expectation and verifier hash; a run's status)
- ``no_tool_call``: turn (the model answered with text only)
- ``budget``: which (executions, wall, turns), verifier_written, executions_used
- ``end``: reason (submitted, turns, wall, interrupted, provider_error), submitted,
  verifier_written, verifier_hash, executions_used, turns, tokens, cost_usd, wall_s, error
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from vouch.errors import UsageError


class TraceWriter:
    """Appends events to ``path`` (truncated first), one JSON object a line, flushed each time."""

    def __init__(self, path: Path, clock: Any = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("w", encoding="utf-8")
        self.events: list[dict[str, Any]] = []

    def elapsed(self) -> float:
        return float(self._clock() - self._start)

    def event(self, type_: str, **fields: Any) -> dict[str, Any]:
        record = {"type": type_, "t": round(self.elapsed(), 3), **fields}
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            self.events.append(record)
            self._handle.write(line + "\n")
            self._handle.flush()
        return record

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The events of a trace file; a torn last line (a killed run) is left out.

    Raises:
        UsageError: the file cannot be read, or a line before the last is not JSON.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the trace {path}: {exc.strerror or exc}") from None
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise UsageError(f"{path}:{number}: not a JSON trace event") from None
    return events
