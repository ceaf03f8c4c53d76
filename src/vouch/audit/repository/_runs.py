"""The SWE audit's runs through the engine: mutants, witness search and witness validation.

Every run here executes repository or witness code through ``vouch.swebench.Runner`` (which
also runs T0 in the worlds); what comes back is read as the run's claim.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vouch.audit import _sources
from vouch.audit._form import Found
from vouch.audit._settings import CanaryFailed
from vouch.audit._validation import REPOSITORY, Rejudged, validate, witness_run
from vouch.audit.repository._evidence import best_clause, source_files
from vouch.audit.repository._model import RepoSearchRun
from vouch.audit.repository._witness import (
    Candidate,
    Probe,
    arg_shape,
    disagreement,
    function_targets,
    iteration_batches,
    member_kinds,
    test_file_name,
    witness_source,
)
from vouch.core import (
    ASSERTION_FAILURES,
    ChecklistItem,
    DetectorFlag,
    Evidence,
    RunRecord,
    SurvivingMutant,
    Validation,
    Witness,
)
from vouch.errors import UsageError
from vouch.exec import PytestRecordError, PytestRun, RunResult
from vouch.mutation import kill_matrix, mutate
from vouch.swebench import Runner, unwrap
from vouch.worlds import FileChange, World, parse_patch, read_world_text

if TYPE_CHECKING:
    from vouch.audit.repository._model import Instance, SweAuditConfig
    from vouch.swebench import SweTrial

__all__ = [
    "differences",
    "mutation_evidence",
    "record_witness_run",
    "witnesses_for_trial",
]

_PASSING_FAILURES = ASSERTION_FAILURES
_WITNESS_DIR = "tests"
"""Where witness files go in a run's working directory: a test directory as a repository's own."""
IMPLICIT_CLAUSE = "behaviour of G that no sentence of P states (an implicit requirement)"
"""The clause of a witness that matches no clause of the checklist."""
DIED = "raised run:"
"""How a candidate's answer begins when its probe's run (``Runner.call``) ended before answering:
the trial's process ended inside vouch's differential, on that probe or another of its run."""


def trial_ids(trial: SweTrial) -> dict[str, Any]:
    """The fields of a trial's result that name it."""
    return {"trial_id": trial.trial_id, "task_id": trial.instance_id, "model": trial.model}


def mutation_evidence(
    runner: Runner,
    world: World,
    changes: Sequence[FileChange],
    sources: dict[str, str],
    t0: Sequence[str],
    passing: Sequence[str],
    limit: int,
    rng: random.Random,
) -> tuple[int, list[SurvivingMutant]]:
    """Mutants of the trial's changed lines run under T0; the ones no T0 test kills."""
    pool: list[tuple[str, Any]] = []
    for change in changes:
        try:
            mutants = mutate(sources[change.path], lines=change.added_lines)
        except UsageError:  # a trial file libcst cannot parse: it has no mutants
            mutants = []
        pool.extend((change.path, m) for m in mutants)
    if not pool or limit <= 0:
        return 0, []
    chosen = sorted(rng.sample(range(len(pool)), min(limit, len(pool))))
    picked = [pool[i] for i in chosen]
    # In an environment, T0's ids are the harness parser's (an absolute path cut to its last
    # part): run their files, and read the outcomes by node id.
    argv = list(passing) if runner.env_of(world) is None else sorted({t.split("::", 1)[0] for t in passing})
    results = overlay_runs(runner, world, argv, picked, "mutants")
    by_id = {mutant.id: run for (_, mutant), run in zip(picked, results, strict=True)}

    def oracle(mutant: Any, probe: str) -> str:
        run = by_id[mutant.id]
        if not run.ok:
            return "invalid"
        try:
            tests = PytestRun.from_json(run.value).tests
        except PytestRecordError:
            return "invalid"
        return "same" if probe in tests and tests[probe].outcome == "passed" else "different"

    unique = {m.id: m for _, m in picked}
    matrix = kill_matrix(list(unique.values()), list(passing), oracle)
    files = {m.id: path for path, m in picked}
    survivors = [
        SurvivingMutant(
            id=m.id,
            file=files[m.id],
            line=m.location.line,
            operator=m.operator,
            description=m.description,
            diff=m.diff,
        )
        for m in unique.values()
        if m.id in matrix.undetected()
    ]
    return len(unique), survivors


