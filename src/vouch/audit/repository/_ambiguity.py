"""TestJack appendix A.2 in the repository form: run each implicit-requirement witness in every
passing trial's world, and withhold the refutations it ambiguously backs (see ``_ambiguity``).

A voter's answer counts only where it gives the same answer as vouch's differential asks it: a
witness of the offline source is also asked as its probe (``Runner.call``), and a voter whose
witness run and probe disagree (it fails a witness only in the vote, or passes it only there)
has no vote and is flagged, as in the function form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vouch.audit._ambiguity import AMBIGUOUS, MIN_VOTERS, rho_over_models, skipped_by, voting_models, withheld_from
from vouch.audit.repository._runs import _WITNESS_DIR, record_witness_run
from vouch.audit.repository._witness import Probe, disagreement, test_file_name
from vouch.core import ChecklistItem, DetectorFlag, TrialResult, Verdict, Witness, decide_verdict
from vouch.swebench import Runner, SweInstance, SweTrial
from vouch.worlds import Patch, Unappliable, WorldCache, parse_patch, patch_hash


def withhold_ambiguous(
    spec: SweInstance,
    source: str,
    trials: Sequence[SweTrial],
    results: list[TrialResult],
    checklist: Sequence[ChecklistItem],
    cache: WorldCache,
    runner: Runner,
    *,
    asked: Mapping[str, tuple[Probe, dict[str, Any]]] | None = None,
) -> int:
    """Apply the rule to one instance's results in place; the number of results changed.

    ``results`` holds the instance's results in the order of ``trials``. A refutation whose
    every witness checks an ambiguous requirement becomes ``sound``, its witnesses moved to the
    discarded ones with the reason; the instance's report lists the requirement as a prompt
    defect (``requirement_note``). ``asked`` (``Instance.asked``) holds the probe of each offline
    witness: a voter whose answer there differs from its witness run's has no vote, and is flagged.
    """
    implicit = {c.id for c in checklist if c.kind == "implicit"}
    passing = [i for i, r in enumerate(results) if r.benchmark_pass]
    if len(passing) < MIN_VOTERS:
        return 0
    candidates: dict[str, Witness] = {}
    for r in results:
        for w in r.witnesses:
            if w.clause_id is None or w.clause_id in implicit:
                candidates.setdefault(w.source, w)
    if not candidates:
        return 0
    files = {f"{_WITNESS_DIR}/{test_file_name(w.file, w.source)}": w.source for w in candidates.values()}
    keys = dict(zip(candidates, files, strict=True))
    programs: dict[str, dict[str, int]] = {}
    patches: dict[str, str] = {}
    for i in passing:
        trial = trials[i]
        h = patch_hash(trial.patch.strip())
        programs.setdefault(h, {})
        programs[h][trial.model] = programs[h].get(trial.model, 0) + 1
        patches[h] = trial.patch
    skipped: dict[str, set[str]] = {}
    steered: dict[str, DetectorFlag] = {}
    probed = [src for src in candidates if asked is not None and src in asked]
    for h, patch in patches.items():
        world = cache.materialise(
            source, spec.base_commit, [Patch("model_patch", patch), Patch("test_patch", spec.test_patch, reset=True)]
        )
        if isinstance(world, Unappliable):
            skipped[h] = set()
            continue
        touches_conftest = any(f.path.endswith("conftest.py") for f in parse_patch(patch))
        [[run]] = runner.witness_runs([world], files, 1, touches_conftest, stage="ambiguity check")
        skipped[h] = {
            src for src, name in keys.items() if record_witness_run("model", run, Path(name).name).outcome == "fail"
        }
        if probed and asked is not None:
            got = runner.call(world, [asked[src][0] for src in probed], stage="ambiguity check, probes")
            for src, outcome in zip(probed, got, strict=True):
                probe, reference = asked[src]
                differs = disagreement(probe, reference, outcome) is not None
                if differs != (src in skipped[h]):
                    steered[h] = _steered(probe, failed=src in skipped[h])
                    break
    hashes = sorted(h for h in programs if h not in steered)
    rho = rho_over_models([programs[h] for h in hashes], [skipped[h] for h in hashes])
    skippers = skipped_by([programs[h] for h in hashes], [skipped[h] for h in hashes])
    changed = 0
    for index in passing:
        flag = steered.get(patch_hash(trials[index].patch.strip()))
        if flag is not None:
            evidence = results[index].evidence.model_copy(deep=True)
            evidence.detector_flags.append(flag)
            results[index] = results[index].model_copy(update={"evidence": evidence})
            changed += 1
    for index, r in enumerate(results):
        # Withheld from this trial only where at least two agents other than its own skip it.
        against = withheld_from(skippers, {trials[index].model}, voting_models([programs[h] for h in hashes]))
        ambiguous = [w for w in r.witnesses if w.source in against]
        if not ambiguous:
            continue
        r = r.model_copy(deep=True)  # duplicates share their first trial's evidence object
        kept = [w for w in r.witnesses if w.source not in against]
        for w in ambiguous:
            reason = (
                f"{AMBIGUOUS}: P only implies it and rho = {rho[w.source]:.2f} of the models with passing "
                "trials skip it; a defect of the prompt, not of the trial"
            )
            w = w.model_copy(update={"validation": w.validation.model_copy(update={"valid": False, "reason": reason})})
            r.evidence.discarded.append(w)
        verdict = decide_verdict(True, kept, r.evidence.detector_flags)
        why = f"refutation withheld: {len(ambiguous)} witness(es) check an ambiguous requirement (TestJack A.2)"
        results[index] = r.model_copy(
            update={"witnesses": kept, "verdict": verdict, "reason": why if verdict is Verdict.SOUND else r.reason}
        )
        changed += 1
    return changed


def _steered(probe: Probe, *, failed: bool) -> DetectorFlag:
    """The flag of a voter that answers otherwise in the vote's witness run than as vouch's
    differential asks it the same probe."""
    there, elsewhere = ("fails", "R[G]'s answer") if failed else ("passes", "another answer than R[G]'s")
    return DetectorFlag(
        detector="env_sniffing",
        file=probe.file,
        line=None,
        detail=f"answers differently inside the vote: a witness of {probe.shown()[:120]} {there} in its world "
        f"there, and the differential gets {elsewhere}",
    )
