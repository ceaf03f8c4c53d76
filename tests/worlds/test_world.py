"""Worlds: materialised once per content hash, unappliable patches with git's reason, safe in parallel."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from vouch.errors import UsageError
from vouch.swebench import fixture_files, load_instances, load_predictions, materialise_fixture_repo
from vouch.worlds import Patch, Unappliable, World, WorldCache, parse_patch


@pytest.fixture
def unitconv(visible_tmp: Path) -> tuple[Path, str]:
    commit = materialise_fixture_repo("unitconv", visible_tmp / "repo")
    return visible_tmp / "repo", commit


def _instance(name: str):  # type: ignore[no-untyped-def]
    return next(i for i in load_instances(fixture_files()[0]) if i.repo == name)


def test_reference_world_has_gold_and_tests(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, commit = unitconv
    inst = _instance("unitconv")
    cache = WorldCache(visible_tmp / "cache")
    world = cache.materialise(str(repo), commit, [Patch("patch", inst.patch), Patch("tests", inst.test_patch, True)])
    assert isinstance(world, World)
    assert '"mi": ("mile", "miles")' in (world.path / "unitconv/format.py").read_text()
    assert "def test_convert_miles" in (world.path / "tests/test_unitconv_convert.py").read_text()
    assert world.patches == ("patch", "tests")
    # The base checkout is untouched, and the null world differs from the reference world.
    null = cache.materialise(str(repo), commit, [Patch("tests", inst.test_patch, True)])
    assert isinstance(null, World) and null.key != world.key
    assert '"mi"' not in (null.path / "unitconv/format.py").read_text()


def test_cached_by_content_hash(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, commit = unitconv
    inst = _instance("unitconv")
    cache = WorldCache(visible_tmp / "cache")
    first = cache.materialise(str(repo), commit, [Patch("patch", inst.patch)])
    assert isinstance(first, World)
    stamp = (first.path / "unitconv/format.py").stat().st_ino
    again = WorldCache(visible_tmp / "cache").materialise(str(repo), commit, [Patch("renamed", inst.patch)])
    assert isinstance(again, World)
    assert again.path == first.path and again.key == first.key
    assert (again.path / "unitconv/format.py").stat().st_ino == stamp, "a cached world is not rebuilt"


def test_unappliable_patch_gives_gits_reason(visible_tmp: Path) -> None:
    repo = visible_tmp / "repo"
    commit = materialise_fixture_repo("booknotes", repo)
    broken = next(t for t in load_predictions(fixture_files()[1]) if t.trial_id == "vouch-fixtures__booknotes-1#4")
    cache = WorldCache(visible_tmp / "cache")
    result = cache.materialise(str(repo), commit, [Patch("model_patch", broken.patch)])
    assert isinstance(result, Unappliable)
    assert result.patch == "model_patch"
    assert "patch failed: booknotes/move.py" in result.reason
    # The verdict is cached too.
    assert cache.materialise(str(repo), commit, [Patch("model_patch", broken.patch)]) == result


def test_reset_patch_overrides_a_trials_edit_of_test_files(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, commit = unitconv
    inst = _instance("unitconv")
    target = repo / "tests/test_unitconv_convert.py"
    original = target.read_text()
    target.write_text(original.replace("def test_convert_length", "def test_renamed_by_trial"))
    from vouch.worlds import git

    tampering = git(["diff"], cwd=repo).stdout
    git(["checkout", "--", "."], cwd=repo)
    cache = WorldCache(visible_tmp / "cache")
    world = cache.materialise(
        str(repo), commit, [Patch("model_patch", tampering), Patch("tests", inst.test_patch, True)]
    )
    assert isinstance(world, World)
    text = (world.path / "tests/test_unitconv_convert.py").read_text()
    assert "test_renamed_by_trial" not in text and "def test_convert_miles" in text


def test_repo_from_a_git_url(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, commit = unitconv
    cache = WorldCache(visible_tmp / "cache")
    world = cache.materialise(f"file://{repo}", commit, [])
    assert isinstance(world, World)
    assert (world.path / "unitconv/registry.py").is_file()


def test_unknown_commit_and_repo(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, _ = unitconv
    cache = WorldCache(visible_tmp / "cache")
    with pytest.raises(UsageError, match="has no commit"):
        cache.materialise(str(repo), "0" * 40, [])
    with pytest.raises(UsageError, match="cannot be cloned"):
        cache.materialise(str(visible_tmp / "missing"), "0" * 40, [])


def test_concurrent_materialisation_builds_one_world(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    repo, commit = unitconv
    inst = _instance("unitconv")
    results: list[object] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            results.append(WorldCache(visible_tmp / "cache").materialise(str(repo), commit, [Patch("p", inst.patch)]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({r.path for r in results if isinstance(r, World)}) == 1
    assert len(results) == 4


@pytest.mark.parametrize(
    ("where", "why"),
    [("/tmp/vouch-worlds-here", "private in every run"), ("/root/vouch-worlds-here", "cannot be searched")],
)
def test_cache_runs_cannot_read_is_refused(where: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        WorldCache(where)


def test_parse_patch_lines() -> None:
    inst = _instance("unitconv")
    (change,) = [c for c in parse_patch(inst.patch) if c.path == "unitconv/registry.py"]
    assert change.old_path == "unitconv/registry.py"
    assert len(change.added_lines) == 3
    assert any("1609.344" in line for line in change.added_text)
    new_file = parse_patch(
        "diff --git a/x.py b/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/x.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    )
    assert new_file[0].old_path is None and new_file[0].added_lines == frozenset({1, 2})


def test_a_patch_git_refuses_applies_with_fuzz(unitconv: tuple[Path, str], visible_tmp: Path) -> None:
    """SWE-bench's harness falls back to ``patch --fuzz=5`` when ``git apply`` refuses: a hunk
    whose outer context line no longer matches still applies, and the world has the change."""
    repo, commit = unitconv
    target = "unitconv/format.py"
    lines = (repo / target).read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() and i >= 3)
    stale = [f" {line}" for line in lines[at - 3 : at]]
    stale[0] = " # a line the trial's base no longer has"
    hunk = [f"@@ -{at - 2},4 +{at - 2},5 @@", *stale, "+# added by the patch", f" {lines[at]}"]
    text = "\n".join([f"diff --git a/{target} b/{target}", f"--- a/{target}", f"+++ b/{target}", *hunk]) + "\n"
    cache = WorldCache(visible_tmp / "cache")
    world = cache.materialise(str(repo), commit, [Patch("model_patch", text)])
    assert isinstance(world, World), world
    assert "# added by the patch" in (world.path / target).read_text()
    assert not list(world.path.rglob("*.rej")) and not list(world.path.rglob("*.orig"))


def test_a_reset_never_removes_a_file_through_a_link_out_of_the_world(
    unitconv: tuple[Path, str], visible_tmp: Path
) -> None:
    """The trial's patch makes ``tests/new`` a link to a host directory; the test patch adds
    ``tests/new/test_new.py``: resetting that path before the test patch removes nothing there."""
    repo, commit = unitconv
    host = visible_tmp / "host"
    host.mkdir()
    (host / "test_new.py").write_text("kept\n")
    link = (
        f"diff --git a/tests/new b/tests/new\nnew file mode 120000\n--- /dev/null\n+++ b/tests/new\n"
        f"@@ -0,0 +1 @@\n+{host}\n\\ No newline at end of file\n"
    )
    added = (
        "diff --git a/tests/new/test_new.py b/tests/new/test_new.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/new/test_new.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n"
    )
    cache = WorldCache(visible_tmp / "cache")
    cache.materialise(str(repo), commit, [Patch("model_patch", link), Patch("tests", added, True)])
    assert (host / "test_new.py").read_text() == "kept\n"
