"""Reading P and T0 offline: the prompt's clauses and examples, T0's assertions, the checklist.

Everything here is static analysis of text (``ast`` and regular expressions); nothing runs.
"""

from __future__ import annotations

import ast
import doctest
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vouch.core import ChecklistItem

_ARROW = re.compile(r"^(?P<call>[A-Za-z_]\w*\(.*\))\s*(?:==>|=>|->|➞|==|=|should return|returns?)\s*(?P<want>.+?)\s*$")


@dataclass(frozen=True)
class Example:
    """A worked example of P: arguments and the value P says they give."""

    text: str
    args: list[Any]
    expected: Any
    has_expected: bool


@dataclass(frozen=True)
class Assertion:
    """One ``assert`` of T0's ``check``, statically read."""

    tag: str
    """``L<line>``, the id the in-run recorder uses."""
    source: str
    args: list[Any] | None
    """Literal arguments of the candidate call, when they are literals."""
    expected: Any
    has_expected: bool
    compares_value: bool
    """It compares the candidate's output with a value (``==``, ``is``, a tolerance)."""
    wrapper: str | None = None
    """``tuple`` or ``list`` when T0 compares ``tuple(candidate(x))`` rather than the output itself."""


def _parsed(prompt: str) -> ast.Module | None:
    """The prompt as a module: a signature and docstring with a body added (at the docstring's
    indentation, four spaces or a tab), or the prompt as it is (MBPP's module docstring, a
    whole program)."""
    lines = [line for line in prompt.splitlines() if line.strip()]
    indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] if lines else ""
    for text in (prompt + "    pass\n", prompt + (indent or "    ") + "pass\n", prompt):
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError):
            continue
    return None


def _function(prompt: str, entry_point: str) -> ast.FunctionDef | None:
    tree = _parsed(prompt)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return node
    return None


def parameters(prompt: str, entry_point: str) -> list[str]:
    """The entry point's parameter names, from the prompt's signature."""
    node = _function(prompt, entry_point)
    return [a.arg for a in node.args.args] if node is not None else []


def docstring(prompt: str, entry_point: str) -> str:
    """The entry point's docstring; where the prompt gives it none (MBPP states the task once,
    in the module's docstring or a helper's), the prompt's one docstring."""
    node = _function(prompt, entry_point)
    own = ast.get_docstring(node) if node is not None else None
    if own:
        return own
    tree = _parsed(prompt)
    if tree is None:
        return ""
    found = [
        doc
        for n in [tree, *ast.walk(tree)]
        if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and (doc := ast.get_docstring(n))
    ]
    return found[0] if len(set(found)) == 1 else ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node) or ""
    return ""


def _literal_call(text: str, entry_point: str) -> list[Any] | None:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Compare):
        node = node.left
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point):
        return None
    try:
        return [ast.literal_eval(a) for a in node.args]
    except (ValueError, SyntaxError, TypeError):
        return None


def examples(prompt: str, entry_point: str) -> list[Example]:
    """The prompt's examples: doctest ``>>>`` lines and ``f(x) ==> y`` lines with literal arguments."""
    found: list[Example] = []
    for ex in doctest.DocTestParser().get_examples(prompt):
        args = _literal_call(ex.source, entry_point)
        if args is None:
            continue
        # The last example's "want" runs on into the docstring's closing quotes: those are not output.
        lines = [line for line in ex.want.strip().splitlines() if line.strip() not in ('"""', "'''")]
        want, has = _literal("\n".join(lines).strip())
        found.append(Example(ex.source.strip(), args, want, has))
    for line in docstring(prompt, entry_point).splitlines():
        match = _ARROW.match(line.strip())
        if not match or not match.group("call").startswith(entry_point + "("):
            continue
        args = _literal_call(match.group("call"), entry_point)
        if args is None:
            continue
        want, has = _literal(match.group("want").rstrip(".").strip())
        found.append(Example(line.strip(), args, want, has))
    return found


def _literal(text: str) -> tuple[Any, bool]:
    try:
        return ast.literal_eval(text), True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, False


def _calls_candidate(node: ast.AST, names: frozenset[str] = frozenset({"candidate"})) -> ast.Call | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in names:
            return sub
    return None


def assertions(test: str, entry_point: str | None = None) -> list[Assertion]:
    """T0's assertions inside ``check``, with the literal input and expected value when there are.

    A call of the program is ``candidate(...)`` (HumanEval) or, given ``entry_point``, a call of
    the function by its name (MBPP's asserts, which the benchmark runs in the program's namespace)."""
    names = frozenset({"candidate", entry_point} if entry_point else {"candidate"})
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    out: list[Assertion] = []
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "check"):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assert):
                continue
            call = _calls_candidate(node.test, names)
            args: list[Any] | None = None
            if call is not None:
                try:
                    args = [ast.literal_eval(a) for a in call.args]
                except (ValueError, SyntaxError, TypeError):
                    args = None
            expected, has, compares = None, False, False
            wrapper: str | None = None
            test_node = node.test
            if isinstance(test_node, ast.Compare) and len(test_node.ops) == 1:
                left, right = test_node.left, test_node.comparators[0]
                wrapped = [side for side in (left, right) if _wraps(side, call)]
                if wrapped:
                    wrapper = wrapped[0].func.id  # type: ignore[attr-defined]
                if isinstance(test_node.ops[0], (ast.Eq, ast.Is)) and (left is call or right is call or wrapped):
                    compares = True
                    other = right if (left is call or (wrapped and wrapped[0] is left)) else left
                    try:
                        expected, has = ast.literal_eval(other), True
                    except (ValueError, SyntaxError, TypeError):
                        pass
                elif call is not None and isinstance(test_node.ops[0], (ast.Lt, ast.LtE)):
                    compares = _is_tolerance(left, call)
            elif isinstance(test_node, ast.Call) and call is not None and test_node is not call:
                compares = isinstance(test_node.func, ast.Attribute) and test_node.func.attr == "isclose"
            elif call is not None and (test_node is call or isinstance(test_node, ast.UnaryOp)):
                compares = True  # assert candidate(x) / assert not candidate(x): a truth value
                has, expected = True, isinstance(test_node, ast.UnaryOp) is False
            out.append(Assertion(f"L{node.lineno}", ast.unparse(node), args, expected, has, compares, wrapper))
    return out


