"""Generate mutants of Python source: one edit per mutant, with its location and diff.

Why vouch's own libcst operators and not cosmic-ray's `mutate_code` (8.7.0, tried): cosmic-ray
works on parso trees, addresses a mutant only by an occurrence index (re-walking the tree per
mutant, returning no location or description), and has no operator for removed guards, early
`return True` or dropped allow/deny-list elements, which C6 needs; it also brings aiohttp,
sqlalchemy, gitpython and stevedore with it and ships no types. libcst round-trips formatting
and comments exactly, gives positions and parents as metadata, and is one typed dependency.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from vouch.errors import UsageError
from vouch.mutation._operators import OPERATORS, Edit, Operator, SiteContext

__all__ = ["Location", "Mutant", "mutate"]


@dataclass(frozen=True)
class Location:
    """Where a mutation applies: 1-based lines, 0-based columns (as in `ast`), end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Mutant:
    """One mutated version of a source, differing from it by one edit."""

    id: str
    """Stable: `{operator}:{line}:{column}:{index}`, index counting edits at that site."""
    operator: str
    location: Location
    description: str
    """What changed, e.g. `< -> <=` or ``removed `if not ok: return False` ``."""
    source: str
    """The whole mutated source."""
    diff: str
    """Unified diff against the original, 3 lines of context."""


def resolve_operators(names: Sequence[str] | None) -> list[Operator]:
    """The operators for the given names, in registry order; all of them for None.

    Args:
        names: Operator names from `OPERATORS`, or None for every operator.

    Returns:
        The operators, in registry order, each once.

    Raises:
        UsageError: A name is not a registered operator; the message lists the valid ones.
    """
    if names is None:
        return list(OPERATORS.values())
    if isinstance(names, str):
        names = [names]
    unknown = [n for n in names if n not in OPERATORS]
    if unknown:
        raise UsageError(
            f"unknown mutation operator(s) {', '.join(map(repr, unknown))}; valid operators: {', '.join(OPERATORS)}"
        )
    wanted = set(names)
    return [op for name, op in OPERATORS.items() if name in wanted]


