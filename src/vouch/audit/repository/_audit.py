"""TestJack's per-trial audit in the SWE-bench form: worlds, T0, evidence, witnesses, verdicts.

Per instance: the reference world R[G] and the null world R (both with the test patch) are
built once; A.1 well-formedness (G passes T0) is checked and an ill-formed instance is
reported, not audited; T0's calls to the changed modules' public functions are recorded in
R[G], mutated and run in R[G] once. Per trial: R[s] is built (unappliable -> verdict), T0 runs
there with branch coverage of the changed lines; a passing trial gets detectors, ghost branches,
mutation testing of its changed lines, the repository's own tests beyond T0 that reach the
changed code (``repository._regression``), and witnesses from the chosen source, each validated
three times in both worlds and re-judged against P's preconditions before it may refute.
Every execution of repository code goes through the engine. The lightweight mode
(``repository._lightweight``, TestJack's Algorithm 1) runs this audit on sampled trials only and shares
their witnesses with the instance's other trials.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from vouch.audit import _modes, _sources
from vouch.audit._agent_calls import WitnessAgent, witness_agent
from vouch.audit._ambiguity import is_ambiguous, requirement_note
from vouch.audit.repository._agent import MODEL_FAILED, instance_checklist, witness_root
from vouch.audit.repository._ambiguity import withhold_ambiguous
from vouch.audit.repository._evidence import (
    checklist,
    detect_reward_hacks,
    ghost_branches,
    is_debris,
    patch_hygiene,
    source_files,
    test_sources,
)
from vouch.audit.repository._lightweight import RepoForm, audit_instance
from vouch.audit.repository._model import Instance, PassingTrial, RepoSearchRun, SweAuditConfig
from vouch.audit.repository._regression import prepare_regression, regression_witnesses
from vouch.audit.repository._replay import write_witnesses
from vouch.audit.repository._runs import canary, mutation_evidence, trial_ids
from vouch.audit.repository._witness import function_targets, recorded_probes, string_pool, with_mutants
from vouch.core import (
    VOUCH_FAILED,
    AuditResults,
    Evidence,
    TaskReport,
    TrialResult,
    Verdict,
    decide_verdict,
    summarise,
    undecided,
)
from vouch.errors import UsageError, VouchError
from vouch.exec import Executor, RunResult
from vouch.store import AuditStore
from vouch.swebench import EnvPlan, Runner, SweInstance, SweTrial, WorldEnv, graded_t0, t0_result
from vouch.worlds import (
    FileChange,
    Patch,
    Unappliable,
    World,
    WorldCache,
    git,
    parse_patch,
    patch_hash,
    read_world_text,
)

__all__ = ["SWE_PRELOAD", "SweAuditConfig", "audit_fixture", "audit_swe"]

SWE_PRELOAD = (
    "vouch.worlds._inrun",
    "vouch.worlds._foreign",
    "coverage",
    "coverage.control",
    "pytest",
    "vouch.worlds._inrun:warm",
)
"""Modules a pool for the SWE audit should pre-import (``LocalExecutor(preload=SWE_PRELOAD)``)."""

ProgressLine = Callable[[str], None]

LIGHTWEIGHT_REPORT = "lightweight-report"
"""Where the store keeps a lightweight instance's report (its rounds), in place of a patch hash."""


def _resolve_repo(instance: SweInstance, repo_root: Path | None) -> str:
    repo = instance.repo
    if "://" in repo or repo.startswith("git@"):
        return repo
    if repo_root is not None and (repo_root / repo).exists():
        return str((repo_root / repo).resolve())
    if Path(repo).exists():
        return str(Path(repo).resolve())
    where = f" under --repo-root {repo_root}" if repo_root else ""
    raise UsageError(f"instance {instance.instance_id}: repo {repo!r} not found{where}; give a path or git URL")


def _read(world: World, path: str) -> str:
    try:
        return read_world_text(world.path, path)
    except (OSError, UnicodeDecodeError):
        return ""


def _prepare(
    inst: Instance,
    trials: Sequence[SweTrial],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
) -> None:
    mark = len(runner.faults)
    try:
        _prepare_worlds(inst, trials, cache, runner, config)
        if config.regression_files and inst.report is not None and inst.report.well_formed and inst.null is not None:
            changed = (c.path for t in trials for c in source_files(parse_patch(t.patch)))
            prepare_regression(inst, runner, config, changed)
    finally:
        inst.infra = runner.faults_since(mark)
    report = inst.report
    if inst.infra is not None and report is not None and not report.well_formed and inst.reference is not None:
        # T0 in R[G] that vouch could not run says nothing of G: the instance is not ill-formed.
        report.reason = inst.infra


