"""The variant challenger: VerifierBench section 5 made a tool.

From a candidate the user (or an agent) holds to be valid, and the task's public materials
alone, derive *permitted variants* (the task still satisfied, one permitted property varied)
and *violations* (one requirement broken), run the verifier on each through the same
machinery that scores verifiers (:func:`vouch.bench.decide_cases`: sandboxed runs, the
verifier contract's ``env``), and report the verifier's unjustified checks (permitted variants
it rejects) and the violations it accepts. An example the verifier already accepts cannot
challenge its checks (section 5): the variants differ from the candidate in exactly one
permitted property each.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

import vouch
from vouch.bench._challenge_calls import derive_calls
from vouch.bench._challenge_code import derive_code
from vouch.bench._challenge_public import WITHHELD, Derived, Skipped
from vouch.bench._decide import Decision, Task, decide_cases
from vouch.core import Case, Envelope, Provenance, content_hash, parse_candidate
from vouch.errors import UsageError
from vouch.exec import Call, Executor, Limits, RunSpec
from vouch.exec.runside import load_module_file
from vouch.sources import answer_data_paths

FINDINGS = {
    "rejects_original": "rejects the candidate you hold valid",
    "original_invalid": "gives no valid decision on the candidate you hold valid",
    "unjustified_check": "rejects a permitted variant (an unjustified check)",
    "accepts_violation": "accepts a violation",
    "invalid": "gives no valid decision",
}
"""Kinds of finding, in the order a report lists them."""


@dataclass(frozen=True)
class ChallengeRow:
    """The verifier's decision on one derived candidate, and what it means."""

    derived: Derived
    decision: Decision
    reason: str | None
    """Why the decision is INVALID, when it is."""
    finding: str | None
    """A key of ``FINDINGS``, or None when the decision is the one the role calls for."""


def _finding(role: str, decision: Decision) -> str | None:
    if role == "original":
        return {Decision.FAIL: "rejects_original", Decision.INVALID: "original_invalid"}.get(decision)
    if decision is Decision.INVALID:
        return "invalid"
    if role == "permitted" and decision is Decision.FAIL:
        return "unjustified_check"
    if role == "violation" and decision is Decision.PASS:
        return "accepts_violation"
    return None


