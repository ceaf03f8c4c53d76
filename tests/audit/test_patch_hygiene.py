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


def _link(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    ("path", "target", "out"),
    [
        ("pkg/.env", "/root/.env", "/root/.env"),
        ("pkg/core.py", "../../etc/shadow", "../../etc/shadow"),
        ("notes.txt", "~/.netrc", "~/.netrc"),
        ("pkg/alias.py", "core.py", None),
        ("pkg/sub/alias.py", "../core.py", None),
    ],
    ids=["absolute", "dot-dot", "home", "sibling", "inside"],
)
def test_a_link_out_of_the_world_is_a_finding_without_its_content(path: str, target: str, out: str | None) -> None:
    # The link is on a path G changes too: a way out is a finding whoever else writes the file.
    gold = _diff(path)
    found = [h for h in patch_hygiene(_link(path, target), gold_patch=gold, test_patch=TESTS) if h.kind == "link_out"]
    if out is None:
        assert found == []
    else:
        assert [(h.file, h.detail) for h in found] == [(path, f"a link out of the world: {path} -> {out}")]


def _file(path: str, *lines: str) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{head}@@ -0,0 +1,{len(lines)} @@\n{body}"


@pytest.mark.parametrize(
    ("patch", "said", "harness"),
    [
        (
            _file("forge-1.0.dist-info/entry_points.txt", "[pytest11]", "forge = forge_plugin"),
            "a pytest plugin entry point (pytest11: forge = forge_plugin)",
            "yes",
        ),
        (
            _file("src/forge-1.0.dist-info/entry_points.txt", "[pytest11]", "forge = forge_plugin"),
            "a pytest plugin entry point",
            "yes",
        ),
        (
            _file("pkg/data/forge.dist-info/entry_points.txt", "[pytest11]", "forge = forge_plugin"),
            "a pytest plugin entry point",
            "no",
        ),
        (_file("forge.egg-info/entry_points.txt", "[console_scripts]", "f = m:main"), "entry points", "no"),
        (_file("evil.pth", "import forge"), ".pth", "no"),
        (_file("sitecustomize.py", "import forge"), "sitecustomize.py", "yes"),
        (_file("usercustomize.py", "import forge"), "usercustomize.py", "yes"),
        (_file("pkg/sitecustomize.py", "import forge"), "sitecustomize.py", "no"),
    ],
    ids=["plugin-at-root", "plugin-under-src", "plugin-deeper", "console-script", "pth", "site", "user", "site-deeper"],
)
def test_code_loaded_unasked_is_a_finding_that_says_whether_the_harness_loads_it(
    patch: str, said: str, harness: str
) -> None:
    [found] = patch_hygiene(GOLD + patch, gold_patch=GOLD, test_patch=TESTS, base_top_level={"pkg", "src"})
    assert found.kind == "start_up" and said in found.detail
    assert f"SWE-bench's harness would load it: {harness}" in found.detail
