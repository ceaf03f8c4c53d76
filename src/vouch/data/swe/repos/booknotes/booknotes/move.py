"""Moving notes from one work to another (after works are merged in the catalogue)."""

from typing import Any

from booknotes.keys import note_key
from booknotes.table import index_rows


def move_notes(rows: list[dict[str, Any]], source_work: str, dest_work: str) -> dict[str, Any]:
    """Move every note of ``source_work`` to ``dest_work``.

    Returns a dict with the new table (``rows``) and the number of rows changed and deleted.
    The input list is not modified.
    """
    if source_work == dest_work:
        raise ValueError("source and destination work are the same")
    index = index_rows(rows)
    result: list[dict[str, Any]] = []
    changed = 0
    deleted = 0
    for row in rows:
        if row["work"] != source_work:
            result.append(dict(row))
            continue
        moved = dict(row, work=dest_work)
        if note_key(moved) in index:
            # The destination already has this user's note for the edition: drop the source.
            deleted += 1
            continue
        result.append(moved)
        changed += 1
    return {"rows": result, "rows_changed": changed, "rows_deleted": deleted}
