"""The suite's order (``tests/conftest.py``, ``tests/_order.py``) names files that are there: a renamed or removed
file in ``LONGEST_FILES`` would silently fall back to the slow-first order."""

from __future__ import annotations

from pathlib import Path

from _order import LONGEST_FILES

HERE = Path(__file__).parent


def test_every_file_the_order_names_is_a_test_file_here() -> None:
    missing = [name for name in LONGEST_FILES if not (HERE / name).is_file()]
    assert missing == [], "re-measure the longest files (pytest --junitxml) and update LONGEST_FILES"
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)
