"""Mutants of what a verifier checks when its checks are not plain code of its own.

Two kinds of module constant hold a verifier's checks besides its functions:

* **embedded code**: ``TEST = "def check(candidate): ..."``, a benchmark's test or check kept as
  text and executed by the verifier (HumanEval's ``check``, AgentDojo's ``utility``). Its mutants
  are the code mutants of that text, written back as a string literal.
* **data**: ``GROUND_TRUTH = _json.loads("...")`` or a plain literal, an answer key whose lists
  are allow lists (BFCL's possible answers). Its operators drop an allowed value, change a value
  or drop a key; the constant is written back in the form it had.

A mutant's ``diff`` is of the embedded text or of the data (as indented JSON), not of the string
literal, so that a reviewer reads the change itself.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vouch.errors import UsageError
from vouch.mutation._engine import Location, Mutant, _diff, mutate

__all__ = ["DATA_OPERATORS", "mutate_data", "mutate_embedded"]

DATA_OPERATORS: dict[str, str] = {
    "drop_allowed": "drop one element of a list of 2 or more (an allowed value of an allow list)",
    "change_value": "change a scalar: integers +1, floats x10, True <-> False, a string gets a suffix",
    "drop_key": "drop one key of a dict of 2 or more",
}

_NO_LOCATION = Location(0, 0, 0, 0)


@dataclass(frozen=True)
class _Constant:
    """A top-level ``NAME = value`` of the module: where its value's text is, and what it holds."""

    start: int
    """Offset of the value's first character in the source."""
    end: int
    """Offset just past the value's last character."""
    value: Any
    loads: str | None
    """``json.loads``'s spelling (e.g. ``_json.loads``) when the value is JSON text; None for a literal."""


def _offset(lines: list[str], line: int, column: int) -> int:
    """The source offset of an ``ast`` position (1-based line, UTF-8 byte column)."""
    before = sum(len(text) for text in lines[: line - 1])
    return before + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8"))


def _constant(source: str, name: str) -> _Constant:
    """Find ``name``'s value with ``ast``: text positions, not a concrete tree (an answer key
    written as hundreds of concatenated string pieces nests too deep for a tree rewrite)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UsageError(f"the source does not parse: {exc}") from None
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Name) and target.id == name):
            continue
        value = node.value
        assert value.end_lineno is not None and value.end_col_offset is not None
        start = _offset(lines, value.lineno, value.col_offset)
        end = _offset(lines, value.end_lineno, value.end_col_offset)
        try:
            if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
                return _Constant(start, end, json.loads(ast.literal_eval(value.args[0])), ast.unparse(value.func))
            return _Constant(start, end, ast.literal_eval(value), None)
        except (SyntaxError, ValueError, TypeError) as exc:
            raise UsageError(f"the constant {name} is neither a literal nor json.loads of one: {exc}") from None
    raise UsageError(f"no top-level constant {name!r} to mutate")


def _written(source: str, constant: _Constant, value: Any) -> str:
    """The source with the constant's value replaced, written in the form it had."""
    if constant.loads is not None:
        text = f"{constant.loads}({json.dumps(value, indent=1, ensure_ascii=False)!r})"
    else:
        text = repr(value)
    return source[: constant.start] + text + source[constant.end :]


def mutate_embedded(
    source: str, name: str, *, function: str | None = None, operators: Sequence[str] | None = None
) -> list[Mutant]:
    """Code mutants of the Python text held by the string constant ``name`` of ``source``.

    Args:
        source: The verifier's module text.
        name: A top-level constant whose value is a string of Python code.
        function: Restrict to this function of the embedded code (see ``mutate``).
        operators: Code operator names; None for all.

    Returns:
        Mutants of the whole module, each with the embedded text's diff and an id prefixed
        ``name/``.

    Raises:
        UsageError: No such constant, a value that is not a string, or embedded code that does
            not parse or lacks ``function``.
    """
    constant = _constant(source, name)
    if not isinstance(constant.value, str):
        raise UsageError(f"the constant {name} holds {type(constant.value).__name__}, not code")
    out: list[Mutant] = []
    for inner in mutate(constant.value, operators=operators, function=function):
        mutated = source[: constant.start] + repr(inner.source) + source[constant.end :]
        diff = _diff(constant.value, inner.source, f"{name}/{inner.id}")
        out.append(Mutant(f"{name}/{inner.id}", inner.operator, inner.location, inner.description, mutated, diff))
    return out


Path = tuple[str | int, ...]


def _walk(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _walk(value[key], (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, (*path, i))


def _replaced(value: Any, path: Path, new: Any) -> Any:
    """``value`` with the node at ``path`` replaced by ``new`` (a copy; the input is kept)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 10 if value else 1.0
    if isinstance(value, str):
        return value + "_mutated" if value else "mutated"
    return None


def _data_edits(data: Any, names: Sequence[str]) -> Iterator[tuple[str, str, Any]]:
    """(operator, description, mutated data) for every edit the operators propose."""
    for path, value in _walk(data):
        where = "".join(f"[{p!r}]" for p in path) or "(top)"
        if "drop_allowed" in names and isinstance(value, list) and len(value) >= 2:
            for i, item in enumerate(value):
                kept = value[:i] + value[i + 1 :]
                yield (
                    "drop_allowed",
                    f"dropped {json.dumps(item)} from {where}",
                    _replaced(data, path, kept),
                )
        if "drop_key" in names and isinstance(value, dict) and len(value) >= 2:
            for key in sorted(value):
                kept_dict = {k: v for k, v in value.items() if k != key}
                yield "drop_key", f"dropped key {key!r} of {where}", _replaced(data, path, kept_dict)
        if "change_value" in names and (new := _changed(value)) is not None and value != "":
            description = f"{where}: {json.dumps(value)} -> {json.dumps(new)}"
            yield "change_value", description, _replaced(data, path, new)


def mutate_data(source: str, name: str, *, operators: Sequence[str] | None = None) -> list[Mutant]:
    """Data mutants of the answer key held by the constant ``name`` of ``source``.

    Args:
        source: The verifier's module text.
        name: A top-level constant: a literal, or ``<module>.loads("<JSON text>")``.
        operators: Names from ``DATA_OPERATORS``; None for all.

    Returns:
        Mutants of the whole module in a stable order, each with the data's diff (indented JSON)
        and an id ``name/<operator>:<n>``; none equals the original or an earlier one.

    Raises:
        UsageError: No such constant, a value that is not a literal, or an unknown operator.
    """
    names = list(DATA_OPERATORS) if operators is None else list(operators)
    unknown = [n for n in names if n not in DATA_OPERATORS]
    if unknown:
        raise UsageError(f"unknown data operator(s) {unknown}; valid data operators: {', '.join(DATA_OPERATORS)}")
    constant = _constant(source, name)
    before = json.dumps(constant.value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    seen = {before}
    counts: dict[str, int] = {}
    out: list[Mutant] = []
    for operator, description, data in _data_edits(constant.value, names):
        after = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        if after in seen:
            continue
        seen.add(after)
        counts[operator] = counts.get(operator, 0) + 1
        mutant_id = f"{name}/{operator}:{counts[operator]}"
        diff = _diff(before, after, mutant_id)
        out.append(Mutant(mutant_id, operator, _NO_LOCATION, description, _written(source, constant, data), diff))
    return out
