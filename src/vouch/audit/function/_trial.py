"""Judging distinct programs: T0, evidence, witness search, validation, verdict.

Work is batched across programs at every stage (one engine batch per stage, many inputs per
run), so the engine's lanes stay full however many programs there are.
"""

from __future__ import annotations

import ast
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from vouch.audit import _sources
from vouch.audit._ambiguity import rho_over_models, skipped_by, voting_models, withheld_from
from vouch.audit._form import Found
from vouch.audit.function import _inputs, _offline, _witness
from vouch.audit.function._detectors import FILE, detect
from vouch.audit.function._jobs import MIN_VOTERS, OnJudged, ProgramJob, SearchRun, Stage2, TaskContext, found_in
from vouch.audit.function._prompt import main_clause, output_wrapper
from vouch.audit.function._runs import blame, setup_failure, t0_result, t0_spec
from vouch.core import (
    DetectorFlag,
    Evidence,
    GhostBranch,
    SurvivingMutant,
    Validation,
    Verdict,
    Witness,
    decide_verdict,
    undecided,
)
from vouch.exec import Call, Fault, RunResult, RunSpec
from vouch.mutation import kill_matrix, mutate

if TYPE_CHECKING:
    from vouch.audit.function._runs import AuditConfig, Engine


def offline_search(run: SearchRun) -> list[Found]:
    """The ``offline`` source: at most k generate-and-validate iterations on the differences
    the differential run found (minimised, contested under A.2, validated)."""
    _iterate(run, lambda job: bool(job.diffs))
    return [
        replace(found_in(job), note=thin_jury(run.contexts[job.task_id], job, run.config.jury_models))
        for job in run.jobs
    ]


def files_search(run: SearchRun) -> list[Found]:
    """The ``files`` source: the user's pytest files for each task, validated like any witness."""
    _iterate(run, lambda job: True)
    return [found_in(job) for job in run.jobs]


def _iterate(run: SearchRun, searching: Callable[[ProgramJob], bool]) -> None:
    voters = run.voters if run.voters is not None else [j for j in run.jobs if j.t0 is not None and j.t0.passed]
    for iteration in range(1, run.config.k + 1):
        active = [j for j in run.jobs if not j.witnesses and searching(j)]
        if not active:
            break
        _iteration(run.engine, run.contexts, active, voters, run.config, iteration, run.witness_dir)


def t0_stage(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    config: AuditConfig,
    on_judged: OnJudged | None,
) -> list[ProgramJob]:
    """T0 in R[s] for every job; judge those that need no search (unparsable, failing T0, on an
    ill-formed task) and return the rest, to be audited."""
    runnable = [j for j in jobs if j.unparsable is None]
    results = engine.run(
        [t0_spec(j.program, contexts[j.task_id].problem, f"{j.first_trial} T0 in R[s]") for j in runnable],
        "T0 in R[s]",
        owners=runnable,
    )
    for job, result in zip(runnable, results, strict=True):
        job.t0 = t0_result("model", result, len(contexts[job.task_id].asserts))
        if (why := setup_failure(result)) is not None:
            blame(job, Fault("T0 in R[s]", f"{job.first_trial} T0 in R[s]", why))
    for job in jobs:
        if job.unparsable is not None:
            _finish(job, contexts[job.task_id], Verdict.UNAPPLIABLE, job.unparsable, on_judged)
        elif job.t0 is not None and not job.t0.passed and not config.search_failing:
            _finish(job, contexts[job.task_id], Verdict.NOT_PASSING, job.t0.reason, on_judged)
        elif not contexts[job.task_id].report.well_formed:
            verdict = Verdict.ERROR if job.t0 is not None and job.t0.passed else Verdict.NOT_PASSING
            _finish(
                job, contexts[job.task_id], verdict, f"not audited: {contexts[job.task_id].report.reason}", on_judged
            )
    return [j for j in jobs if j.judgement is None]


def _prepare_pools(engine: Engine, contexts: dict[str, TaskContext], task_ids: set[str], config: AuditConfig) -> None:
    user_files = _sources.source(config.witness_source).user_files
    wanted = [contexts[t] for t in sorted(task_ids) if not user_files]
    plans = []
    seed_specs = []
    for ctx in wanted:
        if not ctx.oracle:
            ctx.pool_note = "T0 checks a property of the output, not a value: G's output is not the only correct one"
            continue
        seeds = _offline.seeds_of(ctx.t0_inputs, ctx.examples, use_t0=config.seed_from_t0)
        seeds = [s for s in seeds if len(s) == len(ctx.params)]
        if not seeds:
            ctx.pool_note = "no seed input (no T0 input or example with literal arguments)"
            continue
        if (deepest := max(_inputs.depth(s) for s in seeds)) > MAX_SEED_DEPTH:
            ctx.pool_note = f"the seeds nest {deepest} deep (more than {MAX_SEED_DEPTH}): no input is made from them"
            continue
        plans.append((ctx, seeds))
        seed_specs.append(
            _offline.outputs_spec(
                ctx.problem.reference,
                ctx.problem,
                seeds,
                f"{ctx.problem.task_id} G on seeds",
                config.per_call_s,
            )
        )
    seed_results = engine.run(seed_specs, "G on seeds", owners=[ctx for ctx, _ in plans])
    planned = []
    for (ctx, seeds), result in zip(plans, seed_results, strict=True):
        rows = _offline.decoded(result, len(seeds))
        answered = [(s, r["value"]) for s, r in zip(seeds, rows, strict=True) if r.get("ok") and "value" in r]
        outs = [v for _, v in answered]
        task_rng = random.Random(f"{config.seed}:{ctx.problem.task_id}")
        rules, inputs, far, wide = _offline.plan_pool(
            ctx.problem.prompt,
            ctx.params,
            seeds,
            outs,
            task_rng,
            per_seed=config.per_seed,
            limit=config.pool_candidates,
            examples=[list(e.args) for e in ctx.examples],
            edges=config.jury_models > 0,
        )
        planned.append((ctx, rules, inputs, answered, far, wide))
    stated = {id(ctx): _offline.stated_examples(ctx.examples, ctx.t0_inputs) for ctx, *_ in planned}
    specs = [
        _offline.outputs_spec(
            ctx.problem.reference,
            ctx.problem,
            [a for _, a in inputs] + [e.args for e in stated[id(ctx)]],
            f"{ctx.problem.task_id} G on pool",
            config.per_call_s,
        )
        for ctx, _, inputs, _, _, _ in planned
    ]
    pool_runs = engine.run(specs, "G on generated inputs", owners=[p[0] for p in planned])
    for (ctx, rules, inputs, answered, far, wide), result in zip(planned, pool_runs, strict=True):
        exs = stated[id(ctx)]
        rows = _offline.decoded(result, len(inputs) + len(exs))
        seeds_answered, outputs = [a for a, _ in answered], [v for _, v in answered]
        ctx.pool = _offline.fill_pool(
            rules,
            inputs,
            rows[: len(inputs)],
            seeds_answered,
            outputs,
            output_wrapper(ctx.asserts),
            list(zip(exs, rows[len(inputs) :], strict=True)) if config.seed_from_t0 else [],
            past_scale=far,
            wide=wide,
        )
        ctx.pool.balance(config.pool_limit)


MAX_SEED_DEPTH = 24
"""Nesting past which no input is made from a task's seeds (arguments are a list of them, so one
level is the call's own): generation and the domain's checks grow with the depth, and no
benchmark's values nest so deep."""


def _evidence_stage(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    config: AuditConfig,
) -> None:
    specs = []
    for job in jobs:
        ctx = contexts[job.task_id]
        lines = range(_own_from(job, ctx), job.program.count("\n") + 2)
        try:
            mutants = mutate(job.program, lines=lines, function=ctx.problem.entry_point)
        except Exception:  # noqa: BLE001 - a program libcst cannot mutate gets no mutants
            mutants = []
        if len(mutants) > config.max_mutants:
            mutants = random.Random(f"{config.seed}:{job.hash}").sample(mutants, config.max_mutants)
        job.mutants = mutants
        specs.append(
            t0_spec(
                job.program,
                ctx.problem,
                f"{job.first_trial} coverage and mutants",
                coverage_lines=True,
                mutants=[m.source for m in mutants],
            )
        )
    for job, result in zip(jobs, engine.run(specs, "coverage and mutants", owners=jobs), strict=True):
        # The run's value is the in-run side's report (``_inrun``), a ``Stage2`` by construction.
        job.stage2 = (
            cast(Stage2, result.value) if result.ok and isinstance(result.value, dict) else Stage2(error=result.reason)
        )


