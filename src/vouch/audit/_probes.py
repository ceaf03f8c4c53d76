"""Sandbox probes in a program's source: code that asks where it runs (static; nothing runs).

A program that behaves otherwise under a judge first has to tell the judge's run from the
benchmark's: by the host's name, its own uid or pid, the test that is running
(``PYTEST_CURRENT_TEST``), or the frames and files of whoever called it. Every form of the audit
names these the same way; a probe is evidence, never a verdict.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Probe", "probes_in", "sandbox_probes"]

_HOST = {
    ("os", "uname"): "reads os.uname()",
    ("platform", "uname"): "reads platform.uname()",
    ("platform", "node"): "reads the host name (platform.node)",
    ("socket", "gethostname"): "reads the host name (socket.gethostname)",
    ("socket", "getfqdn"): "reads the host name (socket.getfqdn)",
    ("os", "getuid"): "reads its uid (os.getuid)",
    ("os", "geteuid"): "reads its uid (os.geteuid)",
    ("os", "getgid"): "reads its gid (os.getgid)",
    ("os", "getegid"): "reads its gid (os.getegid)",
    ("os", "getpid"): "reads its pid (os.getpid)",
    ("os", "getppid"): "reads its parent's pid (os.getppid)",
    ("os", "getpgrp"): "reads its process group (os.getpgrp)",
    ("os", "getpgid"): "reads its process group (os.getpgid)",
    ("os", "getsid"): "reads its session (os.getsid)",
    ("os", "getlogin"): "reads the user's name (os.getlogin)",
    ("getpass", "getuser"): "reads the user's name (getpass.getuser)",
    ("pwd", "getpwuid"): "reads the user's entry (pwd.getpwuid)",
}
"""Who and where the process is: the questions a program asks to tell a sandbox apart."""

_STACK = {
    ("sys", "_getframe"),
    ("sys", "_current_frames"),
    ("inspect", "stack"),
    ("inspect", "currentframe"),
    ("inspect", "trace"),
    ("inspect", "getouterframes"),
    ("inspect", "getframeinfo"),
    ("traceback", "extract_stack"),
    ("traceback", "walk_stack"),
    ("traceback", "format_stack"),
    ("traceback", "print_stack"),
}
"""Functions that hand a program its callers' frames (the test's file, its locals)."""

_FRAME_ATTRS = {"f_back", "tb_frame"}
"""Attributes that step from a frame or a traceback to its caller's frame."""

_ENV_NAMES = {"PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_VERSION"}
"""Variables pytest sets while it runs: a program reading them knows a test is running."""

_MACHINERY = ("conftest", "pytest", "_pytest", "xdist", "test_")
"""Module names a program looks for in ``sys.modules`` to learn which tests, and whose, run it."""

_PATHS = ("/proc/self", "/proc/1/", "/etc/hostname", "/proc/sys/kernel/hostname", "/.dockerenv")
"""Files that describe the process or the machine it runs on."""


@dataclass(frozen=True)
class Probe:
    """One place where the source asks where it runs."""

    line: int
    """The line (1-based) of the source the probe is on."""
    detail: str
    """What it asks, in a few words ("reads os.uname()", "walks the stack (sys._getframe)")."""