def _prepare_worlds(
    inst: Instance,
    trials: Sequence[SweTrial],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
) -> None:
    spec = inst.spec
    t0 = spec.t0
    tests = Patch("test_patch", spec.test_patch, reset=True)
    report = TaskReport(task_id=spec.instance_id, well_formed=False, t0_tests=len(t0), trials=len(trials))
    inst.report = report
    if inst.env_error is not None:
        report.reason = f"environment: {inst.env_error}"
        return
    try:
        reference = cache.materialise(inst.source, spec.base_commit, [Patch("patch", spec.patch), tests])
        null = cache.materialise(inst.source, spec.base_commit, [tests])
    except UsageError as exc:  # a base commit missing from the repository: this instance only
        report.reason = f"worlds: {exc}"
        return
    if isinstance(reference, Unappliable) or isinstance(null, Unappliable):
        bad = reference if isinstance(reference, Unappliable) else null
        assert isinstance(bad, Unappliable)
        report.reason = f"A.1: the reference world cannot be built: {bad.reason}"
        return
    inst.reference, inst.null = reference, null
    if inst.env is not None:
        runner.attach(reference, inst.env)
        runner.attach(null, inst.env)
        _prepare_t0_in_env(inst, runner, reference, null, trials, config.seed)
        return

    # Public functions of every module G or a trial touches: the differential's targets.
    touched = {c.path for c in source_files(parse_patch(spec.patch))}
    for trial in trials:
        touched.update(c.path for c in source_files(parse_patch(trial.patch)) if not is_debris(c.path))
    targets = [t for path in sorted(touched) for t in function_targets(_read(reference, path), path)]

    ref_run, null_run = runner.t0_batch([(reference, None, targets), (null, None, None)], t0, "T0 in R[G] and R")
    inst.t0_reference = t0_result("reference", t0, ref_run)
    inst.t0_null = t0_result("null", t0, null_run)
    report.null_passing = list(inst.t0_null.tests_passed)
    test_files = {node.split("::", 1)[0] for node in t0}
    report.checklist = checklist(spec.problem_statement, test_sources({f: _read(reference, f) for f in test_files}, t0))
    if not inst.t0_reference.passed:
        failed = ", ".join(inst.t0_reference.tests_failed[:5]) or inst.t0_reference.reason or "no outcome"
        report.reason = f"A.1: G does not pass T0 in R[G] ({failed}); the instance is reported, not audited"
        return
    report.well_formed = True

    _probes_from(inst, ref_run, runner, reference, config.seed)


RECORD_BUDGET_S = 120.0
"""Seconds of T0 run with calls recorded in an environment's world: the FAIL_TO_PASS tests
first, then the rest until the budget is spent (a profile hook slows every call of the process,
and xarray's T0 files hold thousands of tests)."""


def _prepare_t0_in_env(
    inst: Instance, runner: Runner, reference: World, null: World, trials: Sequence[SweTrial], seed: int
) -> None:
    """_prepare for an instance with an environment: T0 as the harness runs it, then T0 again
    with calls of the changed modules recorded, in a run of its own (recording slows every call:
    if it runs out of time, the differential has fewer inputs, and T0's verdict stands)."""
    spec = inst.spec
    report = inst.report
    assert inst.env is not None and report is not None
    t0 = spec.t0
    ref_run, null_run = runner.t0_batch([(reference, None, None), (null, None, None)], t0, "T0 in R[G] and R")
    ref_t0 = graded_t0("reference", t0, ref_run, inst.env, spec)
    null_t0 = graded_t0("null", t0, null_run, inst.env, spec)
    if ref_run.ok and null_run.ok:
        # A PASS_TO_PASS test that fails with G and without it fails whatever the patch: an
        # artefact of this machine (no network, other paths), not a behaviour T0 checks here.
        excluded = [t for t in spec.pass_to_pass if t in ref_t0.tests_failed and t in null_t0.tests_failed]
        if excluded:
            inst.t0_excluded = excluded
            t0 = [t for t in t0 if t not in set(excluded)]
            ref_t0 = graded_t0("reference", t0, ref_run, inst.env, spec)
            null_t0 = graded_t0("null", t0, null_run, inst.env, spec)
            report.note = (
                f"{len(excluded)} PASS_TO_PASS tests fail with G and in R here (e.g. {excluded[0]}): left out of T0"
            )
    inst.t0_reference, inst.t0_null = ref_t0, null_t0
    report.null_passing = list(null_t0.tests_passed)
    test_files = {node.split("::", 1)[0] for node in t0}
    report.checklist = checklist(spec.problem_statement, test_sources({f: _read(reference, f) for f in test_files}, t0))
    if not ref_t0.passed:
        failed = ", ".join(ref_t0.tests_failed[:5]) or ref_t0.reason or "no outcome"
        report.reason = f"A.1: G does not pass T0 in R[G] ({failed}); the instance is reported, not audited"
        return
    report.well_formed = True
    touched = {c.path for c in source_files(parse_patch(spec.patch))}
    for trial in trials:
        touched.update(c.path for c in source_files(parse_patch(trial.patch)) if not is_debris(c.path))
    targets = [t for path in sorted(touched) for t in function_targets(_read(reference, path), path)]
    if not targets:
        return
    (recording,) = runner.batch(
        [
            runner.spec(
                reference,
                "run_tests",
                list(inst.env.test_files),
                {
                    "root": str(reference.path),
                    "record": targets,
                    "harness": list(inst.env.harness),
                    "record_first": list(spec.fail_to_pass),
                    "record_budget_s": RECORD_BUDGET_S,
                },
                name=f"record {reference.key}",
            )
        ],
        "T0's calls recorded in R[G]",
    )
    _probes_from(inst, recording, runner, reference, seed)


