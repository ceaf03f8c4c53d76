"""booknotes: reading notes attached to works and editions, kept in a plain list of rows."""

from booknotes.keys import KEY_FIELDS, note_key, validate_row
from booknotes.move import move_notes
from booknotes.summary import count_by_work, users_of
from booknotes.table import find, index_rows, sorted_rows

__all__ = [
    "KEY_FIELDS",
    "count_by_work",
    "find",
    "index_rows",
    "move_notes",
    "note_key",
    "sorted_rows",
    "users_of",
    "validate_row",
]
