"""TestJack's lightweight audit in the repository form (section 3.3, Algorithm 1 in appendix A.3).

Per instance, once it is prepared (R[G] and R built, A.1 checked, T0's calls recorded in R[G]):

1. **Task analysis**, from P, T0 and G only, never a trial (``task_analysis``). Offline: the
   gold patch's changed behaviour that T0 does not reach. T0's recorded calls into the files the
   gold patch changes, varied (``mutate_call``), are run in R (the base without G); where R
   answers otherwise than R[G], G changed that behaviour, and no T0 call checks it on that input:
   a test asserting R[G]'s answer there, kept when it passes every run in R[G], joins T1 (up to
   ``T1_SIZE``). Every trial's world R[s] runs T0 in one batch; the trials passing it form the
   active set, one entry per distinct patch (a patch weighs as many trials as share it), and
   replay T1's tests in one batch: a trial failing one by the validation rule is refuted, unless
   most models' trials fail it and P only implies it (A.2: a prompt defect, reported, withheld).
   The agent and files sources add no task-level tests (T1 = T0), and the report says so.
   What kills a mutant of G's added lines that T0 lets through (SWE-ABS's idea) joins T1 too:
   with the offline source, a probe on which the mutant answers otherwise than G
   (``RegressionSuite.probe_killers``, written and kept as above); whatever the source, the
   repository's own related tests that kill one (``RegressionSuite.killers``), run by node id
   in every passing trial's world and refuting by the regression stage's rule
   (``_replay_killers``).
2. **Rounds** (``rounds`` per instance): sample a trial uniformly from the active set with
   ``random.Random(f"{seed}:{instance_id}")``, run the whole per-trial audit on it, withhold its
   witnesses of ambiguous requirements (A.2, voted on by every passing trial), and replay the rest
   on every other active trial's world in one batch, R[G] alongside. A trial is refuted only by
   the per-trial validation rule (each witness passes every run in R[G] and fails every run in
   R[s] by an assertion); the re-judging against P was done when the witness was confirmed. The
   sampled trial leaves the active set either way; the loop stops when the set is empty.

Trials never sampled nor refuted stay ``sound``, with a reason saying they were not audited on
their own. Every stage is a ``RoundRecord`` in the instance's report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from vouch.audit import _modes, _sources
from vouch.audit._ambiguity import AMBIGUOUS, rho_over_models, skipped_by, voting_models, withheld_from
from vouch.audit._form import Judged, Replayed
from vouch.audit.repository._agent import witness_root
from vouch.audit.repository._ambiguity import withhold_ambiguous
from vouch.audit.repository._regression import regression_witnesses
from vouch.audit.repository._replay import write_witnesses
from vouch.audit.repository._runs import (
    _WITNESS_DIR,
    _rejudge,
    _validate,
    probe_tests,
    probe_witness,
    record_witness_run,
    trial_ids,
)
from vouch.audit.repository._witness import Candidate, Probe, iteration_batches, test_file_name
from vouch.core import WITNESS_STAGES, RoundRecord, TrialResult, Validation, Verdict, Witness, decide_verdict
from vouch.errors import UsageError
from vouch.worlds import patch_hash

if TYPE_CHECKING:
    from vouch.audit.repository._model import Instance, PassingTrial, SweAuditConfig
    from vouch.swebench import Runner, SweTrial
    from vouch.worlds import WorldCache

__all__ = ["T1_NOTE", "AuditOne", "LightweightInstance", "RepoForm", "RunT0", "audit_instance"]

RunT0 = Callable[[Sequence["SweTrial"]], list["TrialResult | PassingTrial"]]
"""T0 in each trial's world, in one batch (``repository._audit._trial_t0s`` on the instance): per trial, the
verdict that ends its audit (error, unappliable, not passing) or what its audit goes on from."""
AuditOne = Callable[["PassingTrial"], TrialResult]
"""The per-trial audit of a trial passing T0 (``repository._audit._audit_passing`` with the run's settings)."""

T1_NOTE = (
    "lightweight: task analysis adds no tests (T1 = T0): the witness sources write tests from a trial "
    "(offline: its differences from G), so every test shared here was confirmed on a sampled trial"
)
"""The instance report's note on task analysis (round 0)."""
_NOT_WRITTEN = "not written: pass --witness-out DIR (or --json) to write it for replay"
T1_SIZE = 8
"""Tests task analysis adds to T0 per instance (offline), at most ``T1_PER_FUNCTION`` per function."""
T1_PER_FUNCTION = 2
ANALYSED = "task analysis"
"""``Witness.found_on`` of a T1 test."""


@dataclass
class LightweightInstance:
    """One instance's lightweight audit: its trials' results, in input order, and its rounds."""

    results: list[TrialResult]
    rounds: list[RoundRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the instance's report should say of the run (task analysis, errors of sampled audits)."""


class RepoForm:
    """The repository form as the audit's modes drive it (``_form.AuditForm``), one instance at a
    time: trials are the distinct patches passing T0 (``PassingTrial``; a trial failing T0 has its
    verdict before the form is made), tests are witness files (``Witness``). Judgements are kept
    by patch hash in ``judged``."""

    name = "repository"

    def __init__(
        self,
        inst: Instance,
        passing: Sequence[PassingTrial],
        programs: dict[str, list[SweTrial]],
        judged: dict[str, TrialResult],
        cache: WorldCache,
        runner: Runner,
        config: SweAuditConfig,
        audit: AuditOne,
        tokens: Callable[[], int],
    ) -> None:
        self.inst = inst
        self.voters = list(passing)
        """Every distinct patch passing T0: all of them vote in the A.2 rule."""
        self.programs = programs
        self.judged = judged
        self.cache = cache
        self.runner = runner
        self.config = config
        self.audit = audit
        self._tokens = tokens

    def trials(self) -> Sequence[PassingTrial]:
        return self.voters

    def passing(self) -> Mapping[str, Sequence[PassingTrial]]:
        return {self.inst.spec.instance_id: self.voters}

    def executions(self) -> int:
        return self.runner.executions

    def tokens(self) -> int:
        return self._tokens()

    def task(self, trial: PassingTrial) -> str:
        return self.inst.spec.instance_id

    def trial_id(self, trial: PassingTrial) -> str:
        return trial.trial.trial_id

    def program(self, trial: PassingTrial) -> str:
        return trial.program

    def weight(self, trial: PassingTrial) -> int:
        return len(self.programs[trial.program])

    def analyse(self, tasks: Sequence[str]) -> dict[str, list[Witness]]:
        return {t: task_analysis(self.inst, self.runner, self.config) for t in tasks}

    def baseline(self, tasks: Sequence[str]) -> dict[str, list[Witness]]:
        raise UsageError("the static baseline is built for the function form (vouch audit humaneval)")

    def judge(self, trials: Sequence[PassingTrial], *, share: bool) -> list[Judged[Witness]]:
        """Each trial's whole per-trial audit, in turn. With ``share``, its witnesses of ambiguous
        requirements are withheld (A.2: every passing trial of the instance votes), so none is
        shared; without, the instance's A.2 vote runs once every trial is judged
        (``repository._audit``)."""
        out: list[Judged[Witness]] = []
        for sampled in trials:
            result = self.audit(sampled)
            if result.verdict is Verdict.ERROR or not share:
                self.judged[sampled.program] = result
                error = result.reason or "the audit failed" if result.verdict is Verdict.ERROR else None
                out.append(Judged(result.witnesses, error=error))
                continue
            result = _unambiguous(self.inst, result, sampled, self.voters, self.programs, self.cache, self.runner)
            shared = [w.model_copy(update={"found_on": sampled.trial.trial_id}) for w in result.witnesses]
            self.judged[sampled.program] = result.model_copy(update={"witnesses": shared})
            # A regression witness is a test of the repository's own, not a file to replay in the
            # other trials' worlds: it refutes the sampled trial alone.
            out.append(Judged([w for w in shared if w.origin not in WITNESS_STAGES]))
        return out

    def replay(
        self,
        tests: Mapping[str, list[Witness]],
        targets: Mapping[str, list[PassingTrial]],
        *,
        found_on: Mapping[str, PassingTrial],
        round: int,
        vote: bool,
    ) -> Replayed[PassingTrial]:
        refuted: dict[str, list[PassingTrial]] = {}
        pairs: dict[str, int] = {}
        notes: dict[str, list[str]] = {}
        for t, mine in targets.items():
            shared = tests.get(t, [])
            if t not in found_on:  # T1: the passing trials vote on its tests here (A.2)
                caught, notes[t] = _replay_t1(
                    self.inst, shared, mine, self.programs, self.runner, self.config, vote=vote
                )
                caught = _merged(caught, _replay_killers(self.inst, mine, self.runner, self.config))
            else:  # a sampled trial's witnesses: voted on when its audit confirmed them
                source = found_on[t].trial.trial_id
                caught = _replay(self.inst, shared, source, mine, round, self.runner, self.config)
            self.judged.update(caught)
            refuted[t] = [p for p in mine if p.program in caught]
            pairs[t] = len(shared) * len(mine)
        return Replayed(refuted=refuted, pairs=pairs, notes=notes)

    def describe(self, task: str, test: Witness) -> str:
        return _describe(test)

    def conclude(self, trial: PassingTrial, note: str) -> None:
        result = self.judged.get(trial.program)
        if result is None:
            self.judged[trial.program] = TrialResult(
                **trial_ids(trial.trial),
                benchmark_pass=True,
                verdict=Verdict.SOUND,
                evidence=trial.evidence,
                reason=note or None,
                program_hash=trial.program,
            )
        elif result.verdict is Verdict.SOUND and result.reason is None and note:
            self.judged[trial.program] = result.model_copy(update={"reason": note})


def audit_instance(
    inst: Instance,
    trials: Sequence[SweTrial],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
    *,
    run_t0: RunT0,
    audit: AuditOne,
    tokens: Callable[[], int] = lambda: 0,
) -> LightweightInstance:
    """Judge a prepared instance's trials by Algorithm 1 (``_modes.lightweight``, ``config.rounds``
    audit rounds).

    Args:
        inst: The instance, prepared (``repository._audit._prepare``).
        trials: Its trials.
        cache: Where the trials' worlds are built.
        runner: The engine's runner.
        config: Witness source, seed, rounds, repeats and the rest of the per-trial audit's settings.
        run_t0: Runs T0 in the trials' worlds (round 0).
        audit: The per-trial audit a sampled trial gets.
        tokens: The auditing model's tokens so far (each round records its share).

    Returns:
        Every trial's result, in the order of ``trials``, and the rounds.
    """
    programs: dict[str, list[SweTrial]] = {}
    for trial in trials:
        programs.setdefault(patch_hash(trial.patch.strip()), []).append(trial)
    judged: dict[str, TrialResult] = {}
    passing: list[PassingTrial] = []
    for staged in run_t0([same[0] for same in programs.values()]):
        if isinstance(staged, TrialResult):
            assert staged.program_hash is not None
            judged[staged.program_hash] = staged
        else:
            passing.append(staged)
    out = LightweightInstance(results=[])
    if inst.report is not None and inst.report.well_formed:
        if not passing:
            out.notes.append("lightweight: no trial passes T0; nothing to sample, no rounds")
        else:
            iid = inst.spec.instance_id
            form = RepoForm(inst, passing, programs, judged, cache, runner, config, audit, tokens)
            done = _modes.audit(form, _modes.mode(config.mode, RepoForm.name), config)
            out.rounds = done.rounds.get(iid, [])
            t1 = len(out.rounds[0].witnesses) if out.rounds else 0
            analysed = f"lightweight: task analysis adds {t1} test(s) of G's changed behaviour to T0"
            out.notes.append(analysed if t1 else T1_NOTE)
            if inst.regression is not None:
                out.notes.append(inst.regression.census)
            if killers := (inst.regression.killers if inst.regression is not None else []):
                out.notes.append(
                    f"lightweight: T1 also holds {len(killers)} of the repository's own tests that kill "
                    "mutants of G's T0 misses; they ran in every passing trial's world"
                )
            out.notes.extend(done.notes[iid])
    for same in programs.values():
        first = judged[patch_hash(same[0].patch.strip())]
        out.results.append(first)
        out.results.extend(
            first.model_copy(update={"trial_id": t.trial_id, "model": t.model, "shared_from": first.trial_id})
            for t in same[1:]
        )
    order = {t.trial_id: i for i, t in enumerate(trials)}
    out.results.sort(key=lambda r: order[r.trial_id])
    return out


def task_analysis(inst: Instance, runner: Runner, config: SweAuditConfig) -> list[Witness]:
    """T1's tests beyond T0 (offline): G's changed behaviour on inputs T0 does not give.

    The varied T0 calls on which R[G] returns (``inst.probes``) run in R; each on which R answers
    otherwise is a behaviour the gold patch changed that T0 never checks on that input. A test
    asserting R[G]'s answer there is written for up to ``T1_PER_FUNCTION`` such inputs per
    function (``T1_SIZE`` in all), run ``repeats`` times in R[G], and kept when it passes every
    time (a test that fails on G is dropped). Never a trial's world: T1 is the same for all.

    The probes on which a mutant of G's added lines that T0 lets through answers otherwise than
    G (``RegressionSuite.probe_killers``, one a mutant, ``T1_SIZE`` at most) join them the same
    way: T0 does not tell G's behaviour there from a near miss of it, and T1 does.
    """
    if not _sources.source(config.witness_source).differential or inst.null is None or inst.reference is None:
        return []
    varied = [(p, o) for p, o in inst.probes if not p.recorded]
    outcomes = runner.call(inst.null, [p for p, _ in varied], "task analysis: varied T0 calls in R")
    changed = []
    for (probe, ref), got in zip(varied, outcomes, strict=True):
        if got.get("ok") and got["value"] == ref["value"]:
            continue
        actual = (got.get("literal") or got["value"]) if got.get("ok") else f"raised {got.get('exception')}"
        changed.append(Candidate(probe, ref["value"], ref.get("literal"), actual))
    batches = iteration_batches(changed, 1, per_function=T1_PER_FUNCTION)
    chosen = batches[0][:T1_SIZE] if batches else []
    # The probes that tell G from a mutant of it T0 lets through (SWE-ABS's idea) join them.
    killing = inst.regression.probe_killers if inst.regression is not None else []
    shown = {(c.probe.file, c.probe.qualname, c.probe.args, c.probe.kwargs) for c in chosen}
    killers = [c for c in killing if (c.probe.file, c.probe.qualname, c.probe.args, c.probe.kwargs) not in shown]
    killers = killers[:T1_SIZE]
    chosen = [*chosen, *killers]
    if not chosen:
        return []
    recorded: dict[tuple[str, str], list[Probe]] = {}
    for p, _ in inst.probes:
        if p.recorded:
            recorded.setdefault((p.file, p.qualname), []).append(p)
    checklist = inst.report.checklist if inst.report else []
    files, meta = probe_tests(inst, checklist, chosen)
    [reference] = runner.witness_runs(
        [inst.reference], files, config.repeats, noconftest=True, stage="task analysis: T1 in R[G]"
    )
    tests = []
    for name, cand, clause in meta:
        runs = [record_witness_run("reference", r, name) for r in reference]
        if not all(r.outcome == "pass" for r in runs):
            continue
        rejudged, note = _rejudge(cand.probe, recorded)
        expected = (cand.expected_literal or cand.expected)[:200]
        if cand in killers:
            texts = {
                "actual": f"G's mutant ({cand.notes[0][:160]}) gives {cand.actual[:200]}",
                "defect": f"{cand.probe.shown()}: G gives {expected}, and T0 passes a mutant of G that does not",
                "why_t0_misses": f"T0 does not tell G from its mutant on this call of {cand.probe.qualname} "
                f"({cand.probe.origin})",
            }
        else:
            texts = {
                "actual": f"R (without G) gives {cand.actual[:200]}",
                "defect": f"{cand.probe.shown()}: G changes this behaviour to {expected}",
                "why_t0_misses": f"T0 calls {cand.probe.qualname} only on other inputs; this one is a T0 call, "
                f"{cand.probe.origin}",
            }
        tests.append(
            probe_witness(
                name,
                files,
                cand,
                clause,
                **texts,
                validation=Validation(
                    reference_runs=runs,
                    model_runs=[],
                    fails_by_assertion=False,
                    rejudged=rejudged,
                    rejudge_note=note,
                    valid=True,
                    reason=None,
                ),
                replay=_NOT_WRITTEN,
                found_on=ANALYSED,
            )
        )
    return tests


def _replay_t1(
    inst: Instance,
    t1: list[Witness],
    passing: Sequence[PassingTrial],
    programs: dict[str, list[SweTrial]],
    runner: Runner,
    config: SweAuditConfig,
    *,
    vote: bool = True,
) -> tuple[dict[str, TrialResult], list[str]]:
    """T1's tests on every passing trial (round 0): the refuted ones by patch hash, and notes on
    the tests withheld by A.2 (P only implies what they check, and most models' trials fail them;
    without ``vote``, none is withheld)."""
    caught = _replay(inst, t1, ANALYSED, passing, 0, runner, config)
    if not caught or not vote:
        return caught, []
    implicit = {c.id for c in (inst.report.checklist if inst.report else []) if c.kind == "implicit"}
    voters = [dict(Counter(t.model for t in programs[p.program])) for p in passing]
    skipping = [{w.file for w in caught[p.program].witnesses} if p.program in caught else set() for p in passing]
    rho = rho_over_models(voters, skipping)
    ambiguous = {w.file for w in t1 if w.file in rho and (w.clause_id is None or w.clause_id in implicit)}
    if not ambiguous:
        return caught, []
    notes = [
        f"task analysis: {w.file} withheld, {AMBIGUOUS}: P only implies it and rho = {rho[w.file]:.2f} "
        f"of the models with passing trials fail it ({w.input} == {str(w.expected)[:80]})"
        for w in t1
        if w.file in ambiguous
    ]
    skippers = skipped_by(voters, skipping)
    kept: dict[str, TrialResult] = {}
    for program, result in caught.items():
        # Withheld from this program's trials only where at least two agents other than theirs skip it.
        own = {t.model for t in programs[program]}
        against = ambiguous & withheld_from(skippers, own, voting_models(voters))
        left = [w for w in result.witnesses if w.file not in against]
        if left:
            kept[program] = result.model_copy(update={"witnesses": left, "reason": left[0].defect})
    return kept, notes


def _replay_killers(
    inst: Instance, passing: Sequence[PassingTrial], runner: Runner, config: SweAuditConfig
) -> dict[str, TrialResult]:
    """T1's tests of the repository's own: the kept related tests that kill a mutant of G's that
    T0 misses (``RegressionSuite.killers``), run by node id in every passing trial's world and
    validated as regression witnesses are; the trials they refute, by patch hash."""
    killers = inst.regression.killers if inst.regression is not None else []
    caught: dict[str, TrialResult] = {}
    for target in passing if killers else []:
        evidence = target.evidence.model_copy(deep=True)
        found = regression_witnesses(inst, target.world, evidence, runner, config, tests=killers)
        valid = [w.model_copy(update={"found_on": ANALYSED}) for w in found if w.validation.valid]
        if valid:
            caught[target.program] = _refuted(inst, replace(target, evidence=evidence), valid, ANALYSED, 0, config)
    return caught


def _merged(first: dict[str, TrialResult], second: dict[str, TrialResult]) -> dict[str, TrialResult]:
    """Two sets of refutations by patch hash, one result a patch: its witnesses from both."""
    out = dict(first)
    for program, result in second.items():
        mine = out.get(program)
        out[program] = (
            result if mine is None else mine.model_copy(update={"witnesses": [*mine.witnesses, *result.witnesses]})
        )
    return out


def _unambiguous(
    inst: Instance,
    result: TrialResult,
    sampled: PassingTrial,
    passing: Sequence[PassingTrial],
    programs: dict[str, list[SweTrial]],
    cache: WorldCache,
    runner: Runner,
) -> TrialResult:
    """The sampled trial's result with its witnesses of ambiguous requirements withheld (A.2):
    every passing trial of the instance votes, as in the per-trial audit, so none is shared."""
    voters = [t for p in passing for t in programs[p.program]]
    results = [
        result
        if p is sampled
        else TrialResult(**trial_ids(t), benchmark_pass=True, verdict=Verdict.SOUND, program_hash=p.program)
        for p in passing
        for t in programs[p.program]
    ]
    checklist = inst.report.checklist if inst.report else []
    withhold_ambiguous(inst.spec, inst.source, voters, results, checklist, cache, runner, asked=inst.asked)
    return results[voters.index(sampled.trial)]


def _replay(
    inst: Instance,
    shared: Sequence[Witness],
    found_on: str,
    targets: Sequence[PassingTrial],
    number: int,
    runner: Runner,
    config: SweAuditConfig,
) -> dict[str, TrialResult]:
    """Run the shared witnesses in R[G] and in every target's world (one batch, ``repeats`` runs
    each); the targets they refute by the validation rule, by patch hash."""
    if not shared or not targets:
        return {}
    assert inst.reference is not None
    # Names of their own: two sources may give two witnesses one file name.
    names = [test_file_name(w.file, f"{n}\n{w.source}") for n, w in enumerate(shared)]
    files = {f"{_WITNESS_DIR}/{name}": w.source for name, w in zip(names, shared, strict=True)}
    reference, *worlds = runner.witness_runs(
        [inst.reference, *(t.world for t in targets)],
        files,
        config.repeats,
        noconftest=True,
        stage="replaying shared witnesses",
    )
    caught: dict[str, TrialResult] = {}
    for target, model_runs in zip(targets, worlds, strict=True):
        valid = []
        for name, witness in zip(names, shared, strict=True):
            rejudged = (witness.validation.rejudged, witness.validation.rejudge_note or "")
            validation = _validate(reference, model_runs, name, inst.spec.problem_statement, rejudged)
            if not validation.valid:
                continue
            failure = next(r.message for r in validation.model_runs if r.outcome == "fail")
            valid.append(
                witness.model_copy(
                    update={
                        "validation": validation,
                        "actual": failure,
                        "defect": f"{witness.file if witness.input is None else witness.input} fails in the "
                        f"trial: {failure} ({_of(found_on)}, round {number})",
                        "replay": _NOT_WRITTEN,
                    }
                )
            )
        if valid:
            caught[target.program] = _refuted(inst, target, valid, found_on, number, config)
    return caught


def _of(found_on: str) -> str:
    return "a test of task analysis" if found_on == ANALYSED else f"a witness of {found_on}"


def _refuted(
    inst: Instance,
    target: PassingTrial,
    witnesses: list[Witness],
    found_on: str,
    number: int,
    config: SweAuditConfig,
) -> TrialResult:
    """A trial refuted by shared witnesses, carrying them as a per-trial refutation would."""
    evidence = target.evidence.model_copy(deep=True)
    shown = "T1's tests (task analysis)" if found_on == ANALYSED else f"witnesses of {found_on}"
    evidence.steps.append(f"lightweight: {shown} replayed (round {number})")
    for item in evidence.checklist:
        if any(w.clause_id == item.id for w in witnesses):
            item.implemented = False
    if _sources.source(config.witness_source).model:
        witnesses = write_witnesses(inst.spec, inst.source, target.trial, witnesses, witness_root(config), inst.env)
    elif config.witness_dir is not None:
        witnesses = write_witnesses(inst.spec, inst.source, target.trial, witnesses, config.witness_dir, inst.env)
    return TrialResult(
        **trial_ids(target.trial),
        benchmark_pass=True,
        verdict=decide_verdict(True, witnesses, evidence.detector_flags),
        witnesses=witnesses,
        evidence=evidence,
        reason=witnesses[0].defect,
        program_hash=target.program,
    )


def _describe(witness: Witness) -> str:
    return f"{witness.file}: {str(witness.input)[:160]} == {str(witness.expected)[:80]}"
