"""``vouch bench generate``: an LLM agent writes a verifier per task, under budgets, traced."""

from __future__ import annotations

import threading
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from vouch.agent import (
    HarnessConfig,
    PriceTable,
    Provider,
    RetryPolicy,
    TaskRun,
    generate,
    get_provider,
    hidden_paths,
    load_config,
    load_prices,
    results_object,
    write_results,
)
from vouch.bench import Task, load_tasks, sealed_executor
from vouch.cli._progress import progress_bar, progress_option
from vouch.cli._terminal import escape, shown
from vouch.errors import VouchError


class Interrupted(VouchError):
    """Ctrl-C during generation: exit 130, as for any command (click alone would say "aborted", 3)."""

    exit_code = 130


_COLUMNS = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


@click.command("generate")
@click.option("--tasks", "tasks_dir", required=True, type=click.Path(path_type=Path), help="Task directories.")
@click.option("--model", required=True, help="PROVIDER/MODEL, e.g. openai/gpt-4o or anthropic/MODEL.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--config", "config_name", default="default", show_default=True, help="A built-in name or a .toml file.")
@click.option("--concurrency", type=click.IntRange(min=1, max=64), default=2, show_default=True)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the results here.")
@click.option(
    "--prices", "prices_file", type=click.Path(dir_okay=False, path_type=Path), help="Price table (TOML/JSON)."
)
@click.option("--task", "only", multiple=True, help="Only these task ids (repeatable).")
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def generate_command(
    tasks_dir: Path,
    model: str,
    out_dir: Path,
    config_name: str,
    concurrency: int,
    json_out: Path | None,
    prices_file: Path | None,
    only: tuple[str, ...],
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Let an agent write <OUT>/<task_id>/verifier.py for every task; score them with `vouch bench score`."""
    console = Console(stderr=True)
    config = load_config(config_name)
    prices = load_prices(prices_file)
    tasks = _selected(load_tasks(tasks_dir), only, tasks_dir)
    retry = RetryPolicy(max_retries=config.max_retries, timeout_s=config.request_timeout_s)
    provider = get_provider(model, retry=retry)
    provider.check()  # no key or no endpoint: one line, before any task starts
    run_config = {
        "tasks": str(tasks_dir),
        "out": str(out_dir),
        "concurrency": concurrency,
        "config": config_name,
        "prices": prices.to_dict(),
        "tasks_selected": len(tasks),
    }
    runs = _generate(
        tasks,
        provider,
        config,
        tasks_dir=tasks_dir,
        out_dir=out_dir,
        model=model,
        prices=prices,
        concurrency=concurrency,
        allow_weak=allow_weak_isolation,
        progress_mode=progress_mode,
        console=console,
    )
    result = results_object(runs, tasks=tasks, model=model, config=config, run_config=run_config)
    _print_summary(result, Console())
    if json_out is not None:
        write_results(result, json_out)
        console.print(escape(f"wrote {json_out}"))
    console.print(escape(f"score with: vouch bench score --tasks {tasks_dir} --verifiers {out_dir}"))


def _selected(tasks: list[Task], only: tuple[str, ...], tasks_dir: Path) -> list[Task]:
    """The tasks ``--task`` names (every task when it names none)."""
    if not only:
        return tasks
    unknown = sorted(set(only) - {t.id for t in tasks})
    if unknown:
        raise click.BadParameter(f"no such task ids in {tasks_dir}: {', '.join(unknown)}", param_hint="--task")
    return [t for t in tasks if t.id in set(only)]


def _generate(
    tasks: list[Task],
    provider: Provider,
    config: HarnessConfig,
    *,
    tasks_dir: Path,
    out_dir: Path,
    model: str,
    prices: PriceTable,
    concurrency: int,
    allow_weak: bool,
    progress_mode: str | None,
    console: Console,
) -> list[TaskRun]:
    """Every task's generation in a sealed pool, a line per task done.

    Raises:
        Interrupted: Ctrl-C; the tasks finished are kept in ``out_dir``.
    """
    hidden = hidden_paths(tasks, tasks_dir, out_dir)
    stop = threading.Event()
    runs: list[TaskRun] = []
    interrupted = False
    with (
        sealed_executor(tasks, preload=["vouch.agent._runside"], allow_weak=allow_weak) as executor,
        progress_bar(progress_mode, *_COLUMNS, console=console) as bar,
    ):
        job = bar.add_task(f"generating ({model}, {config.name})", total=len(tasks))

        def done(run: TaskRun) -> None:
            bar.advance(job)
            a = run.analysis
            bar.console.print(
                shown(
                    f"  {run.task_id}: {run.status}, {a.end_reason}, "
                    f"{a.executions_used}/{a.executions_budget} executions"
                ),
                markup=False,
            )

        try:
            runs = generate(
                tasks,
                provider,
                config,
                executor,
                out_dir,
                hidden=hidden,
                prices=prices,
                concurrency=concurrency,
                stop=stop,
                on_done=done,
            )
        except KeyboardInterrupt:
            interrupted = True
    if interrupted:
        raise Interrupted(f"interrupted: finished tasks are kept in {out_dir}; run the same command to resume")
    return runs


def _print_summary(result: dict[str, object], console: Console) -> None:
    table = Table(title=f"{result['model']} with harness {result['harness']}")
    for column in ("task", "end", "verifier", "executions", "exhausted", "positive PASS seen", "tokens out", "cost $"):
        table.add_column(column)
    rows = result["tasks"]
    assert isinstance(rows, list)
    for row in rows:
        exhausted = ",".join(row["exhausted"]) or "-"
        if row["exhausted_before_verifier"]:
            exhausted += " (before verifier)"
        table.add_row(
            escape(str(row["task_id"])),
            escape(str(row["end_reason"])),
            "submitted" if row["submitted"] else ("written" if row["verifier_written"] else "none"),
            f"{row['executions_used']}/{row['executions_budget']}",
            exhausted,
            "no" if row["never_positive_pass"] else "yes",
            str(row["output_tokens"]),
            "-" if row["cost_usd"] is None else f"{row['cost_usd']:.4f}",
        )
    console.print(table)