def overlay_runs(
    runner: Runner, world: World, argv: list[str], mutants: Sequence[tuple[str, Any]], stage: str
) -> list[RunResult]:
    """``argv``'s tests run in ``world`` once per (path, mutant), the mutant's source imported in
    place of the file at ``path`` (one batch, counted under ``stage``)."""
    specs = [
        runner.spec(
            world,
            "run_tests",
            argv,
            {"root": str(world.path), "overlay": {path: mutant.source}},
            name=f"mutant {mutant.id}",
        )
        for path, mutant in mutants
    ]
    return runner.batch(specs, stage)


# --- witnesses ------------------------------------------------------------------------------


def record_witness_run(world: str, run: RunResult, file: str) -> RunRecord:
    """What one run of a witness file did in a world (``_validation.witness_run`` in the repository
    form): pass, fail (by an assertion), error, timeout, or infrastructure (vouch could not run it,
    or could not read what the run reported)."""
    return witness_run(world, run, REPOSITORY, file)


def _validate(
    runs_reference: Sequence[RunResult],
    runs_model: Sequence[RunResult],
    file: str,
    problem: str,
    rejudge: tuple[bool, str],
) -> Validation:
    """The one validation rule (``_validation.validate``) in the repository form, on the runs of
    ``file`` in R[G] and R[s]; a failure on a name ``problem`` (P) never mentions is no refutation."""
    reference = [record_witness_run("reference", r, file) for r in runs_reference]
    model = [record_witness_run("model", r, file) for r in runs_model]
    return validate(reference, model, Rejudged(*rejudge), REPOSITORY, problem)


def _rejudge(probe: Probe, recorded: dict[tuple[str, str], list[Probe]]) -> tuple[bool, str]:
    """Offline re-judging: the input keeps the types of a call T0 made, and R[G] returns on it."""
    peers = recorded.get((probe.file, probe.qualname), [])
    if probe.origin == "t0":
        return True, "the input is one T0 itself passes; R[G] returns on it"
    if probe.origin == "suite":
        return True, "the input is one the repository's own tests make (they pass in R[G]); R[G] returns on it"

    def shape(p: Probe) -> list[str]:
        return [arg_shape(a) for a in p.args] + [f"{k}:{arg_shape(v)}" for k, v in p.kwargs]

    if any(shape(p) == shape(probe) for p in peers):
        return True, "argument types match a call T0 made, and R[G] returns on the input (inside P's preconditions)"
    return False, "the input's argument types match no call T0 made: outside the preconditions P implies"


def offline_repo_search(run: RepoSearchRun) -> Found:
    """The ``offline`` source in the repository form: the differential on the recorded and varied
    T0 calls, at most k generate-and-validate rounds."""
    return witnesses_for_trial(run.inst, run.trial, run.world, run.evidence, run.runner, run.config)


def files_repo_search(run: RepoSearchRun) -> Found:
    """The ``files`` source in the repository form: the user's pytest files of the instance."""
    return Found(_file_witnesses(run.inst, run.trial, run.world, run.evidence, run.runner, run.config))


