"""vouch's packages are layers: data flows one way, and no package imports one above its own.

The graph is read from the source: every ``import`` and ``from ... import`` of a module, at any
depth of its body, inside functions and under ``if TYPE_CHECKING`` too (an import hidden in a
function still runs, and a type-only import still ties the lower package to the higher one's
names). Cycles among the modules of one package are ``tests/audit/test_import_graph.py``'s
concern; here the unit is the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vouch
from _graph import cycle, module_of, resolve

ROOT = Path(vouch.__file__).parent

LAYERS = (
    "core",
    "exec",
    "store",
    "worlds",
    "swebench",
    "mutation",
    "sources",
    "bench",
    "v4v",
    "agent",
    "audit",
    "export",
    "report",
    "cli",
    "inspect_ext",
)
"""vouch's packages, lowest first: a module imports only from its own layer and those before it."""
LEAVES = ("vouch", "vouch.errors", "vouch._json", "vouch.corpora")
"""Top-level modules every layer may import."""
ENTRY_POINTS = {"vouch.__main__": "cli", "vouch.showcase": "cli"}
"""Top-level modules that belong with the command line."""


def imports(source: str, module: str, known: set[str], is_package: bool = False) -> set[str]:
    """The modules of ``known`` that ``source`` (the text of ``module``) imports anywhere."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (base := resolve(module, node, is_package)):
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known} - {module}


def graph() -> dict[str, set[str]]:
    """Every module of vouch and the modules of vouch it imports."""
    paths = {module_of(p, ROOT.parent): p for p in ROOT.rglob("*.py")}
    known = set(paths)
    return {m: imports(p.read_text(), m, known, p.name == "__init__.py") for m, p in paths.items()}


def package_of(module: str) -> str:
    """The layer a module belongs to, or the module itself for a top-level module."""
    parts = module.split(".")
    if module in ENTRY_POINTS:
        return ENTRY_POINTS[module]
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else module


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a module from a layer after its own, or of a top-level module that is no leaf."""
    found = []
    for module, targets in sorted(edges.items()):
        mine = package_of(module)
        if mine not in LAYERS:
            continue
        for target in sorted(targets):
            theirs = package_of(target)
            if theirs in LAYERS:
                if LAYERS.index(theirs) > LAYERS.index(mine):
                    found.append(f"{module} ({mine}) -> {target} ({theirs})")
            elif target not in LEAVES:
                found.append(f"{module} ({mine}) -> {target} (not a leaf)")
    return found


def package_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of packages (each importing the next), or None."""
    packages: dict[str, set[str]] = {}
    for module, targets in edges.items():
        mine = package_of(module)
        packages.setdefault(mine, set()).update(package_of(t) for t in targets)
        packages[mine].discard(mine)
    return cycle(packages)


def test_the_walk_sees_imports_in_functions_and_under_type_checking() -> None:
    known = {"vouch.core", "vouch.core._task", "vouch.audit", "vouch.audit._model", "vouch.sources._x"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vouch.audit import _model\n"
        "def f():\n    import vouch.core._task\n"
        "from ._x import y\n"
    )
    found = imports(source, "vouch.sources._y", known)
    assert found == {"vouch.audit", "vouch.audit._model", "vouch.core._task", "vouch.sources._x"}
    assert upward({"vouch.sources._y": found}) == [
        "vouch.sources._y (sources) -> vouch.audit (audit)",
        "vouch.sources._y (sources) -> vouch.audit._model (audit)",
    ]
    assert package_cycle({"vouch.core._a": {"vouch.exec._b"}, "vouch.exec._b": {"vouch.core._c"}}) == [
        "core",
        "exec",
        "core",
    ]


def test_no_module_imports_a_layer_above_its_own() -> None:
    edges = graph()
    assert {package_of(m) for m in edges} >= set(LAYERS), "every layer is a package of vouch"
    assert upward(edges) == []


def test_no_package_imports_itself_through_others() -> None:
    cycle = package_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def module_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph of vouch's modules without the packages' ``__init__`` modules, which
    gather their package's public names (importing a name from a package stands for importing
    the module that defines it, which the walk records too when the name is a module)."""
    packages = {m for m in edges if (ROOT.parent / m.replace(".", "/") / "__init__.py").is_file()}
    return {m: targets - packages for m, targets in edges.items() if m not in packages}


def test_the_module_walk_finds_a_cycle_hidden_under_type_checking() -> None:
    known = {"vouch.audit._a", "vouch.audit._b"}
    a = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vouch.audit._b import B\n"
    b = "def f():\n    from vouch.audit._a import A\n"
    edges = {
        "vouch.audit._a": imports(a, "vouch.audit._a", known),
        "vouch.audit._b": imports(b, "vouch.audit._b", known),
    }
    assert cycle(module_graph(edges)) == ["vouch.audit._a", "vouch.audit._b", "vouch.audit._a"]


def test_no_module_imports_itself_through_others() -> None:
    """Counting imports inside functions and under ``if TYPE_CHECKING``: a type-only import back
    up a chain still ties the modules into one."""
    edges = module_graph(graph())
    assert len(edges) > 150
    found = cycle(edges)
    assert found is None, " -> ".join(found or [])
