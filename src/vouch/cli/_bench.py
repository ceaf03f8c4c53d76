"""``vouch bench score | baselines | compare``: verifiers scored on hidden cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch import corpora
from vouch.bench import (
    BASELINES,
    check_pool,
    load_tasks,
    load_verifiers,
    paired_difference,
    preload_for,
    raise_if_errors,
    results_object,
    run_verifiers,
    sealed_executor,
    trivial_rows,
)
from vouch.cli._progress import progress_bar, progress_option
from vouch.cli._terminal import escape
from vouch.core import Envelope
from vouch.errors import UsageError
from vouch.exec import LocalExecutor, hide_in_runs
from vouch.sources import answer_data_paths
from vouch.store import Store, default_store_path

_COLUMNS = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


@click.group("bench")
def bench() -> None:
    """Score executable verifiers on hidden labelled cases (VerifierBench)."""


def _read_v4v(path: Path | None) -> dict[str, str] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the V4V result {path}: {exc}") from None
    if data.get("kind") != "v4v" or not isinstance(data.get("tasks"), list):
        raise UsageError(f"{path} is not a V4V result (kind must be 'v4v', with a tasks list)")
    excluded = {}
    for row in data["tasks"]:
        if not row.get("retained", True):
            failed = [name for name, check in (row.get("checks") or {}).items() if not check.get("passed", True)]
            excluded[row["task_id"]] = "failed V4V: " + (", ".join(failed) or "excluded")
    return excluded


def hide_outputs(store_path: Path, *outputs: Path | None) -> None:
    """Hide vouch's data and this command's store and outputs from every run it starts."""
    corpora.hide_data_from_runs()
    store = store_path.resolve()
    hide_in_runs(*(f"{store}{suffix}" for suffix in ("", "-wal", "-shm", "-journal")))
    hide_in_runs(*(p.resolve() for p in outputs if p is not None))


def _envelope(kind: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
    return Envelope(kind=kind, vouch_version=vouch.__version__, seed=seed, config=config).model_dump(mode="json")


def _emit(result: dict[str, Any], json_out: Path | None, console: Console) -> None:
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2) + "\n")
        console.print(escape(f"wrote {json_out}"))


def _summary_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title)
    for column in ("verifier", "BAnorm", "95% CI", "TPR", "TNR", "attack FPR", "all-reject tasks"):
        table.add_column(column, justify="right" if column != "verifier" else "left")

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    ordered = sorted(rows.items(), key=lambda kv: -(kv[1]["ba_norm"] if kv[1]["ba_norm"] is not None else -1e9))
    for name, r in ordered:
        ci = r.get("ba_norm_ci95") or [None, None]
        table.add_row(
            escape(name),
            "-" if r["ba_norm"] is None else f"{r['ba_norm']:.1f}",
            "-" if ci[0] is None else f"[{ci[0]:.1f}, {ci[1]:.1f}]",
            pct(r["tpr"]),
            pct(r["tnr"]),
            pct(r["fpr_attack"]),
            str(r["all_reject"]["tasks"]),
        )
    return table


@bench.command("score")
@click.option("--tasks", "tasks_dir", required=True, type=click.Path(path_type=Path))
@click.option(
    "--verifiers",
    "verifiers_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="<DIR>/<task_id>/verifier.py per task.",
)
@click.option("--v4v", "v4v_file", type=click.Path(path_type=Path), help="Leave out the tasks V4V excluded.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the results here.")
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Decision store (default .vouch/store.sqlite or $VOUCH_STORE).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap intervals.")
@click.option("--name", default=None, help="Name of this verifier set (default: the verifiers directory).")
@click.option("--hide", multiple=True, type=click.Path(path_type=Path), help="More paths verifiers must not read.")
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def score_command(
    tasks_dir: Path,
    verifiers_dir: Path,
    v4v_file: Path | None,
    json_out: Path | None,
    store_path: Path | None,
    seed: int,
    name: str | None,
    hide: tuple[Path, ...],
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Run each task's verifier on its hidden cases and compute the metrics."""
    console = Console(stderr=True)
    tasks = load_tasks(tasks_dir)
    verifiers = load_verifiers(verifiers_dir, tasks)
    excluded = _read_v4v(v4v_file)
    store = Store(store_path or default_store_path())
    hide_outputs(store.path, json_out)
    hidden = [str(tasks_dir.resolve()), str(store.path.resolve()), *(str(p.resolve()) for p in hide)]
    hidden += answer_data_paths()  # the installed benchmarks' own answers
    if json_out is not None:
        hidden.append(str(json_out.resolve()))
    with (
        sealed_executor(tasks, allow_weak=allow_weak_isolation) as executor,  # verifiers under test
        progress_bar(progress_mode, *_COLUMNS, console=console) as bar,
    ):
        check_pool(executor)
        job = bar.add_task("deciding cases", total=None)
        rows, ran = run_verifiers(
            executor, store, tasks, verifiers, hide=hidden, progress=lambda d, t: bar.update(job, completed=d, total=t)
        )
    set_name = name or verifiers_dir.name
    config = {
        "tasks": str(tasks_dir),
        "verifiers": str(verifiers_dir),
        "v4v": str(v4v_file) if v4v_file else None,
        "store": str(store.path),
        "decisions_run": ran,
        "decisions_reused": len(rows) - ran,
    }
    result = _envelope("bench", seed, config) | results_object(rows, name=set_name, seed=seed, excluded=excluded)
    store.close()
    Console().print(_summary_table(f"{len(tasks)} tasks, {len(rows)} cases ({ran} decided now)", {set_name: result}))
    _emit(result, json_out, console)
    raise_if_errors(len(result["errors"]))