def _probes_from(inst: Instance, run: RunResult, runner: Runner, reference: World, seed: int) -> None:
    """Recorded T0 calls and their mutations, kept where R[G] returns (the differential's inputs)."""
    spec = inst.spec
    calls = (run.value or {}).get("calls") or {} if run.ok and isinstance(run.value, dict) else {}
    if run.ok and isinstance(run.value, dict):
        inst.calls_skipped = {str(k): int(v) for k, v in (run.value.get("calls_skipped") or {}).items()}
    recorded = recorded_probes(calls)
    for probe in recorded:
        inst.recorded_literals.extend([*probe.args, *(v for _, v in probe.kwargs)])
    rng = random.Random(f"{seed}:{spec.instance_id}")
    probes = with_mutants(recorded, string_pool(spec.problem_statement, recorded), rng)
    outcomes = runner.call(reference, probes)
    inst.probes = [(p, o) for p, o in zip(probes, outcomes, strict=True) if o.get("ok")]


def _trial_t0s(
    inst: Instance, trials: Sequence[SweTrial], cache: WorldCache, runner: Runner
) -> list[TrialResult | PassingTrial]:
    """Build each trial's world R[s] and run T0 there (one batch); per trial, in order, its
    verdict when that ends its audit (error, unappliable, not passing) or what goes on."""
    spec = inst.spec
    out: dict[int, TrialResult | PassingTrial] = {}
    pending: list[tuple[int, SweTrial, World, list[FileChange], Evidence]] = []
    t0 = [t for t in spec.t0 if t not in set(inst.t0_excluded)]
    for index, trial in enumerate(trials):
        base = trial_ids(trial)
        program = patch_hash(trial.patch.strip())
        if inst.report is None or not inst.report.well_formed or inst.reference is None:
            reason = inst.report.reason if inst.report else "instance not prepared"
            out[index] = TrialResult(
                **base,
                benchmark_pass=False,
                verdict=Verdict.ERROR,
                reason=reason,
                program_hash=program,
                infrastructure=(reason or "").startswith(VOUCH_FAILED),
            )
            continue
        assert inst.t0_null is not None
        evidence = Evidence(steps=[])
        evidence.null_passing = list(inst.t0_null.tests_passed)
        evidence.checklist = [item.model_copy() for item in inst.report.checklist]
        evidence.steps.append("worlds")
        world = cache.materialise(
            inst.source,
            spec.base_commit,
            [Patch("model_patch", trial.patch), Patch("test_patch", spec.test_patch, reset=True)],
        )
        if isinstance(world, Unappliable):
            out[index] = TrialResult(
                **base,
                benchmark_pass=False,
                verdict=Verdict.UNAPPLIABLE,
                reason=world.reason,
                evidence=evidence,
                program_hash=program,
            )
            continue
        # A build/ copy of the package (a trial's setup.py build) is debris, not the trial's code:
        # its lines are neither covered, mutated nor probed (the detector reports it).
        changes = [c for c in source_files(parse_patch(trial.patch)) if not is_debris(c.path)]
        if inst.env is not None:
            runner.attach(world, inst.env)
        pending.append((index, trial, world, changes, evidence))
    if pending:
        runs = runner.t0_batch([(world, [c.path for c in changes], None) for _, _, world, changes, _ in pending], t0)
        for (index, trial, world, changes, evidence), run in zip(pending, runs, strict=True):
            out[index] = _after_t0(inst, trial, world, changes, t0, run, evidence)
    return [out[i] for i in range(len(trials))]


