"""The CLI stays thin: no function of ``vouch.cli`` is over ``MAX_LINES`` lines.

Every function counts, commands and helpers alike (a command's logic moved into one long helper
beside it is no thinner), nested ones too. A function's length is its ``def`` line to its last
line, as ``ast`` reports them: decorators are not counted, the signature and docstring are. What a
command does beyond parsing its options and printing belongs in a helper, or in the library
package that owns the work.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vouch.cli

MAX_LINES = 100
PACKAGE = Path(vouch.cli.__file__).parent


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """The functions of ``source`` over ``limit`` lines, as (qualified name, lines)."""
    found: list[tuple[str, int]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}."
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert child.end_lineno is not None
                lines = child.end_lineno - child.lineno + 1
                if lines > limit:
                    found.append((name.rstrip("."), lines))
            walk(child, name)

    walk(ast.parse(source), "")
    return found


def test_no_function_of_the_cli_is_over_the_limit() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 10, "the walk reads the package"
    over = [
        f"{path.name}:{name} has {lines} lines"
        for path in modules
        for name, lines in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert not over, f"over {MAX_LINES} lines (move what is not options and printing out): " + "; ".join(over)


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x = {i}\n" for i in range(body_lines))
    return f"{indent}def {name}() -> None:\n{body}"


def test_the_walk_finds_a_long_function() -> None:
    decorated = "import click\n\n\n@click.command()\n@click.option('--n')\n" + _function("command", 100)
    assert long_functions(decorated) == [("command", 101)]
    assert long_functions(_function("command", 99)) == []


def test_the_walk_finds_a_long_function_nested_in_another_or_in_a_class() -> None:
    nested = _function("outer", 1) + _function("inner", 120, indent="    ")
    assert ("outer.inner", 121) in long_functions(nested)
    method = "class Bar:\n" + _function("step", 120, indent="    ")
    assert long_functions(method) == [("Bar.step", 121)]