@dataclass(frozen=True)
class ChallengeReport:
    """What the challenger found: one row per candidate decided, the original first."""

    task_id: str
    kind: str
    seed: int
    rows: tuple[ChallengeRow, ...]
    skipped: tuple[Skipped, ...]
    """Derivations that did not apply to this candidate, with why."""

    @property
    def original(self) -> ChallengeRow:
        return self.rows[0]

    def _with(self, finding: str) -> list[ChallengeRow]:
        return [r for r in self.rows if r.finding == finding]

    @property
    def unjustified(self) -> list[ChallengeRow]:
        """Permitted variants the verifier rejects."""
        return self._with("unjustified_check")

    @property
    def accepted_violations(self) -> list[ChallengeRow]:
        """Violations the verifier accepts."""
        return self._with("accepts_violation")

    @property
    def invalid(self) -> list[ChallengeRow]:
        """Derived candidates on which the verifier gave no valid decision."""
        return self._with("invalid")

    @property
    def findings(self) -> int:
        """How many rows show something wrong with the verifier (the original's included)."""
        return sum(r.finding is not None for r in self.rows)

    def to_json(self, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """The report as one JSON object with vouch's envelope (``kind: "challenge"``)."""
        envelope = Envelope(
            kind="challenge", vouch_version=vouch.__version__, seed=self.seed, config=dict(config or {})
        ).model_dump(mode="json")
        roles = [r for r in self.rows if r.derived.role != "original"]
        return envelope | {
            "task_id": self.task_id,
            "task_kind": self.kind,
            "original": {"decision": self.original.decision.value, "reason": self.original.reason},
            "counts": {
                "permitted": sum(r.derived.role == "permitted" for r in roles),
                "violations": sum(r.derived.role == "violation" for r in roles),
                "unjustified_checks": len(self.unjustified),
                "accepted_violations": len(self.accepted_violations),
                "invalid": len(self.invalid),
                "findings": self.findings,
            },
            "rows": [
                {
                    "id": r.derived.id,
                    "role": r.derived.role,
                    "construction": r.derived.construction,
                    "how": r.derived.how,
                    "why": r.derived.why,
                    "evidence": r.derived.evidence,
                    "decision": r.decision.value,
                    "reason": r.reason,
                    "finding": r.finding,
                    "candidate": r.derived.candidate,
                }
                for r in self.rows
            ],
            "skipped": [{"construction": s.construction, "reason": s.reason} for s in self.skipped],
        }

    def summary(self) -> str:
        """A few lines a model (or a person) can read: the original first, then each finding."""
        lines = []
        original = self.original
        if original.finding == "rejects_original":
            lines.append("The verifier REJECTS the candidate you hold valid (FAIL on the original).")
        elif original.finding == "original_invalid":
            lines.append(f"The verifier gives no valid decision on the original: {original.reason}.")
        else:
            lines.append(f"The verifier accepts the original candidate ({original.decision.value}).")
        permitted = [r for r in self.rows if r.derived.role == "permitted"]
        violations = [r for r in self.rows if r.derived.role == "violation"]
        lines.append(
            f"Permitted variants: {len(permitted)}, rejected: {len(self.unjustified)}. "
            f"Violations: {len(violations)}, accepted: {len(self.accepted_violations)}. "
            f"INVALID: {len(self.invalid)}."
        )
        for row in self.unjustified:
            lines.append(
                f"- unjustified check: rejects {row.derived.id} ({row.derived.how}); permitted: {row.derived.why}."
            )
        for row in self.accepted_violations:
            lines.append(f"- accepts violation {row.derived.id} ({row.derived.how}): {row.derived.why}.")
        for row in self.invalid:
            lines.append(f"- INVALID on {row.derived.id}: {row.reason}.")
        return "\n".join(lines)


def probe_verifier() -> dict[str, Any]:
    """Run-side entry (inside a sandbox): import ``verifier.py`` and say whether ``verify`` is callable."""
    module = load_module_file("verifier.py", "verifier")
    return {"callable": callable(getattr(module, "verify", None))}


def _check_verifier(executor: Executor, task: Task, source: str, hidden: tuple[str, ...]) -> None:
    try:
        compile(source, "verifier.py", "exec")  # parses only: nothing of the verifier runs here
    except SyntaxError as exc:
        raise UsageError(f"the verifier does not parse: line {exc.lineno}: {exc.msg}") from None
    result = executor.run(
        RunSpec(
            entry=Call("vouch.bench._challenge:probe_verifier"),
            files={"verifier.py": source},
            limits=Limits(timeout_s=30.0, memory_mb=1024),
            hidden=hidden,
            name=f"{task.id}:import-verifier",
        )
    )
    if not result.ok:
        why = f"{result.exception.type}: {result.exception.message}" if result.exception else result.reason
        raise UsageError(f"the verifier does not import: {why}"[:300])
    if not (isinstance(result.value, dict) and result.value.get("callable")):
        raise UsageError("the verifier defines no callable verify(candidate, env)")


def _check_candidate(task: Task, candidate: Any) -> dict[str, Any]:
    if not isinstance(candidate, dict):
        raise UsageError(f"the candidate is a {type(candidate).__name__}, not a JSON object of a {task.spec.kind} task")
    try:
        parsed = parse_candidate(task.spec.kind, candidate)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UsageError(f"the candidate does not fit a {task.spec.kind} task: field {where}: {first['msg']}") from None
    data: dict[str, Any] = parsed.model_dump(mode="json", exclude_none=task.spec.kind == "code")
    if task.spec.kind == "code" and "source" not in data:
        raise UsageError("the challenger handles function-level code candidates ({'source': ...}), not patches")
    return data


def _as_case(derived: Derived) -> Case:
    category, label, sub = {
        "original": ("gold", "positive", "gold"),
        "permitted": ("variant", "positive", "cosmetic"),
        "violation": ("error", "negative", derived.construction),
    }[derived.role]
    return Case(
        id=derived.id,
        label=label,  # type: ignore[arg-type]
        category=category,  # type: ignore[arg-type]
        subcategory=sub,
        candidate=derived.candidate,
        provenance=Provenance(
            construction=derived.construction,
            derived_from=None if derived.role == "original" else "original",
            content_hash=content_hash(derived.candidate),
        ),
        rationale=derived.why,
    )


def run_challenge(
    task: Task, verifier_source: str, candidate: dict[str, Any], executor: Executor, *, seed: int = 0
) -> ChallengeReport:
    """Challenge a verifier with permitted variants and violations of a valid candidate.

    Reads only the task's public materials (``task.toml``, ``instruction.md``,
    ``environment/``; never ``reference/`` or ``cases/``, and never ``task.cases``), and hides
    the withheld directories (and the installed benchmarks' answer data, as scoring does) from
    every run it starts.

    Args:
        task: The task (``load_public_task`` gives one without its cases).
        verifier_source: The verifier's Python text, defining ``verify(candidate, env)``.
        candidate: A candidate in the task kind's schema that the caller holds to be valid.
        executor: The engine that runs the verifier, replays and examples (for a state task,
            a pool that pre-imports ``preload_for([task])`` decides much faster).
        seed: Seeds every choice among several possible derivations.

    Returns:
        The report: the verifier's decision on the original and on every derived candidate.

    Raises:
        UsageError: The candidate does not fit the task's kind, or the verifier does not import.
    """
    data = _check_candidate(task, candidate)
    # The task's withheld files and the installed benchmarks' own answers, as when scoring.
    hidden = (*(str((task.root / name).resolve()) for name in WITHHELD), *answer_data_paths())
    _check_verifier(executor, task, verifier_source, hidden)
    rng = random.Random(seed)
    derive = derive_code if task.spec.kind == "code" else derive_calls
    derivations = derive(task, data, executor, rng, hidden)
    original = Derived(
        id="original",
        role="original",
        construction="original",
        candidate=data,
        how="the candidate as given",
        why="the candidate you hold to be valid",
    )
    derived = [original, *derivations.derived]
    items = [(task, _as_case(d), verifier_source) for d in derived]
    results = decide_cases(executor, items, hide=hidden)
    rows = tuple(
        ChallengeRow(d, r.decision, r.reason, _finding(d.role, r.decision))
        for d, r in zip(derived, results, strict=True)
    )
    return ChallengeReport(task.id, task.spec.kind, seed, rows, tuple(derivations.skipped))
