"""The composite key of a note: one note per user, work and edition."""

from typing import Any

KEY_FIELDS = ("user", "work", "edition")
REQUIRED_FIELDS = (*KEY_FIELDS, "text")


def validate_row(row: dict[str, Any]) -> dict[str, Any]:
    """Check that a row has every required field as a non-empty string; return it."""
    for name in REQUIRED_FIELDS:
        value = row.get(name)
        if not isinstance(value, str):
            raise TypeError(f"note field {name!r} must be a string, got {type(value).__name__}")
        if name in KEY_FIELDS and not value:
            raise ValueError(f"note field {name!r} must not be empty")
    return row


def note_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """The primary key of a note row."""
    validate_row(row)
    return (row["user"], row["work"], row["edition"])
