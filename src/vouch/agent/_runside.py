"""Run side of ``run_public`` for code tasks without public tests: the examples of the prompt.

Runs inside a sandbox as ``Call("vouch.agent._runside:run_examples", ...)``: the candidate is
agent-supplied code and shares this run, never the judge's process. Standard library only.
"""

from __future__ import annotations

import ast
import doctest
from typing import Any

_MAX = 400


def _docstrings(prompt: str) -> list[str]:
    # Examples live in docstrings; parsing the whole file would read the closing quotes as output.
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return [prompt]
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return [d for d in (ast.get_docstring(n, clean=True) for n in nodes) if d]


def examples_of(prompt: str) -> list[tuple[str, str]]:
    """(source, expected output) of each ``>>>`` example in the docstrings of ``prompt``."""
    parser = doctest.DocTestParser()
    out: list[tuple[str, str]] = []
    for text in _docstrings(prompt):
        try:
            found = parser.get_examples(text)
        except ValueError:
            continue
        out.extend((e.source.strip(), e.want.strip()) for e in found)
    return out


def run_examples(source: str, prompt: str) -> dict[str, Any]:
    """Load the candidate, run every example of the prompt, compare printed values as doctest does."""
    namespace: dict[str, Any] = {"__name__": "candidate"}
    try:
        exec(compile(source, "candidate.py", "exec", dont_inherit=True), namespace)  # noqa: S102 - inside the sandboxed run
    except BaseException as exc:  # noqa: BLE001 - a candidate that does not load fails every example
        return {
            "ok": False,
            "error": f"the candidate does not load: {type(exc).__name__}: {exc}"[:_MAX],
            "outcomes": [],
        }
    outcomes = []
    for example, want in examples_of(prompt):
        try:
            got = repr(eval(compile(example, "<example>", "eval", dont_inherit=True), namespace))  # noqa: S307 - sandboxed
            error = None
        except BaseException as exc:  # noqa: BLE001 - reported per example
            got, error = "", f"{type(exc).__name__}: {exc}"[:_MAX]
        passed = error is None and (got == want or _same_value(got, want))
        outcomes.append(
            {"example": example[:_MAX], "expected": want[:_MAX], "got": got[:_MAX], "passed": passed, "error": error}
        )
    return {"ok": bool(outcomes) and all(o["passed"] for o in outcomes), "error": None, "outcomes": outcomes}


def _same_value(got: str, want: str) -> bool:
    # doctest compares text; "2.0" against "2.00" or quote style should not fail a candidate.
    try:
        return bool(ast.literal_eval(got) == ast.literal_eval(want))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
