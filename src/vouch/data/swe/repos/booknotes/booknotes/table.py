"""Table helpers over lists of note rows (the storage is a list; rows are dicts)."""

from typing import Any

from booknotes.keys import note_key


def index_rows(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Index rows by primary key; a duplicate key is a corrupt table."""
    index: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = note_key(row)
        if key in index:
            raise ValueError(f"duplicate note key {key!r}")
        index[key] = row
    return index


def find(rows: list[dict[str, Any]], **filters: str) -> list[dict[str, Any]]:
    """Rows whose fields equal every filter, in table order."""
    return [row for row in rows if all(row.get(name) == value for name, value in filters.items())]


def sorted_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows ordered by primary key, so results compare independently of table order."""
    return sorted(rows, key=note_key)