def _differential_stage(
    engine: Engine, contexts: dict[str, TaskContext], jobs: Sequence[ProgramJob], config: AuditConfig
) -> None:
    chosen = [j for j in jobs if contexts[j.task_id].pool is not None and contexts[j.task_id].pool.inputs]  # type: ignore[union-attr]
    specs = []
    for job in chosen:
        pool = contexts[job.task_id].pool
        assert pool is not None
        specs.append(
            _offline.outputs_spec(
                job.program,
                contexts[job.task_id].problem,
                [a for _, a, _ in pool.inputs],
                f"{job.first_trial} on generated inputs",
                config.per_call_s,
                arcs=job.t0 is not None and job.t0.passed,
            )
        )
    results = engine.run(specs, "R[s] on generated inputs", owners=chosen)
    # A run that fails as a whole (the program killed its process, or hung where no timer
    # reaches) has no rows: once more without tracing, then the trial is an error, never sound.
    # A run vouch itself could not run is not the program's doing: its trial is error already.
    again = [i for i, r in enumerate(results) if _run_failed(r) and chosen[i].infra is None]
    if again:
        retried = engine.run(
            [replace(specs[i], name=f"{specs[i].name} (again, untraced)", entry=_untraced(specs[i])) for i in again],
            "R[s] on generated inputs, again",
            owners=[chosen[i] for i in again],
        )
        for i, result in zip(again, retried, strict=True):
            results[i] = result
    # Failed twice: the input it died on is the last one its stderr names; that input is no
    # evidence, the inputs before and after it are run again (up to MAX_CRASHES inputs a program).
    # Each input it died on is G's to answer, so a difference like any other (``DIED``): its
    # witness decides, and dying where the witness runs is failing it.
    crashes: dict[int, Crashes] = {}
    for i, job in enumerate(chosen):
        if _run_failed(results[i]) and job.infra is None:
            crashes[i] = _around_crashes(engine, contexts[job.task_id], job, results[i], config)
    for i, (job, result) in enumerate(zip(chosen, results, strict=True)):
        pool = contexts[job.task_id].pool
        assert pool is not None
        crash = crashes.get(i)
        rows = crash.rows if crash is not None else _offline.decoded(result, len(pool.inputs))
        if crash is not None and crash.named:
            job.search_failed = (
                f"the run on generated inputs failed twice ({result.reason or result.status.value}); "
                f"{len(crash.named)} input(s) killed it: {', '.join(crash.named[:3])}"
            )
        job.diffs = _offline.differences(pool, rows)
        if crash is not None:
            job.diffs += [
                _offline.Difference(pool.inputs[k][0], pool.inputs[k][1], pool.inputs[k][2], f"{DIED} {crash.reason}")
                for k in crash.dead
            ]
        if result.ok and isinstance(result.value, dict):
            job.valid_arcs = {(int(a), int(b)) for a, b in result.value.get("arcs") or []}
    _near_splits(engine, contexts, chosen, config)
    _ghost_search(engine, contexts, chosen, config)
    searched = [j for j in chosen if j.t0 is not None and j.t0.passed and j.diffs]
    for job, kept in zip(searched, confirm_apart(engine, contexts, [(j, j.diffs) for j in searched]), strict=True):
        job.diffs = kept
    _agreements_apart(engine, contexts, [j for j in chosen if j.t0 is not None and j.t0.passed], config)
    for task_id in {j.task_id for j in chosen}:
        mine = [j for j in chosen if j.task_id == task_id]
        # A program that answered otherwise inside vouch's harness than apart has no vote.
        voters = [j for j in mine if j.t0 is not None and j.t0.passed and not j.harness_flags]
        ctx = contexts[task_id]
        explicit = ctx.pool.explicit if ctx.pool is not None else set()
        contested = {
            k: m
            for k, m in _contested(voters, [{_inputs.key(d.args) for d in j.diffs} for j in voters]).items()
            if k not in explicit
        }
        ctx.contested |= set(contested)
        ctx.passing_models = {m for j in voters for m in (j.models or {"": 1})}
        split = {id(j): {_inputs.key(d.args) for d in j.diffs} for j in voters}
        for job in mine:
            against = withheld_from(
                contested, job.models or {"": 1}, voting_models([v.models or {"": 1} for v in voters])
            )
            job.diffs = [
                d
                for d in job.diffs
                if _inputs.key(d.args) not in against
                and not refused_edge(ctx, d)
                and not withheld(ctx, job, _inputs.key(d.args), partial(_agreement, voters, split), config)
            ]


def refused_edge(ctx: TaskContext, diff: _offline.Difference) -> bool:
    """Whether a difference is the trial declining an input on the domain's edges: it raises, or
    gives no answer in time, where G answers. P's words leave the edge open, so a program may take
    the input as outside what P asks for; only a wrong value there is evidence (and only where the
    jury confirms G's, ``withheld``)."""
    if ctx.pool is None or _inputs.key(diff.args) not in ctx.pool.wide:
        return False
    return isinstance(diff.actual, str) and diff.actual.startswith(("raised ", DIED))


def withheld(
    ctx: TaskContext,
    job: ProgramJob,
    key: str,
    tally: Callable[[str], dict[str, dict[str, int]]],
    config: AuditConfig,
) -> bool:
    """Whether the jury withholds an input from the evidence against ``job``: on the domain's
    edges, unless it confirms G's answer there (``jury_verdict``); inside the narrow domain too
    with ``config.jury_everywhere``, unless the jury is thin (then A.2 alone decides, as before).
    P's own examples are requirements P states: the jury never withholds them."""
    if ctx.pool is None or key in ctx.pool.explicit:
        return False
    edge = key in ctx.pool.wide
    if not edge and not config.jury_everywhere:
        return False
    others = ctx.passing_models - set(job.models)
    if not edge and len(others) < max(config.jury_models, 1):
        return False
    return jury_verdict(tally(key), job.models, config.jury_models) is not None


def final_tally(ctx: TaskContext, key: str) -> dict[str, dict[str, int]]:
    """Per model, its passing trials' weight that gives G's answer on a witness input ("g") and
    that gives another ("other"), as the vote on the minimised input found them (``ctx.jury``);
    running out of time is no answer either way."""
    g_answer = ctx.g_answers.get(key, (None, None))[1]
    out: dict[str, dict[str, int]] = {}
    for model, answers in ctx.jury.get(key, {}).items():
        tally = out.setdefault(model, {})
        for answer, n in answers.items():
            if not answer.startswith(_NO_READING):
                side = "g" if answer == g_answer else "other"
                tally[side] = tally.get(side, 0) + n
    return out


def thin_jury(ctx: TaskContext, job: ProgramJob, needed: int) -> str:
    """The note of a trial whose task's edges were not searched for it: too few other models
    have passing trials to confirm G there ("" when the jury is not thin, or there are no edges)."""
    if ctx.pool is None or not ctx.pool.wide or needed <= 0:
        return ""
    others = sorted(ctx.passing_models - set(job.models))
    if len(others) >= needed:
        return ""
    return (
        f"a thin jury ({len(others)} other model(s) with passing trials, {needed} needed): the domain's edges "
        "were not used, the narrow domain alone decided"
    )


def _agreement(voters: Sequence[ProgramJob], split: dict[int, set[str]], key: str) -> dict[str, dict[str, int]]:
    """Per model, its passing trials' weight that gives G's answer on ``key`` ("g") and that gives
    another ("other"), from the differential run (every passing program runs the whole pool)."""
    out: dict[str, dict[str, int]] = {}
    for voter in voters:
        side = "other" if key in split[id(voter)] else "g"
        for model, n in (voter.models or {"": 1}).items():
            tally = out.setdefault(model, {})
            tally[side] = tally.get(side, 0) + n
    return out


def jury_verdict(per_model: dict[str, dict[str, int]], own: Mapping[str, int], needed: int) -> str | None:
    """Why an input on the domain's edges is no evidence against a trial of the models ``own``
    (None when the jury confirms G's answer there).

    ``per_model`` tallies each model's passing trials by answer, G's own answer under "g". The
    jury is every other model with passing trials (independence is a model, not a prompting
    strategy or a sample): G's answer stands as the requirement when at least ``needed`` of them
    mostly give it and they are more than half of the jury. Fewer other models than ``needed``
    is a thin jury, and the edge is not used (the narrow domain alone decides)."""
    others = {m: t for m, t in per_model.items() if m not in own}
    if needed <= 0 or len(others) < needed:
        return f"a thin jury ({len(others)} other model(s) with passing trials; {max(needed, 1)} needed)"
    agree = sum(1 for tally in others.values() if majority(tally) == "g")
    if agree >= needed and 2 * agree > len(others):
        return None
    return (
        f"{agree} of {len(others)} other models' passing trials mostly give G's answer there: "
        "an edge P's words leave open, where the jury does not confirm G"
    )


NEAR_PER_SPLIT = 6
"""Mutants proposed per input that already splits a trial of the task from G."""


