"""The recipes of ``docs/extending.md`` stay true: each diff applies to this tree as it is
(``git apply --check``), touches the files the recipe says, and what it adds imports other
packages through their public names only (the rule of ``tests/test_public_imports.py``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def recipes() -> dict[str, str]:
    """Each section's diff, by the section's title."""
    out: dict[str, str] = {}
    for section in re.split(r"^## ", DOC.read_text(), flags=re.M)[1:]:
        title = section.splitlines()[0]
        diff = re.search(r"^```diff\n(.*?)^```$", section, flags=re.M | re.S)
        if diff is not None:
            out[title] = diff.group(1)
    return out


def touched(diff: str) -> list[str]:
    """The files a diff changes or adds, outside the tests."""
    files = re.findall(r"^\+\+\+ b/(\S+)$", diff, flags=re.M)
    return [f for f in files if not f.startswith("tests/")]


def private_imports(diff: str) -> list[str]:
    """Added imports of a private module of a package the added file is not inside."""
    found = []
    for block in re.split(r"^diff --git ", diff, flags=re.M)[1:]:
        path = re.search(r"^\+\+\+ b/(\S+)$", block, flags=re.M)
        if path is None or not path.group(1).endswith(".py"):
            continue
        parts = Path(path.group(1)).with_suffix("").parts
        module = ".".join(parts[1:] if parts[0] == "src" else parts)
        for line in re.findall(r"^\+\s*(?:from|import) (vouch[\w.]*)", block, flags=re.M):
            names = line.split(".")
            private = next((i for i, name in enumerate(names) if name.startswith("_")), None)
            if private is None:
                continue
            package = ".".join(names[:private])
            if not module.startswith(f"{package}."):
                found.append(f"{module} -> {line}")
    return found


def test_the_guide_has_a_recipe_for_each_extension_point() -> None:
    assert set(recipes()) == {"Add a benchmark source", "Add a V4V check", "Add a witness source", "Add an audit mode"}


@pytest.mark.parametrize("title", sorted(recipes()))
def test_each_recipe_applies_to_this_tree(title: str, tmp_path: Path) -> None:
    patch = tmp_path / "recipe.diff"
    patch.write_text(recipes()[title])
    proc = subprocess.run(["git", "apply", "--check", str(patch)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"{title}: {proc.stderr}"


@pytest.mark.parametrize(("title", "most"), [("Add a witness source", 2), ("Add an audit mode", 2)])
def test_a_witness_source_or_a_mode_touches_at_most_two_files(title: str, most: int) -> None:
    assert 0 < len(touched(recipes()[title])) <= most


@pytest.mark.parametrize("title", sorted(recipes()))
def test_what_a_recipe_adds_imports_no_private_module_of_another_package(title: str) -> None:
    assert private_imports(recipes()[title]) == []


def test_the_checks_can_fail() -> None:
    diff = (
        "diff --git a/src/vouch/audit/_x.py b/src/vouch/audit/_x.py\n--- /dev/null\n+++ b/src/vouch/audit/_x.py\n"
        "+from vouch.audit._modes import REGISTRY\n+from vouch.core._audit import Witness\n"
    )
    assert private_imports(diff) == ["vouch.audit._x -> vouch.core._audit"]
    assert touched(diff) == ["src/vouch/audit/_x.py"]