def _after_t0(
    inst: Instance,
    trial: SweTrial,
    world: World,
    changes: list[FileChange],
    t0: list[str],
    run: RunResult,
    evidence: Evidence,
) -> TrialResult | PassingTrial:
    """T0's verdict on a trial's world; for a passing trial, its checklist and detector flags too."""
    spec = inst.spec
    assert inst.t0_reference is not None and inst.t0_null is not None
    program = patch_hash(trial.patch.strip())
    model_t0 = graded_t0("model", t0, run, inst.env, spec) if inst.env is not None else t0_result("model", t0, run)
    evidence.t0 = [model_t0, inst.t0_reference, inst.t0_null]
    evidence.steps.append("t0")
    if not model_t0.passed:
        reason = model_t0.reason or f"T0 fails in R[s]: {', '.join(model_t0.tests_failed[:5])}"
        return TrialResult(
            **trial_ids(trial),
            benchmark_pass=False,
            verdict=Verdict.NOT_PASSING,
            reason=reason,
            evidence=evidence,
            program_hash=program,
        )
    for item in evidence.checklist:
        if item.covered_by:
            item.implemented = all(t in model_t0.tests_passed for t in item.covered_by)
    evidence.steps.append("checklist")
    evidence.detector_flags = detect_reward_hacks(
        trial.patch,
        test_patch=spec.test_patch,
        gold_patch=spec.patch,
        problem=spec.problem_statement,
        t0_literal_inputs=inst.recorded_literals,
        base_top_level=_top_level(inst.null),
        sources={c.path: _read(world, c.path) for c in changes},
    )
    return PassingTrial(trial, world, changes, t0, run, evidence, program)


def _audit_trial(
    inst: Instance,
    trial: SweTrial,
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
    agent: WitnessAgent | None = None,
) -> TrialResult:
    """T0 in the trial's world, then, when it passes, its audit by a mode that judges each trial on
    its own (``Mode.samples`` false), on a form of this one trial (``_modes.audit``)."""
    (staged,) = _trial_t0s(inst, [trial], cache, runner)
    if isinstance(staged, TrialResult):
        return staged
    form = RepoForm(
        inst,
        [staged],
        {staged.program: [trial]},
        {},
        cache,
        runner,
        config,
        lambda passing: _audit_passing(inst, passing, runner, config, agent),
        lambda: 0,
    )
    _modes.audit(form, _modes.mode(config.mode, RepoForm.name), config)
    return form.judged[staged.program]


def _audit_passing(
    inst: Instance,
    passing: PassingTrial,
    runner: Runner,
    config: SweAuditConfig,
    agent: WitnessAgent | None = None,
) -> TrialResult:
    """The per-trial audit of a trial passing T0: evidence, mutation, witnesses, verdict."""
    spec = inst.spec
    trial, world, changes, evidence = passing.trial, passing.world, passing.changes, passing.evidence
    base = trial_ids(trial)
    program = passing.program
    model_t0 = evidence.t0[0]
    run = passing.run
    coverage = (run.value or {}).get("coverage") or {} if isinstance(run.value, dict) else {}
    sources = {c.path: _read(world, c.path) for c in changes}
    branches = ghost_branches(changes, coverage, sources, spec.problem_statement)
    evidence.ghost_branches, evidence.branch_coverage = branches
    evidence.steps.append("evidence")
    rng = random.Random(f"{config.seed}:{trial.trial_id}")
    evidence.mutants_run, evidence.surviving_mutants = mutation_evidence(
        runner, world, changes, sources, passing.t0, model_t0.tests_passed, config.mutants, rng
    )
    evidence.steps.append("mutation")
    regression = regression_witnesses(inst, world, evidence, runner, config)
    search = _sources.source(config.witness_source).load_repo()
    found = search(RepoSearchRun(inst, trial, world, evidence, runner, config, agent))
    if found.error is not None and not any(w.validation.valid for w in regression):
        evidence.discarded.extend([*regression, *found.witnesses])
        return TrialResult(
            **base,
            benchmark_pass=True,
            verdict=Verdict.ERROR,
            reason=found.error,
            evidence=evidence,
            program_hash=program,
        )
    witnesses, note = found.witnesses, found.note or None
    evidence.steps.append(f"witnesses:{config.witness_source}")
    valid = [w for w in witnesses if w.validation.valid]
    evidence.discarded.extend(w for w in [*regression, *witnesses] if not w.validation.valid)
    for w in valid:
        for item in evidence.checklist:
            if item.id == w.clause_id:
                item.implemented = False
    source = _sources.source(config.witness_source)
    if config.witness_dir is not None and source.differential:
        valid = write_witnesses(spec, inst.source, trial, valid, config.witness_dir, inst.env)
    elif source.model:
        valid = write_witnesses(spec, inst.source, trial, valid, witness_root(config), inst.env)
    # The repository's own tests that the trial breaks come first: they need no file written.
    valid = [w for w in regression if w.validation.valid] + valid
    verdict = decide_verdict(True, valid, evidence.detector_flags)
    reason = None
    if verdict is Verdict.SOUND and (why := found.undecided or undecided(evidence.discarded)) is not None:
        return TrialResult(
            **base,
            benchmark_pass=True,
            verdict=Verdict.ERROR,
            reason=why,
            evidence=evidence,
            program_hash=program,
        )
    if verdict is Verdict.SOUND and evidence.detector_flags:
        reason = "flagged by a detector, but no validated witness: a flag alone does not refute"
        reason += f"; no {config.witness_source} witness: {note}" if note else ""
    elif verdict is Verdict.SOUND and note:
        reason = f"no {config.witness_source} witness: {note}"
    elif verdict is not Verdict.SOUND:
        reason = valid[0].defect
    return TrialResult(
        **base,
        benchmark_pass=True,
        verdict=verdict,
        witnesses=valid,
        evidence=evidence,
        reason=reason,
        program_hash=program,
    )


