"""``vouch audit swe``: TestJack's audit of SWE-bench-format predictions, per trial or lightweight.

The command parses its options into a ``SweCommand``, calls ``vouch.audit.run_swe_command`` and
prints what it returns."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, TaskID, TextColumn
from rich.table import Table

from vouch.audit import (
    REPOSITORY,
    SOURCES,
    SweCommand,
    SweCommandResult,
    WitnessAgent,
    replay_swe_witness,
    replayed,
    run_swe_command,
)
from vouch.cli._agent_options import (
    agent_config_option,
    agent_model_option,
    auditing_agent,
    repo_mode_option,
    rounds_option,
)
from vouch.cli._audit import corrected_text, model_table, print_replay, stop_if_failed
from vouch.cli._audit_rundir import print_comparison
from vouch.cli._progress import Bar, progress_bar, progress_option
from vouch.cli._terminal import escape, shown

__all__ = ["swe"]


@click.command("swe")
@click.option("--instances", "instances_file", type=click.Path(dir_okay=False, path_type=Path), help="Instances JSONL.")
@click.option(
    "--predictions",
    "predictions_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Predictions JSONL; repeat it for several agents, audited as one run (each model's rates in the summary).",
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="A SWE-bench harness run (logs/run_evaluation/<run_id>/<model>) instead of --predictions: its resolved "
    "instances' patch.diff are the trials, and its tests_status is compared with vouch's run of T0.",
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the audit results.")
@repo_mode_option
@rounds_option("instance")
@click.option(
    "--witness-source",
    type=click.Choice([name for name, s in SOURCES.items() if s.repo_search is not None]),
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
@click.option(
    "--repo-map",
    multiple=True,
    metavar="OWNER/NAME=PATH",
    help="Where one repository is (a clone or bare mirror); repeatable.",
)
@click.option(
    "--repo-url",
    metavar="TEMPLATE",
    help="Clone repositories not found locally from this URL ({repo}, {owner}, {name}).",
)
@click.option(
    "--environments",
    "environments_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="SWE-bench's environment specs (environments.json): run each instance in a venv of its repo/version.",
)
@click.option(
    "--env-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where environments are built and cached (default: $VOUCH_CACHE/envs or .vouch/envs).",
)
@click.option(
    "--python",
    "python_paths",
    multiple=True,
    metavar="VERSION=PATH",
    help="The interpreter for a spec's Python version (default: pyenv, then uv); '*=PATH' for all.",
)
@click.option("--only", multiple=True, metavar="INSTANCE_ID", help="Audit only these instances; repeatable.")
@click.option(
    "--harness-only",
    is_flag=True,
    help="Only reproduce the harness's verdicts (T0 in R, R[G], R[s] as SWE-bench runs it); needs --environments.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=None,
    help="Seconds per T0 run (default 120; 900 in environments).",
)
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), help="World cache directory.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), help="Resumable audit store.")
@click.option("--k", type=click.IntRange(min=1), default=3, show_default=True, help="Witness iterations per trial.")
@click.option("--mutants", type=click.IntRange(min=0), default=8, show_default=True, help="Mutants per trial.")
@click.option(
    "--regression-files",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="The repository's own test files beyond T0 run in R, R[G] and each R[s] (nearest the change first; 0: none).",
)
@click.option(
    "--gold-mutants",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Mutants of the gold patch run under T0 and the related tests (what T0 misses of G; 0: none).",
)
@click.option(
    "--witness-out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where validated witnesses are written for replay (default: beside --json, as <name>-witnesses).",
)
@click.option(
    "--replay",
    "replay_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Re-run one written witness in R[G] and R[s] instead of auditing, judged by the audit's rule: "
    "exit 0 holds, 1 does NOT hold, 3 vouch could not run it, 4 undecided (a run did not complete).",
)
@click.option("--repeat", type=click.IntRange(min=1, max=10), default=3, show_default=True, help="Runs per world.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None, help="Runs at the same time.")
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def swe(
    instances_file: Path,
    predictions_files: tuple[Path, ...],
    run_dir: Path | None,
    json_out: Path | None,
    mode: str,
    rounds: int,
    witness_source: str,
    witness_files: Path | None,
    agent_model: str | None,
    agent_config: str | None,
    repo_root: Path | None,
    repo_map: tuple[str, ...],
    repo_url: str | None,
    environments_file: Path | None,
    env_dir: Path | None,
    python_paths: tuple[str, ...],
    only: tuple[str, ...],
    harness_only: bool,
    timeout: float | None,
    cache_dir: Path | None,
    store_path: Path | None,
    k: int,
    mutants: int,
    regression_files: int,
    gold_mutants: int,
    witness_out: Path | None,
    replay_file: Path | None,
    repeat: int,
    seed: int,
    workers: int | None,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Re-judge the passing trials of SWE-bench-format predictions with validated witnesses (per trial, lightweight)."""
    console = Console(stderr=True)
    if replay_file is not None:
        _replay(replay_file, cache_dir=cache_dir, repeat=repeat, workers=workers, allow_weak=allow_weak_isolation)
        return
    _check_trials_given(instances_file, predictions_files, run_dir)
    if SOURCES[witness_source].user_files and witness_files is None:
        raise click.UsageError("--witness-source files needs --witness-files DIR")
    agent = auditing_agent(witness_source, agent_model, agent_config)
    if witness_out is None and json_out is not None:
        witness_out = json_out.parent / f"{json_out.stem}-witnesses"
    command = SweCommand(
        instances_file=instances_file,
        predictions_files=tuple(predictions_files),
        run_dir=run_dir,
        only=only,
        harness_only=harness_only,
        mode=mode,
        rounds=rounds,
        witness_source=witness_source,
        witness_files=witness_files,
        witness_dir=witness_out,
        agent_model=agent_model,
        agent_config=agent_config,
        repo_root=repo_root,
        repo_map=_pairs("--repo-map", repo_map),
        repo_url=repo_url,
        environments_file=environments_file,
        env_dir=env_dir,
        python=_pairs("--python", python_paths),
        timeout_s=timeout,
        cache_dir=cache_dir,
        store_path=store_path,
        k=k,
        mutants=mutants,
        regression_files=regression_files,
        gold_mutants=gold_mutants,
        seed=seed,
        workers=workers,
        allow_weak_isolation=allow_weak_isolation,
    )
    found = _run(command, agent, progress_mode, console)
    _report(found, json_out, console)


