"""Batches of runs counted by stage: the one counting engine of the audit's two forms.

A command that runs many batches (the function form's stages, the repository form's T0, calls
and witness runs) reports how many runs each stage made and how long they took, and which runs
failed for vouch's own reasons (``vouch_failure``), so that no verdict rests on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from vouch.exec._executor import Executor
from vouch.exec._faults import Fault, vouch_failure
from vouch.exec._spec import RunResult, RunSpec

__all__ = ["Batches", "StageProgress"]

StageProgress = Callable[[str, int, int], None]
"""Called as ``(stage, done, total)`` while a stage runs."""


class Batches:
    """Runs batches of specs through an executor and counts them by stage: ``executions`` (every
    run), ``stage_runs``, ``stage_s`` (wall seconds of the stage's batches) and ``stage_run_s``
    (seconds of its runs, summed whatever the overlap), and ``faults``, every run that failed
    for vouch's own reasons, in order."""

    def __init__(self, executor: Executor, progress: StageProgress | None = None) -> None:
        self.executor = executor
        self.progress = progress
        self.executions = 0
        self.faults: list[Fault] = []
        """Every run that failed for vouch's own reasons, in order."""
        self.stage_s: dict[str, float] = {}
        """Wall seconds of each stage's batches."""
        self.stage_runs: dict[str, int] = {}
        self.stage_run_s: dict[str, float] = {}
        """Seconds the runs of each stage took, summed over runs (the engine's work, whatever the overlap)."""

    def run_counted(
        self,
        specs: Sequence[RunSpec],
        stage: str,
        *,
        read: Callable[[RunSpec, RunResult], RunResult] | None = None,
        fault_of: Callable[[RunSpec, RunResult], str | None] | None = None,
        on_fault: Callable[[int, Fault], None] | None = None,
    ) -> list[RunResult]:
        """Run ``specs`` as one batch of ``stage``, counted; results in input order.

        ``read`` turns each raw result into the one callers see (a foreign run's inner result);
        ``fault_of`` says why a run failed for vouch's own reasons (default ``vouch_failure``), and
        each such run is kept in ``faults`` and handed to ``on_fault`` with its index (a fault is
        ``owned`` when ``on_fault`` is given: the caller named whose evidence the run was).
        """
        specs = list(specs)
        self.executions += len(specs)
        callback: Any = None
        if self.progress is not None:
            report = self.progress

            def callback(done: int, total: int, _result: RunResult) -> None:
                report(stage, done, total)

        started = time.monotonic()
        raw = self.executor.run_batch(specs) if callback is None else self.executor.run_batch(specs, progress=callback)
        self.stage_s[stage] = self.stage_s.get(stage, 0.0) + time.monotonic() - started
        self.stage_runs[stage] = self.stage_runs.get(stage, 0) + len(specs)
        self.stage_run_s[stage] = self.stage_run_s.get(stage, 0.0) + sum(r.duration_s or 0.0 for r in raw)
        results = raw if read is None else [read(spec, result) for spec, result in zip(specs, raw, strict=True)]
        for index, (spec, result) in enumerate(zip(specs, results, strict=True)):
            why = vouch_failure(result) if fault_of is None else fault_of(spec, result)
            if why is None:
                continue
            fault = Fault(stage, spec.name, why, owned=on_fault is not None)
            self.faults.append(fault)
            if on_fault is not None:
                on_fault(index, fault)
        return results

    def stages(self) -> dict[str, Any]:
        """The results' record of the stages: runs, wall seconds and run-seconds per stage."""
        return {
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_s.items()},
            "stage_runs": dict(self.stage_runs),
            "stage_run_seconds": {k: round(v, 3) for k, v in self.stage_run_s.items()},
        }

    def faults_since(self, mark: int) -> str | None:
        """The reason of the first fault after ``len(self.faults)`` was ``mark``, or None."""
        return self.faults[mark].reason() if len(self.faults) > mark else None
