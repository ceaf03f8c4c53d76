"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from _scratch import scratch_root as _scratch_root
from _shared_data import SHARED_DATA

os.environ.setdefault("VOUCH_DATA_DIR", str(SHARED_DATA))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """In several processes (``-n N``, pytest-xdist), each test file runs whole in one of them
    unless ``--dist`` says otherwise: a module's fixtures (built fixture repositories, audits,
    pools, Ray heads) are then built once, not once per process."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "loadfile"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a test marked slow run first (in their own order; the rest keep theirs): in
    several processes, each file whole in one, the long files then start while the short ones
    fill the other processes, rather than one process running a long file alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture
def visible_tmp() -> Iterator[Path]:
    """A scratch directory a sandboxed run can see (the host's /tmp is private in a run)."""
    path = _scratch_root() / uuid.uuid4().hex
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