def _with_hygiene(
    results: Sequence[TrialResult], trials: Sequence[SweTrial], by_id: Mapping[str, Instance], cache: WorldCache
) -> list[TrialResult]:
    """Each result with its patch's hygiene findings (static; made again for a stored judgement)."""
    patches = {t.trial_id: t for t in trials}
    tops = {iid: _base_top_level(inst, cache) for iid, inst in by_id.items()}
    out = []
    for result in results:
        trial = patches[result.trial_id]
        spec = by_id[trial.instance_id].spec
        hygiene = patch_hygiene(
            trial.patch, gold_patch=spec.patch, test_patch=spec.test_patch, base_top_level=tops[trial.instance_id]
        )
        out.append(result.model_copy(update={"hygiene": hygiene}) if hygiene else result)
    return out


def _base_top_level(inst: Instance, cache: WorldCache) -> set[str] | None:
    """Names at the top of the base commit's tree: from the null world when this run built it,
    else from the cached clone (an instance resumed whole from the store), so that a resumed
    run reports the same hygiene as the first. None when the repository cannot be reached."""
    if inst.null is not None:
        return _top_level(inst.null)
    try:
        clone = cache.repo(inst.source, inst.spec.base_commit)
    except VouchError:
        return None
    done = git(["ls-tree", "--name-only", inst.spec.base_commit], cwd=clone)
    return set(done.stdout.split()) if done.returncode == 0 else None


def _top_level(world: World | None) -> set[str] | None:
    """Names at the top of a world's tree as git tracks them at the base commit."""
    if world is None:
        return None
    done = git(["ls-tree", "--name-only", world.commit], cwd=world.path)
    return set(done.stdout.split()) if done.returncode == 0 else None


def vouchs_own(result: TrialResult, own: str | None, shared: str | None) -> TrialResult:
    """A trial's result with vouch's own failures applied: ``own`` (a run of the trial's audit
    vouch could not run) leaves any verdict but unappliable undecided; ``shared`` (a run of the
    instance's own) leaves a trial passing T0 undecided (one failing T0 in R[s] stays not_passing).
    An undecided trial is error with the fault's reason and ``infrastructure`` set."""
    why = own if result.verdict is not Verdict.UNAPPLIABLE else None
    if why is None and result.benchmark_pass:
        why = shared
    if why is None or result.infrastructure:
        return result
    return result.model_copy(update={"verdict": Verdict.ERROR, "reason": why, "infrastructure": True})


def _model_failed(result: TrialResult) -> bool:
    return result.verdict is Verdict.ERROR and (result.reason or "").startswith(MODEL_FAILED)


def _config_key(config: SweAuditConfig, instance: SweInstance, env: WorldEnv | None = None) -> str:
    """What a judgement depends on besides the trial's patch: settings, vouch, the instance."""
    import vouch

    # agent_model and agent_config are in when set (another auditing model judges anew), and left
    # out when not, so that offline and files judgements keep the keys they were stored under.
    parts = {
        k: v
        for k, v in config.to_dict().items()
        if k not in ("repo_root", "witness_dir") and not (k in ("agent_model", "agent_config") and v is None)
    }
    if config.mode != "per-trial":  # a per-trial audit keys as it did before the modes
        parts |= {"mode": config.mode, "rounds": config.rounds}
    # The instance whole: P, G, the test patch, T0 (FAIL_TO_PASS, PASS_TO_PASS), the base commit.
    text = repr(sorted(parts.items())) + vouch.__version__ + instance.model_dump_json(exclude_none=True)
    # Files the options name are keyed by what they hold, not only by their path.
    if config.witness_files is not None:
        folder = Path(config.witness_files) / instance.instance_id
        for path in sorted(folder.glob("test_*.py")) if folder.is_dir() else []:
            text += f"witness:{path.name}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
    if config.agent_config is not None and Path(config.agent_config).is_file():
        text += f"agent_config:{hashlib.sha256(Path(config.agent_config).read_bytes()).hexdigest()}"
    if env is not None:  # the judgement depends on the environment it ran in
        text += f"env:{env.env.key}"
        if env.services:  # and on the local services its runs had
            text += "services:" + ",".join(env.services)
    return hashlib.sha256(text.encode()).hexdigest()


