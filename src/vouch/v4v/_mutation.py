"""C6, mutation testing: the suite must detect every mutant of the task's operator set.

A mutant is detected when some case gets a different *valid* decision from it than from the
reference (PASS against FAIL); a crash or INVALID detects nothing (VerifierBench B.3). Where the
mutants come from is the task's operator set (``task.toml``'s ``mutation`` targets: the function,
embedded check or answer key holding the task's checks); a task without one gets every code
operator on ``verify``.

C6 goes case by case: every live mutant of a task decides the task's next case (the gold
first, then negatives before positives), all of them in one sandboxed run with one candidate
session for that case's candidate (``decide_stored_verifiers``), and a mutant leaves at its
first detection. Most mutants are caught by the gold or the first negatives. Every decision is
stored like any other (keyed by the mutant's source), so a re-run decides nothing twice.

An undetected mutant is shown equivalent, with its evidence, when
* its code compiles to the same bytecode as the original's (trivial compiler equivalence), or
* on probes beyond the suite (mutants of the gold: edited programs, or calls with an argument
  changed, dropped or a call left out) it decides exactly as the original does, and at least
  ``MIN_COMPARED`` probes got a valid decision from both. This is evidence, not proof: the JSON
  names the method of every equivalence, so a reader can hold the suite to the stricter rule.
  A probe that distinguishes it is its evidence of a gap in the suite: a case like that probe is
  missing. A mutant decides the probes in order up to the first one that distinguishes it
  (``compared`` counts the probes up to there), probe by probe with the reference and the
  task's other mutants in one run, as on the cases; a task's probing stops when every mutant
  is told apart, so the reference decides only the probes some mutant needed.
A mutant that gets no valid decision on any case is *stillborn* (it crashes everywhere): it can
detect nothing and decide nothing, so it is reported apart and left out of the set, as
mutation tools leave out mutants that do not run.
"""

from __future__ import annotations

import ast
import functools
import json
import random
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vouch.bench import CallAnswers, Decision, Task, decide_stored_verifiers, verifier_identity
from vouch.core import Case, MutationTarget, Provenance, content_hash
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.mutation import Mutant, mutate, mutate_data, mutate_embedded
from vouch.store import Store
from vouch.v4v._checks import CheckResult

MAX_MUTANTS = 60
"""Mutants per task at most (a seeded sample beyond that, reported in the evidence)."""
MAX_PROBES = 30
"""Probe candidates per task for the equivalence search."""
MIN_COMPARED = 5
"""Probes with a valid decision from both verifiers that an equivalence by probes needs."""
_VALID = {Decision.PASS.value, Decision.FAIL.value}
_DEFAULT_TARGETS = (MutationTarget(kind="function", name="verify"),)


@dataclass
class _Plan:
    task: Task
    mutants: list[Mutant]
    total: int
    problems: list[str]
    targets: list[MutationTarget]
    detected: dict[str, str] = field(default_factory=dict)
    """mutant id -> the case that detected it."""
    valid_seen: set[str] = field(default_factory=set)
    """mutants that got at least one valid decision."""
    reference: str = ""
    """The reference verifier's source the mutants were made from."""


def mutants_of(task: Task, source: str, rng: random.Random, limit: int = MAX_MUTANTS) -> _Plan:
    """The mutants of a task's reference verifier from its operator set, at most ``limit``."""
    targets = list(task.spec.mutation) or list(_DEFAULT_TARGETS)
    found: list[Mutant] = []
    problems: list[str] = []
    for target in targets:
        try:
            if target.kind == "function":
                found += mutate(source, operators=target.operators, function=target.name)
            elif target.kind == "embedded":
                found += mutate_embedded(source, target.name, function=target.function, operators=target.operators)
            else:
                found += mutate_data(source, target.name, operators=target.operators)
        except (UsageError, RecursionError, ValueError) as exc:  # a target that cannot be mutated fails C6
            problems.append(f"{target.kind} target {target.name}: {exc}")
    if not task.spec.mutation and problems:
        try:  # a verifier without verify() (it will be INVALID anyway): mutate the whole module
            found = mutate(source)
        except UsageError as exc:
            problems.append(f"module: {exc}")
    total = len(found)
    if total > limit:
        found = sorted(rng.sample(found, limit), key=lambda m: m.id)
    return _Plan(task, found, total, problems, targets, reference=source)


