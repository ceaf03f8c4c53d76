"""Code outside the engine reaches it through public names: ``vouch.exec`` for callers,
``vouch.exec.runside`` for code that runs inside a run, never a private ``vouch.exec._x``.

Read from the source, as ``tests/test_layers.py`` reads it: every import at any depth of a
module's body (inside functions and under ``if TYPE_CHECKING`` too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import vouch

ROOT = Path(vouch.__file__).parent
ENGINE = "vouch.exec"
ALLOWED: dict[str, str] = {}
"""Imports of a private module of the engine from outside it that stay, by ``module -> target``,
each with why."""


def private_engine_imports(source: str) -> set[str]:
    """The private modules of ``vouch.exec`` that ``source`` imports (absolute imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if ".".join(parts[:2]) == ENGINE and len(parts) > 2 and parts[2].startswith("_"):
                found.add(".".join(parts[:3]))
    return found


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_walk_sees_every_form_of_a_private_import() -> None:
    source = (
        "from vouch.exec import Call, _linux\n"
        "import vouch.exec._frame\n"
        "def f():\n    from vouch.exec._values import to_data\n"
        "from vouch.exec.runside import request\n"
        "from vouch.exec import runside\n"
    )
    assert private_engine_imports(source) == {"vouch.exec._linux", "vouch.exec._frame", "vouch.exec._values"}


def test_no_module_outside_the_engine_imports_its_private_modules() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_of(path)
        if module == ENGINE or module.startswith(f"{ENGINE}."):
            continue
        found += [f"{module} -> {t}" for t in sorted(private_engine_imports(path.read_text()))]
    assert [f for f in found if f not in ALLOWED] == [], "import these from vouch.exec or vouch.exec.runside"
    assert sorted(set(ALLOWED) - set(found)) == [], "an allowed import that is gone: drop it from ALLOWED"


def test_the_run_side_exports_what_it_names() -> None:
    from vouch.exec import runside

    assert all(hasattr(runside, name) for name in runside.__all__)
    assert runside.__doc__ is not None and "What code inside a run imports" in runside.__doc__
