"""The audit package's import graph: no cycle, and the function form without the repository form.

The graph is read from the source (every ``import`` a module runs when it loads, at any depth
of its body except under ``if TYPE_CHECKING``); an import inside a function counts too, since
it runs on first call: hiding a cycle in a function does not remove it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import vouch.audit
from _graph import cycle

PACKAGE = Path(vouch.audit.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, modules: set[str]) -> set[str]:
    out: set[str] = set()
    if isinstance(node, ast.Import):
        out |= {a.name for a in node.names if a.name in modules}
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vouch.audit"):
        for alias in node.names:
            sub = f"{node.module}.{alias.name}"
            out.add(sub if sub in modules else node.module)
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def graph() -> dict[str, set[str]]:
    """Module -> the modules of ``vouch.audit`` (its subpackages included) it imports. The packages'
    ``__init__`` modules are left out (the top one re-exports both forms' entries on purpose)."""
    paths = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    inits = {m for m, p in paths.items() if p.stem == "__init__"}
    edges: dict[str, set[str]] = {}
    for module, path in paths.items():
        if path.stem == "__init__":
            continue
        found: set[str] = set()
        stack: list[ast.AST] = [ast.parse(path.read_text())]
        while stack:
            node = stack.pop()
            if _is_type_checking(node):
                continue
            found |= _targets(node, set(paths))
            stack.extend(ast.iter_child_nodes(node))
        edges[module] = found - {module} - inits
    return edges


def test_the_walk_finds_a_cycle_when_there_is_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_of_vouch_audit_imports_itself_through_others() -> None:
    edges = graph()
    assert len(edges) > 20 and edges["vouch.audit.function._lightweight"], "the walk reads the package"
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_the_function_form_loads_no_module_of_the_repository_form() -> None:
    code = (
        "import sys, vouch.audit, vouch.audit.function._lightweight, vouch.audit._compare\n"
        "from vouch.audit import audit_humaneval\n"
        "forms = ('vouch.worlds', 'vouch.swebench', 'vouch.audit.repository')\n"
        "loaded = [m for m in sys.modules if m.startswith(forms)]\n"
        "print(sorted(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