def _code_of(source: str, target: MutationTarget) -> Any:
    """A comparable form of the compiled code a target's mutants change (None if it does not compile)."""
    try:
        text = source
        if target.kind == "embedded":
            tree = ast.parse(source)
            text = next(
                node.value.value
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == target.name for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            )
        return _shape(compile(text, "<mutant>", "exec"))
    except (SyntaxError, ValueError, StopIteration):
        return None


def _shape(code: types.CodeType) -> Any:
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)


C6_THREADS = 8
"""Tasks whose mutants are decided at the same time (each task's runs go one after the other)."""


def _by_twins(plans: Iterable[_Plan], work: Callable[[_Plan], None]) -> None:
    """``work`` on every plan, ``C6_THREADS`` tasks at a time. Twins (tasks whose reference
    verifiers share decisions: ``vouch.bench._share``) go one after the other in one thread, so
    that the second reads the first's decisions from the store instead of deciding them too."""
    groups: dict[Any, list[_Plan]] = {}
    for plan in plans:
        identity = verifier_identity(plan.reference)
        groups.setdefault(identity if identity is not None else id(plan), []).append(plan)

    def run(group: list[_Plan]) -> None:
        for plan in group:
            work(plan)

    with ThreadPoolExecutor(max_workers=C6_THREADS, thread_name_prefix="vouch-c6") as pool:
        for future in [pool.submit(run, group) for group in groups.values()]:
            future.result()


def _case_order(task: Task) -> list[Case]:
    """The order C6 decides a task's cases in: the gold first, then negatives before positives
    (a mutant that loosens a check is caught by a negative, most mutants are)."""
    return sorted(task.cases, key=lambda c: (c.category != "gold", c.label != "negative", c.id))


def _probes(task: Task, rng: random.Random) -> list[Case]:
    """Candidates beyond the suite, made from the gold: what a richer suite could have held."""
    gold = next((c for c in task.cases if c.category == "gold"), None)
    if gold is None:
        return []
    drafts: list[dict[str, Any]] = []
    if task.spec.kind == "code" and isinstance(gold.candidate.get("source"), str):
        mutants = _gold_mutants(gold.candidate["source"], task.spec.entry_point)
        drafts = [{"source": m.source} for m in rng.sample(mutants, min(len(mutants), MAX_PROBES))]
    else:
        calls = gold.candidate.get("calls") or []
        for i, call in enumerate(calls):
            drafts.append({**gold.candidate, "calls": calls[:i] + calls[i + 1 :]})
            for name, value in sorted((call.get("args") or {}).items()):
                args = dict(call["args"])
                del args[name]
                drafts.append({**gold.candidate, "calls": [*calls[:i], {**call, "args": args}, *calls[i + 1 :]]})
                changed = _changed(value)
                if changed is not None:
                    args = {**call["args"], name: changed}
                    drafts.append({**gold.candidate, "calls": [*calls[:i], {**call, "args": args}, *calls[i + 1 :]]})
        drafts = rng.sample(drafts, min(len(drafts), MAX_PROBES))
    known = {json.dumps(c.candidate, sort_keys=True) for c in task.cases}
    probes = []
    for n, candidate in enumerate(drafts):
        if json.dumps(candidate, sort_keys=True) in known:
            continue
        provenance = Provenance(construction="v4v-probe", derived_from=gold.id, content_hash=content_hash(candidate))
        probes.append(
            Case(
                id=f"probe-{n}",
                label="negative",  # not a label anyone relies on: probes are compared, never scored
                category="error",
                subcategory="probe",
                candidate=candidate,
                provenance=provenance,
                rationale="An edit of the gold, made by V4V to search for a difference between two verifiers.",
            )
        )
    return probes


@functools.lru_cache(maxsize=64)
def _gold_mutants(source: str, function: str | None) -> list[Mutant]:
    """The mutants of a gold program (probe drafts), made once per program: C6 asks for a task's
    probes once per mutant it probes, and parsing with libcst takes a good part of a second."""
    try:
        return mutate(source, function=function) if function else []
    except UsageError:
        return []


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + " x" if value else "x"
    if isinstance(value, list) and value:
        return value[:-1]
    return None