def _parse(source: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        where, why = f"line {exc.raw_line}", exc.message
    # libcst can point past the bad token; CPython's own parser names the line a reader expects.
    try:
        ast.parse(source)
    except SyntaxError as exc:
        where, why = f"line {exc.lineno}", exc.msg
    raise UsageError(f"source does not parse at {where}: {why}; mutation needs valid Python 3 source")


def _function_bodies(module: cst.Module, function: str) -> list[cst.BaseSuite]:
    """Bodies of top-level functions and methods named `function` (or `Class.method`)."""
    found: dict[str, cst.FunctionDef] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            found.setdefault(stmt.name.value, stmt)
        elif isinstance(stmt, cst.ClassDef):
            for inner in stmt.body.body:
                if isinstance(inner, cst.FunctionDef):
                    found.setdefault(f"{stmt.name.value}.{inner.name.value}", inner)
    bodies = [fn.body for qualname, fn in found.items() if function in (qualname, qualname.rpartition(".")[2])]
    if not bodies:
        known = ", ".join(found) or "none"
        raise UsageError(f"function={function!r} is not a top-level function or method; functions: {known}")
    return bodies


class _Collector(cst.CSTVisitor):
    """Collects every node under a root in source (pre-)order."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _nodes(roots: Iterable[cst.CSTNode]) -> list[cst.CSTNode]:
    collector = _Collector()
    for root in roots:
        root.visit(collector)
    return collector.nodes


def _location(span: CodeRange) -> Location:
    return Location(span.start.line, span.start.column, span.end.line, span.end.column)


def _swap_child(parent: cst.CSTNode, old: cst.CSTNode, new: cst.CSTNode | cst.RemovalSentinel) -> cst.CSTNode | None:
    """`parent` with its child `old` replaced by `new` (or dropped), or None if `old` is not a direct child."""
    for f in dataclasses.fields(parent):
        value = getattr(parent, f.name)
        if value is old and isinstance(new, cst.CSTNode):
            return parent.with_changes(**{f.name: new})
        if isinstance(value, list | tuple) and any(item is old for item in value):
            items = [new if item is old else item for item in value]
            return parent.with_changes(**{f.name: [i for i in items if not isinstance(i, cst.RemovalSentinel)]})
    return None


def _apply(module: cst.Module, parents: Mapping[cst.CSTNode, cst.CSTNode], edit: Edit) -> str:
    # Rebuild only the target's ancestors: `deep_replace` walks the whole tree, several times
    # slower per mutant on a module of a few hundred lines.
    child, new = edit.target, edit.replacement
    while (parent := parents.get(child)) is not None:
        rebuilt = _swap_child(parent, child, new)
        if rebuilt is None:
            break
        child, new = parent, rebuilt
    if child is module and isinstance(new, cst.Module):
        return new.code
    changed: cst.CSTNode | cst.RemovalSentinel
    if isinstance(edit.replacement, cst.RemovalSentinel):
        changed = module.deep_remove(edit.target)
    else:
        changed = module.deep_replace(edit.target, edit.replacement)
    # Removal targets are statements, never the module; a replaced module is still a module.
    assert isinstance(changed, cst.Module)
    return changed.code


def _diff(original: str, mutated: str, name: str) -> str:
    def lines(text: str) -> list[str]:
        out = text.splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"  # a diff line must end in a newline to read
        return out

    return "".join(difflib.unified_diff(lines(original), lines(mutated), "original", name, n=3))


def mutate(
    source: str,
    *,
    operators: Sequence[str] | None = None,
    lines: Collection[int] | None = None,
    function: str | None = None,
) -> list[Mutant]:
    """Every single-edit mutant of `source` under the given operators and restrictions.

    Args:
        source: Python source to mutate; comments and formatting are kept outside the edit.
        operators: Names from `OPERATORS`; None applies all of them.
        lines: Keep only mutants whose location overlaps one of these 1-based line numbers.
        function: Restrict to the body of the top-level function or method of this name
            (`name` or `Class.name`), nested definitions included.

    Returns:
        Mutants in source order (then registry order), without any whose source equals the
        original or an earlier mutant's.

    Raises:
        UsageError: An unknown operator, a source that does not parse, or no such function.
    """
    selected = resolve_operators(operators)
    wrapper = MetadataWrapper(_parse(source))
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    ctx = SiteContext(module=module, parents=wrapper.resolve(ParentNodeProvider))
    roots: Sequence[cst.CSTNode] = [module] if function is None else _function_bodies(module, function)
    wanted = None if lines is None else set(lines)

    found: list[tuple[Location, int, int, str, Edit]] = []
    for node in _nodes(roots):
        for rank, op in enumerate(selected):
            for edit in op(node, ctx):
                loc = _location(positions[edit.anchor or edit.target])
                if wanted is None or any(n in wanted for n in range(loc.line, loc.end_line + 1)):
                    found.append((loc, rank, len(found), op.name, edit))
    found.sort(key=lambda item: (item[0].line, item[0].column, item[1], item[2]))

    mutants: list[Mutant] = []
    seen = {source}
    per_site: dict[str, int] = {}
    for loc, _, _, name, edit in found:
        site = f"{name}:{loc.line}:{loc.column}"
        index = per_site.get(site, 0)
        per_site[site] = index + 1  # counted before dedup, so an id does not depend on its neighbours
        mutated = _apply(module, ctx.parents, edit)
        if mutated in seen:
            continue
        seen.add(mutated)
        mutant_id = f"{site}:{index}"
        mutants.append(Mutant(mutant_id, name, loc, edit.description, mutated, _diff(source, mutated, mutant_id)))
    return mutants
