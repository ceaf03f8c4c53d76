"""The task directory: ``task.toml``, candidates per kind, cases, and the build manifest.

```
<tasks>/<task_id>/
  task.toml        TaskSpec
  instruction.md   what the solver was asked
  environment/     public materials (tool schemas, run_public entry, ...)
  reference/       withheld: verifier.py, gold solution
  cases/           withheld: <case_id>.json = Case
```
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vouch.errors import UsageError

Kind = Literal["tool_call", "state", "code"]
Label = Literal["positive", "negative"]
Category = Literal["gold", "variant", "error", "attack"]

SUBCATEGORIES: dict[str, tuple[str, ...]] = {
    "gold": ("gold",),
    "variant": ("cosmetic", "alternative"),
    "attack": ("hack", "process"),
}
"""Allowed subcategories per category; ``error`` takes a free-form mistake type."""

LABEL_OF_CATEGORY: dict[str, str] = {
    "gold": "positive",
    "variant": "positive",
    "error": "negative",
    "attack": "negative",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_Model):
    """One call of a tool, as the agent made it."""

    function: str = Field(description="The tool's name.")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments, JSON data.")


class ToolCallCandidate(_Model):
    """A tool-call trace (kinds ``tool_call`` and ``state``)."""

    calls: list[ToolCall] = Field(description="The calls, in the order they were made.")
    final_answer: str | None = Field(default=None, description="The agent's final text answer, if any.")


class CodeCandidate(_Model):
    """A code solution (kind ``code``): a function's source, or a repository patch."""

    source: str | None = Field(default=None, description="Function-level: the complete program text.")
    patch: str | None = Field(default=None, description="Repository level: a unified diff.")

    @model_validator(mode="after")
    def _one_form(self) -> CodeCandidate:
        if (self.source is None) == (self.patch is None):
            raise ValueError("a code candidate has exactly one of 'source' and 'patch'")
        return self


def parse_candidate(kind: str, data: Any) -> ToolCallCandidate | CodeCandidate:
    """Validate a candidate against its kind's schema. Raises pydantic's ValidationError."""
    if kind == "code":
        return CodeCandidate.model_validate(data)
    return ToolCallCandidate.model_validate(data)


def canonical_json(data: Any) -> str:
    """The canonical text of JSON data: sorted keys, no spaces. Hashes and twins use it."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(data: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(data).encode()).hexdigest()


class SourceInfo(_Model):
    """Where a task came from."""

    benchmark: str = Field(description="agentdojo, bfcl or humaneval.")
    version: str = Field(description="Version of the package the task was built from.")
    original_id: str = Field(description="The task's id in its benchmark.")
    subset: str | None = Field(default=None, description="Suite or data set inside the benchmark.")


class Budgets(_Model):
    """What a verifier-writing agent may spend on this task (VerifierBench appendix E)."""

    executions: int = Field(default=20, description="Execution requests: run Python, run_public, self_test.")
    wall_s: float = Field(default=5400.0, description="Seconds for the whole generation.")
    output_tokens_per_reply: int = Field(default=32768, description="Output-token cap per model reply.")
    turns: int = Field(default=100, description="Model turns at most.")


class MutationTarget(_Model):
    """Where V4V's mutation check (C6) makes mutants of the reference verifier, and with what.

    A task's targets and their operators are its operator set: the paper's rule is that the
    suite detects every mutant of that set. A builder names where the task's own checks live.
    """

    kind: Literal["function", "embedded", "data"] = Field(
        description="function: a function of verifier.py; embedded: a string constant holding code the "
        "verifier runs (a benchmark's test or check); data: a constant holding an answer key."
    )
    name: str = Field(description="The function's or the constant's name in verifier.py.")
    function: str | None = Field(default=None, description="embedded: the function of the embedded code.")
    operators: list[str] | None = Field(
        default=None, description="Operator names (code operators, or data operators for data); None: all."
    )


class TaskSpec(_Model):
    """``task.toml``."""

    id: str = Field(description="Unique task id; also the directory name.")
    kind: Kind = Field(description="tool_call, state or code.")
    source: SourceInfo
    budgets: Budgets = Field(default_factory=Budgets)
    public_tools: list[str] = Field(
        default_factory=list, description="Environment tools a verifier may use: run_public, reset, call."
    )
    entry_point: str | None = Field(default=None, description="Code tasks: the function the candidate defines.")
    replay: str | None = Field(
        default=None,
        description="State tasks: 'module:function' that replays calls on the task's pre-state, run in a sandbox.",
    )
    replay_args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for replay.")
    mutation: list[MutationTarget] = Field(
        default_factory=list,
        description="V4V C6's operator set for this task; empty: every code operator on verify().",
    )


class Provenance(_Model):
    """How a case was built, so that a reviewer can rebuild it."""

    construction: str = Field(description="The construction's name, e.g. gold, reorder_calls, mutant.")
    derived_from: str | None = Field(default=None, description="The case id it was derived from, if any.")
    content_hash: str = Field(description="content_hash() of the candidate.")
    details: dict[str, Any] = Field(default_factory=dict, description="Parameters of the construction.")


class Case(_Model):
    """A labelled candidate of a task's hidden suite (``cases/<id>.json``)."""

    id: str
    label: Label
    category: Category
    subcategory: str = Field(description="cosmetic/alternative for variants, hack/process for attacks.")
    candidate: dict[str, Any] = Field(description="The candidate, in its kind's schema.")
    provenance: Provenance
    rationale: str = Field(description="One line a reviewer can check against the instruction.")

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if LABEL_OF_CATEGORY[self.category] != self.label:
            raise ValueError(f"category {self.category!r} has label {LABEL_OF_CATEGORY[self.category]!r}")
        allowed = SUBCATEGORIES.get(self.category)
        if allowed is not None and self.subcategory not in allowed:
            raise ValueError(f"subcategory {self.subcategory!r} of {self.category!r} is not one of {allowed}")
        return self