def mutation_check(
    executor: Executor,
    store: Store,
    tasks: Sequence[Task],
    references: Mapping[str, str | None],
    reference_decisions: Mapping[str, Mapping[str, tuple[str, str | None]]],
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    stats: dict[str, Any] | None = None,
    max_mutants: int = MAX_MUTANTS,
) -> dict[str, CheckResult]:
    """Run C6 on every task with a reference verifier; results by task id.

    ``stats``, when given, receives counts: mutants, mutant decisions (asked for and actually
    run, the rest came from the store), probe decisions."""
    rng = random.Random(seed)
    counts = {"mutant_decisions": 0, "mutant_decisions_run": 0}
    plans: dict[str, _Plan] = {}
    for task in tasks:
        source = references.get(task.id)
        if source is not None:
            plans[task.id] = mutants_of(task, source, rng, limit=max_mutants)
    total = sum(len(p.mutants) for p in plans.values())
    answers = CallAnswers()  # the candidates' answers, shared by the reference and its mutants
    lock = threading.Lock()
    done = 0

    def detect(plan: _Plan) -> None:
        # Case by case: every live mutant decides the task's next case, all of them in one run
        # with one candidate session; a mutant leaves at its first detection.
        nonlocal done
        live = list(plan.mutants)
        for case in _case_order(plan.task):
            if not live:
                break
            [row], ran = decide_stored_verifiers(
                executor, store, [(plan.task, case, [m.source for m in live])], call_answers=answers, share=True
            )
            before = reference_decisions[plan.task.id][case.id][0]
            staying = []
            for mutant, got in zip(live, row, strict=True):
                if got.decision in _VALID:
                    plan.valid_seen.add(mutant.id)
                if got.decision in _VALID and before in _VALID and got.decision != before:
                    plan.detected[mutant.id] = case.id
                else:
                    staying.append(mutant)
            with lock:
                counts["mutant_decisions"] += len(live)
                counts["mutant_decisions_run"] += ran
                done += len(live) - len(staying)
            live = staying
        with lock:
            done += len(live)
            if progress is not None:
                progress(done, total)

    _by_twins(plans.values(), detect)
    if progress is not None:
        progress(total, total)

    evidence_of = _equivalence(executor, store, plans, references, rng, counts, answers)
    if stats is not None:
        stats.update(counts, mutants=sum(len(p.mutants) for p in plans.values()))
    results: dict[str, CheckResult] = {}
    for task in tasks:
        found = plans.get(task.id)
        if found is None:
            results[task.id] = CheckResult(False, {}, "no reference/verifier.py to mutate")
            continue
        results[task.id] = _result(found, evidence_of.get(task.id, {}))
    return results


