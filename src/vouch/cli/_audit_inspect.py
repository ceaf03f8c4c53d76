"""``vouch audit inspect``: TestJack's audit of the HumanEval-style samples of an Inspect eval log."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from vouch.audit import SOURCES
from vouch.cli._agent_options import (
    agent_config_option,
    agent_model_option,
    auditing_agent,
    mode_option,
    rounds_option,
)
from vouch.cli._audit import (
    audit_config,
    bad_lines,
    print_summary,
    run_audit,
    run_options,
    stop_if_failed,
    write_results,
)
from vouch.cli._terminal import escape
from vouch.sources.trials import InspectRun, inspect_comparison, read_inspect_log, write_back, write_back_path

if TYPE_CHECKING:
    from vouch.sources.problems import ProblemSet
    from vouch.sources.trials import Problem

__all__ = ["inspect_command"]

_SHOWN = 20
"""Trials listed one per row after a run; more go to --json (disagreements are always listed)."""


@click.command("inspect")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the audit results.")
@click.option(
    "--write-back",
    "write_back_flag",
    is_flag=True,
    help="Write a copy of the log beside it (LOG-vouch.eval) with vouch's verdict as the score vouch_audit.",
)
@click.option(
    "--scorer",
    default=None,
    help="The score that is Inspect's verdict (default: each sample's first score other than vouch_audit).",
)
@click.option(
    "--problems",
    "problems_name",
    default=None,
    help="The problems of samples whose metadata lacks P, T0 or G: a problem set (humaneval, mbpp, ...) or a "
    "problems file, matched by the sample's task id in any spelling (default: HumanEval).",
)
@mode_option
@rounds_option("task")
@click.option("--witness-source", type=click.Choice(list(SOURCES)), default="offline", show_default=True)
@click.option("--witness-files", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--witness-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@agent_model_option
@agent_config_option
@run_options
def inspect_command(
    log: Path,
    problems_name: str | None,
    json_out: Path | None,
    write_back_flag: bool,
    scorer: str | None,
    mode: str,
    rounds: int,
    witness_source: str,
    witness_files: Path | None,
    witness_dir: Path | None,
    agent_model: str | None,
    agent_config: str | None,
    agent_concurrency: int,
    k: int,
    store_path: Path | None,
    workers: int | None,
    seed: int,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Audit the function-level samples of an Inspect log (.eval or .json); needs pip install 'vouch[inspect]'."""
    console = Console(stderr=True)
    problem_set = None if problems_name is None else _problem_set(problems_name)
    run = read_inspect_log(log, scorer=scorer, problems=None if problem_set is None else _every_spelling(problem_set))
    config = audit_config(mode, rounds, seed, k, witness_source, witness_files, agent_model, agent_config)
    agent = auditing_agent(witness_source, agent_model, agent_config, concurrency=agent_concurrency)
    for bad in run.samples.bad_lines[:5]:
        console.print(f"[yellow]skipped {escape(bad.reason)}[/yellow]")
    if len(run.samples.bad_lines) > 5:
        console.print(f"[yellow]... and {len(run.samples.bad_lines) - 5} more skipped samples (see --json)[/yellow]")
    # The log holds G (each sample's target) and every other trial: it stays out of the runs.
    results = run_audit(
        run.samples,
        replace(problem_set, problems=run.problems) if problem_set is not None else run.problems,
        config,
        agent,
        console=console,
        progress_mode=progress_mode,
        workers=workers,
        allow_weak_isolation=allow_weak_isolation,
        store_path=store_path,
        witness_dir=witness_dir,
        json_out=json_out,
        hidden=[log, write_back_path(log)],
    )
    rows = inspect_comparison(run, results)
    results.config["samples"] = str(log)
    results.config["bad_lines"] = bad_lines(run.samples)
    results.config["inspect"] = _inspect_config(log, run, rows)
    out = Console()
    print_summary(results, out)
    _print_comparison(rows, out)
    if write_back_flag:
        written = write_back(run, results, config_key=config.key())
        results.config["inspect"]["write_back"] = str(written)
        out.print(escape(f"wrote {written} (score vouch_audit on {len(rows)} samples)"))
    write_results(results, json_out, out)
    stop_if_failed(results)


def _problem_set(name: str) -> ProblemSet:
    from vouch.sources.problems import load_problem_set

    return load_problem_set(name)


def _every_spelling(problem_set: ProblemSet) -> dict[str, Problem]:
    """The set's problems by their own task ids and by every alias (a log may spell them either way)."""
    problems = problem_set.problems
    return problems | {alias: problems[own] for alias, own in problem_set.aliases.items()}


def _inspect_config(log: Path, run: InspectRun, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The results' ``config.inspect``: the log read, what was skipped, and Inspect's score beside
    vouch's per trial."""
    return {
        "log": str(log),
        "format": run.format,
        "task": run.task,
        "model": run.model,
        "problems": run.problem_source,
        "skipped": [{"place": b.line, "reason": b.reason} for b in run.samples.bad_lines],
        "trials": rows,
        "t0_disagreements": [r["trial_id"] for r in rows if r["t0_agrees"] is False],
    }


def _print_comparison(rows: list[dict[str, Any]], console: Console) -> None:
    """Inspect's score beside vouch's T0 and verdict: every trial of a small log, and every disagreement."""
    disagreements = [r for r in rows if r["t0_agrees"] is False]
    shown = rows if len(rows) <= _SHOWN else disagreements[:_SHOWN]
    if shown:
        table = Table(title="Inspect's score beside vouch's verdict" + ("" if shown is rows else " (disagreements)"))
        for column in ("trial", "Inspect", "vouch T0", "verdict"):
            table.add_column(column)
        for r in shown:
            inspect = "-" if r["inspect_passed"] is None else ("pass" if r["inspect_passed"] else "fail")
            vouch_t0 = "pass" if r["vouch_t0_passed"] else "fail"
            mark = " [red](differs)[/red]" if r["t0_agrees"] is False else ""
            table.add_row(
                escape(r["trial_id"]), escape(f"{inspect} ({r['inspect_value']})"), vouch_t0 + mark, r["verdict"]
            )
        console.print(table)
    if disagreements:
        console.print(
            f"{len(disagreements)} trials where Inspect's score and vouch's run of T0 differ "
            "(neither is trusted: look at both)"
        )
