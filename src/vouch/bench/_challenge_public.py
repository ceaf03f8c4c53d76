"""What the challenger may read of a task, and the derived candidates it builds from it.

The challenger derives variants and violations from the task's PUBLIC materials alone
(``task.toml``, ``instruction.md``, ``environment/``): an agent that uses it as a tool sees
no more than a solver would. Every file it opens goes through :func:`read_public`, which
refuses the withheld directories (``reference/``, ``cases/``) whatever the path says,
symlinks included; :func:`load_public_task` builds a :class:`Task` without its cases.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vouch.bench._decide import Task
from vouch.core import load_task_spec
from vouch.errors import UsageError

WITHHELD = ("reference", "cases")
"""Directories of a task directory the challenger never reads (and hides from the verifier)."""

Role = Literal["original", "permitted", "violation"]


@dataclass(frozen=True)
class Derived:
    """One candidate the challenger runs the verifier on, with how and why it was made."""

    id: str
    """Unique within a challenge: ``original``, or ``<construction>-<n>``."""
    role: Role
    """``original`` (the user's candidate), ``permitted`` (must PASS) or ``violation`` (must FAIL)."""
    construction: str
    """The derivation's name, e.g. ``omit_optional``, ``reorder_independent``, ``drop_required_step``."""
    candidate: dict[str, Any]
    how: str
    """What was changed, concretely (which call, which argument, which value)."""
    why: str
    """Why the task permits it, or which requirement it violates, citing the public material."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """What was checked to back the claim (replayed post-states, example outcomes, schema text)."""


@dataclass(frozen=True)
class Skipped:
    """A derivation that did not apply to this candidate, and why."""

    construction: str
    reason: str


@dataclass(frozen=True)
class Derivations:
    """What a kind's deriver produced: candidates to decide, derivations that did not apply."""

    derived: list[Derived]
    skipped: list[Skipped]


def read_public(task_root: Path, relative: str) -> str | None:
    """The text of a public file of the task, or None when it does not exist.

    Raises:
        UsageError: ``relative`` leaves the task directory or lands in a withheld directory
            (``reference/``, ``cases/``), also through a symlink.
    """
    root = task_root.resolve()
    path = (task_root / relative).resolve()
    try:
        inside = path.relative_to(root)
    except ValueError:
        raise UsageError(
            f"{relative!r} is outside the task directory {task_root}; the challenger reads only it"
        ) from None
    if not inside.parts or inside.parts[0] in WITHHELD:
        raise UsageError(
            f"{relative!r} resolves into {task_root}/{inside.parts[0] if inside.parts else ''}: "
            f"the challenger reads only task.toml, instruction.md and environment/"
        )
    if not path.is_file():
        return None
    return path.read_text()


def load_public_task(task_dir: Path) -> Task:
    """A task directory's public side: its spec, tool schemas and public tests, no cases.

    Raises:
        UsageError: Not a task directory, or a public file that does not parse.
    """
    spec = load_task_spec(task_dir)
    tools: list[dict[str, Any]] = []
    text = read_public(task_dir, "environment/tools.json")
    if text is not None:
        try:
            tools = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{task_dir / 'environment/tools.json'}: not valid JSON: {exc}") from None
    public_tests = read_public(task_dir, "environment/public_tests.py")
    return Task(root=task_dir, spec=spec, tools=tools, public_tests=public_tests, cases=[])


def instruction_of(task: Task) -> str:
    """The instruction the solver was given (``instruction.md``), or an empty string."""
    return read_public(task.root, "instruction.md") or ""


# --- reading the instruction and the tool schemas ------------------------------------------

_NUMBER = re.compile(r"(?<![\w.\-])-?\d+(?:\.\d+)?(?![\w])")


def numbers_in(text: str) -> set[float]:
    """Every number written in ``text`` (``12``, ``12.00``, ``-3.5``), as floats."""
    found = set()
    for match in _NUMBER.finditer(re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)):  # 1,000 is one number
        try:
            found.add(float(match.group()))
        except ValueError:
            continue
    return found


def stated_in(value: Any, instruction: str, numbers: set[float]) -> bool:
    """Whether the instruction states this scalar value: a number it writes, or a string it gives as is."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return float(value) in numbers
    if not isinstance(value, str) or len(value.strip()) < 2:
        return False
    text = value.strip()
    for match in re.finditer(r"(?<!\w)" + re.escape(text) + r"(?!\w)", instruction):
        if not text.isalpha():
            return True  # a date, an IBAN, an address, a phrase: stated as it is
        # A single word counts when quoted, or capitalised mid-sentence (a name): "Please
        # refund ..." states no subject 'Refund', and 'active' in prose is not a value.
        before = instruction[: match.start()].rstrip()
        if before and before[-1] in "'\"`\u2018\u201c":
            return True
        if before and before[-1] not in ".!?:" and text[0].isupper() and not text.isupper():
            return True  # an acronym ("the VAT") names a thing, not the value of an argument
    return False


def schemas_by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``name -> parameters`` (a JSON-Schema-like object with properties and required)."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            params = tool.get("parameters")
            out[tool["name"]] = params if isinstance(params, dict) else {}
    return out


def param_types(prop: dict[str, Any]) -> set[str]:
    """The type names a parameter's schema allows (``type``, or each ``anyOf`` branch's)."""
    types: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        types.add(kind)
    elif isinstance(kind, list):
        types.update(k for k in kind if isinstance(k, str))
    for branch in prop.get("anyOf") or prop.get("oneOf") or []:
        if isinstance(branch, dict):
            types |= param_types(branch)
    return types


def same_json(a: Any, b: Any) -> bool:
    """JSON equality where 5 and 5.0 are the same number and booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return bool(type(a) is type(b) and a == b)
