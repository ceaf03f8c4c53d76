"""``vouch demo``: the main job on bundled real data, offline."""

from __future__ import annotations

import json
import os

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch.core import Envelope
from vouch.exec import LocalExecutor, RunResult
from vouch.showcase import COMPLETION_LIMITS, DemoSummary, run_showcase


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="vouch-demo",
    show_default=True,
    help="Directory for demo.json.",
)
@click.option("--allow-weak-isolation", is_flag=True, help="Run even when namespaces are missing (recorded).")
def demo(out_dir: str, allow_weak_isolation: bool) -> None:
    """Run the main job on bundled real data, offline: the engine's showcase."""
    console = Console(stderr=True)
    with LocalExecutor(allow_weak=allow_weak_isolation) as executor:
        info = executor.start()
        console.print(
            f"[bold]vouch {vouch.__version__}[/] engine: {info.workers} workers, isolation [bold]{info.isolation_level}"
            f"[/], warm pool {info.baseline_rss_mb:.0f} MiB (pid {info.pid})"
        )
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as bar:
            task = bar.add_task("running completions and hostile programs", total=None)

            def advance(done: int, total: int, _result: RunResult) -> None:
                bar.update(task, completed=done, total=total)

            summary = run_showcase(executor, progress=advance)
    _print(Console(), summary)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "demo.json")
    envelope = Envelope(
        kind="demo",
        vouch_version=vouch.__version__,
        config={
            "timeout_s": COMPLETION_LIMITS.timeout_s,
            "memory_mb": COMPLETION_LIMITS.memory_mb,
            "isolation": info.isolation_level,
            "workers": info.workers,
        },
    )
    with open(path, "w") as f:
        json.dump(envelope.model_dump(mode="json") | summary.to_dict(), f, indent=2)
    Console().print(f"\nwrote {path}")


def _print(console: Console, summary: DemoSummary) -> None:
    table = Table(title="CodeGen-16B completions against HumanEval's official tests (each its own sandbox)")
    table.add_column("task")
    table.add_column("passed", justify="right")
    table.add_column("statuses")
    for t in summary.tasks:
        table.add_row(
            t.task_id, f"{t.passed}/{t.samples}", ", ".join(f"{k} {v}" for k, v in sorted(t.statuses.items()))
        )
    console.print(table)
    reasons = ", ".join(f"{r} {n}" for r, n in summary.top_reasons)
    console.print(
        f"{summary.runs} runs in {summary.wall_s:.1f} s ({summary.runs / summary.wall_s:.0f} runs/s), "
        f"median run {summary.median_run_ms:.1f} ms. Outcomes: {reasons}"
    )
    hostile = Table(title="Hostile programs")
    hostile.add_column("program")
    hostile.add_column("tries to")
    hostile.add_column("status")
    hostile.add_column("contained")
    for h in summary.hostile:
        hostile.add_row(h.name, h.attempt, f"{h.status}: {h.reason or ''}"[:70], "yes" if h.contained else "[red]NO[/]")
    console.print(hostile)
