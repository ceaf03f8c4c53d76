"""Reading a world's files on the host: never through a link that leaves the world."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vouch.worlds import LinkOutOfWorld, link_out_of_world, read_world_text
from vouch.worlds._env import generated_files


@pytest.fixture
def world(tmp_path: Path) -> Path:
    secret = tmp_path / "host" / ".env"
    secret.parent.mkdir()
    secret.write_text("API_KEY=sk-not-for-vouch\n")
    root = tmp_path / "world"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("x = 1\n")
    os.symlink(secret, root / "pkg" / "leak.py")
    os.symlink("core.py", root / "pkg" / "alias.py")
    os.symlink(secret.parent, root / "hostdir")
    return root


def test_a_link_out_of_the_world_is_refused_and_one_inside_is_read(world: Path) -> None:
    assert read_world_text(world, "pkg/core.py") == "x = 1\n"
    assert read_world_text(world, "pkg/alias.py") == "x = 1\n"
    for path in ("pkg/leak.py", "hostdir/.env", "../host/.env"):
        with pytest.raises(LinkOutOfWorld):
            read_world_text(world, path)
    assert link_out_of_world(world, "pkg/leak.py") == str(world.parent / "host" / ".env")
    assert link_out_of_world(world, "pkg/alias.py") is None


def test_the_audits_readers_see_nothing_through_a_link_out(world: Path) -> None:
    from vouch.audit.repository import _audit, _regression, _runs
    from vouch.worlds import World

    w = World(path=world, key="k", commit="c", patches=())
    for read in (_audit._read, _runs._file_text, _regression._read):
        assert read(w, "pkg/core.py") == "x = 1\n"
        assert read(w, "pkg/leak.py") == ""


def test_a_generated_file_is_never_written_through_a_link_out(world: Path) -> None:
    (world / "setup.cfg").write_text('[tool:setuptools_scm]\nwrite_to = "hostdir/_version.py"\n')
    (world / "pyproject.toml").write_text('[tool.setuptools_scm]\nwrite_to = "hostdir/sub/_version.py"\n')
    generated_files(world)
    assert sorted(p.name for p in (world.parent / "host").iterdir()) == [".env"]