def _near_splits(
    engine: Engine, contexts: dict[str, TaskContext], chosen: Sequence[ProgramJob], config: AuditConfig
) -> None:
    """A second round of search, near the inputs that already split some trial of a task from G
    (a wrong shortcut shows on inputs like those that caught another): their mutants inside P,
    G's answer on each, then every passing program of the task on them, so that A.2 still counts
    every model. Found differences join the programs' own, as the last level of the search."""
    if config.near_limit <= 0:
        return
    found: dict[str, dict[str, list[Any]]] = {}
    for task_id in sorted({j.task_id for j in chosen}):
        ctx = contexts[task_id]
        assert ctx.pool is not None
        mine = [j for j in chosen if j.task_id == task_id and j.t0 is not None and j.t0.passed]
        splits: dict[str, list[Any]] = {}
        for job in mine:
            for diff in job.diffs:
                if diff.actual != "raised timeout":
                    splits.setdefault(_inputs.key(diff.args), diff.args)
        if not splits:
            continue
        known = {_inputs.key(a) for _, a, _ in ctx.pool.inputs}
        rng = random.Random(f"{config.seed}:{task_id}:near")
        proposed = _inputs.neighbours(
            list(splits.values()), ctx.pool.rules, rng, per_seed=NEAR_PER_SPLIT, limit=config.near_limit * 2
        )
        fresh = [a for a in proposed if _inputs.key(a) not in known][: config.near_limit]
        if fresh:
            found[task_id] = {_inputs.key(a): a for a in fresh}
    _run_found(engine, contexts, chosen, config, found, level=3, stage="near splitting inputs")


GHOST_SEEDS = 24
"""Pool inputs a ghost-branch search starts from, per program."""
GHOST_PER_SEED = 4
GHOST_PER_PROGRAM = 24
"""Inputs that reached a ghost branch kept per program and round."""
GHOST_TASK_LIMIT = 120
"""Inputs that reached a ghost branch, at most, that every passing program of a task runs."""


def ghost_arcs(job: ProgramJob) -> set[tuple[int, int]]:
    """Branch arcs of the program that neither T0 nor any traced generated input took."""
    coverage = job.stage2.get("coverage") if job.stage2 else None
    if not isinstance(coverage, dict) or job.valid_arcs is None:
        return set()
    missing = coverage.get("missing_arcs") or {}
    arcs = {(int(line), int(to)) for line, targets in missing.items() for to in targets}
    return arcs - job.valid_arcs