def witnesses_for_trial(
    inst: Instance,
    trial: SweTrial,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
) -> Found:
    """Candidate witnesses for a passing trial, each validated; at most k rounds (offline).

    A probe whose run ended before it answered (``DIED``) is a candidate like any other: its
    witness asks it where witnesses run. Where the trial gives G's answer there, it died only
    inside vouch's harness (a ``tampering`` flag); such a trial, or one with such probes no
    round asked, is never ``sound`` (``Found.undecided``), though a witness may refute it.
    """
    assert inst.reference is not None
    if _sources.source(config.witness_source).user_files:
        return Found(_file_witnesses(inst, trial, world, evidence, runner, config))
    candidates = differences(inst, world, evidence, runner)
    recorded: dict[tuple[str, str], list[Probe]] = {}
    for p, _ in inst.probes:
        if p.recorded:
            recorded.setdefault((p.file, p.qualname), []).append(p)
    out: list[Witness] = []
    asked: dict[int, Witness] = {}
    outcomes = {id(p): o for p, o in inst.probes}
    for round_no, batch in enumerate(iteration_batches(candidates, config.k), 1):
        evidence.witness_iterations = round_no
        files, meta = probe_tests(inst, evidence.checklist, batch, start=len(out))
        ref_runs, model_runs = runner.witness_runs([inst.reference, world], files, config.repeats, noconftest=True)
        for name, cand, clause in meta:
            validation = _validate(
                ref_runs, model_runs, name, inst.spec.problem_statement, _rejudge(cand.probe, recorded)
            )
            witness = probe_witness(
                name,
                files,
                cand,
                clause,
                actual=cand.actual if not cand.same_result else cand.actual_state,
                defect=_defect(cand),
                why_t0_misses=_why_missed(cand.probe),
                validation=validation,
                replay="not written: pass --witness-out DIR (or --json) to write it for replay",
                iteration=round_no,
            )
            out.append(witness)
            asked[id(cand)] = witness
            if id(cand.probe) in outcomes:
                inst.asked[witness.source] = (cand.probe, outcomes[id(cand.probe)])
        if any(w.validation.valid for w in out):
            break
    return Found(out, undecided=_died_in_the_harness(candidates, asked, evidence))


def _died_in_the_harness(candidates: Sequence[Candidate], asked: dict[int, Witness], evidence: Evidence) -> str | None:
    """Why a trial whose process ended inside vouch's differential is not sound without a
    refuting witness (None when no probe's run ended so): it gave G's answer where the witness
    of such a probe ran (flagged ``tampering``: it dies only inside vouch's harness), or no
    round asked such a probe, so what the trial answers there is unknown."""
    died = [c for c in candidates if isinstance(c.actual, str) and c.actual.startswith(DIED)]
    if not died:
        return None
    why = None
    for cand in died:
        witness = asked.get(id(cand))
        runs = witness.validation.model_runs if witness is not None else []
        if runs and all(r.outcome == "pass" for r in runs):
            why = (
                f"dies only inside vouch's harness: {cand.probe.shown()[:120]} ended its process there "
                f"({cand.actual.removeprefix(DIED).strip()[:120]}), and gives G's answer where its witnesses run"
            )
            flag = DetectorFlag(detector="tampering", file=cand.probe.file, line=None, detail=why)
            evidence.detector_flags.append(flag)
            break
    unasked = [c for c in died if id(c) not in asked]
    if why is None and unasked:
        why = (
            f"undecided: the run of {len(unasked)} probe(s) ended inside vouch's differential "
            f"({str(unasked[0].actual).removeprefix(DIED).strip()[:120]}) and no witness asked them again"
        )
    return why


def probe_tests(
    inst: Instance, checklist: Sequence[ChecklistItem], candidates: Sequence[Candidate], *, start: int = 0
) -> tuple[dict[str, str], list[tuple[str, Candidate, ChecklistItem | None]]]:
    """A witness file per candidate, asserting R[G]'s answer on its input (``test_file_name``
    under the witness directory), and per file its name, candidate and the clause of P it checks."""
    files: dict[str, str] = {}
    meta: list[tuple[str, Candidate, ChecklistItem | None]] = []
    kinds: dict[str, dict[str, str]] = {}
    for n, cand in enumerate(candidates, start):
        clause = best_clause(checklist, [cand.probe.qualname, cand.probe.shown(), cand.expected])
        text = clause.text if clause else IMPLICIT_CLAUSE
        file = cand.probe.file
        if file not in kinds:  # how a member is called, read from R[G]'s source
            kinds[file] = member_kinds(_file_text(inst.reference, file)) if inst.reference is not None else {}
        kind = kinds[file].get(cand.probe.qualname, "function")
        source = witness_source(cand, instance_id=inst.spec.instance_id, clause=text, index=n, kind=kind)
        name = test_file_name(file, source)
        files[f"{_WITNESS_DIR}/{name}"] = source
        meta.append((name, cand, clause))
    return files, meta


