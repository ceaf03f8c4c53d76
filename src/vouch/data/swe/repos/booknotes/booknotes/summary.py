"""Summaries for the notes pages."""

from typing import Any


def count_by_work(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Number of notes per work."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["work"]] = counts.get(row["work"], 0) + 1
    return counts


def users_of(rows: list[dict[str, Any]], work: str) -> list[str]:
    """Distinct users with a note on ``work``, sorted."""
    return sorted({row["user"] for row in rows if row["work"] == work})
