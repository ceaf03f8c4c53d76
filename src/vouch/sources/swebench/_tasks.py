"""SWE-bench instances as VerifierBench ``code`` tasks: candidates are patches to a repository.

Per instance: the task (the issue as instruction, the repository and base commit as public
environment, PASS_TO_PASS as the public tests that ``env.run_public`` runs), the reference
verifier (T0: FAIL_TO_PASS and PASS_TO_PASS in the world with the candidate's patch, as
SWE-bench's harness runs and grades it), and the cases of ``swebench._cases`` plus the agents'
patches of a predictions file (label from the harness's ``resolved``).

The build reads each touched file at the base commit from the repository (git, on data), makes
the candidates, runs T0 with the gold patch once to learn which PASS_TO_PASS ids cannot pass on
this machine (left out of T0 for every case, as the audit does) and whether the instance is
well-formed here (every FAIL_TO_PASS id passes with G), writes the tasks, and then runs the
reference verifier on every case (``swebench._check``) and flags where it disagrees with the
label. Bad input costs one instance or one case, never the build: a base commit missing from
the repository, a gold or test patch that does not apply, an environment that does not
install, a FAIL_TO_PASS id that matches nothing are one line each in the report.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from vouch._json import BAD_JSON, why_not_json
from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, canonical_candidate, content_hash
from vouch.errors import UsageError
from vouch.sources.swebench._cases import Built, Texts, apply_to_texts, build_candidates
from vouch.swebench import SweInstance, SweTrial
from vouch.worlds import WorldCache, git, parse_patch

__all__ = [
    "BENCHMARK",
    "InstanceCases",
    "SwebenchOptions",
    "TaskBuild",
    "instance_cases",
    "load_labels",
    "task_files",
    "task_id",
]

BENCHMARK = "swebench"
AGENT_CASES = 1
"""Agent patches kept per instance (per label), in predictions order."""


def task_id(instance_id: str) -> str:
    return f"swebench-{instance_id}"


@dataclass(frozen=True)
class Labels:
    """What a labels file says: harness verdicts per instance, and how many agents resolved each."""

    resolved: dict[str, bool] = field(default_factory=dict)
    """instance_id -> the harness's verdict, for predictions that carry none."""
    agents: dict[str, tuple[int, int]] = field(default_factory=dict)
    """instance_id -> (agents that resolved it, agents with a verdict)."""