class FlaggedCase(_Model):
    """A case on which the reference verifier disagreed with the label at build time."""

    task_id: str
    case_id: str
    label: Label
    reference_decision: str = Field(description="PASS, FAIL or INVALID.")
    reason: str | None = None


class Manifest(_Model):
    """``manifest.json`` of a build: what it holds and how to rebuild it."""

    kind: Literal["vouch-task-build"] = "vouch-task-build"
    schema_version: int = 1
    builder_version: str
    source: str
    source_versions: dict[str, str]
    seed: int
    options: dict[str, Any] = Field(default_factory=dict)
    tasks: int
    cases: int
    counts: dict[str, dict[str, int]] = Field(description="by_kind, by_category, by_label.")
    content_hash: str = Field(description="Hash over every task's files, in order.")
    flagged: list[FlaggedCase] = Field(default_factory=list)


# --- load and save -----------------------------------------------------------------------


def _invalid(path: Path, exc: ValidationError) -> UsageError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return UsageError(f"{path}: field {where}: {first['msg']}")


def load_task_spec(task_dir: Path) -> TaskSpec:
    path = task_dir / "task.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{task_dir}: not a task directory (no task.toml)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def load_case(path: Path) -> Case:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON: {exc}") from None
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def load_cases(task_dir: Path) -> list[Case]:
    return [load_case(p) for p in sorted((task_dir / "cases").glob("*.json"))]


def dump_task_spec(spec: TaskSpec) -> str:
    return tomli_w.dumps(spec.model_dump(mode="json", exclude_none=True))


def dump_case(case: Case) -> str:
    return json.dumps(case.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- writing a task directory --------------------------------------------------------------


class TaskFiles(_Model):
    """Everything one task directory holds, before it is written."""

    spec: TaskSpec
    instruction: str
    environment: dict[str, str] = Field(default_factory=dict, description="Public files: relative path -> text.")
    reference: dict[str, str] = Field(description="Withheld files; must hold verifier.py.")
    cases: list[Case]


def canonical_candidate(kind: str, candidate: dict[str, Any]) -> str:
    """The form under which two candidates are the same: whitespace-only twins collapse."""
    if kind == "code":
        text = candidate.get("source") or candidate.get("patch") or ""
        return " ".join(text.split())
    calls = candidate.get("calls", [])
    answer = candidate.get("final_answer")
    answer = " ".join(answer.split()) if isinstance(answer, str) else answer
    return canonical_json({"calls": calls, "final_answer": answer})


def write_task(root: Path, task: TaskFiles) -> str:
    """Write ``task`` under ``root/<id>`` byte-for-byte deterministically; return its content hash."""
    if "verifier.py" not in task.reference:
        raise ValueError(f"task {task.spec.id}: reference/ must hold verifier.py")
    files: dict[str, str] = {
        "task.toml": dump_task_spec(task.spec),
        "instruction.md": task.instruction.rstrip("\n") + "\n",
    }
    files.update({f"environment/{k}": v for k, v in task.environment.items()})
    files.update({f"reference/{k}": v for k, v in task.reference.items()})
    files.update({f"cases/{c.id}.json": dump_case(c) for c in task.cases})
    digest = hashlib.sha256()
    task_dir = root / task.spec.id
    for rel in sorted(files):
        path = task_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[rel])
        digest.update(rel.encode() + b"\0" + files[rel].encode() + b"\0")
    return "sha256:" + digest.hexdigest()
