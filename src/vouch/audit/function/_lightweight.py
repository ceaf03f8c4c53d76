"""The function form's task analysis and sharing, for TestJack's lightweight audit (section 3.3,
Algorithm 1 in appendix A.3) and the static baseline; ``_modes.lightweight`` drives them through
``function._form.FunctionForm``.

1. **Task analysis** (``task_analysis``), from P, T0 and G only, never a trial: T1 is T0 plus
   tests of inputs P allows that T0 never exercises (P's own examples, the inputs that tell G's
   mutants from G, a spread of the offline pool by size), each asserting G's answer.
   ``static_suite`` is the SWE-ABS-style suite instead: inputs reaching G's arcs T0 never takes,
   then inputs rejecting G's mutants that survive T0.
2. **Sharing** (``_share``): a task's tests replayed on its passing programs in one engine batch;
   an input most models' trials dispute (A.2, rho > 1/2) is a finding about the prompt and is
   shared with no one; a target failing another is refuted by a witness validated as the
   per-trial audit validates one (G passes it, the trial fails it by an assertion, every repeat).
   What a sampled trial's audit shares: ``_from_audit``.

Replaying a shared test is one call of the trial's entry point on the test's input, inside the
trial's sandbox, compared with G's answer outside it; a trial caught so gets its own witness
file, run through the engine on G and on the trial before it backs anything.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vouch.audit._ambiguity import voting_models, withheld_from
from vouch.audit.function import _inputs, _offline, _witness
from vouch.audit.function._jobs import ProgramJob, TaskContext
from vouch.audit.function._prompt import main_clause
from vouch.audit.function._runs import t0_spec
from vouch.audit.function._trial import (
    DIED,
    Candidate,
    _contested,
    _run_failed,
    confirm_apart,
    died_at,
    validate_candidates,
)
from vouch.mutation import Mutant, mutate

if TYPE_CHECKING:
    from vouch.audit.function._runs import AuditConfig, Engine
    from vouch.exec import RunResult

T1_SIZE = 48
"""Tests task analysis adds to T0 per task, besides P's own examples."""
MUTANTS_OF_G = 10
"""Mutants of G whose differences from G guide task analysis, per task."""
ANALYSED_INPUTS = 400
"""Pool inputs task analysis runs G's mutants on, per task."""
MUTANT_CALL_S = 0.25
"""Timer of a mutant's call: G answers each analysed input in under ``QUICK_S``, so a mutant
past this is told from G (it looped or slowed), and a looping mutant costs little."""
MUTANT_TIMEOUTS = 3
"""A mutant of G that runs out of time this often is told from G already: its other calls are skipped."""
STATIC_MUTANTS = 40
"""Mutants of G the static baseline tries to reject, per task (SWE-ABS runs without a budget)."""
SHARED_DIFFERENCES = 16
"""Inputs besides its witnesses where a sampled trial differs from G, shared with the task's trials."""


@dataclass(frozen=True)
class Shared:
    """A witness shared across the trials of a task: an input and the answer P requires there."""

    args: list[Any]
    expected: Any
    found_on: str
    """``task analysis`` or the sampled trial whose audit confirmed it."""


