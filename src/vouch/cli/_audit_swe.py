"""``vouch audit swe``: TestJack's audit of SWE-bench-format predictions, per trial or lightweight."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, TaskID, TextColumn
from rich.table import Table

from vouch.audit._sources import SOURCES
from vouch.audit._swe import SWE_PRELOAD, SweAuditConfig, audit_swe
from vouch.audit._swe_replay import replay_witness
from vouch.cli._agent_options import (
    agent_config_option,
    agent_model_option,
    auditing_agent,
    repo_mode_option,
    rounds_option,
)
from vouch.cli._audit import print_replay, stop_if_failed
from vouch.cli._progress import progress_bar, progress_option
from vouch.errors import VouchError
from vouch.exec import LocalExecutor
from vouch.sources._swebench_rundir import RunDir, read_run_dir
from vouch.store import AuditStore, default_store_path
from vouch.swebench._env import EnvPlan, RepoLocator, plan_environments, siblings_of
from vouch.swebench._harness import (
    HarnessReproduction,
    InstanceReproduction,
    environment_records,
    reproduce_harness,
    summarise_reproduction,
)
from vouch.swebench._instances import SweInstance, SweTrial, load_instances, load_predictions
from vouch.swebench._specs import RepoEnvs, load_environments
from vouch.worlds import EnvCache, WorldCache

__all__ = ["swe"]


@click.command("swe")
@click.option("--instances", "instances_file", type=click.Path(dir_okay=False, path_type=Path), help="Instances JSONL.")
@click.option(
    "--predictions", "predictions_file", type=click.Path(dir_okay=False, path_type=Path), help="Predictions JSONL."
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
@progress_option
def swe(
    instances_file: Path,
    predictions_file: Path,
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
        with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak_isolation) as executor:
            outcome = replay_witness(replay_file, executor=executor, cache=WorldCache(cache_dir), repeats=repeat)
        code = print_replay(replay_file, outcome.reference, outcome.model)
        if code != 0:
            sys.exit(code)
        return
    if run_dir is not None and predictions_file is not None:
        raise click.UsageError("--run-dir takes the place of --predictions: give one of them")
    if instances_file is None or (predictions_file is None and run_dir is None):
        raise click.UsageError("give --instances FILE and --predictions FILE or --run-dir DIR (or --replay WITNESS)")
    if witness_source == "files" and witness_files is None:
        raise click.UsageError("--witness-source files needs --witness-files DIR")
    agent = auditing_agent(witness_source, agent_model, agent_config)
    if witness_out is None and json_out is not None:
        witness_out = json_out.parent / f"{json_out.stem}-witnesses"
    instances = load_instances(instances_file)
    every = list(instances)
    run: RunDir | None = None
    if run_dir is not None:
        run = read_run_dir(run_dir, instances)
        # The audit judges the trials the harness resolved; --harness-only compares every graded one.
        trials = run.trials if harness_only else [t for t in run.trials if t.harness_resolved]
        in_run = {t.instance_id for t in trials}
        instances = [i for i in instances if i.instance_id in in_run]
        console.print(
            f"run {run.run_id} of {run.model}: {len(run.reports)} graded instances "
            f"({sum(r.resolved for r in run.reports.values())} resolved), {len(run.ungraded)} ungraded; "
            f"{len(trials)} trials",
            markup=False,
        )
        if not trials:
            raise click.UsageError(f"--run-dir {run_dir}: no resolved instance to audit (try --harness-only)")
    else:
        trials = load_predictions(predictions_file, instances)
    if only:
        unknown = sorted(set(only) - {i.instance_id for i in instances})
        if unknown:
            raise click.UsageError(f"--only {unknown[0]}: not in {instances_file}")
        instances = [i for i in instances if i.instance_id in set(only)]
        trials = [t for t in trials if t.instance_id in set(only)]
    if harness_only and environments_file is None:
        raise click.UsageError("--harness-only needs --environments FILE (SWE-bench's environment specs)")
    locator = RepoLocator(
        root=repo_root if repo_root is not None else instances_file.resolve().parent,
        mapping=_pairs("--repo-map", repo_map),
        url=repo_url,
    )
    cache = WorldCache(cache_dir)
    sources: dict[str, str] = {}
    plan = None
    if environments_file is not None:
        specs = load_environments(environments_file)
        missing: dict[str, str] = {}
        for inst in instances:
            try:
                sources[inst.instance_id] = locator.locate(inst)
            except VouchError as exc:
                missing[inst.instance_id] = str(exc)
                console.print(escape(f"{inst.instance_id}: error: {exc}"))
        # The other instances of the file choose each version's environment too (its newest base
        # commit), so a run on some of them finds what a run on all of them built.
        siblings, where = siblings_of(instances, every, locator)
        env_sources = sources | where
        plan = _build_environments(
            console,
            instances,
            env_sources,
            specs,
            cache,
            env_dir,
            _pairs("--python", python_paths),
            progress_mode,
            siblings=siblings,
        )
        plan.errors.update(missing)  # each said once: here (not found) or as its run's line (no environment)
    else:
        sources = {i.instance_id: locator.locate(i) for i in instances}
    if harness_only:
        assert plan is not None
        _harness_only(
            console, instances, trials, sources, plan, cache, json_out, workers, allow_weak_isolation, timeout, run
        )
        return
    config = SweAuditConfig(
        mode=mode,
        rounds=rounds,
        witness_source=witness_source,
        witness_files=witness_files,
        repo_root=repo_root if repo_root is not None else instances_file.resolve().parent,
        k=k,
        mutants=mutants,
        seed=seed,
        timeout_s=timeout or (900.0 if plan is not None else 120.0),
        witness_dir=witness_out.resolve() if witness_out is not None else None,
        agent_model=agent_model if agent is not None else None,
        agent_config=agent_config if agent is not None else None,
    )
    store = AuditStore(store_path or default_store_path())
    done = 0

    def progress(line: str) -> None:
        nonlocal done
        done += 1
        console.print(f"[{done}/{len(trials)}] {escape(line)}")

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
                sources=sources or None,
                environments=plan,
            )
    finally:
        store.close()
    summary = results.summary
    table = Table(title=f"audit swe: {summary.trials} trials, {summary.passing} passing T0")
    for column in ("trial", "model", "verdict", "why"):
        table.add_column(column)
    for trial in results.trials:
        table.add_row(*map(escape, (trial.trial_id, trial.model, trial.verdict.value, (trial.reason or "")[:90])))
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
    if run is not None:
        from vouch.cli._audit_rundir import audit_comparison, print_comparison, run_dir_config

        rows = audit_comparison(run, results)
        print_comparison(rows, Console())
        results.config["run_dir"] = {**run_dir_config(run, len(trials)), "tests_status": rows}
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(results.model_dump_json(indent=2) + "\n")
        console.print(f"wrote {json_out}")
    stop_if_failed(results)


def _pairs(option: str, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.UsageError(f"{option} {value!r}: give NAME=VALUE")
        out[name] = path
    return out


def _build_environments(
    console: Console,
    instances: list[SweInstance],
    sources: dict[str, str],
    specs: dict[str, RepoEnvs],
    cache: WorldCache,
    env_dir: Path | None,
    python: dict[str, str],
    progress_mode: str | None = None,
    siblings: list[SweInstance] | None = None,
) -> EnvPlan:
    """Every repo/version's environment, with a progress bar while one is built."""
    envs = EnvCache(env_dir, python=python)
    located = [i for i in instances if i.instance_id in sources]
    with progress_bar(
        progress_mode,
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        console=console,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def step(line: str, done: int, total: int) -> None:
            name = line.split(":", 1)[0]
            if name not in tasks:
                tasks[name] = bar.add_task(f"environment {name}", total=total)
            bar.update(tasks[name], completed=done, total=total, description=f"environment {line}")

        plan = plan_environments(located, sources, specs, cache, envs, progress=step, siblings=siblings or ())
    for name, env in sorted(plan.built.items()):
        how = f"built in {env.build_s:.0f} s ({env.installs} pip installs)" if env.built else "cached"
        console.print(escape(f"environment {name}: Python {env.python_version}, {how}"))
        for note in plan.notes.get(name, ()):
            console.print(escape(f"  note: {note}"))
    for name, failure in sorted(plan.failed.items()):
        console.print(escape(f"environment {name}: failed at {failure.step}: {failure.reason}"))
    return plan


def _harness_only(
    console: Console,
    instances: list[SweInstance],
    trials: list[SweTrial],
    sources: dict[str, str],
    plan: EnvPlan,
    cache: WorldCache,
    json_out: Path | None,
    workers: int | None,
    allow_weak: bool,
    timeout: float | None,
    run: RunDir | None = None,
) -> None:
    import vouch

    located = [i for i in instances if i.instance_id in sources]
    with LocalExecutor(workers=workers, preload=SWE_PRELOAD, allow_weak=allow_weak) as executor:
        records = reproduce_harness(
            located,
            trials,
            executor=executor,
            worlds=cache,
            sources=sources,
            plan=plan,
            timeout_s=timeout or 900.0,
            progress=console.print,
        )
    records.extend(
        InstanceReproduction(
            instance_id=i.instance_id,
            repo=i.repo,
            version=i.version,
            status="error",
            reason=plan.errors.get(i.instance_id, "repository not found"),
            harness_resolved=next((t.harness_resolved for t in trials if t.instance_id == i.instance_id), None),
        )
        for i in instances
        if i.instance_id not in sources
    )
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
    summary = summarise_reproduction(records)
    Console().print(
        f"{summary['both_reproduced']} of {summary['instances']} instances reproduce the harness for gold and agent "
        f"({summary['gold_reproduced']} gold, {summary['agent_reproduced']} agent; {summary['errors']} errors)"
    )
    config: dict[str, object] = {"timeout_s": timeout or 900.0, "environments": sorted(plan.built)}
    if run is not None:
        from vouch.cli._audit_rundir import harness_comparison, print_comparison, run_dir_config

        rows = harness_comparison(run, records)
        print_comparison(rows, Console())
        config["run_dir"] = {**run_dir_config(run, len(trials)), "tests_status": rows}
    if json_out is not None:
        results = HarnessReproduction(
            vouch_version=vouch.__version__,
            config=config,
            instances=records,
            environments=environment_records(plan),
            summary=summary,
        )
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(results.model_dump_json(indent=2) + "\n")
        console.print(f"wrote {json_out}")