WRAPPERS = ("tuple", "list", "set", "frozenset", "sorted")
"""What T0 may apply to an output before it compares it (``set(candidate(x)) == {1, 2}``)."""


def apply_wrapper(wrapper: str | None, value: Any) -> Any:
    """``value`` as T0 compares it through ``wrapper``; unchanged when the wrapper does not apply."""
    if wrapper not in WRAPPERS or not isinstance(value, (list, tuple, set, frozenset)):
        return value
    try:
        if wrapper == "tuple":
            return tuple(value)
        if wrapper == "list":
            return list(value)
        if wrapper == "set":
            return set(value)
        return frozenset(value) if wrapper == "frozenset" else sorted(value)
    except TypeError:  # unhashable or unorderable elements: T0's own call would raise as well
        return value


def _wraps(node: ast.AST, call: ast.Call | None) -> bool:
    """``tuple(candidate(x))``, ``set(candidate(x))``, ... (``WRAPPERS``)."""
    return (
        call is not None
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in WRAPPERS
        and len(node.args) == 1
        and node.args[0] is call
    )


def output_wrapper(asserts: Sequence[Assertion]) -> str | None:
    """The wrapper T0 applies to every output it compares, when there is one (else None)."""
    wrappers = {a.wrapper for a in asserts if a.compares_value}
    return wrappers.pop() if len(wrappers) == 1 else None


def _is_tolerance(left: ast.AST, call: ast.Call) -> bool:
    # abs(candidate(x) - y) < 1e-6
    return isinstance(left, ast.Call) and any(sub is call for sub in ast.walk(left))


def value_oracle(asserts: Sequence[Assertion]) -> bool:
    """Whether T0 judges by comparing outputs with values (so G's output is the required one).

    A task whose T0 checks a property instead (``find_zero``: any zero will do) has several
    correct outputs per input; comparing a trial's output with G's would refute correct trials.
    """
    with_call = [a for a in asserts if a.args is not None or a.compares_value]
    return bool(with_call) and sum(a.compares_value for a in with_call) * 2 >= len(with_call)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences(prompt: str, entry_point: str) -> list[str]:
    """The docstring's prose, one clause a sentence, example lines left out."""
    lines: list[str] = []
    for line in docstring(prompt, entry_point).splitlines():
        stripped = line.strip()
        low = stripped.lower()
        if stripped.startswith(">>>") or _ARROW.match(stripped) or low.startswith(("example", "for example")):
            continue
        if lines and lines[-1] and not stripped:
            lines.append("")
        elif stripped:
            lines.append(stripped)
    prose = " ".join(part if part else "\n" for part in lines)
    out = []
    for block in prose.split("\n"):
        out += [s.strip() for s in _SENTENCE.split(block) if len(s.strip()) > 3]
    return [s for s in out if not re.fullmatch(r"[\W\d]+", s)]


def checklist(
    prompt: str, entry_point: str, asserts: Sequence[Assertion], exs: Sequence[Example]
) -> list[ChecklistItem]:
    """The requirements checklist offline: sentences (explicit), examples (explicit), the
    signature's return type (implicit), each mapped to the T0 assertions that cover it.

    A sentence is mapped to the assertions whose literal inputs contain a number or quoted
    word the sentence names; an example to the assertions with the same input.
    """
    items: list[ChecklistItem] = []
    for n, text in enumerate(sentences(prompt, entry_point), start=1):
        tokens = set(re.findall(r"'([^']+)'|\"([^\"]+)\"|\b(\d+)\b", text))
        words = {w for group in tokens for w in group if w}
        covered = [a.tag for a in asserts if a.args is not None and words and any(w in repr(a.args) for w in words)]
        items.append(ChecklistItem(id=f"S{n}", text=text, kind="explicit", origin="sentence", covered_by=covered))
    for n, ex in enumerate(exs, start=1):
        covered = [a.tag for a in asserts if a.args is not None and a.args == ex.args]
        items.append(ChecklistItem(id=f"E{n}", text=ex.text, kind="explicit", origin="example", covered_by=covered))
    signature_line = next(
        (ln.strip() for ln in prompt.splitlines() if ln.strip().startswith(f"def {entry_point}(")), ""
    )
    if "->" in signature_line:
        ret = signature_line.split("->", 1)[1].rstrip(":").strip()
        items.append(
            ChecklistItem(
                id="R1",
                text=f"returns a value of type {ret} for every valid input, without raising",
                kind="implicit",
                origin="signature",
                covered_by=[a.tag for a in asserts if a.compares_value],
            )
        )
    return items


def main_clause(items: Sequence[ChecklistItem]) -> ChecklistItem | None:
    """The clause that states what the function returns (the first sentence naming a return)."""
    prose = [i for i in items if i.origin == "sentence"]
    for item in prose:
        if re.search(r"\breturns?\b|\bgiven\b|\bcheck\b|\bfind\b|\bcount\b", item.text, re.IGNORECASE):
            return item
    return prose[0] if prose else (items[0] if items else None)