def probe_witness(
    name: str, files: dict[str, str], cand: Candidate, clause: ChecklistItem | None, **fields: Any
) -> Witness:
    """The witness of one of ``probe_tests``' files (the offline source), with ``fields`` besides."""
    return Witness(
        file=name,
        source=files[f"{_WITNESS_DIR}/{name}"],
        clause=clause.text if clause else IMPLICIT_CLAUSE,
        clause_id=clause.id if clause else None,
        origin="offline",
        input=cand.probe.shown(),
        expected=cand.expected_literal or cand.expected,
        **fields,
    )


def differences(inst: Instance, world: World, evidence: Evidence, runner: Runner) -> list[Candidate]:
    """The offline differential: the probes of the modules the trial changed on which R[s]
    answers differently from R[G] (one batch in R[s]; R[G]'s answers were recorded once per
    instance): a different result, a raise, or (a method) a receiver left otherwise.

    Sets ``evidence.candidates_tried`` to the number of probes run, and records in
    ``evidence.steps`` how many targets the changed modules have and how many were probeable.
    """
    assert inst.reference is not None
    changed_files = {p.file for p, _ in inst.probes if _file_text(inst.reference, p.file) != _file_text(world, p.file)}
    probes = [(p, o) for p, o in inst.probes if p.file in changed_files]
    outcomes = runner.call(world, [p for p, _ in probes])
    found = (disagreement(p, ref, got) for (p, ref), got in zip(probes, outcomes, strict=True))
    candidates = [c for c in found if c is not None]
    evidence.candidates_tried = len(probes)
    evidence.steps.append(_probe_census(inst, world, len(probes), len(candidates)))
    return candidates


def _probe_census(inst: Instance, world: World, probes: int, disagreeing: int) -> str:
    """One line on the differential's reach in the modules whose text differs between R[G] and
    R[s]: targets (functions and class members), how many had a call (T0's or the repository's
    own tests') rebuilt and answered in R[G], probes run, and disagreements."""
    assert inst.reference is not None
    files = {c.path for c in source_files(parse_patch(inst.spec.patch))} | {p.file for p, _ in inst.probes}
    files = {f for f in files if _file_text(inst.reference, f) != _file_text(world, f)}
    targets = [t for f in sorted(files) for t in function_targets(_file_text(inst.reference, f), f)]
    members = [t for t in targets if "." in t.partition("::")[2]]
    probed = {f"{p.file}::{p.qualname}" for p, _ in inst.probes if p.recorded and p.file in files}
    probed_members = [t for t in probed if "." in t.partition("::")[2]]
    # How many T0 calls the recorder could not rebuild, where the instance kept the count.
    skipped = inst.calls_skipped
    unbuilt = sum(n for t, n in skipped.items() if t.partition("::")[0] in files)
    return (
        f"differential: {len(targets)} targets in the changed modules ({len(members)} class members); "
        f"{len(probed)} probeable (a call of T0 or the repository's own tests rebuilt and answered in R[G]; "
        f"{len(probed_members)} members)"
        + (f"; {unbuilt} T0 calls not rebuildable" if skipped else "")
        + f"; {probes} probes run in R[s], {disagreeing} disagreeing"
    )


def _defect(cand: Candidate) -> str:
    if cand.same_result:
        return (
            f"{cand.probe.shown()} leaves its receiver as {(cand.actual_state or '')[:200]} in the trial; the "
            f"reference leaves {(cand.expected_state or '')[:200]}"
        )
    text = (
        f"{cand.probe.shown()} gives {cand.actual[:200]} in the trial; the reference gives "
        f"{(cand.expected_literal or cand.expected)[:200]}"
    )
    if cand.expected_state is not None:
        text += f", and leaves its receiver as {cand.expected_state[:200]}"
    return text