def _replay(replay_file: Path, *, cache_dir: Path | None, repeat: int, workers: int | None, allow_weak: bool) -> None:
    """``--replay WITNESS``: re-run it in R[G] and R[s], judged by the audit's rule; exit with its code."""
    outcome = replay_swe_witness(
        replay_file, cache_dir=cache_dir, repeats=repeat, workers=workers, allow_weak_isolation=allow_weak
    )
    code = print_replay(replay_file, replayed(outcome.reference, outcome.model, REPOSITORY))
    if code != 0:
        sys.exit(code)


def _check_trials_given(instances_file: Path | None, predictions_files: tuple[Path, ...], run_dir: Path | None) -> None:
    if run_dir is not None and predictions_files:
        raise click.UsageError("--run-dir takes the place of --predictions: give one of them")
    if instances_file is None or (not predictions_files and run_dir is None):
        raise click.UsageError("give --instances FILE and --predictions FILE or --run-dir DIR (or --replay WITNESS)")


def _run(
    command: SweCommand, agent: WitnessAgent | None, progress_mode: str | None, console: Console
) -> SweCommandResult:
    """The audit (or the harness reproduction) with a line per note and per trial judged, and a
    bar per environment being built."""
    bar = _EnvironmentBar(progress_mode, console)

    def note(line: str) -> None:
        bar.close()
        console.print(shown(line), markup=False)

    def trial_done(done: int, total: int, line: str) -> None:
        console.print(f"[{done}/{total}] {escape(line)}")

    try:
        return run_swe_command(command, agent=agent, note=note, environment_step=bar.step, trial_done=trial_done)
    finally:
        bar.close()


