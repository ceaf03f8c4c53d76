"""Refactors of a gold patch's code: other texts of the same behaviour, labelled valid by
construction (VerifierBench's permitted variants, "a refactor").

Each rewrite touches only the code on the lines the gold patch adds, and only where libcst's
analysis shows the behaviour cannot change:

- ``invert_if``: ``if c: A else: B`` becomes ``if not (c): B else: A`` (no ``elif``: the
  condition is evaluated once either way, and ``not`` takes its truth value as ``if`` does).
- ``rename_local``: a local variable of a changed function gets a new name, at every place
  scope analysis binds or reads it. Left alone: parameters (a keyword call would break),
  names declared ``global`` or ``nonlocal``, functions with a nested scope (a closure, a lambda,
  a comprehension, a class) or that call ``locals``, ``vars``, ``eval`` or ``exec`` (they see
  names as text).

Nothing here runs repository code.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, FunctionScope, MetadataWrapper, PositionProvider, ScopeProvider

__all__ = ["Refactor", "refactors"]

_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "globals"})


@dataclass(frozen=True)
class Refactor:
    construction: str
    source: str
    description: str


def _touches(span: cst.metadata.CodeRange, lines: Collection[int]) -> bool:
    return any(span.start.line <= n <= span.end.line for n in lines)


def _invert_if(wrapper: MetadataWrapper, lines: Collection[int]) -> Iterator[Refactor]:
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    for node in positions:
        if not isinstance(node, cst.If) or not isinstance(node.orelse, cst.Else):
            continue
        if not _touches(positions[node], lines):
            continue
        test = node.test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        inverted = node.with_changes(
            test=cst.UnaryOperation(operator=cst.Not(), expression=test),
            body=node.orelse.body,
            orelse=node.orelse.with_changes(body=node.body),
        )
        source = module.deep_replace(node, inverted)
        assert isinstance(source, cst.Module)
        line = positions[node].start.line
        yield Refactor("invert_if", source.code, f"the if/else at line {line} inverted (branches swapped)")
        return  # one rewrite a case


_SCOPES = (
    cst.FunctionDef,
    cst.Lambda,
    cst.ClassDef,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Global,
    cst.Nonlocal,
)
"""Nodes inside a function that make renaming its locals unsafe: a nested scope, or a name
declared to live elsewhere."""


class _Nested(cst.CSTVisitor):
    """Finds what makes renaming a function's locals unsafe."""

    def __init__(self) -> None:
        self.unsafe = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _SCOPES) or (isinstance(node, cst.Name) and node.value in _INTROSPECTION):
            self.unsafe = True
        return not self.unsafe


class _Rename(cst.CSTTransformer):
    def __init__(self, targets: set[cst.Name], new: str) -> None:
        self.targets = {id(n) for n in targets}
        self.new = new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if id(original_node) in self.targets else updated_node


def _rename_local(wrapper: MetadataWrapper, lines: Collection[int]) -> Iterator[Refactor]:
    positions = wrapper.resolve(PositionProvider)
    scopes = wrapper.resolve(ScopeProvider)
    module = wrapper.module
    words = set(module.code.replace(".", " ").split())
    for node in positions:
        if not isinstance(node, cst.FunctionDef) or not _touches(positions[node], lines):
            continue
        check = _Nested()
        node.body.visit(check)
        if check.unsafe:
            continue
        scope = scopes.get(node.body)
        if not isinstance(scope, FunctionScope):
            continue
        params = {p.name.value for p in (*node.params.params, *node.params.posonly_params, *node.params.kwonly_params)}
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param):
                params.add(star.name.value)
        for assignment in sorted(scope.assignments, key=lambda a: a.name):
            if not isinstance(assignment, Assignment) or assignment.name in params:
                continue
            bound = assignment.node
            if not isinstance(bound, cst.Name) or not _touches(positions[bound], lines):
                continue
            name = assignment.name
            new = f"{name}_value"
            while new in words or any(new in w for w in words):
                new += "_"
            targets: set[cst.Name] = set()
            complete = True
            for each in scope.assignments[name]:
                if isinstance(each, Assignment) and isinstance(each.node, cst.Name):
                    targets.add(each.node)
                else:
                    complete = False
            for access in scope.accesses[name]:
                if isinstance(access.node, cst.Name):
                    targets.add(access.node)
                else:
                    complete = False
            if not complete:
                continue
            renamed = node.visit(_Rename(targets, new))
            assert isinstance(renamed, cst.FunctionDef)
            source = module.deep_replace(node, renamed)
            assert isinstance(source, cst.Module)
            yield Refactor(
                "rename_local",
                source.code,
                f"the local {name!r} of {node.name.value}() renamed {new!r}",
            )
            return  # one rewrite a case


def refactors(source: str, lines: Collection[int]) -> list[Refactor]:
    """The refactors of ``source`` that touch ``lines`` (1-based), at most one of each kind.

    Returns:
        Empty for a text libcst cannot parse, or with nothing safe to rewrite on those lines.
    """
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError:
        return []
    out: list[Refactor] = []
    for make in (_invert_if, _rename_local):
        for refactor in make(wrapper, lines):
            if refactor.source != source:
                out.append(refactor)
    return out
