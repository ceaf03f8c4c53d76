"""Fixtures shared by every test directory."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_PRIVATE_IN_RUNS = ("/tmp/", "/var/tmp/", "/dev/shm/")


def _scratch_root() -> Path:
    here = Path(__file__).resolve().parent / ".scratch"
    if not str(here).startswith(_PRIVATE_IN_RUNS):
        return here
    # A checkout under /tmp is invisible to runs; use a root-owned, world-searchable place.
    return Path("/var/lib/vouch-test-scratch")


@pytest.fixture
def visible_tmp() -> Iterator[Path]:
    """A scratch directory a sandboxed run can see (the host's /tmp is private in a run)."""
    path = _scratch_root() / uuid.uuid4().hex
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
