"""The repo-level offline witness source: differential testing of changed functions.

Calls that T0 made to public functions of the changed modules are recorded in R[G]; their
literal arguments are mutated type-aware (a value keeps its type; strings may also become
strings P or T0 mention); every input is run in R[G] and R[s]; one on which R[G] returns and
R[s] answers differently becomes a pytest witness whose expected value is R[G]'s. An input on
which R[G] raises is outside the task's preconditions and is never used. Everything here is
pure: the runs happen in ``_swe`` through the engine.
"""

from __future__ import annotations

import ast
import inspect
import random
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from vouch.worlds._inrun import canon

__all__ = ["Candidate", "Probe", "function_targets", "mutate_call", "string_pool", "witness_source"]

_MAX_STRINGS = 40
_MAX_PER_CALL = 40


@dataclass(frozen=True)
class Probe:
    """One input to a public function of the repository."""

    file: str
    """Path of the function's module, relative to the repository root."""
    module: str
    """Dotted module name."""
    qualname: str
    args: tuple[str, ...]
    """Positional arguments as Python literals (repr text)."""
    kwargs: tuple[tuple[str, str], ...] = ()
    origin: str = "t0"
    """``t0`` (a call T0 made) or ``mutated: <what changed>``."""

    def as_call(self) -> dict[str, Any]:
        """The ``call_functions`` request for this probe."""
        return {"module": self.module, "qualname": self.qualname, "args": list(self.args), "kwargs": dict(self.kwargs)}

    def shown(self) -> str:
        parts = [*self.args, *(f"{k}={v}" for k, v in self.kwargs)]
        return f"{self.qualname}({', '.join(parts)})"


@dataclass(frozen=True)
class Candidate:
    """A probe on which R[G] and R[s] disagree: the material of a witness."""

    probe: Probe
    expected: str
    """R[G]'s result (canonical text)."""
    expected_literal: str | None
    actual: str
    """R[s]'s result (canonical text) or ``raised <Type>``."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def function_targets(source: str, file: str) -> list[str]:
    """``"file::name"`` of each public top-level function of a module's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        f"{file}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_")
    ]


def module_name(file: str) -> str:
    """Dotted module name of a repository-relative ``.py`` path (``pkg/__init__.py`` -> ``pkg``)."""
    parts = file[: -len(".py")].split("/")
    if parts[0] == "src" and len(parts) > 1:  # a src layout imports from src/
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


_BACKTICKED = re.compile(r"`([^`\n]{1,40})`")
_QUOTED = re.compile(r"\"([^\"\n]{1,40})\"|'([^'\n]{1,40})'")


def string_pool(problem: str, recorded: Sequence[Probe]) -> list[str]:
    """Strings the task talks about: P's code spans and quoted words, and T0's string arguments."""
    found: list[str] = []
    for match in _BACKTICKED.finditer(problem):
        found.append(match.group(1))
    for match in _QUOTED.finditer(problem):
        found.append(match.group(1) or match.group(2))
    for probe in recorded:
        for text in [*probe.args, *(v for _, v in probe.kwargs)]:
            value = _value(text)
            if isinstance(value, str):
                found.append(value)
    words = [s for s in dict.fromkeys(found) if s and not any(c in s for c in "()=,") and len(s) <= 20]
    return words[:_MAX_STRINGS]


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _mutations(value: Any, pool: Sequence[str], depth: int = 0) -> Iterator[tuple[Any, str]]:
    """Type-preserving single edits of a literal value, each with a note of what changed."""
    if isinstance(value, bool):
        yield (not value), f"{value!r} -> {not value!r}"
    elif isinstance(value, int):
        for number in (value + 1, value - 1, value * 2, 0, -value):
            if number != value:
                yield number, f"{value!r} -> {number!r}"
    elif isinstance(value, float):
        for real in (value + 1.0, value * 2, value / 2, 0.0, -value):
            if real != value:
                yield real, f"{value!r} -> {real!r}"
    elif isinstance(value, str):
        edits = [value + ".", "." + value, value.upper(), value + " ", value[:-1], value + value[-1:]]
        edits += [p for p in pool if p != value]
        for text in dict.fromkeys(edits):
            if text != value:
                yield text, f"{value!r} -> {text!r}"
    elif isinstance(value, list | tuple) and depth < 3:
        kind = type(value)
        for i in range(len(value)):
            yield kind([*value[:i], *value[i + 1 :]]), f"dropped item {i}"
        for i, item in enumerate(value):
            for changed, note in _mutations(item, pool, depth + 1):
                yield kind([*value[:i], changed, *value[i + 1 :]]), f"item {i}: {note}"
                yield kind([*value, changed]), f"added a copy of item {i} with {note}"
    elif isinstance(value, dict) and depth < 3:
        for key in value:
            yield {k: v for k, v in value.items() if k != key}, f"dropped key {key!r}"
            for changed, note in _mutations(value[key], pool, depth + 1):
                yield {**value, key: changed}, f"{key!r}: {note}"