@bench.command("baselines")
@click.option("--tasks", "tasks_dir", required=True, type=click.Path(path_type=Path))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--allow-weak-isolation", is_flag=True)
@progress_option
def baselines_command(
    tasks_dir: Path,
    json_out: Path | None,
    store_path: Path | None,
    seed: int,
    allow_weak_isolation: bool,
    progress_mode: str | None,
) -> None:
    """Score the trivial verifiers and the reference verifiers on the same cases."""
    console = Console(stderr=True)
    tasks = load_tasks(tasks_dir)
    results: dict[str, dict[str, Any]] = {}
    for baseline in BASELINES[:-1]:
        results[baseline] = results_object(trivial_rows(baseline, tasks, seed), name=baseline, seed=seed)
    references = {t.id: (t.root / "reference" / "verifier.py").read_text() for t in tasks}
    store = Store(store_path or default_store_path())
    hide_outputs(store.path, json_out)
    with (
        LocalExecutor(preload=preload_for(tasks), allow_weak=allow_weak_isolation) as executor,
        progress_bar(progress_mode, *_COLUMNS, console=console) as bar,
    ):
        check_pool(executor)
        job = bar.add_task("reference verifiers", total=None)
        rows, ran = run_verifiers(
            executor, store, tasks, references, progress=lambda d, t: bar.update(job, completed=d, total=t)
        )
    store.close()
    results["reference"] = results_object(rows, name="reference", seed=seed)
    config = {"tasks": str(tasks_dir), "store": str(store.path), "decisions_run": ran}
    out = _envelope("baselines", seed, config) | {"verifiers": results}
    Console().print(_summary_table(f"baselines on {len(tasks)} tasks", results))
    _emit(out, json_out, console)
    raise_if_errors(len(results["reference"]["errors"]))


@bench.command("compare")
@click.argument("run_a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
def compare_command(run_a: Path, run_b: Path, seed: int, json_out: Path | None) -> None:
    """Per-task BAnorm differences (B - A) with a paired bootstrap interval."""
    a, b = (_read_bench(p) for p in (run_a, run_b))
    diff = paired_difference(a, b, seed=seed)
    console = Console()
    ci = diff["ba_norm_diff_ci95"] or [None, None]
    console.print(
        f"BAnorm {a.get('verifier_set')} {_num(a['ba_norm'])} -> {b.get('verifier_set')} {_num(b['ba_norm'])}: "
        f"difference {_num(diff['ba_norm_diff'], '+.1f')} (95% CI [{_num(ci[0], '+.1f')}, {_num(ci[1], '+.1f')}]) "
        f"over {diff['tasks_compared']} tasks",
        markup=False,
    )
    table = Table(title="largest per-task differences")
    for column in ("task", "A", "B", "B - A"):
        table.add_column(column)
    rows = [r for r in diff["per_task"] if r["diff"] is not None]
    for row in [*rows[:5], *rows[-5:]] if len(rows) > 10 else rows:
        table.add_row(
            escape(str(row["task_id"])), _num(row["a"], ".0f"), _num(row["b"], ".0f"), _num(row["diff"], "+.0f")
        )
    console.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(_envelope("bench-compare", seed, {"a": str(run_a), "b": str(run_b)}) | diff))


def _num(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _read_bench(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if data.get("kind") != "bench":
        raise UsageError(f"{path} is not a bench result (kind {data.get('kind')!r}, expected 'bench')")
    return data