def _report(found: SweCommandResult, json_out: Path | None, console: Console) -> None:
    """What the run found, printed and written to ``json_out``; then exit 3 when it cannot stand."""
    if found.reproduction is not None:
        _print_reproduction(found)
    else:
        _print_audit(found)
    if found.comparison is not None:
        print_comparison(found.comparison, Console())
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(found.to_json())
        console.print(f"wrote {escape(str(json_out))}")
    if found.results is not None:
        stop_if_failed(found.results)


def _pairs(option: str, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.UsageError(f"{option} {value!r}: give NAME=VALUE")
        out[name] = path
    return out


class _EnvironmentBar:
    """A progress bar per environment being built: opened at the first step, closed before the
    next line is printed."""

    def __init__(self, mode: str | None, console: Console) -> None:
        self._mode = mode
        self._console = console
        self._bar: Bar | None = None
        self._tasks: dict[str, TaskID] = {}

    def step(self, line: str, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = progress_bar(
                self._mode,
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                console=self._console,
            ).__enter__()
        name = line.split(":", 1)[0]
        if name not in self._tasks:
            self._tasks[name] = self._bar.add_task(f"environment {name}", total=total)
        self._bar.update(self._tasks[name], completed=done, total=total, description=f"environment {line}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
            self._tasks = {}


def _print_audit(found: SweCommandResult) -> None:
    results = found.results
    assert results is not None
    summary = results.summary
    table = Table(title=f"audit swe: {summary.trials} trials, {summary.passing} passing T0")
    for column in ("trial", "model", "verdict", "why"):
        table.add_column(column)
    for trial in results.trials:
        table.add_row(*map(escape, (trial.trial_id, trial.model, trial.verdict.value, (trial.reason or "")[:90])))
    Console().print(table)
    Console().print(
        f"refuted {summary.refuted} of {summary.passing} passing ({summary.reward_hack} reward_hack); "
        f"resolution rate {summary.resolution_rate:.3f} -> corrected {corrected_text(summary, '.3f')}; "
        f"{summary.executions} executions in {summary.wall_s:.1f} s"
    )
    if (per_model := model_table(summary)) is not None:
        Console().print(per_model)
    if summary.hygiene:
        kinds = ", ".join(f"{kind} {n}" for kind, n in summary.hygiene.items())
        Console().print(f"patch hygiene (findings beside the verdicts, never refutations): {kinds}")
    usage = results.config.get("agent")
    if isinstance(usage, dict):
        cost = usage.get("cost_usd")
        Console().print(
            f"auditing model {usage.get('model')}: {usage.get('sessions')} trial sessions, "
            f"{usage.get('model_calls')} calls, {usage.get('input_tokens')} tokens in, "
            f"{usage.get('output_tokens')} out" + (f", ${cost:.4f}" if isinstance(cost, float) else "")
        )


def _print_reproduction(found: SweCommandResult) -> None:
    reproduction = found.reproduction
    assert reproduction is not None
    records = reproduction.instances
    table = Table(title=f"harness reproduction: {len(records)} instances")
    for column in ("instance", "gold", "agent", "harness", "agrees", "why not"):
        table.add_column(column)
    for r in records:
        why = r.reason or "; ".join(f"{d.world}: {d.test} [{d.cause}]" for d in r.differences[:3])
        table.add_row(
            escape(r.instance_id),
            "-" if r.gold is None else str(r.gold.resolved),
            "-" if r.agent is None else str(r.agent.resolved),
            str(r.harness_resolved),
            "yes" if r.gold_reproduced and r.agent_reproduced else "no",
            escape(why[:100]),
        )
    Console().print(table)
    summary = reproduction.summary
    Console().print(
        f"{summary['both_reproduced']} of {summary['instances']} instances reproduce the harness for gold and agent "
        f"({summary['gold_reproduced']} gold, {summary['agent_reproduced']} agent; {summary['errors']} errors)"
    )