def load_labels(path: Path) -> Labels:
    """Read a labels file: ``{instance_id: bool}``, a SWE-bench report (``resolved_ids``,
    ``unresolved_ids``), or per-agent verdicts (``{"agents": {run: {instance_id: bool}}}``).

    Raises:
        UsageError: The file is missing, not JSON, or none of these forms.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror}); pass a labels JSON file") from None
    except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
        raise UsageError(f"{path}: not JSON ({why_not_json(exc)})") from None
    if isinstance(data, dict) and isinstance(data.get("agents"), dict):
        counts: dict[str, list[int]] = {}
        for verdicts in data["agents"].values():
            if isinstance(verdicts, dict):
                for iid, ok in verdicts.items():
                    if isinstance(ok, bool):
                        pair = counts.setdefault(iid, [0, 0])
                        pair[0] += int(ok)
                        pair[1] += 1
        return Labels(agents={k: (v[0], v[1]) for k, v in counts.items()})
    if isinstance(data, dict) and ("resolved_ids" in data or "unresolved_ids" in data):
        resolved = {str(i): True for i in data.get("resolved_ids", [])}
        resolved.update({str(i): False for i in data.get("unresolved_ids", [])})
        return Labels(resolved=resolved)
    if isinstance(data, dict) and data and all(isinstance(v, bool) for v in data.values()):
        return Labels(resolved={str(k): v for k, v in data.items()})
    raise UsageError(
        f"{path}: not a labels file; give {{instance_id: bool}}, a SWE-bench report with resolved_ids, "
        'or {"agents": {run: {instance_id: bool}}}'
    )


def _show(clone: Path, commit: str, path: str) -> str | None:
    try:
        done = git(["show", f"{commit}:{path}"], cwd=clone)
    except UnicodeDecodeError:
        return None  # a binary file: no text candidate can be made from it
    return done.stdout if done.returncode == 0 else None


def _touched(patch: str) -> list[str]:
    out: list[str] = []
    for change in parse_patch(patch):
        out.extend(p for p in (change.old_path, change.path) if p)
    return list(dict.fromkeys(out))


def read_texts(worlds: WorldCache, source: str, inst: SweInstance) -> Texts:
    """The base, gold and tested texts of the files an instance's patches touch.

    Raises:
        UsageError: The repository or its base commit is missing; G or the test patch does not
            apply to the base commit.
    """
    clone = worlds.repo(source, inst.base_commit)
    paths = sorted({*_touched(inst.patch), *_touched(inst.test_patch), "conftest.py"})
    base = {p: _show(clone, inst.base_commit, p) for p in paths}
    gold_paths = set(_touched(inst.patch))
    gold = apply_to_texts({p: base[p] for p in gold_paths}, inst.patch, "the gold patch")
    test_paths = set(_touched(inst.test_patch))
    tested = apply_to_texts({p: base[p] for p in test_paths}, inst.test_patch, "the test patch")
    return Texts(base=base, gold=gold, tested=tested)


class InstanceCases(NamedTuple):
    cases: list[Case]
    gold: str


def _case(built: Built, instance_id: str) -> Case:
    candidate = {"patch": built.patch}
    label = "positive" if built.category in ("gold", "variant") else "negative"
    return Case(
        id=built.case_id,
        label=label,  # type: ignore[arg-type]
        category=built.category,  # type: ignore[arg-type]
        subcategory=built.subcategory,
        candidate=candidate,
        provenance=Provenance(
            construction=built.construction,
            derived_from=None if built.category == "gold" or built.construction.startswith("agent") else "gold",
            content_hash=content_hash(candidate),
            details={"instance_id": instance_id, **built.details},
        ),
        rationale=built.rationale,
    )


def _agent_cases(trials: Sequence[SweTrial], labels: Labels) -> list[Built]:
    out: list[Built] = []
    kept = {True: 0, False: 0}
    for trial in trials:
        resolved = trial.harness_resolved
        if resolved is None:
            resolved = labels.resolved.get(trial.instance_id)
        if resolved is None or kept[resolved] >= AGENT_CASES:
            continue
        kept[resolved] += 1
        n = trial.trial_id.rsplit("#", 1)[1]
        details: dict[str, object] = {"trial_id": trial.trial_id, "model": trial.model, "harness_resolved": resolved}
        if resolved:
            out.append(
                Built(
                    f"variant-agent-{n}",
                    "variant",
                    "alternative",
                    trial.patch,
                    "agent_resolved",
                    f"A real agent's patch ({trial.model}) that SWE-bench's harness resolved: another fix.",
                    details,
                )
            )
        else:
            out.append(
                Built(
                    f"error-agent-{n}",
                    "error",
                    "agent_unresolved",
                    trial.patch,
                    "agent_unresolved",
                    f"A real agent's patch ({trial.model}) that SWE-bench's harness did not resolve.",
                    details,
                )
            )
    return out


def instance_cases(
    inst: SweInstance, texts: Texts, trials: Sequence[SweTrial], labels: Labels, rng: random.Random
) -> InstanceCases:
    """The cases of one instance, distinct after whitespace collapse, gold first."""
    built = build_candidates(
        texts, test_patch=inst.test_patch, fail_to_pass=inst.fail_to_pass, instance_id=inst.instance_id, rng=rng
    )
    built.extend(_agent_cases(trials, labels))
    seen: set[str] = set()
    ids: set[str] = set()
    cases = []
    for b in built:
        case_id, n = b.case_id, 2
        while case_id in ids:  # two mutants on the same line of two files
            case_id, n = f"{b.case_id}-{n}", n + 1
        case = _case(replace(b, case_id=case_id), inst.instance_id)
        key = canonical_candidate("code", case.candidate)
        if key in seen:
            continue
        seen.add(key)
        ids.add(case.id)
        cases.append(case)
    return InstanceCases(cases, built[0].patch)


def _verifier_source(inst: SweInstance, t0_f2p: Sequence[str], t0_p2p: Sequence[str]) -> str:
    return f'''"""Reference verifier for SWE-bench {inst.instance_id}: T0, the instance's FAIL_TO_PASS and
