"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
import shutil
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from _order import LONGEST_FILES
from _scratch import scratch_root as _scratch_root
from _shared_data import SHARED_DATA

os.environ.setdefault("VOUCH_DATA_DIR", str(SHARED_DATA))

_XDIST_ORDER = os.environ.get("VOUCH_TEST_ORDER") == "xdist"
"""Leave the files in pytest-xdist's order (by number of tests): the order before
``LONGEST_FILES``, which ``benchmarks/bench_test_order.py`` times as the baseline."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """In several processes (``-n N``, pytest-xdist), each test file runs whole in one of them
    unless ``--dist`` says otherwise: a module's fixtures (built fixture repositories, audits,
    pools, Ray heads) are then built once, not once per process."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "loadfile"
        # pytest-xdist would otherwise hand out the files by how many tests each has, not in the
        # order pytest_collection_modifyitems gives them (longest first). VOUCH_TEST_ORDER=xdist
        # keeps xdist's order: the baseline benchmarks/bench_test_order.py times this one against.
        if not _XDIST_ORDER:
            config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the files by what they cost: the longest files first (``LONGEST_FILES``), then the
    files with a test marked slow, then the rest, each group by its number of tests; the tests of
    a file keep their order. In several processes, each file whole in one, the long files start
    while the short ones fill the other processes, and all the processes finish together."""
    if _XDIST_ORDER:
        return
    here = Path(__file__).parent
    longest = {name: rank for rank, name in enumerate(LONGEST_FILES)}
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    counts = Counter(item.path for item in items)

    def cost(item: pytest.Item) -> tuple[int, bool, int]:
        name = item.path.relative_to(here).as_posix() if item.path.is_relative_to(here) else ""
        return longest.get(name, len(LONGEST_FILES)), item.path not in slow_files, -counts[item.path]

    items.sort(key=cost)


@pytest.fixture
def visible_tmp() -> Iterator[Path]:
    """A scratch directory a sandboxed run can see (the host's /tmp is private in a run)."""
    path = _scratch_root() / uuid.uuid4().hex
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
