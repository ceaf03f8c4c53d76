"""Decisions shared between tasks whose verifiers cannot tell them apart.

A decision depends on the verifier's code, the candidate and what the run gives the verifier:
its task's ``env`` (the kind's interface and data), the pool it runs in, the paths it may not
read. Two tasks of one build can hold the same candidates under verifiers that differ only in
their module docstring and never read ``env``: AgentDojo's state and tool_call twins replay
the calls themselves, so each twin's verifier decides every case as the other's does. V4V
decides such a case once and gives both tasks the decision (``share_key``).

The test is static and conservative. A verifier shares its decisions when

* it parses, and its module without the docstring is the other's (compared as syntax trees,
  so comments and layout do not matter either);
* ``verify(candidate, env)`` never names its ``env`` parameter;
* neither the module nor any string in it that parses as code names what could read the
  docstring, the source file or the caller's frames (``__doc__``, ``__file__``, ``inspect``,
  ``sys._getframe``, ``globals()``, ``open`` and the like).

A verifier outside this gets no sharing (``None``) and is decided per task, as before.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from typing import TYPE_CHECKING, Any

from vouch.core import canonical_json
from vouch.store import SHARED_PREFIX

if TYPE_CHECKING:
    from vouch.bench._decide import Task

_INTROSPECTION = frozenset(
    {
        "__doc__",
        "__file__",
        "__loader__",
        "__spec__",
        "__cached__",
        "__builtins__",
        "_getframe",
        "currentframe",
        "f_back",
        "f_locals",
        "f_globals",
        "tb_frame",
        "__traceback__",
        "exc_info",
        "inspect",
        "linecache",
        "traceback",
        "settrace",
        "setprofile",
        "gc",
        "globals",
        "locals",
        "open",
        "io",
        "pathlib",
        "Path",
        "os",
        "getsource",
        "stack",
    }
)
"""Names through which a verifier could see its docstring, its file or its caller's frames."""


def _names(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.update(node.name.split("."))
            if node.asname:
                found.add(node.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(node.module.split("."))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and not node.args
        ):
            found.add("locals")  # vars() without an argument is locals()
    return found


def _embedded_code(tree: ast.AST) -> list[ast.AST]:
    """String constants that parse as Python (code a verifier may exec): checked like the module."""
    out: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            try:
                out.append(ast.parse(node.value))
            except (SyntaxError, ValueError, RecursionError):
                continue
    return out


@functools.lru_cache(maxsize=4096)
def verifier_identity(source: str) -> str | None:
    """The identity of an env-blind verifier's code (module docstring, comments and layout
    aside), or None when its decisions cannot be shared with another task's."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    body = list(tree.body)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]  # the module docstring
    verify = next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "verify"), None)
    if verify is None or verify.args.vararg or verify.args.kwarg or len(verify.args.args) != 2:
        return None
    if sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "verify" for n in body) != 1:
        return None
    env = verify.args.args[1].arg
    if any(isinstance(n, ast.Name) and n.id == env for stmt in verify.body for n in ast.walk(stmt)):
        return None
    module = ast.Module(body=body, type_ignores=[])
    for part in (module, *_embedded_code(module)):
        if _names(part) & _INTROSPECTION:
            return None
    return hashlib.sha256(ast.dump(module, include_attributes=False).encode()).hexdigest()


def share_key(task: Task, verifier: str | None, candidate: dict[str, Any]) -> tuple[str, str] | None:
    """The store key a decision of ``verifier`` on ``candidate`` shares with other tasks, or None.

    Besides the verifier's identity it holds what still reaches an env-blind verifier's run:
    the candidate and the pool (preload set) the run forks from."""
    if verifier is None:
        return None
    identity = verifier_identity(verifier)
    if identity is None:
        return None
    from vouch.bench._decide import preload_for

    material = {"candidate": candidate, "pool": preload_for([task])}
    case = hashlib.sha256(canonical_json(material).encode()).hexdigest()
    return f"{SHARED_PREFIX}{identity}", f"{SHARED_PREFIX}{case}"
