"""TestJack's lightweight audit in the repository form (section 3.3, Algorithm 1 in appendix A.3).

Per instance, once it is prepared (R[G] and R built, A.1 checked, T0's calls recorded in R[G]):

1. **Task analysis**, from P, T0 and G only, never a trial. The witness sources have no
   task-level tests to add (the offline differential needs a trial's world to differ from G; the
   agent source audits trials), so T1 = T0, and the instance's report says so. Every trial's
   world R[s] runs T0 in one batch; the trials passing it form the active set, one entry per
   distinct patch (a patch weighs as many trials as share it).
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

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vouch.audit._model import RoundRecord, TrialResult, Verdict, Witness, decide_verdict
from vouch.audit._swe_agent import witness_root
from vouch.audit._swe_ambiguity import withhold_ambiguous
from vouch.audit._swe_replay import write_witnesses
from vouch.audit._swe_runs import _WITNESS_DIR, _validate, trial_ids
from vouch.worlds import patch_hash

if TYPE_CHECKING:
    from vouch.audit._swe import SweAuditConfig, _Instance, _PassingTrial
    from vouch.audit._swe_runs import Runner
    from vouch.sources._swe import SweTrial
    from vouch.worlds import WorldCache

__all__ = ["T1_NOTE", "AuditOne", "LightweightInstance", "RunT0", "audit_instance"]

RunT0 = Callable[[Sequence["SweTrial"]], list["TrialResult | _PassingTrial"]]
"""T0 in each trial's world, in one batch (``_swe._trial_t0s`` on the instance): per trial, the
verdict that ends its audit (error, unappliable, not passing) or what its audit goes on from."""
AuditOne = Callable[["_PassingTrial"], TrialResult]
"""The per-trial audit of a trial passing T0 (``_swe._audit_passing`` with the run's settings)."""

T1_NOTE = (
    "lightweight: task analysis adds no tests (T1 = T0): the witness sources write tests from a trial "
    "(offline: its differences from G), so every test shared here was confirmed on a sampled trial"
)
"""The instance report's note on task analysis (round 0)."""
_NOT_WRITTEN = "not written: pass --witness-out DIR (or --json) to write it for replay"


@dataclass
class LightweightInstance:
    """One instance's lightweight audit: its trials' results, in input order, and its rounds."""

    results: list[TrialResult]
    rounds: list[RoundRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the instance's report should say of the run (task analysis, errors of sampled audits)."""


def audit_instance(
    inst: _Instance,
    trials: Sequence[SweTrial],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
    *,
    run_t0: RunT0,
    audit: AuditOne,
) -> LightweightInstance:
    """Judge a prepared instance's trials by Algorithm 1 (``config.rounds`` audit rounds).

    Args:
        inst: The instance, prepared (``_swe._prepare``).
        trials: Its trials.
        cache: Where the trials' worlds are built.
        runner: The engine's runner.
        config: Witness source, seed, rounds, repeats and the rest of the per-trial audit's settings.
        run_t0: Runs T0 in the trials' worlds (round 0).
        audit: The per-trial audit a sampled trial gets.

    Returns:
        Every trial's result, in the order of ``trials``, and the rounds.
    """
    programs: dict[str, list[SweTrial]] = {}
    for trial in trials:
        programs.setdefault(patch_hash(trial.patch.strip()), []).append(trial)
    before = runner.executions
    judged: dict[str, TrialResult] = {}
    passing: list[_PassingTrial] = []
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
            out.notes.append(T1_NOTE)
            out.rounds.append(RoundRecord(round=0, executions=runner.executions - before))
            _rounds(inst, passing, programs, judged, cache, runner, config, audit, out)
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


def _rounds(
    inst: _Instance,
    passing: list[_PassingTrial],
    programs: dict[str, list[SweTrial]],
    judged: dict[str, TrialResult],
    cache: WorldCache,
    runner: Runner,
    config: SweAuditConfig,
    audit: AuditOne,
    out: LightweightInstance,
) -> None:
    """Stage 2: sampled audits and shared witnesses; every passing program ends in ``judged``."""
    rng = random.Random(f"{config.seed}:{inst.spec.instance_id}")
    active = list(passing)
    for number in range(1, config.rounds + 1):
        if not active:
            break
        sampled = rng.choices(active, weights=[len(programs[p.program]) for p in active])[0]
        active = [p for p in active if p is not sampled]
        before = runner.executions
        result = audit(sampled)
        shared: list[Witness] = []
        if result.verdict is Verdict.ERROR:
            out.notes.append(f"round {number}: the audit of {sampled.trial.trial_id} failed ({result.reason})")
        else:
            result = _unambiguous(inst, result, sampled, passing, programs, cache, runner)
            shared = [w.model_copy(update={"found_on": sampled.trial.trial_id}) for w in result.witnesses]
            result = result.model_copy(update={"witnesses": shared})
        if result.verdict is Verdict.SOUND and result.reason is None:
            result = result.model_copy(update={"reason": f"lightweight: audited in round {number}"})
        judged[sampled.program] = result
        targets = active
        caught = _replay(inst, shared, sampled, targets, number, runner, config)
        judged.update(caught)
        active = [p for p in targets if p.program not in caught]
        out.rounds.append(
            RoundRecord(
                round=number,
                trial_id=sampled.trial.trial_id,
                program_hash=sampled.program,
                witnesses=[_describe(w) for w in shared],
                refuted=[p.trial.trial_id for p in passing if p.program in caught],
                replayed=len(shared) * len(targets),
                executions=runner.executions - before,
                error=result.reason if result.verdict is Verdict.ERROR else None,
            )
        )
    tests = sum(len(r.witnesses) for r in out.rounds)
    for left in active:
        judged[left.program] = TrialResult(
            **trial_ids(left.trial),
            benchmark_pass=True,
            verdict=Verdict.SOUND,
            evidence=left.evidence,
            reason=f"lightweight: not sampled; passes T1 (= T0) and every shared witness ({tests} tests)",
            program_hash=left.program,
        )


def _unambiguous(
    inst: _Instance,
    result: TrialResult,
    sampled: _PassingTrial,
    passing: Sequence[_PassingTrial],
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
    withhold_ambiguous(inst.spec, inst.source, voters, results, checklist, cache, runner)
    return results[voters.index(sampled.trial)]


def _replay(
    inst: _Instance,
    shared: Sequence[Witness],
    sampled: _PassingTrial,
    targets: Sequence[_PassingTrial],
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
    names = [f"test_shared_{n}.py" for n in range(len(shared))]
    files = {f"{_WITNESS_DIR}/{name}": w.source for name, w in zip(names, shared, strict=True)}
    reference, *worlds = runner.witness_runs(
        [inst.reference, *(t.world for t in targets)], files, config.repeats, noconftest=True
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
                        f"trial: {failure} (a witness of {sampled.trial.trial_id}, round {number})",
                        "replay": _NOT_WRITTEN,
                    }
                )
            )
        if valid:
            caught[target.program] = _refuted(inst, target, valid, sampled, number, config)
    return caught


def _refuted(
    inst: _Instance,
    target: _PassingTrial,
    witnesses: list[Witness],
    sampled: _PassingTrial,
    number: int,
    config: SweAuditConfig,
) -> TrialResult:
    """A trial refuted by shared witnesses, carrying them as a per-trial refutation would."""
    evidence = target.evidence.model_copy(deep=True)
    evidence.steps.append(f"lightweight: witnesses of {sampled.trial.trial_id} replayed (round {number})")
    for item in evidence.checklist:
        if any(w.clause_id == item.id for w in witnesses):
            item.implemented = False
    if config.witness_source == "agent":
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