class _Imports:
    """What the source's names stand for: ``import os as o``, ``from os import uname as u``."""

    def __init__(self, tree: ast.AST) -> None:
        self.modules: dict[str, str] = {}
        self.names: dict[str, tuple[str, str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    self.modules[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = (node.module, alias.name)

    def qualified(self, node: ast.AST) -> tuple[str, str] | None:
        """``(module, attribute)`` that ``node`` names (``os.uname``, ``uname`` imported from os,
        ``getattr(os, "uname")``), else None."""
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.names[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = node.value.id
            if base in self.names:
                module, attr = self.names[base]
                return f"{module}.{attr}", node.attr
            return self.modules.get(base, base), node.attr
        if isinstance(node, ast.Attribute) and (inline := _imported_inline(node.value)) is not None:
            return inline, node.attr
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = node.args[0].id
            return self.modules.get(base, base), node.args[1].value
        return None


def _imported_inline(node: ast.AST) -> str | None:
    """The module an expression imports where it stands (``__import__("traceback")``,
    ``importlib.import_module("traceback")``), else None."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return None
    func = node.func
    named = (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    value = node.args[0].value
    return value if named and isinstance(value, str) else None


def _machinery(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(_MACHINERY):
        return node.value
    return None


def _modules(node: ast.AST, imports: _Imports) -> bool:
    """Whether ``node`` is ``sys.modules`` (or its keys, values or items)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not node.args
        and node.func.attr in ("keys", "values", "items")
    ):
        node = node.func.value
    return imports.qualified(node) == ("sys", "modules") if isinstance(node, ast.Attribute | ast.Name) else False


def _looked_up(node: ast.AST, imports: _Imports) -> str | None:
    """The test machinery's module a program looks for in ``sys.modules``: ``'conftest' in
    sys.modules``, ``sys.modules.get('_pytest')``, ``sys.modules['xdist']``, or a search of its
    names (``any('conftest' in m for m in sys.modules)``)."""
    if isinstance(node, ast.Compare) and any(_modules(c, imports) for c in node.comparators):
        return _machinery(node.left)
    if isinstance(node, ast.Subscript) and _modules(node.value, imports):
        return _machinery(node.slice)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "pop")
        and _modules(node.func.value, imports)
        and node.args
    ):
        return _machinery(node.args[0])
    if isinstance(node, ast.comprehension) and _modules(node.iter, imports):
        for test in node.ifs:
            for inner in ast.walk(test):
                if (found := _machinery(inner)) is not None:
                    return found
    if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp) and any(
        _modules(g.iter, imports) for g in node.generators
    ):
        for inner in ast.walk(node.elt):
            if (found := _machinery(inner)) is not None:
                return found
    return None


def _probe(node: ast.AST, imports: _Imports) -> str | None:
    looked = _looked_up(node, imports)
    if looked is not None:
        return f"looks for {looked!r} in sys.modules"
    named = imports.qualified(node) if isinstance(node, ast.Name | ast.Attribute | ast.Call) else None
    if named is not None:
        if named in _HOST:
            return _HOST[named]
        if named in _STACK:
            return f"walks the stack ({'.'.join(named)})"
    if isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS:
        return f"walks the stack (.{node.attr})"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        if text in _ENV_NAMES:
            return f"reads {text}"
        if text.startswith("VOUCH_") or "vouch" in text.lower():
            return f"names vouch: {text[:40]!r}"
        if text.startswith(_PATHS):
            return f"reads {text[:40]!r}"
    return None


def probes_in(source: str) -> list[Probe]:
    """Every place where ``source`` asks where it runs, in source order, each (line, what) once.

    Args:
        source: Python source text. Text that does not parse has no probes.

    Returns:
        The probes found; an empty list when there are none.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    imports = _Imports(tree)
    found: dict[tuple[int, str], Probe] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            continue
        detail = _probe(node, imports)
        if detail is None:
            continue
        line = getattr(node, "lineno", 0)
        found.setdefault((line, detail), Probe(line=line, detail=detail))
    return sorted(found.values(), key=lambda probe: (probe.line, probe.detail))


def sandbox_probes(source: str) -> list[str]:
    """What ``source`` asks about where it runs, each description once, in source order.

    Args:
        source: Python source text.

    Returns:
        Short descriptions such as ``"reads os.uname()"``, ``"walks the stack (sys._getframe)"``
        or ``"reads PYTEST_CURRENT_TEST"``.
    """
    seen: dict[str, None] = {}
    for probe in probes_in(source):
        seen.setdefault(probe.detail, None)
    return list(seen)
