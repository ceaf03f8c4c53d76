"""``vouch data build`` and ``vouch data stats``: task sets from real benchmarks; ``vouch data
corpora`` and ``vouch data get``: the registered public corpora."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch import corpora
from vouch.bench import PRELOAD, check_references
from vouch.cli._progress import progress_bar, progress_option
from vouch.core import Envelope, FlaggedCase
from vouch.exec import LocalExecutor
from vouch.sources import SOURCES, build_source, check_out_dir, data_stats

_PRELOAD = {
    "agentdojo": ["vouch.sources._agentdojo", "vouch.sources._agentdojo_world:warm"],
    "bfcl": [],
    "humaneval": ["vouch.sources._probe"],
}


@click.group("data")
def data() -> None:
    """Build and inspect task sets from real benchmarks."""


@data.command("build")
@click.argument("source", type=click.Choice(sorted(SOURCES)))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--suite-version", default=None, help="AgentDojo suite version (default v1.2.2).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Build at most this many tasks.")
@click.option("--force", is_flag=True, help="Replace a different build already in --out.")
@click.option("--no-check", is_flag=True, help="Skip running the reference verifiers on the cases.")
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def build(
    source: str,
    out_dir: Path,
    seed: int,
    suite_version: str | None,
    limit: int | None,
    force: bool,
    no_check: bool,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Build SOURCE's task set into --out: task directories and manifest.json."""
    console = Console(stderr=True)
    options: dict[str, object] = {}
    if suite_version is not None:
        if source != "agentdojo":
            raise click.BadParameter("only agentdojo has suite versions", param_hint="--suite-version")
        options["suite_version"] = suite_version
    if limit is not None:
        options["limit"] = limit
    check_out_dir(out_dir, source, seed, options, force)  # refuse before anything starts
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        LocalExecutor(preload=[*PRELOAD, *_PRELOAD[source]], allow_weak=allow_weak_isolation) as executor,
        progress_bar(progress_mode, *columns, console=console) as bar,
    ):
        checking = bar.add_task("checking reference verifiers", total=None, visible=False)

        def check(tasks_dir: Path, task_ids: list[str]) -> list[FlaggedCase]:
            bar.update(checking, visible=True)

            def tick(done: int, total: int) -> None:
                bar.update(checking, completed=done, total=total)

            return check_references(executor, tasks_dir, task_ids, progress=tick)

        console.print(f"building {source} into {out_dir} ...")
        report = build_source(
            source,
            out_dir,
            seed=seed,
            options=options,
            executor=executor,
            check=None if no_check else check,
            force=force,
        )
    m = report.manifest
    console.print(
        f"{m.tasks} tasks, {m.cases} cases {m.counts['by_category']} in {report.seconds:.1f} s; "
        f"{len(m.flagged)} cases where the reference verifier disagrees with the label (flagged in manifest.json); "
        f"{len(report.skipped)} tasks skipped"
    )
    for task_id, reason in report.skipped[:10]:
        console.print(f"  skipped {task_id}: {reason}")


@data.command("stats")
@click.argument("tasks_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (kind: data-stats).")
def stats(tasks_dir: Path, as_json: bool) -> None:
    """Counts of a task set (distinct candidates; whitespace-only twins count once)."""
    figures = data_stats(tasks_dir)
    if as_json:
        envelope = Envelope(kind="data-stats", vouch_version=vouch.__version__, config={"tasks_dir": str(tasks_dir)})
        click.echo(json.dumps(envelope.model_dump(mode="json") | figures))
        return
    console = Console()
    console.print(f"[bold]{figures['tasks']}[/] tasks, [bold]{figures['cases']}[/] distinct cases")
    for key in ("by_kind", "by_source", "by_category", "by_label"):
        console.print(f"  {key}: {figures[key]}")
    missing = figures["tasks_missing_class"]
    console.print(f"  tasks below the per-task minimum: {len(missing)}")
    for row in missing[:10]:
        console.print(f"    {row['task_id']}: {', '.join(row['lacks'])}")


_DATA_DIR = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Look here first (then ${corpora.DATA_DIR_ENV}, then the user cache); downloads go here.",
)


@data.command("corpora")
@_DATA_DIR
def corpora_command(data_dir: Path | None) -> None:
    """The registered public corpora and where each is found (or missing)."""
    console = Console()
    where = ", ".join(f"{what} {directory}" for what, directory in corpora.data_dirs(data_dir))
    table = Table(title=f"Public corpora (looked up in {where})")
    table.add_column("name", no_wrap=True)
    table.add_column("size", no_wrap=True, justify="right")
    table.add_column("licence")
    table.add_column("found", overflow="fold")
    for c in corpora.CORPORA.values():
        try:
            path = corpora.find(c, data_dir)
            found = str(path) if path is not None else "missing"
        except corpora.CorpusError as exc:
            found = f"wrong file: {exc}"
        table.add_row(c.name, f"{c.size:,} B", c.licence, found)
    console.print(table)
    for c in corpora.CORPORA.values():
        fetch = f"download {c.url}" if c.url else "no download address: put the file in a data directory"
        console.print(
            f"{c.name}: {c.description}; file {c.file}; source {c.source}; sha256 {c.sha256}; {fetch}", soft_wrap=True
        )


@data.command("get")
@click.argument("name", type=click.Choice(sorted(corpora.CORPORA)))
@_DATA_DIR
def get(name: str, data_dir: Path | None) -> None:
    """Find corpus NAME in a data directory, else download it (sha256 checked); print its path."""
    path = corpora.resolve(name, data_dir, console=Console(stderr=True))
    click.echo(str(path))