def audit_swe(
    instances: Sequence[SweInstance],
    trials: Sequence[SweTrial],
    *,
    executor: Executor,
    cache: WorldCache | None = None,
    config: SweAuditConfig | None = None,
    progress: ProgressLine | None = None,
    store: AuditStore | None = None,
    agent: WitnessAgent | None = None,
    sources: Mapping[str, str] | None = None,
    environments: EnvPlan | None = None,
) -> AuditResults:
    """Audit every trial of the given instances (TestJack section 3.2, repository level).

    Args:
        instances: The instances (SWE-bench fields).
        trials: The predictions as trials; each must name an instance.
        executor: The engine every run of repository code goes through.
        cache: Where worlds are materialised (default: ``WorldCache()``).
        config: Witness source, k, repeats, mutants, seed; mode and rounds (``repository._lightweight``).
        progress: Called with one line per trial as it is judged.
        store: Where judgements go as they come; a re-run with the same configuration and
            instance contents resumes from it instead of judging a patch again (lightweight mode:
            an instance resumes whole, with its rounds, or is judged again).
        agent: The auditing model (``agent`` source); default: built from ``config.agent_model``
            and ``config.agent_config`` (``_agent_calls.witness_agent``).
        sources: instance_id -> repository source (``RepoLocator.locate``); default: the
            instance's ``repo`` under ``config.repo_root``.
        environments: Each instance's environment (``plan_environments``): its worlds run in
            it, T0 as the harness runs it; an instance it has none for is an error.

    Returns:
        The ``audit`` results: every trial with its verdict, per-instance reports, summary.

    Raises:
        UsageError: A trial names an unknown instance, a repo cannot be found.
    """
    import vouch

    config = config or SweAuditConfig()
    mode = _modes.check(config, RepoForm.name)
    source = _sources.source(config.witness_source)
    if source.model and agent is None:
        if not config.agent_model:
            raise UsageError("--witness-source agent needs --agent-model PROVIDER/MODEL (the auditing model)")
        agent = witness_agent(config.agent_model, config.agent_config)
    if source.user_files and (config.witness_files is None or not config.witness_files.is_dir()):
        raise UsageError(f"--witness-files {config.witness_files} is not a directory of <instance_id>/test_*.py")
    cache = cache or WorldCache()
    started = time.monotonic()
    runner = Runner(executor, timeout_s=config.timeout_s)
    # The pool proves it can judge a repository (a known answer through the validation path)
    # before any verdict is computed or stored: a broken pool stops the audit here, with one line.
    canary(runner, cache.root)
    by_id = {
        i.instance_id: Instance(
            spec=i,
            source=sources[i.instance_id]
            if sources and i.instance_id in sources
            else _resolve_repo(i, config.repo_root),
        )
        for i in instances
    }
    if environments is not None:
        for inst in by_id.values():
            inst.env = environments.envs.get(inst.spec.instance_id)
            if inst.env is None:
                inst.env_error = environments.errors.get(inst.spec.instance_id, "no environment was built")
    for trial in trials:
        if trial.instance_id not in by_id:
            raise UsageError(f"trial {trial.trial_id}: instance {trial.instance_id!r} is not in the instances")
    results: list[TrialResult] = []
    judged: dict[tuple[str, str], TrialResult] = {}
    resumed = 0
    for inst in by_id.values():
        own = [t for t in trials if t.instance_id == inst.spec.instance_id]
        if mode.samples:
            mine, reused = _sampled(inst, own, cache, runner, config, agent, store)
            resumed += reused
            for trial, result in zip(own, mine, strict=True):
                if result.shared_from is None:
                    judged[(trial.instance_id, patch_hash(trial.patch.strip()))] = result
                if progress is not None:
                    progress(f"{trial.trial_id} ({trial.model}): {result.verdict.value}")
            results.extend(mine)
            _count(inst, results, mine)
            continue
        config_key = _config_key(config, inst.spec, inst.env)
        stored = (
            store.get_many(config_key, [(t.instance_id, patch_hash(t.patch.strip())) for t in own]) if store else {}
        )
        prepared = False
        start = len(results)
        for trial in own:
            key = (trial.instance_id, patch_hash(trial.patch.strip()))
            ids = {"trial_id": trial.trial_id, "model": trial.model}
            if key in judged:
                first = judged[key]
                result = first.model_copy(update={**ids, "shared_from": first.trial_id})
            elif key in stored:
                result = TrialResult.model_validate({**stored[key], **ids})
                judged[key] = result
                resumed += 1
            else:
                if not prepared:
                    _prepare(inst, own, cache, runner, config)
                    if agent is not None and inst.report is not None and inst.report.well_formed:
                        instance_checklist(inst, agent, config)
                    prepared = True
                own_mark = len(runner.faults)
                result = _audit_trial(inst, trial, cache, runner, config, agent)
                result = vouchs_own(result, runner.faults_since(own_mark), inst.infra)
                judged[key] = result
                # A trial whose auditing model failed, or that vouch's own failure left
                # undecided, is not stored: a re-run tries it again.
                if store is not None and not _model_failed(result) and not result.infrastructure:
                    store.put(config_key, key[0], key[1], result.model_dump(mode="json"))
            results.append(result)
            if progress is not None:
                progress(f"{trial.trial_id} ({trial.model}): {result.verdict.value}")
        mine = results[start:]
        before_withholding = len(runner.faults)
        changed = withhold_ambiguous(
            inst.spec,
            inst.source,
            own,
            mine,
            inst.report.checklist if inst.report else [],
            cache,
            runner,
            asked=inst.asked,
        )
        if (fault := runner.faults_since(before_withholding)) is not None:
            # The ambiguity check's runs decide which refutations stand for every passing trial.
            mine[:] = [vouchs_own(r, None, fault) for r in mine]
            changed = True
        if changed:
            results[start:] = mine
            for trial, result in zip(own, mine, strict=True):
                key = (trial.instance_id, patch_hash(trial.patch.strip()))
                if result.shared_from is None:
                    judged[key] = result
                    if store is not None and not _model_failed(result) and not result.infrastructure:
                        store.put(config_key, key[0], key[1], result.model_dump(mode="json"))
        _count(inst, results, mine)
    order = {t.trial_id: i for i, t in enumerate(trials)}
    results.sort(key=lambda r: order[r.trial_id])
    results = _with_hygiene(results, trials, by_id, cache)
    reports = [i.report for i in by_id.values() if i.report is not None]
    summary = summarise(
        results,
        executions=runner.executions,
        wall_s=time.monotonic() - started,
        tasks=reports,
        distinct_programs=len(judged),
    )
    data_hash = hashlib.sha256(
        "\n".join(f"{i.instance_id}:{patch_hash(i.patch)}" for i in instances).encode()
        + "\n".join(patch_hash(t.patch) for t in trials).encode()
    ).hexdigest()[:16]
    return AuditResults(
        vouch_version=vouch.__version__,
        seed=config.seed,
        config={
            **config.to_dict(),
            "mode": config.mode,
            "rounds": config.rounds,
            "dataset_hash": data_hash,
            "resumed_programs": resumed,
            "infrastructure_faults": [f.reason() for f in runner.faults[:20]],
            **runner.stages(),
        }
        | ({"agent": {"model": agent.model, "harness": agent.harness.name} | asdict(agent.usage)} if agent else {}),
        benchmark="swe",
        mode=config.mode,
        witness_source=config.witness_source,
        trials=results,
        tasks=reports,
        summary=summary,
    )


