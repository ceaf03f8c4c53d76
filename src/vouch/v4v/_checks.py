"""V4V's checks on a task's reference verifier and suite (VerifierBench section 2.3, appendix B).

Each check returns a ``CheckResult`` with the evidence a reviewer follows. The checks that run
code (replay, repeatability) take decisions computed through the engine by ``_run``; the
others are pure functions over the task. ``_registry.V4V_CHECKS`` declares them; ``_run``
calls each through its ``run_*`` function here, which takes the task and the ``CheckInputs``.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from vouch.bench import Decision, DecisionRow, Task, trivial_rows
from vouch.core import LABEL_OF_CATEGORY, canonical_candidate, content_hash, parse_candidate

Decisions = Mapping[str, Mapping[str, tuple[str, str | None]]]
"""task id -> case id -> (decision, reason)."""

DEFAULT_THRESHOLD = 20.0
RANDOM_SEEDS = 50


@dataclass
class CheckResult:
    """One check of one task: whether it passed, and why."""

    passed: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason, "evidence": self.evidence}


@dataclass(frozen=True)
class CheckInputs:
    """What the checks of one V4V run read besides the task: the engine's stages and the settings."""

    references: Mapping[str, str | None]
    """task id -> its reference verifier's source, or None when it has none."""
    replayed: Decisions
    """The ``replay`` stage: the reference's decision on every case (empty when it did not run)."""
    repeats: Sequence[Decisions]
    """The ``replay`` stage's decisions, then each ``repeats`` run's."""
    mutation: Mapping[str, CheckResult]
    """The ``mutants`` stage: task id -> its mutation check's result."""
    threshold: float = DEFAULT_THRESHOLD
    """C5's threshold (BAnorm)."""
    seed: int = 0


def run_replay(task: Task, inputs: CheckInputs) -> CheckResult:
    if inputs.references.get(task.id) is None:
        return CheckResult(False, {}, "no reference/verifier.py")
    return replay(task, inputs.replayed[task.id])


def run_repeatability(task: Task, inputs: CheckInputs) -> CheckResult:
    return repeatability(task, [run.get(task.id, {}) for run in inputs.repeats])


def run_provenance(task: Task, inputs: CheckInputs) -> CheckResult:
    return provenance(task)


def run_label_consistency(task: Task, inputs: CheckInputs) -> CheckResult:
    return label_consistency(task)


def run_trivial_baselines(task: Task, inputs: CheckInputs) -> CheckResult:
    return trivial_baselines(task, inputs.threshold, inputs.seed)


def run_mutation(task: Task, inputs: CheckInputs) -> CheckResult:
    return inputs.mutation[task.id]


def replay(task: Task, decisions: Mapping[str, tuple[str, str | None]]) -> CheckResult:
    """C1: the reference verifier's decision on every case equals its label; the gold passes."""
    disagreements = []
    for case in task.cases:
        decision, reason = decisions[case.id]
        expected = Decision.PASS.value if case.label == "positive" else Decision.FAIL.value
        if decision != expected:
            disagreements.append(
                {
                    "case_id": case.id,
                    "label": case.label,
                    "category": case.category,
                    "decision": decision,
                    "reason": reason,
                    "rationale": case.rationale,
                }
            )
    gold_ok = all(decisions[c.id][0] == Decision.PASS.value for c in task.cases if c.category == "gold")
    passed = not disagreements and gold_ok
    return CheckResult(
        passed,
        {"cases": len(task.cases), "disagreements": disagreements},
        None if passed else f"{len(disagreements)} of {len(task.cases)} cases disagree with their labels",
    )


def repeatability(task: Task, runs: Sequence[Mapping[str, tuple[str, str | None]]]) -> CheckResult:
    """C2: runs in fresh processes, with other hash seeds and orders, give identical decisions."""
    flaky = []
    for case in task.cases:
        seen = [run[case.id][0] for run in runs if case.id in run]
        if len(set(seen)) > 1:
            flaky.append({"case_id": case.id, "decisions": seen})
    passed = not flaky
    return CheckResult(
        passed, {"runs": len(runs), "flaky": flaky}, None if passed else f"{len(flaky)} cases decided differently"
    )


def provenance(task: Task) -> CheckResult:
    """C3: every case's content hash matches; positives trace to the gold; attacks to a construction."""
    problems = []
    for case in task.cases:
        if case.provenance.content_hash != content_hash(case.candidate):
            problems.append({"case_id": case.id, "problem": "content hash does not match the candidate"})
        if not case.provenance.construction:
            problems.append({"case_id": case.id, "problem": "no construction recorded"})
        if case.category == "variant" and not case.provenance.derived_from:
            problems.append({"case_id": case.id, "problem": "a variant that does not say what it derives from"})
        if case.category == "gold" and case.provenance.construction != "gold":
            problems.append({"case_id": case.id, "problem": "the gold is not recorded as the gold construction"})
    if not any(c.category == "gold" for c in task.cases):
        problems.append({"case_id": "", "problem": "the task has no gold case"})
    passed = not problems
    return CheckResult(passed, {"problems": problems}, None if passed else problems[0]["problem"])


