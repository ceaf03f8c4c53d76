"""Fixtures for the report tests: the hand-written results files and where the gold pages live."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_DATA = Path(__file__).resolve().parent / "data"
_CACHE: dict[str, dict[str, Any]] = {}


@pytest.fixture
def report_data() -> Path:
    """tests/report/data: the results files (``<name>_results.json``) and the gold pages."""
    return _DATA


@pytest.fixture
def load_results() -> Callable[[str], dict[str, Any]]:
    """Loads ``data/<name>_results.json`` (as ``vouch bench score|baselines --json`` print it), a fresh copy."""

    def load(name: str) -> dict[str, Any]:
        if name not in _CACHE:
            _CACHE[name] = json.loads((_DATA / f"{name}_results.json").read_text("utf-8"))
        return copy.deepcopy(_CACHE[name])

    return load