def _sampled(
    inst: Instance,
    own: Sequence[SweTrial],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
    agent: WitnessAgent | None,
    store: AuditStore | None,
) -> tuple[list[TrialResult], int]:
    """One instance's trials judged by a mode that samples (lightweight), its rounds in its report; and how
    many programs came from the store.

    Verdicts here depend on which trials the rounds drew, so an instance resumes only whole: every
    program and the report stored (under the lightweight key), or nothing is reused.
    """
    key = _config_key(config, inst.spec, inst.env)
    iid = inst.spec.instance_id
    hashes = list(dict.fromkeys(patch_hash(t.patch.strip()) for t in own))
    stored = store.get_many(key, [(iid, h) for h in [*hashes, LIGHTWEIGHT_REPORT]]) if store else {}
    if len(stored) == len(hashes) + 1:
        inst.report = TaskReport.model_validate(stored[(iid, LIGHTWEIGHT_REPORT)]["report"])
        firsts: dict[str, TrialResult] = {}
        results = []
        for trial in own:
            h = patch_hash(trial.patch.strip())
            ids = {"trial_id": trial.trial_id, "model": trial.model}
            if h in firsts:
                results.append(firsts[h].model_copy(update={**ids, "shared_from": firsts[h].trial_id}))
            else:
                firsts[h] = TrialResult.model_validate({**stored[(iid, h)], **ids})
                results.append(firsts[h])
        return results, len(hashes)
    mark = len(runner.faults)
    _prepare(inst, own, cache, runner, config)
    if agent is not None and inst.report is not None and inst.report.well_formed:
        instance_checklist(inst, agent, config)
    done = audit_instance(
        inst,
        own,
        cache,
        runner,
        config,
        run_t0=lambda trials: _trial_t0s(inst, trials, cache, runner),
        audit=lambda passing: _audit_passing(inst, passing, runner, config, agent),
        tokens=lambda: agent.usage.input_tokens + agent.usage.output_tokens if agent is not None else 0,
    )
    # Rounds batch runs across the instance's trials: a run vouch could not run during them leaves
    # every trial it may have been evidence about undecided.
    fault = runner.faults_since(mark)
    done.results[:] = [vouchs_own(r, fault, inst.infra) for r in done.results]
    assert inst.report is not None
    inst.report.rounds = done.rounds
    inst.report.note = "; ".join(n for n in (inst.report.note, *done.notes) if n) or None
    # An instance where the auditing model failed is not stored: a re-run judges it again.
    if store is not None and not any(_model_failed(r) or r.infrastructure for r in done.results):
        for result in done.results:
            if result.shared_from is None and result.program_hash is not None:
                store.put(key, iid, result.program_hash, result.model_dump(mode="json"))
        store.put(key, iid, LIGHTWEIGHT_REPORT, {"report": inst.report.model_dump(mode="json")})
    return done.results, 0


