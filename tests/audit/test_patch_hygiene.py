"""Patch hygiene: what a trial's patch carries besides its fix, as findings beside the verdict."""

from __future__ import annotations

import pytest

from vouch.audit.repository._evidence import patch_hygiene


def _diff(path: str, added: str = "x = 1", new: bool = False) -> str:
    old = "/dev/null" if new else f"a/{path}"
    head = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if new else "")
    hunk = "@@ -0,0 +1 @@\n" if new else "@@ -1 +1,2 @@\n x\n"
    return f"{head}--- {old}\n+++ b/{path}\n{hunk}+{added}\n"


GOLD = _diff("pkg/core.py")
TESTS = _diff("tests/test_core.py")


@pytest.mark.parametrize(
    ("patch", "kind", "file"),
    [
        ("", "empty_patch", ""),
        (_diff("tests/test_other.py"), "test_edit", "tests/test_other.py"),
        (_diff("tests/conftest.py", new=True), "conftest", "tests/conftest.py"),
        (_diff("build/lib/pkg/core.py", new=True), "stray_file", "build/lib/pkg/core.py"),
        (_diff("reproduce.py", new=True), "stray_file", "reproduce.py"),
        (_diff("pkg/core.py.orig", new=True), "stray_file", "pkg/core.py.orig"),
        (_diff("requests/packages/urllib3/util.py"), "vendored_edit", "requests/packages/urllib3/util.py"),
        (_diff("setup.py"), "packaging_edit", "setup.py"),
        (_diff("requirements-dev.txt"), "packaging_edit", "requirements-dev.txt"),
    ],
    ids=["empty", "test-file", "conftest", "build-copy", "scratch", "backup", "vendored", "setup-py", "requirements"],
)
def test_each_kind_is_found_once_on_its_file(patch: str, kind: str, file: str) -> None:
    found = patch_hygiene(GOLD + patch if patch else "", gold_patch=GOLD, test_patch=TESTS)
    assert [(h.kind, h.file) for h in found] == [(kind, file)]


def test_what_g_changes_too_is_part_of_the_fix() -> None:
    gold = GOLD + _diff("setup.py") + _diff("requests/packages/urllib3/util.py")
    assert patch_hygiene(gold, gold_patch=gold, test_patch=TESTS) == []


def test_a_test_file_the_test_patch_rewrites_says_the_harness_resets_it() -> None:
    [found] = patch_hygiene(GOLD + TESTS, gold_patch=GOLD, test_patch=TESTS)
    assert found.kind == "test_edit" and "resets it before T0" in found.detail


def test_a_new_top_level_directory_is_scratch_only_when_the_base_has_none_of_that_name() -> None:
    patch = GOLD + _diff("notes/plan.py", new=True)
    assert [h.kind for h in patch_hygiene(patch, gold_patch=GOLD, test_patch=TESTS, base_top_level={"pkg"})] == [
        "stray_file"
    ]
    assert patch_hygiene(patch, gold_patch=GOLD, test_patch=TESTS, base_top_level={"pkg", "notes"}) == []