def mutate_call(probe: Probe, pool: Sequence[str], rng: random.Random, limit: int = _MAX_PER_CALL) -> list[Probe]:
    """Single-edit mutants of a recorded call: one argument changed, its type kept.

    Args:
        probe: A call T0 made.
        pool: Strings a string argument may become (from P and T0).
        rng: Seeded; picks ``limit`` mutants when there are more.
        limit: Most mutants returned.

    Returns:
        Distinct probes, in a reproducible order.
    """
    out: list[Probe] = []
    seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {(probe.args, probe.kwargs)}
    slots: list[tuple[str, int | str]] = [("arg", i) for i in range(len(probe.args))]
    slots += [("kw", name) for name, _ in probe.kwargs]
    for kind, slot in slots:
        text = probe.args[slot] if kind == "arg" and isinstance(slot, int) else dict(probe.kwargs)[str(slot)]
        value = _value(text)
        for changed, note in _mutations(value, pool):
            literal = repr(changed)
            if kind == "arg" and isinstance(slot, int):
                args = (*probe.args[:slot], literal, *probe.args[slot + 1 :])
                kwargs = probe.kwargs
            else:
                args = probe.args
                kwargs = tuple((k, literal if k == slot else v) for k, v in probe.kwargs)
            if (args, kwargs) in seen:
                continue
            seen.add((args, kwargs))
            where = f"argument {slot}" if kind == "arg" else f"keyword {slot}"
            out.append(Probe(probe.file, probe.module, probe.qualname, args, kwargs, origin=f"mutated {where}: {note}"))
    if len(out) > limit:
        # Keep the order (cheap edits first) but sample which survive, reproducibly.
        keep = sorted(rng.sample(range(len(out)), limit))
        out = [out[i] for i in keep]
    return out


_CANON_SOURCE = (
    textwrap.dedent(inspect.getsource(canon))
    .replace("def canon(", "def _canon(")
    .replace("canon(", "_canon(")
    .replace("def __canon(", "def _canon(")
)


def witness_source(candidate: Candidate, *, instance_id: str, clause: str, index: int) -> str:
    """A pytest file asserting R[G]'s behaviour on the candidate's input.

    Args:
        candidate: The disagreeing probe.
        instance_id: For the docstring.
        clause: The clause of P the witness checks.
        index: Distinguishes witnesses of one trial.

    Returns:
        The test's source; it fails by an AssertionError when the call returns something else or
        raises.
    """
    probe = candidate.probe
    name = probe.qualname.split(".")[-1]
    call_args = ", ".join([*probe.args, *(f"{k}={v}" for k, v in probe.kwargs)])
    shown_expected = candidate.expected_literal or candidate.expected
    doc = (
        f'"""Witness for {instance_id}: {clause[:200]}\n\n'
        f"vouch offline witness: a call T0 made in R[G], {probe.origin}; R[G]'s result is expected.\n"
        f'"""\n'
    )
    doc = doc.replace("\\", "\\\\")
    return (
        f"{doc}\n"
        "from typing import Any\n\n"
        f"from {probe.module} import {name}\n\n\n"
        f"{_CANON_SOURCE}\n\n"
        f"def test_witness_{name}_{index}() -> None:\n"
        "    try:\n"
        f"        got = {name}({call_args})\n"
        "    except Exception as exc:\n"
        f"        raise AssertionError(f'{name} raised {{exc!r}}; expected ' + {shown_expected!r}) from exc\n"
        f"    assert _canon(got) == {candidate.expected!r}, f'got {{got!r}}, expected ' + {shown_expected!r}\n"
    )


def iteration_batches(candidates: Sequence[Candidate], k: int, per_function: int = 2) -> list[list[Candidate]]:
    """Split candidates into at most ``k`` generate-and-validate rounds, spreading over functions.

    Each round takes up to ``per_function`` not-yet-tried candidates of each function, T0's own
    inputs first (they are the most plainly inside P's preconditions).
    """
    by_function: dict[str, list[Candidate]] = {}
    for cand in sorted(candidates, key=lambda c: c.probe.origin != "t0"):
        by_function.setdefault(f"{c_file(cand)}::{cand.probe.qualname}", []).append(cand)
    rounds: list[list[Candidate]] = []
    for r in range(k):
        batch = [c for group in by_function.values() for c in group[r * per_function : (r + 1) * per_function]]
        if not batch:
            break
        rounds.append(batch)
    return rounds


def c_file(candidate: Candidate) -> str:
    return candidate.probe.file