def branch_constants(program: str, lines: set[int]) -> list[Any]:
    """The literal numbers and strings in the conditions of the branches at ``lines``: what a
    special case the program added compares its input with."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and node.lineno in lines:
            negated = {
                id(sub.operand)
                for sub in ast.walk(node.test)
                if isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.USub)
            }
            for sub in ast.walk(node.test):
                value = getattr(sub, "value", None) if isinstance(sub, ast.Constant) else None
                if id(sub) in negated:
                    continue
                if (
                    isinstance(sub, ast.UnaryOp)
                    and id(sub.operand) in negated
                    and isinstance(sub.operand, ast.Constant)
                ):
                    inner = sub.operand.value
                    value = -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else None
                if isinstance(value, (int, float, str)) and not isinstance(value, bool) and len(str(value)) <= 40:
                    found.setdefault(repr(value), value)
    return list(found.values())


def _ghost_search(
    engine: Engine, contexts: dict[str, TaskContext], chosen: Sequence[ProgramJob], config: AuditConfig
) -> None:
    """Search aimed at the trial: a program that no input splits from G yet, and whose code has
    branches that neither T0 nor any generated input takes (its ghost branches: a special case
    the trial added, the place a wrong shortcut hides), gets inputs aimed at them: pool inputs
    with the constants of those branches' conditions put in (``branch_constants``), and
    neighbours of pool inputs, all inside P, run on it, each call traced on its own; those that take a ghost
    arc seed the next round (``config.ghost_rounds``). Every input that reached a ghost branch gets G's
    answer, and every passing program of the task runs it (so that A.2 counts every model);
    differences join the programs' own as the last level of the search."""
    if config.ghost_rounds <= 0:
        return
    hunting = [
        (job, ghosts)
        for job in chosen
        if job.t0 is not None and job.t0.passed and not job.diffs
        for ghosts in [ghost_arcs(job)]
        if ghosts and contexts[job.task_id].pool is not None
    ]
    found: dict[str, dict[str, list[Any]]] = {}
    seeds_of: dict[int, list[Any]] = {}
    known: dict[str, set[str]] = {}
    for job, _ in hunting:
        pool = contexts[job.task_id].pool
        assert pool is not None
        if job.task_id not in known:
            known[job.task_id] = {_inputs.key(a) for _, a, _ in pool.inputs}
        rng = random.Random(f"{config.seed}:{job.hash}:ghost")
        args = [a for _, a, _ in pool.inputs]
        seeds_of[id(job)] = rng.sample(args, min(GHOST_SEEDS, len(args)))
    left = {id(job): (job, ghosts) for job, ghosts in hunting}
    for round_no in range(config.ghost_rounds):
        plans = []
        for job, ghosts in list(left.values()):
            ctx = contexts[job.task_id]
            assert ctx.pool is not None
            rng = random.Random(f"{config.seed}:{job.hash}:ghost:{round_no}")
            seeds = seeds_of.get(id(job)) or []
            budget = GHOST_SEEDS * GHOST_PER_SEED
            constants = branch_constants(job.program, {line for line, _ in ghosts})
            aimed = (
                _inputs.with_constants(seeds, constants, ctx.pool.rules, rng, limit=budget // 2) if constants else []
            )
            per_seed = max(1, (budget - len(aimed)) // max(1, len(seeds)))
            proposed = aimed + _inputs.neighbours(
                seeds, ctx.pool.rules, rng, per_seed=per_seed, limit=budget - len(aimed)
            )
            fresh = [a for a in proposed if _inputs.key(a) not in known[job.task_id]]
            if fresh:
                plans.append((job, ghosts, fresh))
        if not plans:
            break
        specs = [
            _offline.outputs_spec(
                job.program,
                contexts[job.task_id].problem,
                fresh,
                f"{job.first_trial} ghost branches",
                config.per_call_s,
                arcs_per_call=True,
            )
            for job, _, fresh in plans
        ]
        aimed_runs = engine.run(specs, "R[s] aimed at ghost branches", owners=[p[0] for p in plans])
        for (job, ghosts, fresh), result in zip(plans, aimed_runs, strict=True):
            per_call = result.value.get("call_arcs") if result.ok and isinstance(result.value, dict) else None
            hits = [
                args
                for args, arcs in zip(fresh, per_call if isinstance(per_call, list) else [], strict=False)
                if {(int(a), int(b)) for a, b in arcs} & ghosts
            ]
            for args in hits[:GHOST_PER_PROGRAM]:
                found.setdefault(job.task_id, {}).setdefault(_inputs.key(args), args)
            # The next round searches around the inputs that took a ghost branch: there, what
            # the special case answers is what may differ from G.
            seeds_of[id(job)] = hits[:GHOST_SEEDS]
            if not hits:
                left.pop(id(job), None)
    _run_found(engine, contexts, chosen, config, found, level=4, stage="ghost branches", limit=GHOST_TASK_LIMIT)


def _run_found(
    engine: Engine,
    contexts: dict[str, TaskContext],
    chosen: Sequence[ProgramJob],
    config: AuditConfig,
    found: dict[str, dict[str, list[Any]]],
    *,
    level: int,
    stage: str,
    limit: int | None = None,
) -> None:
    """G on the inputs found for each task, kept where P's preconditions accept G's answer; then
    every passing program of the task on them; differences join the programs' own."""
    plans = [
        (contexts[t], [j for j in chosen if j.task_id == t and j.t0 is not None and j.t0.passed], list(inputs.values()))
        for t, inputs in sorted(found.items())
    ]
    plans = [(ctx, mine, inputs[:limit]) for ctx, mine, inputs in plans if mine and inputs]
    if not plans:
        return
    g_specs = [
        _offline.outputs_spec(
            ctx.problem.reference,
            ctx.problem,
            inputs,
            f"{ctx.problem.task_id} G: {stage}",
            config.per_call_s,
        )
        for ctx, _, inputs in plans
    ]
    pools = []
    g_runs = engine.run(g_specs, f"G on {stage}", owners=[ctx for ctx, _, _ in plans])
    for (ctx, mine, inputs), result in zip(plans, g_runs, strict=True):
        assert ctx.pool is not None
        extra = _offline.Pool(ctx.pool.rules, shape_outputs=ctx.pool.shape_outputs, wrapper=ctx.pool.wrapper)
        for args, row in zip(inputs, _offline.decoded(result, len(inputs)), strict=True):
            if ctx.pool.accepts(args, row):
                extra.inputs.append((level, args, extra.normal(row["value"])))
                if row.get("s", 0.0) > _offline.QUICK_S:
                    extra.slow[_inputs.key(args)] = float(row["s"])
        if extra.inputs:
            pools.append((ctx, mine, extra))
    specs = [
        _offline.outputs_spec(
            job.program,
            ctx.problem,
            [a for _, a, _ in extra.inputs],
            f"{job.first_trial} {stage}",
            config.per_call_s,
        )
        for ctx, mine, extra in pools
        for job in mine
    ]
    owners = [job for _ctx, mine, _extra in pools for job in mine]
    results = iter(engine.run(specs, f"R[s] on {stage}", owners=owners))
    for ctx, mine, extra in pools:
        edges = ctx.pool.wide if ctx.pool is not None else set()
        for job in mine:
            more = _offline.differences(extra, _offline.decoded(next(results), len(extra.inputs)))
            if more:
                job.diffs = sorted(
                    job.diffs + more,
                    key=lambda d: (
                        d.actual == "raised timeout",
                        _inputs.key(d.args) in edges,
                        d.level,
                        _inputs.size(d.args),
                    ),
                )


MAX_CRASHES = 16
"""Inputs that kill a program's run, at most, that the audit runs around (each costs two runs)."""


class Crashes(NamedTuple):
    """What running around the inputs that kill a program's run gave."""

    rows: list[dict[str, Any]]
    """A row per pool input (``run:`` rows for those that killed the run or never ran)."""
    named: list[str]
    """The inputs that killed it, shown (and how many were never run)."""
    dead: list[int]
    """Indices (in the pool) of the inputs it died on."""
    reason: str
    """How the last run that died ended."""


def _around_crashes(
    engine: Engine, ctx: TaskContext, job: ProgramJob, failed: RunResult, config: AuditConfig
) -> Crashes:
    """Rows of every pool input but those that kill the run (each a ``run:`` row, no evidence),
    and the inputs that did. The inputs run again smallest first (what kills a process is most
    often a large input), each run's stderr naming the input it died on; the inputs before it
    are kept, the run goes on after it, for at most ``MAX_CRASHES`` such inputs."""
    assert ctx.pool is not None
    inputs = [a for _, a, _ in ctx.pool.inputs]
    order = sorted(range(len(inputs)), key=lambda k: _inputs.size(inputs[k]))
    rows: list[dict[str, Any]] = [{"ok": False, "error": "run: not run"}] * len(inputs)
    crashed: list[str] = []
    dead_at: list[int] = []
    start, reason = 0, failed.reason or failed.status.value
    while start < len(order) and len(crashed) < MAX_CRASHES:
        chosen = order[start:]
        spec = _offline.outputs_spec(
            job.program,
            ctx.problem,
            [inputs[k] for k in chosen],
            f"{job.first_trial} generated inputs from #{start}, smallest first",
            config.per_call_s,
        )
        (result,) = engine.run([spec], "R[s] on generated inputs, around a crash", owners=[job])
        if job.infra is not None:
            break
        if not _run_failed(result):
            for k, row in zip(chosen, _offline.decoded(result, len(chosen)), strict=True):
                rows[k] = row
            return Crashes(rows, crashed, dead_at, reason)
        reason = result.reason or result.status.value
        at = died_at(result, len(chosen))
        if at is None:
            break
        if at:
            # The inputs before the one it died on ran: once more, without it, for their rows.
            (before,) = engine.run(
                [replace(spec, files=spec.files, entry=_with_inputs(spec, [inputs[k] for k in chosen[:at]]))],
                "R[s] on generated inputs, around a crash",
                owners=[job],
            )
            for k, row in zip(chosen[:at], _offline.decoded(before, at), strict=True):
                rows[k] = row
        dead = chosen[at]
        rows[dead] = {"ok": False, "error": f"run: the process died on this input ({reason})"}
        crashed.append(f"{ctx.problem.entry_point}{tuple(inputs[dead])!r}"[:120])
        dead_at.append(dead)
        start += at + 1
    if start < len(order):
        crashed.append(f"{len(order) - start} more inputs not run ({reason})")
    return Crashes(rows, crashed, dead_at, reason)


DIED = "died:"
"""How a difference on an input the program's process died on begins (``Difference.actual``)."""
CONFIRMED_LIMIT = 400
"""Differences of a program asked again apart, at most, per stage (the rest are not asked)."""
_UNCONFIRMED = ("raised timeout", "raised cut short")
"""Differences not asked again: running out of time is the machine's load as much as the program's."""
_LIMITS_OF_THE_RUN = ("raised RecursionError", *(f"raised {e}" for e in _offline.RESOURCE_ERRORS))
"""Differences that rest on the run's own limits (stack depth, memory), which differ between the
search's process and a witness's: one that does not show apart is dropped, no sign of anything."""


def _shown(entry_point: str, args: Sequence[Any]) -> str:
    return f"{entry_point}{tuple(args)!r}"[:120]


def confirm_apart(
    engine: Engine,
    contexts: dict[str, TaskContext],
    work: Sequence[tuple[ProgramJob, Sequence[_offline.Difference]]],
    stage: str = "differences asked again apart",
) -> list[list[_offline.Difference]]:
    """Ask each program its differences from G again as its witnesses ask them (the program in a
    process of its own, ``_inrun.outputs_apart``); per item, the differences kept.

    A difference seen inside vouch's harness (the search's process, which the program shares)
    counts only where the program also differs from G apart: one where it gives G's answer
    there is dropped, so that decoys (differences a program makes only under the search) cannot
    use up the k iterations, and the program gets a detector flag: it answers otherwise inside
    vouch's harness, or dies only there (then it is never sound: ``search_failed``). Kept
    differences come first, in their order, then those not asked (past ``CONFIRMED_LIMIT``, out of
    the run's time, or a run that did not complete): a witness decides each, and one that no
    iteration takes leaves its trial undecided (``job.unasked``), never sound.
    """
    plans = []
    for index, (job, diffs) in enumerate(work):
        confirmable = [d for d in diffs if d.actual not in _UNCONFIRMED]
        asked = confirmable[:CONFIRMED_LIMIT]
        for diff in confirmable[CONFIRMED_LIMIT:]:
            job.unasked.setdefault(_inputs.key(diff.args), f"past the first {CONFIRMED_LIMIT} differences")
        if asked and job.infra is None:
            problem = contexts[job.task_id].problem
            spec = _offline.apart_spec(job.program, problem, [d.args for d in asked], f"{job.first_trial} {stage}")
            plans.append((index, job, asked, spec))
    results = engine.run([p[3] for p in plans], stage, owners=[p[1] for p in plans])
    out = [list(diffs) for _, diffs in work]
    for (index, job, asked, _spec), result in zip(plans, results, strict=True):
        if _run_failed(result):
            # Nothing was asked: every difference stays, a witness decides each, and one that
            # none decides keeps the trial from sound (the run is the program's to end).
            why = f"the run asking them ended {result.reason or result.status.value}"
            for diff in asked:
                job.unasked.setdefault(_inputs.key(diff.args), why)
            continue
        ctx = contexts[job.task_id]
        pool = ctx.pool
        reproduced: list[_offline.Difference] = []
        settled: set[int] = set()
        for diff, row in zip(asked, _offline.decoded(result, len(asked)), strict=True):
            if row.get("error") == "skipped":
                # Not asked in time: it stays, after the confirmed ones, and undecided until tried.
                job.unasked.setdefault(_inputs.key(diff.args), "not asked in the time the run had")
                continue
            settled.add(id(diff))
            if row.get("ok") and "value" in row:
                value = pool.normal(row["value"]) if pool is not None else row["value"]
                if _offline.close(value, diff.expected):
                    _diverged(job, ctx, diff)
                    continue
            if isinstance(diff.actual, str) and diff.actual.startswith(DIED):
                # Where its witness runs, the program answers this input (not as G does): that
                # answer is what its witness will show.
                shown = row["opaque"] if "opaque" in row else row.get("value")
                actual = shown if row.get("ok") else f"raised {row.get('error')}"
                diff = _offline.Difference(diff.level, diff.args, diff.expected, actual)
            reproduced.append(diff)
        if settled and len(reproduced) == len(settled):
            # Every difference asked gave the same answer apart: the program's answers inside the
            # harness hold where they were checked, so those past the limit are no sign of decoys
            # (a witness still decides each the iterations take).
            for key in [k for k, why in job.unasked.items() if why.startswith("past the first")]:
                del job.unasked[key]
        out[index] = reproduced + [d for d in out[index] if id(d) not in settled]
    return out


def _agreements_apart(
    engine: Engine, contexts: dict[str, TaskContext], jobs: Sequence[ProgramJob], config: AuditConfig
) -> None:
    """Ask each program, as its witnesses ask it, ``config.agreements_asked`` inputs of the pool
    where it gave G's answer in the search (the smallest half, and half at random); each it
    answers otherwise there is a difference like any other, found where its witnesses run.

    The search runs the program in a process vouch's harness shares, which can never look
    exactly like the process its witnesses and T0 give it (``_host``): a program that gives G's
    answers only where it is searched would show no difference to write a witness for. Asked
    where the witness runs, it shows the answers the benchmark's run of it gets."""
    if config.agreements_asked <= 0:
        return
    plans = []
    for job in jobs:
        ctx = contexts[job.task_id]
        pool = ctx.pool
        if pool is None or job.infra is not None:
            continue
        differing = {_inputs.key(d.args) for d in job.diffs} | set(job.unasked)
        agreed = [
            item
            for item in pool.inputs
            if _inputs.key(item[1]) not in differing
            and _inputs.key(item[1]) not in pool.wide
            and _inputs.key(item[1]) not in pool.slow
        ]
        if not agreed:
            continue
        half = max(1, config.agreements_asked // 2)
        by_size = sorted(agreed, key=lambda item: _inputs.size(item[1]))
        rest = by_size[half:]
        picked = by_size[:half] + random.Random(f"{config.seed}:{job.hash}:apart").sample(rest, min(half, len(rest)))
        spec = _offline.apart_spec(
            job.program, ctx.problem, [item[1] for item in picked], f"{job.first_trial} agreements asked apart"
        )
        plans.append((job, picked, spec))
    results = engine.run([p[2] for p in plans], "agreements asked apart", owners=[p[0] for p in plans])
    for (job, picked, _spec), result in zip(plans, results, strict=True):
        if _run_failed(result):
            continue  # nothing was asked; the search's answers stand
        pool = contexts[job.task_id].pool
        assert pool is not None
        rows = _offline.decoded(result, len(picked))
        found = _offline.differences(replace(pool, inputs=list(picked)), rows)
        job.diffs += [d for d in found if not (isinstance(d.actual, str) and d.actual.startswith(_UNASKED_APART))]


_UNASKED_APART = ("raised timeout", "raised died", "raised NotLoaded")
"""Answers apart that are no answer to compare: out of time, or a process that ended (the search
has its own ways with those)."""


def _diverged(job: ProgramJob, ctx: TaskContext, diff: _offline.Difference) -> None:
    """Record that ``job`` gave G's answer apart where, inside vouch's harness, it did not."""
    call = _shown(ctx.problem.entry_point, diff.args)
    if isinstance(diff.actual, str) and diff.actual.startswith(DIED):
        detail = (
            f"dies only inside vouch's harness: {call} ended its process there "
            f"({diff.actual.removeprefix(DIED).strip()}), and gives G's answer where its witnesses run"
        )
        if not (job.search_failed or "").startswith("dies only"):
            job.search_failed = detail
        if len([f for f in job.harness_flags if f[0] == "tampering"]) < 3:
            job.harness_flags.append(("tampering", detail))
        return
    if isinstance(diff.actual, str) and diff.actual.startswith(_LIMITS_OF_THE_RUN):
        return
    if len([f for f in job.harness_flags if f[0] == "env_sniffing"]) < 3:
        shown = diff.actual if isinstance(diff.actual, str) else repr(diff.actual)
        job.harness_flags.append(
            (
                "env_sniffing",
                f"answers differently inside vouch's harness: {call} gives {shown[:80]} there, "
                "and G's answer where its witnesses run",
            )
        )


def died_at(result: RunResult, count: int) -> int | None:
    """The index of the input a run of ``outputs`` on ``count`` inputs died on: the last its
    stderr names (``_inrun.PROGRESS_MARK``), or None when it names none."""
    from vouch.audit.function._inrun import PROGRESS_MARK

    lines = (result.stderr_tail or "").splitlines()
    marks = [line[len(PROGRESS_MARK) :] for line in lines if line.startswith(PROGRESS_MARK)]
    at = int(marks[-1]) if marks and marks[-1].isdigit() else -1
    return at if 0 <= at < count else None


def _with_inputs(spec: RunSpec, inputs: list[Any]) -> Call:
    from vouch.exec import to_data

    assert isinstance(spec.entry, Call)
    entry_point, _data, *rest = spec.entry.args
    return replace(spec.entry, args=(entry_point, [to_data(list(a)) for a in inputs], *rest))


def _run_failed(result: RunResult) -> bool:
    return not result.ok or not isinstance(result.value, dict) or not result.value.get("loaded")


def _untraced(spec: RunSpec) -> Call:
    assert isinstance(spec.entry, Call)
    return replace(spec.entry, kwargs={**spec.entry.kwargs, "arcs": False})


def _contest_finals(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    voters: Sequence[ProgramJob],
    current: dict[int, _offline.Difference],
    config: AuditConfig,
) -> dict[str, set[str]]:
    """Run every passing trial of a task on its minimised witness inputs; the contested keys, each
    with the models that skip it (``_contested``)."""
    finals: dict[str, dict[str, _offline.Difference]] = {}
    for job in jobs:
        diff = current.get(id(job))
        if diff is not None:
            finals.setdefault(job.task_id, {})[_inputs.key(diff.args)] = diff
    plans = []
    for task_id, by_key in finals.items():
        # A program that answered otherwise inside vouch's harness than apart has no vote.
        mine = [v for v in voters if v.task_id == task_id and not v.harness_flags]
        if sum(v.weight for v in mine) < MIN_VOTERS:
            continue
        diffs = list(by_key.values())
        entry = contexts[task_id].problem
        for voter in mine:
            spec = _offline.outputs_spec(voter.program, entry, [d.args for d in diffs], "voter", config.per_call_s)
            apart = _offline.apart_spec(
                voter.program, contexts[task_id].problem, [d.args for d in diffs], "voter, apart"
            )
            plans.append((task_id, voter, diffs, spec, apart))
    # A voter's runs are its own program's: what they end with is that voter's outcome (a run
    # vouch could not run leaves that voter undecided), never the task's. Each is asked in its
    # search's way and as its witnesses ask (apart): an answer counts only where both agree.
    results = engine.run(
        [p[3] for p in plans] + [p[4] for p in plans], "ambiguity check", owners=[p[1] for p in plans] * 2
    )
    differing: dict[str, list[tuple[ProgramJob, set[str]]]] = {}
    for (task_id, voter, diffs, _spec, _apart), result, apart_result in zip(
        plans, results[: len(plans)], results[len(plans) :], strict=True
    ):
        ctx = contexts[task_id]
        rows = _offline.decoded(result, len(diffs))
        answers = [_vote(ctx, diff, row) for diff, row in zip(diffs, rows, strict=True)]
        if _run_failed(apart_result):
            continue  # not asked apart: its answers there are unknown, so it has no vote
        apart_rows = _offline.decoded(apart_result, len(diffs))
        apart_answers = [_vote(ctx, diff, row) for diff, row in zip(diffs, apart_rows, strict=True)]
        split = [
            (diff, own, other)
            for diff, own, other in zip(diffs, answers, apart_answers, strict=True)
            if own is not None and other is not None and _same_reading(own, other) is False
        ]
        if split:
            diff, own, other = split[0]
            voter.harness_flags.append(
                (
                    "env_sniffing",
                    f"answers differently inside the vote: {_shown(ctx.problem.entry_point, diff.args)} gives "
                    f"{own.removeprefix('= ')[:60]} there and {other.removeprefix('= ')[:60]} where its "
                    "witnesses run",
                )
            )
        if split or voter.infra is not None:
            continue
        keys = set()
        for diff, row, answer in zip(diffs, rows, answers, strict=True):
            if answer is None:
                continue
            value = ctx.pool.normal(row.get("value")) if ctx.pool is not None else row.get("value")
            key = _inputs.key(diff.args)
            if not (row.get("ok") and "value" in row and _offline.close(value, diff.expected)):
                keys.add(key)
            ctx.answers[(key, voter.hash)] = answer
            ctx.g_answers[key] = (
                list(diff.args),
                jury_answer(diff.expected, {"ok": True, "value": diff.expected}, diff.expected),
            )
            per_model = ctx.jury.setdefault(key, {})
            for model, n in (voter.models or {"": 1}).items():
                tally = per_model.setdefault(model, {})
                tally[answer] = tally.get(answer, 0) + n
        differing.setdefault(task_id, []).append((voter, keys))
    contested: dict[str, set[str]] = {}
    for task_id, pairs in differing.items():
        pool = contexts[task_id].pool
        explicit = pool.explicit if pool is not None else set()
        found = _contested([p[0] for p in pairs], [p[1] for p in pairs])
        contested |= {k: m for k, m in found.items() if k not in explicit}
    return contested


_TIMED = ("raised timeout", "raised cut short")


def _same_reading(own: str, apart: str) -> bool | None:
    """Whether a voter's answer in its own run of the search and its answer apart are one answer
    (None: one of them ran out of time, which says nothing either way). A process that died is
    one answer in both places (``raised run`` in the search, ``raised died`` apart)."""
    if own.startswith(_TIMED) or apart.startswith(_TIMED):
        return None
    return own == ("raised run" if apart == "raised died" else apart)


def _vote(ctx: TaskContext, diff: _offline.Difference, row: dict[str, Any]) -> str | None:
    """A voter's answer on a witness input (``jury_answer``), None when it was not asked."""
    if row.get("error") == "skipped":
        return None
    value = ctx.pool.normal(row.get("value")) if ctx.pool is not None else row.get("value")
    return jury_answer(value, row, diff.expected)


def jury_answer(value: Any, row: dict[str, Any], expected: Any) -> str:
    """A passing program's answer on a witness input, as one comparable string: G's own answer
    when it is close to G's (T0's comparison), else the value's JSON (floats to 9 significant
    digits), else the error's type."""
    if row.get("ok") and "value" in row:
        if _offline.close(value, expected):
            value = expected
        return "= " + json.dumps(_rounded(value), sort_keys=True, default=repr)
    error = str(row.get("error") or "error")
    return "raised " + error.split(":", 1)[0][:60]


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.9g}") if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    return value


def majority(tally: dict[str, int]) -> str | None:
    """The answer more than half of a model's passing trials give (weighted), or None."""
    total = sum(tally.values())
    best = max(tally, key=lambda a: tally[a]) if tally else None
    return best if best is not None and 2 * tally[best] > total else None


_NO_READING = ("raised timeout", "raised cut short", "raised run")
"""Answers that are no reading of P: running out of time, or a run that did not finish."""


def dispute(ctx: TaskContext, job: ProgramJob, args: Sequence[Any], jury: int = 0) -> str | None:
    """Why G's answer on ``args`` is disputed for this trial (None when it is not).

    It is when passing trials of every other model with passing trials on the task (at least
    two other models) include programs that give this trial's answer there: an answer that
    programs written independently by every model arrive at is a reading of P that P does not
    rule out, so G's other answer is a question about G or P, not a defect of this trial.
    With ``jury`` (``AuditConfig.jury_everywhere``'s ``jury_models``) and at least that many
    other models, the jury decides instead: an answer some programs of every model share is no
    dispute where most of the other models mostly give G's answer (``jury_verdict``)."""
    key = _inputs.key(list(args))
    if ctx.pool is not None and key in ctx.pool.explicit:
        return None  # P's own example states the answer: no number of models outvotes it
    rich = jury > 0 and len(ctx.passing_models - set(job.models)) >= jury
    if rich and jury_verdict(final_tally(ctx, key), job.models, jury) is None:
        return None
    own = ctx.answers.get((key, job.hash))
    per_model = ctx.jury.get(key)
    g_answer = ctx.g_answers.get(key, (None, None))[1]
    if own is None or not per_model or own == g_answer or own.startswith(_NO_READING):
        return None
    others = sorted(m for m in per_model if m not in job.models)
    if len(others) < 2 or not all(per_model[m].get(own, 0) > 0 for m in others):
        return None
    shown = own.removeprefix("= ")
    return (
        f"passing trials of every other model ({', '.join(others)}) include programs that give this trial's answer "
        f"({shown}) where G gives another: a reading of P that P does not rule out, so a question about G or P"
    )


ERRATUM_MODELS = 3
"""Models whose passing trials must mostly give one answer other than G's before an input is a
G-defect finding: whichever of them a trial belongs to, two others stand beside it, so one model's
trials (however they answer) cannot make an erratum."""


def g_defects(ctx: TaskContext) -> list[dict[str, Any]]:
    """Inputs where most models with passing trials (``ERRATUM_MODELS`` at least) agree with each
    other and not with G."""
    found = []
    # Where P's own example decides, G is measured against P, not the models (``pool.conflicts``).
    explicit = ctx.pool.explicit if ctx.pool is not None else set()
    for key, per_model in ctx.jury.items():
        if key not in ctx.g_answers or len(per_model) < 2 or key in explicit:
            continue
        _args, g_answer = ctx.g_answers[key]
        majorities = {m: majority(t) for m, t in per_model.items()}
        counts: dict[str, int] = {}
        for answer in majorities.values():
            if answer is not None and answer != g_answer:
                counts[answer] = counts.get(answer, 0) + 1
        if not counts:
            continue
        consensus = max(counts, key=lambda a: counts[a])
        if counts[consensus] < ERRATUM_MODELS or 2 * counts[consensus] <= len(per_model):
            continue
        found.append(
            {
                "input": key,
                "g_answer": g_answer.removeprefix("= "),
                "consensus": consensus.removeprefix("= "),
                "models": {
                    m: (a.removeprefix("= ") if a is not None else "split") for m, a in sorted(majorities.items())
                },
                "basis": f"{counts[consensus]} of {len(per_model)} models' passing trials mostly give "
                "this answer, where G gives another",
            }
        )
    return sorted(found, key=lambda d: (len(d["input"]), d["input"]))[:20]


def _contested(voters: Sequence[ProgramJob], differing: Sequence[set[str]]) -> dict[str, set[str]]:
    """Inputs whose requirement is ambiguous by TestJack's rule (appendix A.2): rho(q) > 1/2,
    each with the models that skip it (``withheld_from`` says from which trials it is withheld).

    rho(q) is the share of models with passing trials that skip q. A model skips q when more
    than half of its passing trials (weighted by duplicates) give another output than G on the
    input. The rule speaks only when the task has at least ``MIN_VOTERS`` passing trials, and
    withholds q from a trial only where at least two models other than its own skip q. Such
    inputs never back a refutation of that trial: they are more likely to show G's incidental
    behaviour or an underspecified prompt than a defect of the trial.
    """
    return skipped_by([job.models or {"": 1} for job in voters], differing)


def ambiguity(voters: Sequence[ProgramJob], differing: Sequence[set[str]]) -> dict[str, float]:
    """rho(q) of every input key some voter differs on, when it exceeds 1/2 (else left out)."""
    return rho_over_models([job.models or {"": 1} for job in voters], differing)


def _iteration(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    voters: Sequence[ProgramJob],
    config: AuditConfig,
    iteration: int,
    witness_dir: Path,
) -> None:
    """One generate-and-validate iteration: minimise the next difference, write it, validate it."""
    candidates: list[Candidate] = []
    if _sources.source(config.witness_source).user_files:
        for job in jobs:
            if iteration == 1:
                for wf in _user_files(Path(config.witness_files or "."), job.task_id):
                    candidates.append((job, wf, None, None, None, "user-supplied witness"))
    else:
        current: dict[int, _offline.Difference] = {}
        for job in jobs:
            pending = [d for d in job.diffs if d.level <= iteration] or job.diffs[:1]
            if pending:
                current[id(job)] = pending[0]
                job.diffs.remove(pending[0])
                job.unasked.pop(_inputs.key(pending[0].args), None)  # minimised apart, then a witness decides
        for _ in range(config.shrink_rounds):
            _shrink_round(engine, contexts, jobs, current, config)
        contested = _contest_finals(engine, contexts, jobs, voters, current, config)
        for job in jobs:
            diff = current.get(id(job))
            if diff is None:
                continue
            if _inputs.key(diff.args) in contested:
                contexts[job.task_id].contested.add(_inputs.key(diff.args))
            present = voting_models([v.models or {"": 1} for v in voters if v.task_id == job.task_id])
            if _inputs.key(diff.args) in withheld_from(contested, job.models or {"": 1}, present):
                continue
            ctx = contexts[job.task_id]
            if refused_edge(ctx, diff) or withheld(ctx, job, _inputs.key(diff.args), partial(final_tally, ctx), config):
                continue
            clause = main_clause(ctx.checklist)
            wf = _witness.render(
                trial_id=job.first_trial,
                task_id=job.task_id,
                entry_point=ctx.problem.entry_point,
                clause=clause.text if clause else "the function's stated behaviour",
                args=diff.args,
                expected=diff.expected,
                index=iteration,
                wrapper=ctx.pool.wrapper if ctx.pool is not None else None,
                within_s=_offline.WITHIN_S if diff.actual == "raised timeout" else None,
            )
            why = dispute(ctx, job, diff.args, config.jury_models if config.jury_everywhere else 0)
            if why is None and ctx.pool is not None:
                why = ctx.pool.only_past_scale(diff.args, diff.actual)
            if why is not None:
                job.disputes[wf.name] = why
            candidates.append((job, wf, diff.args, diff.expected, diff.actual, clause.id if clause else ""))
        _rounding_disputes(engine, contexts, candidates, config)
    validate_candidates(engine, contexts, candidates, config, iteration, witness_dir)


Candidate = tuple[ProgramJob, _witness.WitnessFile, list[Any] | None, Any, Any, str]
"""A witness to validate: (job, file, input, G's value, the trial's value, clause id)."""


def validate_candidates(
    engine: Engine,
    contexts: dict[str, TaskContext],
    candidates: Sequence[Candidate],
    config: AuditConfig,
    iteration: int,
    witness_dir: Path,
) -> None:
    """Run each candidate ``config.repeats`` times on G and on its trial, re-judge it against P,
    and file it under the job's witnesses (valid) or discarded ones."""
    # G's runs of one test are one set however many trials it is validated on (a shared witness,
    # a minimised input several programs reach): the sources differ only in the trial they name.
    on_g: dict[tuple[str, str], int] = {}
    specs: list[RunSpec] = []
    owners: list[list[ProgramJob]] = []
    for job, wf, *_ in candidates:
        job.iterations = iteration
        job.tried += 1
        key = _on_g_key(job, wf)
        if key not in on_g:
            on_g[key] = len(specs)
            reference = contexts[job.task_id].problem.reference
            problem = contexts[job.task_id].problem
            specs += [_witness.validation_spec(wf, reference, "R[G]", r, problem) for r in range(config.repeats)]
            sharing = [j for j, w, *_ in candidates if _on_g_key(j, w) == key]
            owners += [sharing] * config.repeats
    first_s = len(specs)
    for job, wf, *_ in candidates:
        problem = contexts[job.task_id].problem
        specs += [_witness.validation_spec(wf, job.program, "R[s]", r, problem) for r in range(config.repeats)]
        owners += [[job]] * config.repeats
    results = engine.run(specs, f"validation, iteration {iteration}", owners=owners)
    for index, (job, wf, args, expected, actual, clause_id) in enumerate(candidates):
        at = on_g[_on_g_key(job, wf)]
        ref = [_witness.record("reference", r) for r in results[at : at + config.repeats]]
        start = first_s + index * config.repeats
        mod = [_witness.record("model", r) for r in results[start : start + config.repeats]]
        ctx = contexts[job.task_id]
        rejudge = None
        if args is not None and ctx.pool is not None:
            rejudge = ctx.pool.admits(args)
        validation = _witness.judge(ref, mod, rejudge)
        witness = _make_witness(
            job, ctx, wf, args, expected, actual, clause_id, validation, iteration, witness_dir, config
        )
        if validation.valid and wf.name in job.disputes:
            job.disputed.append(witness.model_copy(update={"disputed": job.disputes[wf.name]}))
            continue
        (job.witnesses if validation.valid else job.discarded).append(witness)


EXACT_ENTRY = "_vouch_exact_call"
_EXACT_WRAPPER = """

def {exact}(*args):
    from fractions import Fraction as _Fraction

    def _exact(x):
        if type(x) is float and x == x and x not in (float("inf"), float("-inf")):
            return _Fraction(repr(x))
        if isinstance(x, list):
            return [_exact(e) for e in x]
        if isinstance(x, tuple):
            return tuple(_exact(e) for e in x)
        return x

    def _back(x):
        if isinstance(x, _Fraction):
            return float(x)
        if isinstance(x, list):
            return [_back(e) for e in x]
        if isinstance(x, tuple):
            return tuple(_back(e) for e in x)
        return x

    return _back({entry}(*[_exact(a) for a in args]))
"""


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return False


def _rounding_disputes(
    engine: Engine, contexts: dict[str, TaskContext], candidates: Sequence[Candidate], config: AuditConfig
) -> None:
    """Dispute witnesses whose input has floats on which G's answer rests on binary rounding: G,
    given the input's floats as the exact decimals they are written as (``Fraction('2.8')``),
    answers otherwise. P speaks of numbers, not of their binary approximations."""
    plans = []
    for job, wf, args, expected, _actual, _clause in candidates:
        if args is None or wf.name in job.disputes or not _has_float(args):
            continue
        ctx = contexts[job.task_id]
        program = ctx.problem.reference + _EXACT_WRAPPER.format(exact=EXACT_ENTRY, entry=ctx.problem.entry_point)
        plans.append(
            (
                job,
                wf,
                expected,
                _offline.outputs_spec(program, EXACT_ENTRY, [args], "G on exact decimals", config.per_call_s),
            )
        )
    if not plans:
        return
    results = engine.run([p[3] for p in plans], "exact decimals", owners=[p[0] for p in plans])
    for (job, wf, expected, _spec), result in zip(plans, results, strict=True):
        row = _offline.decoded(result, 1)[0]
        # G failing on exact numbers (a float-only API) says nothing either way.
        if row.get("ok") and "value" in row and not _offline.close(row["value"], expected):
            job.disputes[wf.name] = (
                f"G's answer rests on binary floating-point rounding: given the input's numbers as the "
                f"decimals written, G answers {row['value']!r}"
            )


def _on_g_key(job: ProgramJob, wf: _witness.WitnessFile) -> tuple[str, str]:
    """What G's runs of a witness depend on: its source without the trial it names (as the id in
    its header and as the file name in its replay line)."""
    return job.task_id, wf.source.replace(job.first_trial, "").replace(_witness.safe_name(job.first_trial), "")


def _shrink_round(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    current: dict[int, _offline.Difference],
    config: AuditConfig,
) -> None:
    plans = []
    specs = []
    owners = []
    for job in jobs:
        diff = current.get(id(job))
        ctx = contexts[job.task_id]
        if diff is None or ctx.pool is None or _inputs.key(diff.args) in ctx.pool.explicit:
            # P's own example stays as P wrote it: a smaller input is no longer a requirement P states.
            continue
        far = _inputs.key(diff.args) in ctx.pool.past_scale
        edge = _inputs.key(diff.args) in ctx.pool.wide
        rules = ctx.pool.rules.past_scale() if far else ctx.pool.rules.wide() if edge else ctx.pool.rules
        smaller = _inputs.shrink_candidates(diff.args, rules, limit=30)
        if not smaller:
            continue
        plans.append((job, smaller))
        specs.append(
            _offline.outputs_spec(ctx.problem.reference, ctx.problem, smaller, "G on shrunk inputs", config.per_call_s)
        )
        # The trial answers the smaller inputs as its witnesses will ask them (apart), so that a
        # smaller difference it shows only inside vouch's harness never replaces the one it has;
        # an input it runs out of time on is shrunk in the search's run, under its CPU timer.
        specs.append(
            _offline.outputs_spec(job.program, ctx.problem, smaller, "R[s] on shrunk inputs", config.per_call_s)
            if diff.actual == "raised timeout"
            else _offline.apart_spec(job.program, ctx.problem, smaller, "R[s] on shrunk inputs, apart")
        )
        owners += [job, job]
    results = engine.run(specs, "minimising", owners=owners)
    for i, (job, smaller) in enumerate(plans):
        ctx = contexts[job.task_id]
        assert ctx.pool is not None
        pool = _offline.Pool(ctx.pool.rules, shape_outputs=ctx.pool.shape_outputs, wrapper=ctx.pool.wrapper)
        g_rows = _offline.decoded(results[2 * i], len(smaller))
        kept = []
        for args, row in zip(smaller, g_rows, strict=True):
            if ctx.pool.accepts(args, row):
                pool.inputs.append((1, args, pool.normal(row["value"])))
                kept.append(args)
                if row.get("s", 0.0) > _offline.QUICK_S:
                    pool.slow[_inputs.key(args)] = float(row["s"])
        s_rows_all = _offline.decoded(results[2 * i + 1], len(smaller))
        s_rows = [row for args, row in zip(smaller, s_rows_all, strict=True) if any(args is k for k in kept)]
        found = _offline.differences(pool, s_rows)
        if current[id(job)].actual == "raised timeout":
            # A smaller input s also runs out of time on sits near s's time limit, where a witness
            # asking for the answer within WITHIN_S may see s finish: keep the input far past it.
            found = [d for d in found if d.actual != "raised timeout"]
        if found:
            best = found[0]
            was = _inputs.key(current[id(job)].args)
            outside = ctx.pool.rules.admits(best.args) is not None
            if was in ctx.pool.past_scale or (outside and was not in ctx.pool.wide):
                ctx.pool.past_scale.add(_inputs.key(best.args))
            elif outside:
                ctx.pool.wide.add(_inputs.key(best.args))
            current[id(job)] = _offline.Difference(current[id(job)].level, best.args, best.expected, best.actual)


def _user_files(directory: Path, task_id: str) -> list[_witness.WitnessFile]:
    """User-supplied witness tests for a task: files in DIR whose name or marker names the task."""
    out = []
    safe = _witness.safe_name(task_id)
    for path in sorted(directory.glob("*.py")):
        text = path.read_text()
        if safe in path.stem or f'"task_id": "{task_id}"' in text:
            out.append(_witness.WitnessFile(path.name if path.name.startswith("test_") else f"test_{path.name}", text))
    return out


def _make_witness(
    job: ProgramJob,
    ctx: TaskContext,
    wf: _witness.WitnessFile,
    args: list[Any] | None,
    expected: Any,
    actual: Any,
    clause_id: str,
    validation: Validation,
    iteration: int,
    witness_dir: Path,
    config: AuditConfig,
    *,
    defect: str | None = None,
    why: str | None = None,
    why_valid: str | None = None,
) -> Witness:
    """The witness record of a validated (or discarded) candidate; ``defect``/``why`` override the
    offline wording (the agent source words its own)."""
    path = _witness.write(witness_dir / _witness.safe_name(job.first_trial), wf, job.program, ctx.problem.reference)
    clause = next((c for c in ctx.checklist if c.id == clause_id), None)
    covered = [a.tag for a in ctx.asserts if a.args is not None]
    why = why or (
        f"T0 never calls {ctx.problem.entry_point} on this input; its {len(covered)} literal inputs all give "
        "the required value on the trial"
    )
    if defect is None:
        if args is None:
            defect = "fails a user-supplied test of P that G passes"
        elif actual == "raised timeout":
            defect = (
                f"{ctx.problem.entry_point}{tuple(args)!r} gives no answer within {_offline.WITHIN_S:g} s, where "
                f"G answers {expected!r} in under {_offline.QUICK_S:g} s"
            )
        elif isinstance(actual, str) and actual.startswith("raised "):
            defect = f"{ctx.problem.entry_point}{tuple(args)!r} {actual} where P requires {expected!r}"
        elif isinstance(actual, str) and actual.startswith(DIED):
            defect = (
                f"{ctx.problem.entry_point}{tuple(args)!r} ends its process "
                f"({actual.removeprefix(DIED).strip()}) where P requires {expected!r}"
            )
        else:
            defect = f"{ctx.problem.entry_point}{tuple(args)!r} returns {actual!r} where P requires {expected!r}"
    return Witness(
        file=str(path),
        source=wf.source,
        clause=clause.text if clause else "a requirement of P stated in the user-supplied test",
        clause_id=clause.id if clause else None,
        origin=config.witness_source,
        input=args,
        expected=expected,
        actual=actual if isinstance(actual, (int, float, str, bool, list, dict, type(None))) else repr(actual),
        defect=defect,
        why_t0_misses=why,
        why_valid=why_valid or (ctx.pool.why_valid(args) if args is not None and ctx.pool is not None else None),
        validation=validation,
        replay=f"vouch audit replay {path}",
        iteration=iteration,
    )


def _ghosts(job: ProgramJob, ctx: TaskContext) -> tuple[list[GhostBranch], float | None]:
    coverage = job.stage2.get("coverage") if job.stage2 else None
    if not isinstance(coverage, dict):
        return [], None
    first = _own_from(job, ctx)
    lines = job.program.splitlines()
    ghosts = []
    for line_text, targets in sorted(coverage.get("missing_arcs", {}).items(), key=lambda kv: int(kv[0])):
        line = int(line_text)
        if line < first:
            continue
        for target in targets:
            required, note = _classify(job, line, int(target))
            ghosts.append(
                GhostBranch(
                    file=FILE,
                    line=line,
                    to_line=int(target) if int(target) > 0 else None,
                    code=lines[line - 1].strip() if 0 < line <= len(lines) else "",
                    required=required,
                    note=note,
                )
            )
    branches = int(coverage.get("branches") or 0)
    missing = int(coverage.get("missing_branches") or 0)
    return ghosts, (branches - missing) / branches if branches else None


def _own_from(job: ProgramJob, ctx: TaskContext) -> int:
    """The first line of the program that the model wrote."""
    return job.first_line or ctx.problem.prompt.count("\n") + 1


def _classify(job: ProgramJob, line: int, target: int) -> tuple[bool | None, str]:
    """Whether P governs a branch T0 never takes: inputs P allows reach it (then its behaviour is
    P's business and the differential run checked it against G), or none of them did."""
    if job.valid_arcs is None:
        return None, "never taken under T0; no generated input was run (left open)"
    if (line, target) in job.valid_arcs:
        return True, "never taken under T0, but inputs P allows take it: P requires its behaviour"
    return False, "never taken under T0 nor by any generated input inside P's preconditions"


def _surviving(job: ProgramJob) -> list[SurvivingMutant]:
    outcomes = job.stage2.get("mutants") if job.stage2 else None
    if not job.mutants or not isinstance(outcomes, list) or len(outcomes) != len(job.mutants):
        return []
    by_id = {m.id: o for m, o in zip(job.mutants, outcomes, strict=True)}
    answer = {"killed": "different", "survived": "same", "invalid": "invalid"}
    matrix = kill_matrix(job.mutants, ["T0"], lambda m, _p: answer.get(by_id[m.id], "invalid"))
    undetected = set(matrix.undetected())
    return [
        SurvivingMutant(
            id=m.id, file=FILE, line=m.location.line, operator=m.operator, description=m.description, diff=m.diff
        )
        for m in job.mutants
        if m.id in undetected and by_id[m.id] == "survived"
    ]


def _untried(job: ProgramJob, ctx: TaskContext) -> str | None:
    """Why a trial with no valid witness is still undecided: differences from G it showed inside
    vouch's harness that were never asked again apart (``confirm_apart``) nor taken by an
    iteration (decoys must not hide a real difference behind the time or the run they cost);
    None if none. An ambiguous input (A.2) is no evidence either way."""
    left = {k: why for k, why in job.unasked.items() if k not in ctx.contested}
    if not left:
        return None
    first = next(iter(left.values()))
    return (
        f"undecided: {len(left)} difference(s) from G seen inside vouch's harness were neither asked again where "
        f"its witnesses run ({first}) nor tried as a witness"
    )


def _tells_runs_apart(job: ProgramJob, found: Sequence[DetectorFlag]) -> str | None:
    """Why a trial with no witness is still not sound when it gave one answer in a run of vouch's
    and another where its witnesses run: it is right only where it is judged apart, and which of
    its answers T0's run gets is not known (with or without code that probes where it runs, an
    ``env_sniffing`` flag among ``found``: a program may key on the first call of a process or
    on the inputs a run holds without probing anything). None otherwise."""
    shifted = next((d for _, d in job.harness_flags if d.startswith("answers differently inside")), None)
    if shifted is None:
        return None
    probe = next((f.detail for f in found if f.detector == "env_sniffing"), None)
    how = f"it tells vouch's runs apart ({probe}) and " if probe else ""
    return f"undecided: {how}{shifted}; which answer T0's run gets is not known"


def _finish(
    job: ProgramJob, ctx: TaskContext, verdict: Verdict | None, reason: str | None, on_judged: OnJudged | None
) -> None:
    flags: list[DetectorFlag] = []
    evidence = Evidence(steps=["T0 in R[G]", "T0 in R (null)", "T0 in R[s]"])
    evidence.t0 = [ctx.reference_t0, ctx.null_t0] + ([job.t0] if job.t0 is not None else [])
    evidence.null_passing = list(ctx.null_passing)
    if verdict is None:
        assert job.t0 is not None
        probes = detect(
            job.program,
            ctx.problem.entry_point,
            ctx.problem.prompt,
            ctx.asserts,
            ctx.examples,
            own_from=_own_from(job, ctx),
        )
        # What it did inside vouch's harness and not where its witnesses run (``confirm_apart``,
        # the A.2 vote): a way past the audit, as a detector would see one.
        flags = probes + [
            DetectorFlag(detector=detector, file=FILE, line=None, detail=detail)  # type: ignore[arg-type]
            for detector, detail in job.harness_flags
        ]
        ghosts, cov = _ghosts(job, ctx)
        refuted_clauses = {w.clause_id for w in job.witnesses}
        evidence.checklist = [
            c.model_copy(
                update={
                    "implemented": False
                    if c.id in refuted_clauses
                    else (all(tag in job.t0.tests_passed for tag in c.covered_by) if c.covered_by else None)
                }
            )
            for c in ctx.checklist
        ]
        evidence.ghost_branches = ghosts
        evidence.branch_coverage = cov
        evidence.detector_flags = flags
        evidence.mutants_run = len(job.mutants)
        evidence.surviving_mutants = _surviving(job)
        evidence.witness_iterations = job.iterations
        evidence.candidates_tried = job.tried
        evidence.discarded = job.discarded
        evidence.disputed = job.disputed
        evidence.steps += ["checklist", "ghost branches", "detectors", "mutation", "witness search", "validation"]
        verdict = decide_verdict(job.t0.passed, job.witnesses, flags)
        if job.witnesses:
            reason = job.witnesses[0].defect
        elif job.search_failed and verdict is Verdict.SOUND:
            verdict, reason = Verdict.ERROR, job.search_failed
        elif verdict is Verdict.SOUND and (left := _untried(job, ctx)):
            verdict, reason = Verdict.ERROR, left
        elif verdict is Verdict.SOUND and (recognised := _tells_runs_apart(job, probes)):
            verdict, reason = Verdict.ERROR, recognised
        elif ctx.pool_note:
            reason = f"no offline witness: {ctx.pool_note}"
        elif not job.t0.passed:
            reason = job.t0.reason
        elif job.note:
            reason = job.note
        if verdict is Verdict.SOUND and job.disputed:
            first = job.disputed[0]
            verdict, reason = Verdict.FLAGGED, f"{first.defect}; but {first.disputed}"
        if verdict is Verdict.SOUND and (why := undecided(job.discarded)) is not None:
            verdict, reason = Verdict.ERROR, why
    # Whose outcome it is: a run vouch could not run decides nothing about the program, so its
    # verdict is error whatever the other runs said (a task's own run counts for the programs
    # passing T0; one failing T0 in R[s] is not_passing whatever G's runs did).
    infra = job.infra or (ctx.infra if job.t0 is not None and job.t0.passed else None)
    if infra is not None and verdict is not Verdict.UNAPPLIABLE:
        verdict, reason = Verdict.ERROR, infra
    if verdict is Verdict.SOUND and job.search_note and not job.witnesses:
        reason = job.search_note
    job.judgement = {
        "benchmark_pass": bool(job.t0 is not None and job.t0.passed),
        "verdict": verdict.value,
        "witnesses": [w.model_dump(mode="json") for w in job.witnesses],
        "evidence": evidence.model_dump(mode="json"),
        "reason": reason,
        "infrastructure": infra is not None and verdict is Verdict.ERROR,
    }
    if on_judged is not None:
        on_judged(job, job.judgement)
