"""Source edits for HumanEval cases: cosmetic rewrites, mutants, attacks. Pure functions on text.

Every function takes the program text (HumanEval prompt + body) and returns new text, or
None when the edit does not apply. Mutants only touch lines after the prompt (the solution),
never the signature or docstring the solver was given.
"""

from __future__ import annotations

import ast
import builtins
import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass

_BUILTIN_NAMES = set(dir(builtins))


# --- cosmetic -----------------------------------------------------------------------------


def reformat(program: str) -> str | None:
    """The program as ``ast.unparse`` prints it: quotes, parentheses and spacing normalised."""
    try:
        return ast.unparse(ast.parse(program)) + "\n"
    except (SyntaxError, ValueError, RecursionError):
        return None


def add_comments(program: str, prompt_lines: int) -> str:
    """A comment line before each statement line of the solution."""
    lines = program.splitlines()
    out = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if (
            number > prompt_lines
            and stripped
            and not stripped.startswith(("#", ")", "]", "}", "else", "elif", "except"))
        ):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# step {number - prompt_lines}")
        out.append(line)
    return "\n".join(out) + "\n"


def strip_docstrings(program: str) -> str | None:
    """Drop every docstring: the behaviour the prompt asks for does not live in it."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    changed = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
                changed = True
    return ast.unparse(tree) + "\n" if changed else None


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return node  # parameters keep their names: callers may pass them by keyword


def rename_locals(program: str, entry_point: str) -> str | None:
    """Rename the local variables the entry point assigns (never parameters or globals)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if fn is None:
        return None
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    declared = {name for n in ast.walk(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    nested_scopes = [n for n in ast.walk(fn) if n is not fn and isinstance(n, (ast.FunctionDef, ast.Lambda))]
    if nested_scopes:
        return None  # closures make renaming scope-sensitive; not worth the risk here
    stored = sorted(
        {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)
            and n.id not in params | declared | _BUILTIN_NAMES
        }
    )
    if not stored:
        return None
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | params
    mapping = {}
    for i, name in enumerate(stored):
        new = f"v{i}_{name}"
        while new in taken:
            new += "_"
        mapping[name] = new
    fn_copy = _Renamer(mapping).visit(copy.deepcopy(fn))
    tree.body = [fn_copy if n is fn else n for n in tree.body]
    return ast.unparse(tree) + "\n"


def delegate(program: str, entry_point: str) -> str | None:
    """Move the solution into a helper and make the entry point delegate to it."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if fn is None or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        return None
    helper = copy.deepcopy(fn)
    helper.name = f"_{entry_point}_impl"
    helper.decorator_list = []
    calls_self = any(isinstance(n, ast.Name) and n.id == entry_point for n in ast.walk(fn))
    if calls_self:
        return None
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    wrapper = ast.parse(f"def {entry_point}({', '.join(names)}):\n    return {helper.name}({', '.join(names)})\n").body[
        0
    ]
    assert isinstance(wrapper, ast.FunctionDef)
    wrapper.args = copy.deepcopy(fn.args)
    index = tree.body.index(fn)
    tree.body[index : index + 1] = [helper, wrapper]
    return ast.unparse(tree) + "\n"


# --- mutants ------------------------------------------------------------------------------

_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}


@dataclass(frozen=True)
class Mutant:
    operator: str
    line: int
    description: str
    program: str


def _sites(tree: ast.Module, first_line: int) -> Iterator[tuple[str, ast.AST, str]]:
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) <= first_line:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAP:
                    yield "compare", node, str(i)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            yield "arithmetic", node, ""
        elif isinstance(node, ast.BoolOp):
            yield "boolean", node, ""
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "drop_not", node, ""
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield "constant_plus", node, ""
            if node.value != 0:
                yield "constant_minus", node, ""
        elif isinstance(node, (ast.If, ast.While)):
            yield "negate_condition", node, ""


def _apply(tree: ast.Module, target: ast.AST, operator: str, arg: str) -> str:
    """Mutate ``target`` in place in ``tree``; return a description."""
    if operator == "compare":
        assert isinstance(target, ast.Compare)
        i = int(arg)
        old = type(target.ops[i])
        target.ops[i] = _COMPARE_SWAP[old]()
        return f"{old.__name__} -> {type(target.ops[i]).__name__}"
    if operator == "arithmetic":
        assert isinstance(target, ast.BinOp)
        old_op = type(target.op)
        target.op = _BINOP_SWAP[old_op]()
        return f"{old_op.__name__} -> {type(target.op).__name__}"
    if operator == "boolean":
        assert isinstance(target, ast.BoolOp)
        target.op = ast.Or() if isinstance(target.op, ast.And) else ast.And()
        return "and <-> or"
    if operator == "drop_not":
        assert isinstance(target, ast.UnaryOp)
        target.op = ast.UAdd()  # +x of a bool is an int with the same truth: the 'not' is gone
        return "not x -> x"
    if operator in ("constant_plus", "constant_minus"):
        assert isinstance(target, ast.Constant) and type(target.value) is int
        number: int = target.value
        target.value = number + (1 if operator == "constant_plus" else -1)
        return f"{number} -> {target.value}"
    assert isinstance(target, (ast.If, ast.While))
    target.test = ast.UnaryOp(op=ast.Not(), operand=target.test)
    return "condition negated"


def mutants(program: str, prompt_lines: int) -> list[Mutant]:
    """Every single-site mutant of the solution part of ``program``, in source order."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    out = []
    sites = list(_sites(tree, prompt_lines))
    for index in range(len(sites)):
        copy_tree = ast.parse(program)
        copy_sites = list(_sites(copy_tree, prompt_lines))
        operator, target, arg = copy_sites[index]
        description = _apply(copy_tree, target, operator, arg)
        try:
            text = ast.unparse(copy_tree) + "\n"
        except (ValueError, RecursionError):
            continue
        out.append(Mutant(operator, getattr(target, "lineno", 0) - prompt_lines, description, text))
    return out


# --- attacks ------------------------------------------------------------------------------


def parameters(prompt: str, entry_point: str) -> list[str] | None:
    """The entry point's positional parameter names, read from the prompt's signature."""
    try:
        tree = ast.parse(prompt + "    pass\n")
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if fn is None or fn.args.vararg or fn.args.kwarg:
        return None
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def hardcoded(prompt: str, params: list[str], table: list[tuple[list[object], object]]) -> str:
    """A solution that only knows the answers to the visible examples."""
    rows = "".join(f"        {repr(tuple(args))!r}: {value!r},\n" for args, value in table)
    key = "(" + "".join(f"{p}, " for p in params) + ")"
    return f"{prompt}    answers = {{\n{rows}    }}\n    return answers.get(repr({key}))\n"


def exits_early(program: str) -> str:
    """Leaves with exit code 0 before defining anything."""
    return "import os\nos._exit(0)\n" + program


def always_equal(prompt: str) -> str:
    """Returns an object equal to everything."""
    return (
        "class _Anything:\n    def __eq__(self, other):\n        return True\n\n"
        "    def __ne__(self, other):\n        return False\n\n\n"
        f"{prompt}    return _Anything()\n"
    )


def tamper(prompt: str) -> str:
    """Disables assertions for whoever imports it, and returns nothing useful."""
    return (
        "import builtins\n\n"
        "class _Silent(Exception):\n    pass\n\n"
        "builtins.AssertionError = _Silent\n\n\n"
        f"{prompt}    return None\n"
    )


def shuffled(items: list[Mutant], rng: random.Random) -> list[Mutant]:
    copy_items = list(items)
    rng.shuffle(copy_items)
    return copy_items
