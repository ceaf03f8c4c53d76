"""``vouch v4v --tasks DIR``: screen reference verifiers and their suites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch.bench import raise_if_errors
from vouch.cli._bench import hide_outputs
from vouch.cli._executor_options import executor_options
from vouch.cli._progress import progress_bar, progress_option, stage_progress
from vouch.cli._terminal import escape
from vouch.core import Envelope
from vouch.exec import check_executor
from vouch.store import Store, default_store_path
from vouch.v4v import CHECKS, MAX_MUTANTS, load_for_v4v, run_v4v


@click.command("v4v")
@click.option("--tasks", "tasks_dir", required=True, type=click.Path(path_type=Path))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--checks", default=",".join(CHECKS), show_default=True, help="Comma-separated checks to run.")
@click.option("--repeat", type=click.IntRange(min=2), default=3, show_default=True, help="Runs for repeatability.")
@click.option("--threshold", type=float, default=20.0, show_default=True, help="Trivial-baseline BAnorm limit.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option(
    "--max-mutants", type=click.IntRange(min=1), default=MAX_MUTANTS, show_default=True, help="Mutants per task (C6)."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--allow-weak-isolation", is_flag=True)
@executor_options
@progress_option
def v4v(
    tasks_dir: Path,
    json_out: Path | None,
    checks: str,
    repeat: int,
    threshold: float,
    store_path: Path | None,
    max_mutants: int,
    seed: int,
    allow_weak_isolation: bool,
    executor_kind: str,
    address: str | None,
    progress_mode: str | None,
) -> None:
    """Run V4V's checks on every task; a task failing any is excluded, with its reason."""
    check_executor(executor_kind, address)
    console = Console(stderr=True)
    tasks, broken = load_for_v4v(tasks_dir)
    chosen = [c.strip() for c in checks.split(",") if c.strip()]
    store = Store(store_path or default_store_path())
    hide_outputs(store.path, json_out)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with progress_bar(progress_mode, *columns, console=console) as bar:
        body = run_v4v(
            tasks,
            store=store,
            checks=chosen,
            repeat=repeat,
            threshold=threshold,
            seed=seed,
            allow_weak=allow_weak_isolation,
            progress=stage_progress(bar),
            max_mutants=max_mutants,
            broken=broken,
            executor_kind=executor_kind,
            address=address,
        )
    store.close()
    envelope = Envelope(
        kind="v4v",
        vouch_version=vouch.__version__,
        seed=seed,
        config={
            "tasks": str(tasks_dir),
            "checks": chosen,
            "repeat": repeat,
            "threshold": threshold,
            "max_mutants": max_mutants,
        },
    )
    result = envelope.model_dump(mode="json") | body
    _print_v4v(body)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2) + "\n")
        console.print(escape(f"wrote {json_out}"))
    raise_if_errors(body["errors"])


def _print_v4v(body: dict[str, Any]) -> None:
    """Each check's passed and failed tasks, then the excluded tasks with the checks they failed."""
    table = Table(title=f"V4V: {body['retained']} of {len(body['tasks'])} tasks retained")
    table.add_column("check")
    table.add_column("passed", justify="right")
    table.add_column("failed", justify="right")
    for name, counts in body["totals"].items():
        table.add_row(name, str(counts["passed"]), str(counts["failed"]))
    Console().print(table)
    for row in body["excluded"][:15]:
        Console().print(escape(f"  excluded {row['task_id']}: {', '.join(row['failed_checks'])}"))
