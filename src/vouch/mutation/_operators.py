"""Mutation operators over libcst trees, and the registry that names them.

An operator looks at one node and proposes zero or more edits of it. It never walks the tree
itself: the engine walks once, asks every selected operator about every node, and applies one
edit per mutant. That keeps the restriction to a function or to lines in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

__all__ = ["OPERATORS", "Edit", "Operator", "SiteContext"]


@dataclass(frozen=True)
class Edit:
    """One proposed change: replace (or remove) `target`; report the location of `anchor`."""

    target: cst.CSTNode
    replacement: cst.CSTNode | cst.RemovalSentinel
    description: str
    anchor: cst.CSTNode | None = None


@dataclass(frozen=True)
class SiteContext:
    """What an operator may ask about a node besides the node itself."""

    module: cst.Module
    parents: Mapping[cst.CSTNode, cst.CSTNode]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node's parent, or None for the module."""
        return self.parents.get(node)

    def code(self, node: cst.CSTNode) -> str:
        """The node's source text, stripped of surrounding whitespace."""
        return self.module.code_for_node(node).strip()


class Operator(Protocol):
    """A mutation operator: a name, a one-line summary, and the edits it proposes for a node."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    def __call__(self, node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]: ...


@dataclass(frozen=True)
class _FunctionOperator:
    name: str
    summary: str
    propose: Callable[[cst.CSTNode, SiteContext], Iterator[Edit]]

    def __call__(self, node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
        return self.propose(node, ctx)


# Each token class maps to its replacements; whitespace around the token is carried over.
_COMPARE_SWAPS: dict[type[cst.BaseCompOp], tuple[type[cst.BaseCompOp], ...]] = {
    cst.LessThan: (cst.LessThanEqual, cst.GreaterThanEqual),
    cst.LessThanEqual: (cst.LessThan, cst.GreaterThan),
    cst.GreaterThan: (cst.GreaterThanEqual, cst.LessThanEqual),
    cst.GreaterThanEqual: (cst.GreaterThan, cst.LessThan),
    cst.Equal: (cst.NotEqual,),
    cst.NotEqual: (cst.Equal,),
    cst.In: (cst.NotIn,),
    cst.NotIn: (cst.In,),
    cst.Is: (cst.IsNot,),
    cst.IsNot: (cst.Is,),
}
_BOOLEAN_SWAPS: dict[type[cst.BaseBooleanOp], type[cst.BaseBooleanOp]] = {cst.And: cst.Or, cst.Or: cst.And}
_ARITHMETIC_SWAPS: dict[type[cst.CSTNode], type[cst.CSTNode]] = {
    cst.Add: cst.Subtract,
    cst.Subtract: cst.Add,
    cst.Multiply: cst.FloorDivide,
    cst.FloorDivide: cst.Multiply,
    cst.Modulo: cst.FloorDivide,
    cst.AddAssign: cst.SubtractAssign,
    cst.SubtractAssign: cst.AddAssign,
    cst.MultiplyAssign: cst.FloorDivideAssign,
    cst.FloorDivideAssign: cst.MultiplyAssign,
    cst.ModuloAssign: cst.FloorDivideAssign,
}


def _token(cls: type[cst.CSTNode]) -> str:
    # Render a default instance: `not in` and `is not` carry their inner space.
    return cst.Module(body=[]).code_for_node(cls()).strip()


def _swap_token(old: cst.CSTNode, new_cls: type[cst.CSTNode]) -> cst.CSTNode:
    before = getattr(old, "whitespace_before", cst.SimpleWhitespace(" "))
    after = getattr(old, "whitespace_after", cst.SimpleWhitespace(" "))
    return new_cls(whitespace_before=before, whitespace_after=after)  # type: ignore[call-arg]


def _compare_swap(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.ComparisonTarget):
        for new_cls in _COMPARE_SWAPS.get(type(node.operator), ()):
            desc = f"{_token(type(node.operator))} -> {_token(new_cls)}"
            yield Edit(node.operator, _swap_token(node.operator, new_cls), desc)


def _boolean_swap(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.BooleanOperation):
        new_cls = _BOOLEAN_SWAPS[type(node.operator)]
        desc = f"{_token(type(node.operator))} -> {_token(new_cls)}"
        yield Edit(node.operator, _swap_token(node.operator, new_cls), desc)


def _arithmetic_swap(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.BinaryOperation | cst.AugAssign):
        new_cls = _ARITHMETIC_SWAPS.get(type(node.operator))
        if new_cls is not None:
            desc = f"{_token(type(node.operator))} -> {_token(new_cls)}"
            yield Edit(node.operator, _swap_token(node.operator, new_cls), desc)


def _negated(test: cst.BaseExpression) -> cst.BaseExpression:
    wrapped = test if test.lpar else test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(operator=cst.Not(), expression=wrapped)


_SPACE = cst.SimpleWhitespace(" ")


def _negate_condition(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    # The keyword's own whitespace may be empty (`if(x):`); `ifnot (x)` would not parse.
    replacement: cst.CSTNode
    if isinstance(node, cst.If):
        test, space = node.test, node.whitespace_before_test
        replacement = node.with_changes(test=_negated(test), whitespace_before_test=space if space.value else _SPACE)
    elif isinstance(node, cst.While):
        test, space = node.test, node.whitespace_after_while
        replacement = node.with_changes(test=_negated(test), whitespace_after_while=space if space.value else _SPACE)
    elif isinstance(node, cst.IfExp):
        test, after_if = node.test, node.whitespace_after_if
        ws = after_if if not isinstance(after_if, cst.SimpleWhitespace) or after_if.value else _SPACE
        replacement = node.with_changes(test=_negated(test), whitespace_after_if=ws)
    else:
        return
    code = ctx.code(test)
    inner = code if test.lpar else f"({code})"
    yield Edit(node, replacement, f"`{code}` -> `not {inner}`", anchor=test)


def _int_value(node: cst.Integer) -> int:
    return int(node.value.replace("_", ""), 0)


def _int_node(value: int) -> cst.BaseExpression:
    if value < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(-value)))
    return cst.Integer(str(value))


def _in_boundary_context(node: cst.Integer, ctx: SiteContext) -> bool:
    """Whether the integer is a comparison operand, a slice bound or index, or a `range` argument."""
    child: cst.CSTNode = node
    parent = ctx.parent(child)
    while isinstance(parent, cst.UnaryOperation | cst.BinaryOperation):
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.Comparison | cst.ComparisonTarget | cst.Slice | cst.Index):
        return True
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "range"
    return False


def _shift(node: cst.Integer) -> Iterator[Edit]:
    try:
        value = _int_value(node)
    except ValueError:
        return
    for delta in (1, -1):
        new = _int_node(value + delta)
        yield Edit(node, new, f"{node.value} -> {cst.Module(body=[]).code_for_node(new)}")


def _boundary_shift(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.Integer) and _in_boundary_context(node, ctx):
        yield from _shift(node)


def _is_docstring(node: cst.SimpleString, ctx: SiteContext) -> bool:
    expr = ctx.parent(node)
    line = ctx.parent(expr) if isinstance(expr, cst.Expr) else None
    return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1


def _constant_change(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.Integer) and not _in_boundary_context(node, ctx):
        yield from _shift(node)
    elif isinstance(node, cst.Name) and node.value in ("True", "False"):
        flipped = "False" if node.value == "True" else "True"
        yield Edit(node, node.with_changes(value=flipped), f"{node.value} -> {flipped}")
    elif isinstance(node, cst.SimpleString) and node.raw_value and not _is_docstring(node, ctx):
        empty = f"{node.prefix}{node.quote}{node.quote}"
        yield Edit(node, node.with_changes(value=empty), f"{node.value} -> {empty}")


def _guard(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    """Whether a statement is a `return`, `return False`, `return None` or a `raise`."""
    small: cst.CSTNode = stmt
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
    if isinstance(small, cst.Raise):
        return True
    if isinstance(small, cst.Return):
        value = small.value
        return value is None or (isinstance(value, cst.Name) and value.value in ("False", "None"))
    return False


def _remove_check(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if isinstance(node, cst.If) and node.orelse is None and not isinstance(ctx.parent(node), cst.If):
        body = node.body.body
        if body and _guard(body[-1]):
            last = body[-1]
            guard = ctx.code(last.body[0] if isinstance(last, cst.SimpleStatementLine) else last)
            more = "...; " if len(body) > 1 else ""
            yield _remove_statement(node, ctx, f"removed `if {ctx.code(node.test)}: {more}{guard}`", node)
    elif isinstance(node, cst.Assert):
        line = ctx.parent(node)
        # A line holding only the assert goes whole; `assert x; y()` keeps `y()`.
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            yield _remove_statement(line, ctx, f"removed `{ctx.code(node)}`", node)
        else:
            yield Edit(node, cst.RemoveFromParent(), f"removed `{ctx.code(node)}`")


def _remove_statement(stmt: cst.If | cst.SimpleStatementLine, ctx: SiteContext, desc: str, anchor: cst.CSTNode) -> Edit:
    """Delete a statement but keep the comments above it, on the next statement or on a `pass`."""
    suite = ctx.parent(stmt)
    if not isinstance(suite, cst.IndentedBlock | cst.Module) or not stmt.leading_lines:
        return Edit(stmt, cst.RemoveFromParent(), desc, anchor=anchor)
    body = list(suite.body)
    i = body.index(stmt)
    if i + 1 < len(body):
        after = body[i + 1]
        above: Sequence[cst.EmptyLine] = getattr(after, "leading_lines", ())
        body[i : i + 2] = [after.with_changes(leading_lines=[*stmt.leading_lines, *above])]
    else:
        body[i] = cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=stmt.leading_lines)
    return Edit(suite, suite.with_changes(body=body), desc, anchor=anchor)


def _early_return_true(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    function = ctx.parent(node)
    if not isinstance(function, cst.FunctionDef) or node is not function.body:
        return
    desc = f"inserted `return True` at the start of `{function.name.value}`"
    ret = cst.Return(value=cst.Name("True"))
    if isinstance(node, cst.SimpleStatementSuite):
        yield Edit(node, node.with_changes(body=[ret, *node.body]), desc, anchor=function.name)
    elif isinstance(node, cst.IndentedBlock):
        body = list(node.body)
        # A docstring stays first so the function keeps it; it is not logic to skip.
        first = 1 if body and _is_docstring_line(body[0]) else 0
        body.insert(first, cst.SimpleStatementLine(body=[ret]))
        yield Edit(node, node.with_changes(body=body), desc, anchor=function.name)


def _is_docstring_line(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


_Container = cst.List | cst.Tuple | cst.Set | cst.Dict


def _container_name(node: cst.CSTNode, ctx: SiteContext) -> str:
    kind = type(node).__name__.lower()
    parent = ctx.parent(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return f"{kind} `{ctx.code(parent.targets[0].target)}`"
    if isinstance(parent, cst.AnnAssign):
        return f"{kind} `{ctx.code(parent.target)}`"
    return f"{kind} literal"


def _is_binding_target(node: cst.CSTNode, ctx: SiteContext) -> bool:
    parent = ctx.parent(node)
    if isinstance(parent, cst.AssignTarget):
        return True
    return isinstance(parent, cst.For | cst.CompFor) and parent.target is node


def _drop_list_element(node: cst.CSTNode, ctx: SiteContext) -> Iterator[Edit]:
    if not isinstance(node, _Container) or len(node.elements) < 2 or _is_binding_target(node, ctx):
        return
    elements = list(node.elements)
    name = _container_name(node, ctx)
    for i, element in enumerate(elements):
        kept = elements[:i] + elements[i + 1 :]
        if i == len(elements) - 1:
            # The new last element takes the dropped one's trailing comma (or lack of one).
            kept[-1] = kept[-1].with_changes(comma=element.comma)
        if isinstance(node, cst.Tuple) and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
            kept[0] = kept[0].with_changes(comma=cst.Comma())  # `(a,)` stays a tuple
        shown = ctx.code(element).rstrip(",").strip()
        yield Edit(node, node.with_changes(elements=kept), f"{shown} dropped from {name}", anchor=element)


def _operator(name: str, summary: str, propose: Callable[[cst.CSTNode, SiteContext], Iterator[Edit]]) -> Operator:
    return _FunctionOperator(name, summary, propose)


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        _operator("compare_swap", "swap a comparison: < <=, > >=, == !=, in / not in, is / is not", _compare_swap),
        _operator("boolean_swap", "swap `and` and `or`", _boolean_swap),
        _operator(
            "negate_condition", "negate the test of an if, elif, while or conditional expression", _negate_condition
        ),
        _operator(
            "boundary_shift", "shift an integer in a comparison, slice, index or range() by +1 and -1", _boundary_shift
        ),
        _operator(
            "remove_check", "delete an `if` guard that returns False/None or raises, or an `assert`", _remove_check
        ),
        _operator("early_return_true", "insert `return True` as the first statement of a function", _early_return_true),
        _operator(
            "constant_change", "other integers +1/-1, True <-> False, a non-empty string -> ''", _constant_change
        ),
        _operator(
            "drop_list_element",
            "drop one element of a list, tuple, set or dict literal of 2 or more",
            _drop_list_element,
        ),
        _operator(
            "arithmetic_swap", "swap + and -, * and //, % -> // (also in augmented assignments)", _arithmetic_swap
        ),
    )
}