def task_analysis(
    engine: Engine, contexts: dict[str, TaskContext], task_ids: Sequence[str], config: AuditConfig
) -> dict[str, list[Shared]]:
    """T1's tests beyond T0, per task, from P, T0 and G only (never a trial).

    From the task's offline pool (inputs P allows, with G's answers): P's own examples; then,
    greedily, the inputs that tell the most of G's mutants from G (the behaviour T0 leaves
    unchecked, held to G's answer); then a spread of the rest by size, up to ``T1_SIZE``.
    Inputs where G itself is slow are left out: no T1 test rests on timing G barely meets.
    """
    analysed = [t for t in task_ids if contexts[t].pool is not None and contexts[t].pool.inputs]  # type: ignore[union-attr]
    mutants = {t: _mutants_of_g(contexts[t], config, MUTANTS_OF_G, "G") for t in analysed}
    kills = _mutant_kills(engine, contexts, mutants, "task analysis: mutants of G")
    suites: dict[str, list[Shared]] = {t: [] for t in task_ids}
    for t in analysed:
        ctx = contexts[t]
        assert ctx.pool is not None
        usable = _usable(ctx)
        chosen = [i for i, (a, _) in enumerate(usable) if _inputs.key(a) in ctx.pool.explicit]
        chosen += _cover(kills.get(t, []), usable, limit=T1_SIZE // 2)
        by_size = sorted(range(len(usable)), key=lambda i: _inputs.size(usable[i][0]))
        rest = [i for i in by_size if i not in set(chosen)]
        spread = T1_SIZE - len(chosen)
        if rest and spread > 0:
            chosen += rest[:: max(1, len(rest) // spread)][:spread]
        suites[t] = [Shared(list(usable[i][0]), usable[i][1], "task analysis") for i in dict.fromkeys(chosen)]
    return suites


def static_suite(
    engine: Engine, contexts: dict[str, TaskContext], task_ids: Sequence[str], config: AuditConfig
) -> dict[str, list[Shared]]:
    """The static baseline, in the manner of SWE-ABS: one suite per task built from G before any
    trial is seen, by coverage-driven generation and tests that reject G's mutants.

    From the same offline pool as task analysis: greedily, the inputs that reach the branch arcs
    of G that T0 never takes, then the inputs that tell the most of G's mutants that survive T0
    from G (up to ``STATIC_MUTANTS`` mutants), each asserting G's answer; no P examples, no
    spread, and no A.2 vote (SWE-ABS counts every failure of an added test).
    """
    analysed = [t for t in task_ids if contexts[t].pool is not None and contexts[t].pool.inputs]  # type: ignore[union-attr]
    mutants = {t: _mutants_of_g(contexts[t], config, STATIC_MUTANTS, "static") for t in analysed}
    t0_runs = engine.run(
        [
            t0_spec(
                contexts[t].problem.reference,
                contexts[t].problem,
                f"{t} G: T0's coverage and mutants",
                coverage_lines=True,
                mutants=[m.source for m in mutants[t]],
            )
            for t in analysed
        ],
        "static: T0 on G, coverage and mutants",
        owners=[contexts[t] for t in analysed],
    )
    traced = engine.run(
        [
            _offline.outputs_spec(
                contexts[t].problem.reference,
                contexts[t].problem,
                [a for a, _ in _usable(contexts[t])],
                f"{t} G, arcs per input",
                config.per_call_s,
                arcs_per_call=True,
            )
            for t in analysed
        ],
        "static: G's arcs per input",
        owners=[contexts[t] for t in analysed],
    )
    unreached: dict[str, set[tuple[int, int]]] = {}
    surviving: dict[str, list[Mutant]] = {}
    for t, result in zip(analysed, t0_runs, strict=True):
        value = result.value if result.ok and isinstance(result.value, dict) else {}
        missing = (value.get("coverage") or {}).get("missing_arcs") or {}
        unreached[t] = {(int(line), int(to)) for line, targets in missing.items() for to in targets}
        outcomes = value.get("mutants") or []
        surviving[t] = [m for m, o in zip(mutants[t], outcomes, strict=False) if o == "survived"]
    kills = _mutant_kills(engine, contexts, surviving, "static: mutants of G surviving T0")
    suites: dict[str, list[Shared]] = {t: [] for t in task_ids}
    for t, result in zip(analysed, traced, strict=True):
        usable = _usable(contexts[t])
        per_call = result.value.get("call_arcs") if result.ok and isinstance(result.value, dict) else None
        # Per arc T0 never takes, the inputs that take it (what was traced: the first calls).
        reaching: dict[tuple[int, int], set[int]] = {}
        for i, arcs in enumerate(per_call if isinstance(per_call, list) else []):
            for arc in {(int(a), int(b)) for a, b in arcs} & unreached[t]:
                reaching.setdefault(arc, set()).add(i)
        chosen = _cover(list(reaching.values()), usable, limit=T1_SIZE // 2)
        chosen += _cover(kills.get(t, []), usable, limit=T1_SIZE // 2)
        suites[t] = [Shared(list(usable[i][0]), usable[i][1], "static") for i in dict.fromkeys(chosen)]
    return suites


def _mutants_of_g(ctx: TaskContext, config: AuditConfig, limit: int, salt: str) -> list[Mutant]:
    """Up to ``limit`` mutants of G's own lines (the solution, not the prompt), a seeded sample."""
    reference = ctx.problem.reference
    lines = range(ctx.problem.prompt.count("\n") + 1, reference.count("\n") + 2)
    try:
        mutants = mutate(reference, lines=lines, function=ctx.problem.entry_point)
    except Exception:  # noqa: BLE001 - a G libcst cannot mutate gets no mutant-guided tests
        return []
    if len(mutants) > limit:
        mutants = random.Random(f"{config.seed}:{ctx.problem.task_id}:{salt}").sample(mutants, limit)
    return mutants


def _mutant_kills(
    engine: Engine, contexts: dict[str, TaskContext], mutants: dict[str, list[Mutant]], stage: str
) -> dict[str, list[set[int]]]:
    """Per task and mutant, the indices of the usable inputs on which the mutant is told from G."""
    plans = []
    for t, chosen in mutants.items():
        usable = _usable(contexts[t])
        for m in chosen:
            spec = _offline.outputs_spec(
                m.source,
                contexts[t].problem,
                [a for a, _ in usable],
                f"{t} mutant of G",
                MUTANT_CALL_S,
                give_up_after=MUTANT_TIMEOUTS,
            )
            plans.append((t, usable, spec))
    results = engine.run([p[2] for p in plans], stage, owners=[contexts[p[0]] for p in plans])
    kills: dict[str, list[set[int]]] = {}
    for (t, usable, _spec), result in zip(plans, results, strict=True):
        pool = contexts[t].pool
        assert pool is not None
        rows = _offline.decoded(result, len(usable))
        killed = set()
        for i, ((_args, value), row) in enumerate(zip(usable, rows, strict=True)):
            if str(row.get("error", "")).startswith("run:") or row.get("error") in ("skipped", "cut short"):
                continue
            if not row.get("ok") or "opaque" in row or not _offline.close(pool.normal(row.get("value")), value):
                killed.add(i)
        kills.setdefault(t, []).append(killed)
    return kills


def _usable(ctx: TaskContext) -> list[tuple[Any, Any]]:
    """The pool inputs task analysis draws on: G quick on each; P's examples, then an even spread
    by order of generation (every level and generator), ``ANALYSED_INPUTS`` in all."""
    assert ctx.pool is not None
    rows = [(a, v) for _, a, v in ctx.pool.inputs if _inputs.key(a) not in ctx.pool.slow]
    if len(rows) <= ANALYSED_INPUTS:
        return rows
    explicit = [r for r in rows if _inputs.key(r[0]) in ctx.pool.explicit]
    others = [r for r in rows if _inputs.key(r[0]) not in ctx.pool.explicit]
    room = max(ANALYSED_INPUTS - len(explicit), 0)
    return explicit + others[:: max(1, -(-len(others) // room))][:room] if room else explicit


def _cover(kills: list[set[int]], usable: list[tuple[Any, Any]], *, limit: int) -> list[int]:
    """Greedy set cover: inputs that kill the most mutants not yet killed (smallest input on ties)."""
    left = [k for k in kills if k]
    out: list[int] = []
    while left and len(out) < limit:
        counts: dict[int, int] = {}
        for k in left:
            for i in k:
                counts[i] = counts.get(i, 0) + 1
        best = min(counts, key=lambda i: (-counts[i], _inputs.size(usable[i][0]), i))
        out.append(best)
        left = [k for k in left if best not in k]
    return out


def _from_audit(job: ProgramJob, contested: set[str]) -> list[Shared]:
    """What a sampled trial's audit shares: its validated witnesses, then the other inputs where it
    was seen to differ from G (uncontested, smallest first), up to ``SHARED_DIFFERENCES``.

    Each is an input of P's domain with G's answer; a trial it catches is refuted only by a witness
    of its own that passes on G and fails on that trial."""
    out = [Shared(list(w.input), w.expected, job.first_trial) for w in job.witnesses if isinstance(w.input, list)]
    seen = {_inputs.key(s.args) for s in out}
    for diff in sorted(job.diffs, key=lambda d: (d.actual == "raised timeout", _inputs.size(d.args))):
        if len(out) >= SHARED_DIFFERENCES + len(job.witnesses):
            break
        if _inputs.key(diff.args) not in seen and _inputs.key(diff.args) not in contested:
            seen.add(_inputs.key(diff.args))
            out.append(Shared(list(diff.args), diff.expected, job.first_trial))
    return out


def _died_replaying(job: ProgramJob, suite: Sequence[Shared], result: RunResult) -> list[_offline.Difference]:
    """A replay whose run did not complete passed none of its tests: the trial is undecided
    (``search_failed``) unless a witness refutes it, and the test it died on (its run's stderr
    names it) is a difference from G, which a witness of its own decides."""
    reason = result.reason or result.status.value
    job.search_failed = job.search_failed or (
        f"undecided: the run of its {len(suite)} shared tests did not complete ({reason}); a test that did "
        "not run to its end is not passed"
    )
    at = died_at(result, len(suite))
    if at is None:
        return []
    return [_offline.Difference(1, list(suite[at].args), suite[at].expected, f"{DIED} {reason}")]


def _confirm_agreements(
    engine: Engine,
    contexts: dict[str, TaskContext],
    failing: dict[str, list[tuple[ProgramJob, list[_offline.Difference]]]],
    targets: dict[str, list[ProgramJob]],
    suites: dict[str, list[Shared]],
) -> None:
    """Ask each voter apart the tests that may refute a target, where it gave G's answer in the
    replay (inside vouch's harness); one that answers otherwise apart gets a flag, so it has no
    vote (``harness_flags``). Differences are confirmed apart already (``confirm_apart``): this
    is the other side, a program that agrees with G only inside vouch's harness to lower rho."""
    plans = []
    for t, rows in failing.items():
        may_refute = {id(j) for j in targets.get(t, [])}
        stake = {_inputs.key(d.args) for job, diffs in rows if id(job) in may_refute for d in diffs}
        by_key = {_inputs.key(s.args): s for s in suites.get(t, [])}
        for job, diffs in rows:
            shown = {_inputs.key(d.args) for d in diffs}
            asked = [test for k, test in by_key.items() if k in stake and k not in shown]
            if asked and not job.harness_flags and job.infra is None:
                spec = _offline.apart_spec(
                    job.program, contexts[t].problem, [a.args for a in asked], f"{job.first_trial} votes, apart"
                )
                plans.append((t, job, asked, spec))
    results = engine.run([p[3] for p in plans], "shared witnesses, votes apart", owners=[p[1] for p in plans])
    for (t, job, asked, _spec), result in zip(plans, results, strict=True):
        if _run_failed(result):
            continue  # the replay's answers stand: a run that did not complete says nothing here
        pool = contexts[t].pool
        assert pool is not None
        for test, row in zip(asked, _offline.decoded(result, len(asked)), strict=True):
            if row.get("error") == "skipped":
                continue
            value = pool.normal(row["value"]) if row.get("ok") and "value" in row else None
            if row.get("ok") and "value" in row and _offline.close(value, test.expected):
                continue
            apart = repr(value)[:80] if row.get("ok") else f"raised {row.get('error')}"[:80]
            call = f"{contexts[t].problem.entry_point}{tuple(test.args)!r}"[:120]
            job.harness_flags.append(
                (
                    "env_sniffing",
                    f"answers differently inside vouch's harness: {call} gives G's answer there, "
                    f"and {apart} where its witnesses run",
                )
            )
            break


def _describe(ctx: TaskContext, shared: Shared) -> str:
    call = f"{ctx.problem.entry_point}{tuple(shared.args)!r}"
    return f"{call[:160]} == {repr(shared.expected)[:80]}"


def _share(
    engine: Engine,
    contexts: dict[str, TaskContext],
    targets: dict[str, list[ProgramJob]],
    replayed: dict[str, list[ProgramJob]],
    suites: dict[str, list[Shared]],
    config: AuditConfig,
    witness_dir: Path,
    *,
    iteration: int,
    voted: dict[str, list[tuple[ProgramJob, set[str]]]],
    contest: bool = True,
) -> tuple[dict[str, list[ProgramJob]], dict[str, int]]:
    """Replay each task's shared witnesses on the ``replayed`` programs in one batch, then confirm
    each failure of a target with a witness file of the trial's own; the refuted trials by task.

    An input most models' trials fail (A.2, over the replayed trials and the ``voted`` ones,
    which fail the inputs given) is ambiguous: reported in ``ambiguous_inputs``, never shared
    (unless ``contest`` is off: the static baseline counts every failure).
    """
    plans = []
    for t, jobs in replayed.items():
        suite = suites.get(t) or []
        if not suite:
            continue
        entry = contexts[t].problem
        for job in jobs:
            spec = _offline.outputs_spec(
                job.program, entry, [s.args for s in suite], f"{job.first_trial} shared witnesses", config.per_call_s
            )
            plans.append((t, job, spec))
    results = engine.run([p[2] for p in plans], "replaying shared witnesses", owners=[p[1] for p in plans])
    pairs: dict[str, int] = {}
    for t, _job, _spec in plans:
        pairs[t] = pairs.get(t, 0) + len(suites[t])
    replays: list[tuple[str, ProgramJob, list[_offline.Difference]]] = []
    for (t, job, _spec), result in zip(plans, results, strict=True):
        ctx = contexts[t]
        assert ctx.pool is not None
        suite = suites[t]
        pool = _offline.Pool(ctx.pool.rules, shape_outputs=ctx.pool.shape_outputs, wrapper=ctx.pool.wrapper)
        pool.inputs = [(1, s.args, s.expected) for s in suite]
        pool.slow = ctx.pool.slow
        diffs = _offline.differences(pool, _offline.decoded(result, len(suite)))
        if _run_failed(result) and job.infra is None:
            diffs += _died_replaying(job, suite, result)
        replays.append((t, job, diffs))
    # Each difference is asked again as the trial's witness would ask it: one the trial shows
    # only inside vouch's harness is dropped (and flagged), so it neither votes nor refutes.
    kept = confirm_apart(engine, contexts, [(job, diffs) for _t, job, diffs in replays], "shared witnesses, apart")
    failing: dict[str, list[tuple[ProgramJob, list[_offline.Difference]]]] = {}
    for (t, job, _diffs), diffs in zip(replays, kept, strict=True):
        failing.setdefault(t, []).append((job, diffs))
    if contest:
        # A vote that G's answer is right must hold where the voter's witnesses would run, too.
        _confirm_agreements(engine, contexts, failing, targets, suites)
    candidates: list[Candidate] = []
    found_on = {t: {_inputs.key(s.args): s.found_on for s in suite} for t, suite in suites.items()}
    origin: dict[int, str] = {}
    for t, rows in failing.items():
        ctx = contexts[t]
        assert ctx.pool is not None
        # A program that answered otherwise inside vouch's harness than apart has no vote.
        votes = [(j, {_inputs.key(d.args) for d in ds}) for j, ds in rows if not j.harness_flags]
        votes += voted.get(t, [])
        found = _contested([j for j, _ in votes], [keys for _, keys in votes]) if contest else {}
        disputed = {k: m for k, m in found.items() if k not in ctx.pool.explicit}
        ctx.contested |= set(disputed)
        clause = main_clause(ctx.checklist)
        may_refute = {id(j) for j in targets.get(t, [])}
        for job, diffs in rows:
            against = withheld_from(
                disputed, job.models or {"": 1}, voting_models([j.models or {"": 1} for j, _ in votes])
            )
            usable = [d for d in diffs if _inputs.key(d.args) not in against]
            if id(job) not in may_refute:
                continue
            if not usable:
                continue
            diff = usable[0]
            job.unasked.pop(_inputs.key(diff.args), None)  # a witness decides it
            wf = _witness.render(
                trial_id=job.first_trial,
                task_id=t,
                entry_point=ctx.problem.entry_point,
                clause=clause.text if clause else "the function's stated behaviour",
                args=diff.args,
                expected=diff.expected,
                index=iteration,
                wrapper=ctx.pool.wrapper,
                within_s=_offline.WITHIN_S if diff.actual == "raised timeout" else None,
            )
            candidates.append((job, wf, diff.args, diff.expected, diff.actual, clause.id if clause else ""))
            origin[id(job)] = found_on[t][_inputs.key(diff.args)]
    validate_candidates(engine, contexts, candidates, config, max(iteration, 1), witness_dir)
    refuted: dict[str, list[ProgramJob]] = {}
    for job, *_ in candidates:
        if job.witnesses:
            job.witnesses = [w.model_copy(update={"found_on": origin[id(job)]}) for w in job.witnesses]
            refuted.setdefault(job.task_id, []).append(job)
    return refuted, pairs
