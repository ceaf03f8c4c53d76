from typing import Any

import pytest

from booknotes import move_notes, sorted_rows


def note(user: str, work: str, edition: str, text: str) -> dict[str, Any]:
    return {"user": user, "work": work, "edition": edition, "text": text}


def test_move_without_conflict() -> None:
    rows = [note("ann", "W1", "E1", "good"), note("bob", "W1", "E2", "long"), note("cy", "W3", "E1", "meh")]
    out = move_notes(rows, "W1", "W2")
    assert out["rows_changed"] == 2
    assert sorted_rows(out["rows"]) == sorted_rows(
        [note("ann", "W2", "E1", "good"), note("bob", "W2", "E2", "long"), note("cy", "W3", "E1", "meh")]
    )


def test_same_work_is_an_error() -> None:
    with pytest.raises(ValueError):
        move_notes([note("ann", "W1", "E1", "x")], "W1", "W1")


def test_input_is_not_modified() -> None:
    rows = [note("ann", "W1", "E1", "good")]
    move_notes(rows, "W1", "W2")
    assert rows == [note("ann", "W1", "E1", "good")]
