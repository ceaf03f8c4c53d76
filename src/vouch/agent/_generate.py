"""``vouch bench generate``'s library side: one agent per task, concurrently, resumable.

Layout of the output directory (what ``vouch bench score --verifiers DIR`` reads)::

    <out>/<task_id>/verifier.py   the verifier as last written (absent if none was)
    <out>/<task_id>/trace.jsonl   every event of the generation (see ``vouch.agent._trace``)
    <out>/<task_id>/done.json     the finished marker: the task's TaskAnalysis, written last

A task with a ``done.json`` is skipped on the next run; one interrupted (Ctrl-C) or stopped
by a failing endpoint has none and is run again from the start.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vouch
from vouch.agent._analysis import TaskAnalysis, analyze, summarize
from vouch.agent._config import HarnessConfig
from vouch.agent._loop import run_agent
from vouch.agent._prices import PriceTable
from vouch.agent._provider import Provider
from vouch.agent._trace import TraceWriter
from vouch.bench import Task
from vouch.core import Envelope
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.sources import answer_data_paths

DONE = "done.json"
FINISHED_REASONS = ("submitted", "turns", "wall")


@dataclass(frozen=True)
class TaskRun:
    """One task's part of a generation run."""

    task_id: str
    status: str
    """generated (finished now), reused (finished before) or unfinished (interrupted, endpoint failed)."""
    analysis: TaskAnalysis


def hidden_paths(tasks: Sequence[Task], tasks_dir: Path, out_dir: Path) -> tuple[str, ...]:
    """What no run the agent causes may read: the tasks root, the output root, and every task's
    withheld directories (resolved, in case a task directory is a symlink into another tree)."""
    paths = {str(tasks_dir.resolve()), str(out_dir.resolve()), *answer_data_paths()}
    for task in tasks:
        for name in ("reference", "cases"):
            paths.add(str((task.root / name).resolve()))
            paths.add(str(task.root.resolve() / name))
    return tuple(sorted(paths))


def _load_done(path: Path) -> TaskAnalysis | None:
    try:
        return TaskAnalysis.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None  # a torn or foreign marker: the task is run again


def generate_task(
    task: Task,
    provider: Provider,
    config: HarnessConfig,
    executor: Executor,
    out_dir: Path,
    *,
    hidden: tuple[str, ...],
    prices: PriceTable,
    stop: threading.Event | None = None,
) -> TaskRun:
    """Generate (or reuse) one task's verifier; writes its directory under ``out_dir``."""
    task_out = out_dir / task.id
    done = _load_done(task_out / DONE) if (task_out / DONE).exists() else None
    if done is not None:
        return TaskRun(task.id, "reused", done)
    task_out.mkdir(parents=True, exist_ok=True)
    (task_out / "verifier.py").unlink(missing_ok=True)  # a stale one from an unfinished run
    trace = TraceWriter(task_out / "trace.jsonl")
    try:
        result = run_agent(task, provider, config, executor, trace, hidden=hidden, prices=prices, stop=stop)
    finally:
        trace.close()
    analysis = analyze(trace.events)
    if result.reason not in FINISHED_REASONS:
        return TaskRun(task.id, "unfinished", analysis)
    if result.verifier is not None:
        (task_out / "verifier.py").write_text(result.verifier)
    (task_out / DONE).write_text(analysis.model_dump_json(indent=2) + "\n")  # the marker goes last
    return TaskRun(task.id, "generated", analysis)


def generate(
    tasks: Sequence[Task],
    provider: Provider,
    config: HarnessConfig,
    executor: Executor,
    out_dir: Path,
    *,
    hidden: tuple[str, ...],
    prices: PriceTable,
    concurrency: int = 2,
    stop: threading.Event | None = None,
    on_done: Callable[[TaskRun], None] | None = None,
) -> list[TaskRun]:
    """Generate every task's verifier with ``concurrency`` agents at once (threads; one engine).

    ``stop`` set (Ctrl-C) makes running agents end at their next turn; finished tasks keep
    their markers. Results come back in task order.
    """
    if concurrency < 1:
        raise UsageError(f"--concurrency {concurrency} must be at least 1")
    out_dir.mkdir(parents=True, exist_ok=True)
    stop = stop or threading.Event()

    def one(task: Task) -> TaskRun:
        if stop.is_set():
            raise _Skipped
        run = generate_task(task, provider, config, executor, out_dir, hidden=hidden, prices=prices, stop=stop)
        if on_done is not None:
            on_done(run)
        return run

    runs: dict[str, TaskRun] = {}
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vouch-agent")
    try:
        futures = {task.id: pool.submit(one, task) for task in tasks}
        for task_id, future in futures.items():
            try:
                runs[task_id] = _result(future)
            except _Skipped:
                continue
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [runs[t.id] for t in tasks if t.id in runs]


def _result(future: Future[TaskRun]) -> TaskRun:
    """The future's result, waited for in short steps: a Ctrl-C the kernel hands to another of
    the process's threads is seen by the main thread only when it runs Python code, and a wait
    without a timeout would hold it until the task ends."""
    while True:
        try:
            return future.result(timeout=WAIT_STEP_S)
        except FutureTimeout:
            continue


WAIT_STEP_S = 0.2


class _Skipped(Exception):
    """A task not started because the run was stopped."""


def results_object(
    runs: Sequence[TaskRun],
    *,
    tasks: Sequence[Task],
    model: str,
    config: HarnessConfig,
    run_config: dict[str, Any],
) -> dict[str, Any]:
    """The ``generate`` results: the envelope, per-task analyses and the totals."""
    envelope = Envelope(
        kind="generate",
        vouch_version=vouch.__version__,
        seed=None,
        config={**run_config, "model": model, "harness": config.model_dump(mode="json")},
    ).model_dump(mode="json")
    sources = {t.id: t.spec.source.benchmark for t in tasks}
    rows = []
    for run in runs:
        row = run.analysis.model_dump(mode="json")
        row["status"] = run.status
        row["source"] = row.get("source") or sources.get(run.task_id)
        rows.append(row)
    finished = [r.analysis for r in runs if r.status != "unfinished"]
    missing = [t.id for t in tasks if t.id not in {r.task_id for r in runs}]
    return envelope | {
        "model": model,
        "harness": config.name,
        "verifiers_dir": run_config.get("out"),
        "summary": summarize(finished),
        "unfinished": [r.task_id for r in runs if r.status == "unfinished"] + missing,
        "tasks": rows,
    }


def write_results(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