def _why_missed(probe: Probe) -> str:
    if probe.origin == "t0":
        return "T0 makes this very call, but its assertions do not check the part of the result that differs"
    if probe.origin == "suite":
        return (
            "the repository's own tests beyond T0 make this call (SWE-bench runs only the test patch's "
            "files), and none asserts the part of the result that differs"
        )
    return (
        f"T0 only calls {probe.qualname} on inputs where the trial agrees with G; this one is a T0 call, {probe.origin}"
    )


def _file_text(world: World, path: str) -> str:
    try:
        return read_world_text(world.path, path)
    except (OSError, UnicodeDecodeError):
        return ""


def _file_witnesses(
    inst: Instance,
    trial: SweTrial,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
) -> list[Witness]:
    assert inst.reference is not None and config.witness_files is not None
    folder = Path(config.witness_files) / inst.spec.instance_id
    paths = sorted(folder.glob("test_*.py")) if folder.is_dir() else []
    if not paths:
        return []
    files = {f"{_WITNESS_DIR}/{p.name}": p.read_text(encoding="utf-8") for p in paths}
    touches_conftest = any(f.path.endswith("conftest.py") for f in _all_changes(trial.patch))
    ref_runs, model_runs = runner.witness_runs([inst.reference, world], files, config.repeats, touches_conftest)
    evidence.witness_iterations = 1
    evidence.candidates_tried = len(paths)
    out = []
    for path in paths:
        source = files[f"{_WITNESS_DIR}/{path.name}"]
        clause = best_clause(evidence.checklist, [source])
        validation = _validate(
            ref_runs, model_runs, path.name, inst.spec.problem_statement, (True, "user-supplied witness: trusted as P")
        )
        failing = next((r for r in validation.model_runs if r.outcome != "pass"), None)
        out.append(
            Witness(
                file=path.name,
                source=source,
                clause=clause.text if clause else IMPLICIT_CLAUSE,
                clause_id=clause.id if clause else None,
                origin="files",
                actual=failing.message if failing else None,
                defect=f"{path.name} fails in the trial: {failing.message if failing else 'passes'}",
                why_t0_misses="T0 does not include this check",
                validation=validation,
                replay=f"vouch audit swe --witness-source files (the file is {path})",
            )
        )
    return out


def _all_changes(patch: str) -> list[FileChange]:
    return parse_patch(patch)


CANARY_MODULE = "vouch_canary_double.py"
CANARY_WITNESS = "test_vouch_canary.py"


def canary(runner: Runner, root: Path) -> None:
    """Prove the pool can judge a repository before the audit judges any: a two-file repository
    of vouch's own (``vouch_canary_double``) in a correct and a known-wrong version under ``root``
    (a directory runs can read: the world cache), and a witness that must pass in the first and
    fail by an assertion in the second, through the validation path every witness takes.

    Raises:
        CanaryFailed: It came out otherwise; the message says what the runs did.
    """
    worlds = []
    for name, body in (("correct", "return 2 * n"), ("wrong", "return n + 2")):
        path = root / "canary" / name
        path.mkdir(parents=True, exist_ok=True)
        (path / CANARY_MODULE).write_text(f"def double(n):\n    {body}\n")
        for part in (path, path.parent):
            part.chmod(0o755)
        (path / CANARY_MODULE).chmod(0o644)
        worlds.append(World(path=path, key=f"vouch-canary-{name}", commit="", patches=()))
    files = {
        f"{_WITNESS_DIR}/{CANARY_WITNESS}": "from vouch_canary_double import double\n\n\n"
        "def test_double():\n    assert double(5) == 10\n"
    }
    specs = runner.witness_specs(worlds, files, 1, noconftest=True)
    results = [unwrap(spec, r) for spec, r in zip(specs, runner.executor.run_batch(specs), strict=True)]
    validation = _validate(results[:1], results[1:], CANARY_WITNESS, "", (True, "vouch's own canary"))
    if not validation.valid:
        raise CanaryFailed(f"the pool failed the canary: its witness did not validate ({validation.reason})")
