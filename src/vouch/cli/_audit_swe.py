"""``vouch audit swe``: TestJack's per-trial audit of SWE-bench-format predictions."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from vouch.audit._swe import SWE_PRELOAD, SweAuditConfig, audit_swe
from vouch.audit._swe_replay import replay_witness
from vouch.cli._agent_options import agent_config_option, agent_model_option, auditing_agent
from vouch.exec import LocalExecutor
from vouch.sources._swe import load_instances, load_predictions
from vouch.store import AuditStore, default_store_path
from vouch.worlds import WorldCache

__all__ = ["swe"]


@click.command("swe")
@click.option("--instances", "instances_file", type=click.Path(dir_okay=False, path_type=Path), help="Instances JSONL.")
@click.option(
    "--predictions", "predictions_file", type=click.Path(dir_okay=False, path_type=Path), help="Predictions JSONL."
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the audit results.")
@click.option(
    "--witness-source",
    type=click.Choice(["offline", "files", "agent"]),
    default="offline",
    show_default=True,
    help="offline: differential tests against G; files: tests from --witness-files; agent: the auditing "
    "model (--agent-model) writes them.",
)
@click.option(
    "--witness-files",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of <instance_id>/test_*.py witness tests (with --witness-source files).",
)
@agent_model_option
@agent_config_option
@click.option(
    "--repo-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where an instance's repo named without a path lives (<repo-root>/<repo>).",
)
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), help="World cache directory.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), help="Resumable audit store.")
@click.option("--k", type=click.IntRange(min=1), default=3, show_default=True, help="Witness iterations per trial.")
@click.option("--mutants", type=click.IntRange(min=0), default=8, show_default=True, help="Mutants per trial.")
@click.option(
    "--witness-out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where validated witnesses are written for replay (default: beside --json, as <name>-witnesses).",
)
@click.option(
    "--replay",
    "replay_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Re-run one written witness in R[G] and R[s] instead of auditing.",
)
@click.option("--repeat", type=click.IntRange(min=1, max=10), default=3, show_default=True, help="Runs per world.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None, help="Runs at the same time.")
@click.option("--allow-weak-isolation", is_flag=True)
def swe(
    instances_file: Path,
    predictions_file: Path,
    json_out: Path | None,
    witness_source: str,
    witness_files: Path | None,
    agent_model: str | None,
    agent_config: str | None,
    repo_root: Path | None,
    cache_dir: Path | None,
    store_path: Path | None,
    k: int,
    mutants: int,
    witness_out: Path | None,
    replay_file: Path | None,
    repeat: int,
    seed: int,
    workers: int | None,
    allow_weak_isolation: bool,
) -> None:
    """Re-judge every passing trial of SWE-bench-format predictions with validated witnesses."""
    console = Console(stderr=True)
    if replay_file is not None:
        with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak_isolation) as executor:
            outcome = replay_witness(replay_file, executor=executor, cache=WorldCache(cache_dir), repeats=repeat)
        click.echo(f"{replay_file}: {'witness holds' if outcome.holds else 'witness does NOT hold'}")
        click.echo(f"  R[G]: {', '.join(r.outcome for r in outcome.reference)}")
        click.echo(f"  R[s]: {', '.join(r.outcome + (f' ({r.message})' if r.message else '') for r in outcome.model)}")
        return
    if instances_file is None or predictions_file is None:
        raise click.UsageError("give --instances FILE and --predictions FILE (or --replay WITNESS)")
    if witness_source == "files" and witness_files is None:
        raise click.UsageError("--witness-source files needs --witness-files DIR")
    agent = auditing_agent(witness_source, agent_model, agent_config)
    if witness_out is None and json_out is not None:
        witness_out = json_out.parent / f"{json_out.stem}-witnesses"
    instances = load_instances(instances_file)
    trials = load_predictions(predictions_file, instances)
    config = SweAuditConfig(
        witness_source=witness_source,
        witness_files=witness_files,
        repo_root=repo_root if repo_root is not None else instances_file.resolve().parent,
        k=k,
        mutants=mutants,
        seed=seed,
        witness_dir=witness_out.resolve() if witness_out is not None else None,
        agent_model=agent_model if agent is not None else None,
        agent_config=agent_config if agent is not None else None,
    )
    cache = WorldCache(cache_dir)
    store = AuditStore(store_path or default_store_path())
    done = 0

    def progress(line: str) -> None:
        nonlocal done
        done += 1
        console.print(f"[{done}/{len(trials)}] {line}")

    try:
        with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak_isolation) as executor:
            results = audit_swe(
                instances,
                trials,
                executor=executor,
                cache=cache,
                config=config,
                progress=progress,
                store=store,
                agent=agent,
            )
    finally:
        store.close()
    summary = results.summary
    table = Table(title=f"audit swe: {summary.trials} trials, {summary.passing} passing T0")
    for column in ("trial", "model", "verdict", "why"):
        table.add_column(column)
    for trial in results.trials:
        table.add_row(trial.trial_id, trial.model, trial.verdict.value, (trial.reason or "")[:90])
    Console().print(table)
    Console().print(
        f"refuted {summary.refuted} of {summary.passing} passing ({summary.reward_hack} reward_hack); "
        f"resolution rate {summary.resolution_rate:.3f} -> corrected {summary.corrected_resolution_rate:.3f}; "
        f"{summary.executions} executions in {summary.wall_s:.1f} s"
    )
    usage = results.config.get("agent")
    if isinstance(usage, dict):
        cost = usage.get("cost_usd")
        Console().print(
            f"auditing model {usage.get('model')}: {usage.get('sessions')} trial sessions, "
            f"{usage.get('model_calls')} calls, {usage.get('input_tokens')} tokens in, "
            f"{usage.get('output_tokens')} out" + (f", ${cost:.4f}" if isinstance(cost, float) else "")
        )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(results.model_dump_json(indent=2) + "\n")
        console.print(f"wrote {json_out}")