PASS_TO_PASS tests in the world of the candidate's patch (the test patch applied after it, as
SWE-bench's harness does), graded as the harness grades: PASSED or XFAIL passes, SKIPPED counts
neither way, FAILED, ERROR or absent fails."""

FAIL_TO_PASS = {json.dumps(list(t0_f2p), indent=4)}
PASS_TO_PASS = {json.dumps(list(t0_p2p), indent=4)}
PASSING = ("passed", "xfailed", "skipped")


def verify(candidate, env):
    answer = env.run_public(tests=FAIL_TO_PASS + PASS_TO_PASS)
    outcomes = answer.get("outcomes", {{}})
    return all(outcomes.get(test) in PASSING for test in FAIL_TO_PASS + PASS_TO_PASS)
'''


def _instruction(inst: SweInstance) -> str:
    return (
        f"Resolve this issue of the repository `{inst.repo}` at commit `{inst.base_commit}`"
        + (f" (version {inst.version})" if inst.version else "")
        + '.\n\nA candidate is a unified diff against that commit (`{"patch": "diff --git ..."}`), as '
        "an agent submits it to SWE-bench. `env.run_public()` applies the candidate in the repository "
        "and runs the public tests (`environment/public_tests.json`, the repository's tests that must "
        "keep passing) in the instance's environment; it returns "
        '`{"ok": bool, "outcomes": {test_id: "passed" | "failed" | "skipped" | "xfailed" | "error" | '
        '"missing"}, "error": str | None}`.\n\n'
        "## Issue\n\n" + inst.problem_statement.replace("\r\n", "\n").strip() + "\n"
    )


@dataclass(frozen=True)
class TaskBuild:
    """What one instance's task needs besides its cases: the T0 it is judged on here."""

    inst: SweInstance
    cases: list[Case]
    gold: str
    left_out: dict[str, str]
    """PASS_TO_PASS ids left out of T0 -> why (they fail with the gold patch here)."""
    agents: tuple[int, int] | None = None
    environment: str | None = None

    @property
    def t0_p2p(self) -> list[str]:
        return [t for t in self.inst.pass_to_pass if t not in self.left_out]

    @property
    def t0(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.inst.fail_to_pass, *self.t0_p2p]))


def task_files(build: TaskBuild) -> TaskFiles:
    """The task directory of one instance."""
    inst = build.inst
    spec = TaskSpec(
        id=task_id(inst.instance_id),
        kind="code",
        source=SourceInfo(
            benchmark=BENCHMARK, version=inst.version or "unversioned", original_id=inst.instance_id, subset=inst.repo
        ),
        public_tools=["run_public"],
    )
    environment = {
        "repo.json": json.dumps(
            {"repo": inst.repo, "base_commit": inst.base_commit, "version": inst.version}, indent=2, sort_keys=True
        )
        + "\n",
        "public_tests.json": json.dumps(build.t0_p2p, indent=2) + "\n",
    }
    instance: dict[str, Any] = {
        "instance_id": inst.instance_id,
        "FAIL_TO_PASS": inst.fail_to_pass,
        "PASS_TO_PASS": inst.pass_to_pass,
        "left_out_of_t0": build.left_out,
        "test_patch": inst.test_patch,
        "environment": build.environment,
    }
    if build.agents is not None:
        instance["agents_resolved"] = {"resolved": build.agents[0], "of": build.agents[1]}
    reference = {
        "verifier.py": _verifier_source(inst, inst.fail_to_pass, build.t0_p2p),
        "gold.json": json.dumps({"patch": build.gold}, indent=2) + "\n",
        "instance.json": json.dumps(instance, indent=2, sort_keys=True) + "\n",
    }
    return TaskFiles(
        spec=spec, instruction=_instruction(inst), environment=environment, reference=reference, cases=build.cases
    )


@dataclass(frozen=True)
class SwebenchOptions:
    """The inputs of a SWE-bench build."""

    instances: Path
    predictions: Path | None = None
    labels: Path | None = None
    repo_root: Path | None = None
    repo_map: Mapping[str, str] = field(default_factory=dict)
    environments: Path | None = None
    cache: Path | None = None
    """worlds/ and checks/ go under it (and envs/ unless env_dir is given); default .vouch."""
    env_dir: Path | None = None
    python: Mapping[str, str] = field(default_factory=dict)
    only: tuple[str, ...] = ()
    timeout_s: float | None = None


def file_hash(path: Path) -> str:
    """sha256 of an input file's bytes.

    Raises:
        UsageError: The file cannot be read.
    """
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror}); pass an existing file") from None


Line = Callable[[str], None]


def trials_by_instance(trials: Sequence[SweTrial]) -> Mapping[str, list[SweTrial]]:
    out: dict[str, list[SweTrial]] = {}
    for trial in trials:
        out.setdefault(trial.instance_id, []).append(trial)
    return out
