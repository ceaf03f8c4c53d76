"""Every package is used through its public face: a module imports a private module (a dotted
segment after ``vouch.`` that starts with ``_``) only from inside the package it belongs to, a
package of vouch's top level (``vouch.audit``, ``vouch.core``, ``vouch.exec``, ...). Code outside
a package imports the names its ``__init__`` exports.

A package's subpackages share its private modules: the audit's core and its two forms
(``vouch.audit.function``, ``vouch.audit.repository``) are one package whose parts import each
other's record modules directly, because a subpackage's ``__init__`` loads the whole form, and
going through it from inside would tie the audit's modules into import cycles
(``tests/test_layers.py``).

The tests keep the same rule, with one widening: a test under ``tests/<pkg>/`` is a white-box test
of ``vouch.<pkg>`` and may import that package's private modules, and no others; the test files
directly in ``tests/`` and the helper modules there import none.

Read from the source, as ``tests/test_layers.py`` reads it: every import at any depth of a
module's body (inside functions and under ``if TYPE_CHECKING`` too), relative ones resolved.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import vouch
from _graph import module_of, resolve

ROOT = Path(vouch.__file__).parent
TESTS = Path(__file__).parent
ALLOWED: dict[str, str] = {
    "tests.audit.test_sources -> vouch.cli._audit": (
        "the --witness-source choices of `vouch audit humaneval` are read off the command itself, "
        "to hold them to the audit's registry of sources"
    ),
    "tests.audit.test_witness_rule -> vouch.cli._audit": (
        "`vouch audit replay` words its answer from the validation rule the audit applies; the "
        "answer for each outcome of the rule is checked beside the rule's own cases"
    ),
    "tests.audit.test_swe_regression -> vouch.export._repository": (
        "a regression witness is a test of the repository's own that the export touches rather "
        "than adds: the seam between the regression stage and the export's writer"
    ),
    "tests.audit.test_swe_method_probes -> vouch.worlds._inrun": (
        "the recorder of T0's calls runs inside an environment's own Python, where vouch is not "
        "installed, so it is no public name; its rebuilding of calls is checked here in process"
    ),
    "tests.bench.test_decide -> vouch.exec._hidden": (
        "the control needs a process that has hidden nothing yet: it empties the engine's registry "
        "of paths hidden from runs, which is the engine's own state"
    ),
    "tests.bench.test_multi_case -> vouch.v4v._checks": (
        "C2's rule applied to the decisions of the multi-case runs made here; the checks' functions "
        "are reached by name through V4V's registry, not exported"
    ),
    "tests.sources.test_registry -> vouch.cli._data": (
        "the preload `vouch data build` starts its pool with, read through the command's own code "
        "with its pool replaced, and the sources the command offers"
    ),
    "tests.sources.test_swebench_tasks -> vouch.bench._decide": (
        "what a decision's run withholds from a verifier under test is bench's own rule; the "
        "SWE-bench tasks built here are the patch tasks it is checked on"
    ),
    "tests.v4v.test_registry_checks -> vouch.report._v4v": (
        "the registry's contract with the V4V page: the page's names, labels and evidence "
        "renderers come from the registry's entries"
    ),
    "tests.worlds.test_files -> vouch.audit.repository._audit": (
        "the repository form's readers of a world's files against the worlds' rule for a link "
        "out of the world, beside that rule's own tests"
    ),
    "tests.worlds.test_files -> vouch.audit.repository._regression": (
        "the repository form's readers of a world's files against the worlds' rule for a link "
        "out of the world, beside that rule's own tests"
    ),
    "tests.worlds.test_files -> vouch.audit.repository._runs": (
        "the repository form's readers of a world's files against the worlds' rule for a link "
        "out of the world, beside that rule's own tests"
    ),
}
"""Imports of a private module from outside what may import it that stay, by
``importer -> target``, each with why."""


def _private_module(name: str) -> str | None:
    """``name`` up to its first private segment (``vouch.a._b.c`` -> ``vouch.a._b``), or None."""
    parts = name.split(".")
    if parts[0] != "vouch":
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[: i + 1])
    return None


def private_imports(source: str, module: str = "", is_package: bool = False) -> set[str]:
    """The private modules of vouch that ``source`` (the text of ``module``) imports anywhere."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (base := resolve(module, node, is_package)):
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {private for name in names if (private := _private_module(name))}
    return found