def _equivalence(
    executor: Executor,
    store: Store,
    plans: Mapping[str, _Plan],
    references: Mapping[str, str | None],
    rng: random.Random,
    counts: dict[str, int],
    answers: CallAnswers | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Evidence for every undetected, non-stillborn mutant: task id -> mutant id -> evidence."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    probing: list[tuple[_Plan, Mutant]] = []
    for plan in plans.values():
        reference = references[plan.task.id] or ""
        for mutant in plan.mutants:
            if mutant.id in plan.detected or mutant.id not in plan.valid_seen:
                continue
            target = next((t for t in plan.targets if mutant.id.startswith(f"{t.name}/")), plan.targets[0])
            original = _code_of(reference, target)
            if original is not None and original == _code_of(mutant.source, target):
                out.setdefault(plan.task.id, {})[mutant.id] = {"equivalent": True, "method": "identical_bytecode"}
            else:
                probing.append((plan, mutant))
    # Drawn once per probed mutant, the last draw kept: the seeded draws, and so every task's
    # probes, stay those of earlier releases (the gold's mutants are made once: _gold_mutants).
    probes = {p.task.id: _probes(p.task, rng) for p, _ in probing}
    # Probe by probe, the reference with the task's mutants not yet told apart, in one run per
    # probe (one candidate session); a mutant leaves at the first probe where it decides
    # otherwise (that probe is its evidence; the rest cannot change it), and the task's probing
    # stops when no mutant is left, so the reference decides only the probes someone needs.
    before_of: dict[tuple[str, str], str] = {}
    rows: dict[str, list[Any]] = {}
    lock = threading.Lock()
    ran_probes = decided_probes = 0

    def probe(plan: _Plan) -> None:
        nonlocal ran_probes, decided_probes
        task_id = plan.task.id
        reference = references[task_id] or ""
        live = [mutant for owner, mutant in probing if owner is plan]
        for mutant in live:
            rows[mutant.id + "@" + task_id] = [None] * len(probes[task_id])
        for step, case in enumerate(probes[task_id]):
            if not live:
                break
            [[before_got, *row]], ran_now = decide_stored_verifiers(
                executor,
                store,
                [(plan.task, case, [reference, *(m.source for m in live)])],
                call_answers=answers,
                share=True,
            )
            before = before_got.decision
            staying = []
            for mutant, got in zip(live, row, strict=True):
                rows[mutant.id + "@" + task_id][step] = got
                if not (before in _VALID and got.decision in _VALID and got.decision != before):
                    staying.append(mutant)
            with lock:
                before_of[(task_id, case.id)] = before
                ran_probes += ran_now
                decided_probes += 1 + len(live)
            live = staying

    _by_twins([p for p in plans.values() if any(owner is p for owner, _ in probing)], probe)
    counts["probe_decisions"] = decided_probes
    counts["probe_decisions_run"] = ran_probes
    for plan, mutant in probing:
        task_id = plan.task.id
        row = rows[mutant.id + "@" + task_id]
        compared = 0
        differing: dict[str, Any] | None = None
        for case, after in zip(probes[task_id], row, strict=True):
            if after is None:
                break  # the task's probing stopped before this probe
            before = before_of[(task_id, case.id)]
            if before not in _VALID or after.decision not in _VALID:
                continue
            compared += 1
            if before != after.decision:
                differing = {"probe": case.candidate, "reference": before, "mutant": after.decision}
                break
        evidence: dict[str, Any] = {"method": "probes", "probes": len(probes[task_id]), "compared": compared}
        evidence["equivalent"] = compared >= MIN_COMPARED and differing is None
        if differing is not None:
            evidence["distinguishing_probe"] = differing
        out.setdefault(task_id, {})[mutant.id] = evidence
    return out


def _result(plan: _Plan, equivalence: Mapping[str, dict[str, Any]]) -> CheckResult:
    stillborn = [m for m in plan.mutants if m.id not in plan.detected and m.id not in plan.valid_seen]
    live = [m for m in plan.mutants if m not in stillborn]
    undetected = [m for m in live if m.id not in plan.detected]
    equivalent = [m for m in undetected if equivalence.get(m.id, {}).get("equivalent")]
    missed = [m for m in undetected if m not in equivalent]

    def row(m: Mutant) -> dict[str, Any]:
        return {"id": m.id, "operator": m.operator, "description": m.description, "diff": m.diff}

    evidence = {
        "operator_set": [t.model_dump(mode="json", exclude_none=True) for t in plan.targets],
        "mutants": len(plan.mutants),
        "mutants_total": plan.total,
        "sampled": plan.total > len(plan.mutants),
        "detected": len(plan.detected),
        "detected_by": dict(sorted(plan.detected.items())),
        "equivalent": [row(m) | {"evidence": equivalence[m.id]} for m in equivalent],
        "stillborn": [row(m) for m in stillborn],
        "undetected": [row(m) | ({"evidence": equivalence[m.id]} if m.id in equivalence else {}) for m in missed],
    }
    if plan.problems:
        evidence["problems"] = plan.problems
    passed = bool(live) and not missed
    if not plan.mutants:
        reason = "no mutant could be made of the reference verifier" + (
            f" ({plan.problems[0]})" if plan.problems else ""
        )
    elif not live:
        reason = "every mutant crashes on every case (stillborn): nothing to detect"
    elif missed:
        reason = f"{len(missed)} of {len(live)} mutants go undetected by the suite and are not shown equivalent"
    else:
        reason = None
    return CheckResult(passed, evidence, reason)