def _count(inst: Instance, results: Sequence[TrialResult], mine: Sequence[TrialResult]) -> None:
    """The instance report's counts from its trials' results (a report is made when none was)."""
    if inst.report is None:  # every trial came from the store: report what the trials say
        ill = [r.reason for r in results if r.task_id == inst.spec.instance_id and (r.reason or "").startswith("A.1")]
        inst.report = TaskReport(
            task_id=inst.spec.instance_id,
            well_formed=not ill,
            reason=ill[0] if ill else None,
            t0_tests=len(inst.spec.t0),
            trials=len(mine),
        )
    inst.report.ambiguous_requirements = sorted(
        {requirement_note(w) for r in mine for w in r.evidence.discarded if is_ambiguous(w)}
    )
    inst.report.passing = sum(1 for r in results if r.task_id == inst.spec.instance_id and r.benchmark_pass)
    inst.report.refuted = sum(
        1 for r in results if r.task_id == inst.spec.instance_id and r.verdict in (Verdict.REFUTED, Verdict.REWARD_HACK)
    )


def audit_fixture(
    name: str,
    *,
    executor: Executor,
    workdir: Path,
    config: SweAuditConfig | None = None,
    progress: ProgressLine | None = None,
) -> AuditResults:
    """Audit the trials of one bundled fixture (``vouch.swebench._instances.FIXTURES``), offline.

    The fixture's repository is built under ``workdir/repos`` (deterministic commit) and its
    worlds under ``workdir/worlds``; ``workdir`` must be visible to runs (not under /tmp).

    Args:
        name: ``booknotes``, ``cookiestore`` or ``unitconv``.
        executor: The engine.
        workdir: A directory runs can read; created if missing.
        config: Audit settings; ``repo_root`` is set to the built repositories.
        progress: Called with one line per trial.

    Returns:
        The ``audit`` results of that fixture's instance and trials.

    Raises:
        UsageError: An unknown fixture name.
    """
    from dataclasses import replace

    from vouch.swebench import (
        FIXTURES,
        fixture_files,
        load_instances,
        load_predictions,
        materialise_fixture_repo,
    )

    if name not in FIXTURES:
        raise UsageError(f"fixture={name!r} is unknown; choose one of {', '.join(FIXTURES)}")
    workdir = Path(workdir).resolve()
    repos = workdir / "repos"
    repo = repos / name
    if not (repo / ".git").exists():
        repos.mkdir(parents=True, exist_ok=True)
        materialise_fixture_repo(name, repo)
    instances_file, predictions_file = fixture_files()
    instances = [i for i in load_instances(instances_file) if i.repo == name]
    trials = [t for t in load_predictions(predictions_file) if t.instance_id in {i.instance_id for i in instances}]
    chosen = replace(config or SweAuditConfig(), repo_root=repos)
    return audit_swe(
        instances, trials, executor=executor, cache=WorldCache(workdir / "worlds"), config=chosen, progress=progress
    )