def label_consistency(task: Task) -> CheckResult:
    """C4: no twin candidates with different labels; category agrees with label; schemas hold."""
    problems: list[dict[str, Any]] = []
    by_key: dict[str, tuple[str, str]] = {}
    for case in task.cases:
        if LABEL_OF_CATEGORY[case.category] != case.label:
            problems.append({"case_id": case.id, "problem": f"category {case.category} with label {case.label}"})
        try:
            parse_candidate(task.spec.kind, case.candidate)
        except ValidationError as exc:
            problems.append(
                {"case_id": case.id, "problem": f"candidate does not fit the schema: {exc.errors()[0]['msg']}"}
            )
        key = canonical_candidate(task.spec.kind, case.candidate)
        if key in by_key and by_key[key][1] != case.label:
            problems.append({"case_id": case.id, "problem": f"same candidate as {by_key[key][0]} with another label"})
        by_key.setdefault(key, (case.id, case.label))
    passed = not problems
    return CheckResult(passed, {"problems": problems}, None if passed else problems[0]["problem"])


def _well_formed_call(call: Any, schemas: Mapping[str, Any]) -> bool:
    """A call of a tool the task offers, with its required parameters and no unknown one."""
    if not isinstance(call, dict) or not isinstance(call.get("args", {}), dict):
        return False
    schema = schemas.get(str(call.get("function")))
    if schema is None:
        return not schemas  # no public tool list: any name will do
    parameters = schema.get("parameters") or {}
    known = set(parameters.get("properties") or {})
    given = set(call.get("args") or {})
    return set(parameters.get("required") or []) <= given and (not known or given <= known)


def _shape_rows(task: Task) -> list[DecisionRow]:
    """A verifier that checks only the candidate's shape, from the kind's schema and the task's
    public materials, knowing nothing of the answer: a program that parses and defines the entry
    point (code); at least one call, each of a tool the task offers, with its required parameters
    and no unknown one (tool calls)."""
    schemas = {str(t.get("name")): t for t in task.tools if isinstance(t, dict)}
    rows = []
    for case in task.cases:
        if task.spec.kind == "code":
            source = case.candidate.get("source") or ""
            try:
                tree = ast.parse(source)
                names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
                ok = task.spec.entry_point in names
            except (SyntaxError, ValueError):
                ok = False
        else:
            calls = case.candidate.get("calls")
            ok = isinstance(calls, list) and bool(calls) and all(_well_formed_call(c, schemas) for c in calls)
        rows.append(DecisionRow(task, case.id, Decision.PASS.value if ok else Decision.FAIL.value, None))
    return rows


def _gold_tools_rows(task: Task) -> list[DecisionRow]:
    """Not a trivial verifier but reported beside them: PASS when the candidate calls the same
    multiset of tools as the gold (it knows the answer's tools, not its values)."""
    gold = next((c for c in task.cases if c.category == "gold"), None)
    wanted = sorted(str(c.get("function")) for c in (gold.candidate.get("calls") or [] if gold else []))
    rows = []
    for case in task.cases:
        got = sorted(str(c.get("function")) for c in case.candidate.get("calls") or [] if isinstance(c, dict))
        rows.append(DecisionRow(task, case.id, Decision.PASS.value if got == wanted else Decision.FAIL.value, None))
    return rows


def trivial_baselines(task: Task, threshold: float = DEFAULT_THRESHOLD, seed: int = 0) -> CheckResult:
    """C5: always PASS, always FAIL, gold-exact-match and a shape-only verifier score at most
    ``threshold`` BAnorm on this task; seeded random is judged by its mean over many seeds."""
    scores: dict[str, float | None] = {}
    for name in ("always_pass", "always_fail", "gold_exact_match"):
        scores[name] = _task_ba(trivial_rows(name, [task], seed), seed)
    scores["shape_only"] = _task_ba(_shape_rows(task), seed)
    rng = random.Random(seed)
    draws = [_task_ba(trivial_rows("random", [task], rng.randrange(1 << 30)), seed) for _ in range(RANDOM_SEEDS)]
    values = [d for d in draws if d is not None]
    scores["random_mean"] = round(sum(values) / len(values), 2) if values else None
    over = {k: v for k, v in scores.items() if v is not None and v > threshold}
    passed = not over
    reported = {"gold_tools": _task_ba(_gold_tools_rows(task), seed)} if task.spec.kind != "code" else {}
    return CheckResult(
        passed,
        {"threshold": threshold, "ba_norm": scores, "random_seeds": RANDOM_SEEDS, "not_judged": reported},
        None
        if passed
        else "a trivial verifier scores above the threshold: " + ", ".join(f"{k} {v}" for k, v in over.items()),
    )


def _task_ba(rows: Sequence[DecisionRow], seed: int) -> float | None:
    """BAnorm of one task's rows, as DESIGN defines it (INVALID stays in the denominators)."""
    del seed  # one task: no interval to draw
    if not rows:
        return None
    labels = {c.id: c.label for c in rows[0].task.cases}
    positives = [r for r in rows if labels[r.case_id] == "positive"]
    negatives = [r for r in rows if labels[r.case_id] == "negative"]
    if not positives or not negatives:
        return None
    tpr = sum(r.decision == Decision.PASS.value for r in positives) / len(positives)
    tnr = sum(r.decision == Decision.FAIL.value for r in negatives) / len(negatives)
    return round(100 * (tpr + tnr - 1), 2)