def owner(private: str) -> str:
    """The package a private module is private to: the top-level package of vouch that holds it
    (``vouch.a.b._c`` -> ``vouch.a``; ``vouch._json`` -> ``vouch``)."""
    parts = private.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def inside(package: str, module: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def may_import(importer: str, private: str) -> bool:
    """Whether ``importer`` (``vouch.…``, or ``tests.…`` for a test) may import ``private``."""
    if importer.startswith("tests."):
        parts = importer.split(".")
        # tests.<pkg>.<file>: a white-box test of vouch.<pkg>; tests.<file>: a test of no package.
        return len(parts) > 2 and inside(f"vouch.{parts[1]}", owner(private))
    return inside(owner(private), importer)


@functools.cache
def crossings() -> tuple[str, ...]:
    """Every ``importer -> target`` of a module of vouch or of its tests that imports a private
    module it may not."""
    found: set[str] = set()
    for base, root in ((ROOT.parent, ROOT), (TESTS.parent, TESTS)):
        for path in sorted(root.rglob("*.py")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue  # tests/.scratch: what tests wrote, such as built tasks' verifiers
            module = module_of(path, base)
            imported = private_imports(path.read_text(), module, path.name == "__init__.py")
            found |= {f"{module} -> {target}" for target in imported if not may_import(module, target)}
    return tuple(sorted(found))


def test_the_walk_sees_every_form_of_a_private_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import vouch.exec._frame\n"
        "import vouch.worlds._inrun as inrun\n"
        "from vouch.exec import Call, _linux\n"
        "from vouch.audit.function._witness import render\n"
        "from vouch.exec._executor import _lost\n"
        "if TYPE_CHECKING:\n    from vouch.core._audit import Verdict\n"
        "def f():\n    from vouch.exec._values import to_data\n"
        "from ._x import y\n"
        "from . import _z\n"
        "from vouch.exec.runside import request\n"
        "from vouch.exec import runside\n"
        "from vouch import __version__\n"
        "import json._private\n"
    )
    assert private_imports(source, "vouch.sources._y") == {
        "vouch.exec._frame",
        "vouch.worlds._inrun",
        "vouch.exec._linux",
        "vouch.audit.function._witness",
        "vouch.exec._executor",
        "vouch.core._audit",
        "vouch.exec._values",
        "vouch.sources._x",
        "vouch.sources._z",
    }


def test_who_may_import_a_private_module() -> None:
    assert may_import("vouch.audit.function._form", "vouch.audit._modes")
    assert may_import("vouch.audit", "vouch.audit.function._audit")
    assert may_import("vouch.audit.repository._agent_tools", "vouch.audit.function._agent_tools")
    assert may_import("vouch.sources.trials._inspect", "vouch._json")
    assert not may_import("vouch.export._function", "vouch.core._audit")
    assert not may_import("vouch.export._function", "vouch.audit.function._prompt")
    assert not may_import("vouch.inspect_ext._scorer", "vouch.cli._audit")
    assert may_import("tests.sources.test_swebench_tasks", "vouch.sources.swebench._cases")
    assert not may_import("tests.sources.test_swebench_tasks", "vouch.swebench._instances")
    assert not may_import("tests.sources.test_x", "vouch._json")
    assert not may_import("tests.test_layers", "vouch.core._audit")
    assert not may_import("tests._samples", "vouch.exec._spec")


def test_no_module_imports_a_private_module_of_another_package() -> None:
    found = [f for f in crossings() if f.startswith("vouch.") and f not in ALLOWED]
    assert found == [], "import the name from the package (add it to its __init__ and __all__)"


def test_no_test_imports_a_private_module_of_a_package_it_does_not_test() -> None:
    found = [f for f in crossings() if f.startswith("tests.") and f not in ALLOWED]
    assert found == [], "import the name from the package, or say in ALLOWED why this test needs the module"


def test_every_allowed_import_is_still_made() -> None:
    assert sorted(set(ALLOWED) - set(crossings())) == [], "an allowed import that is gone: drop it from ALLOWED"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_every_package_exports_what_it_names() -> None:
    """Each name in a package's ``__all__`` resolves, those its ``__getattr__`` loads on first
    use included (in an interpreter of its own: loading them all is no state for the next test)."""
    packages = sorted(module_of(p, ROOT.parent) for p in ROOT.rglob("__init__.py"))
    code = (
        "import importlib\n"
        f"for name in {packages!r}:\n"
        "    try:\n"
        "        module = importlib.import_module(name)\n"
        "    except ModuleNotFoundError as exc:\n"
        "        if (exc.name or 'vouch').startswith('vouch'):\n"
        "            raise\n"
        "        continue  # a package of an extra this interpreter does not have\n"
        "    for public in getattr(module, '__all__', ()):\n"
        "        if not hasattr(module, public):\n"
        "            print(f'{name}.{public}')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split() == []


def test_the_run_side_exports_what_it_names() -> None:
    from vouch.exec import runside

    assert all(hasattr(runside, name) for name in runside.__all__)
    assert runside.__doc__ is not None and "What code inside a run imports" in runside.__doc__
