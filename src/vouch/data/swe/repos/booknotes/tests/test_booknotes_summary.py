from booknotes import count_by_work, users_of

ROWS = [
    {"user": "ann", "work": "W1", "edition": "E1", "text": "a"},
    {"user": "bob", "work": "W1", "edition": "E1", "text": "b"},
    {"user": "ann", "work": "W2", "edition": "E2", "text": "c"},
]


def test_count_by_work() -> None:
    assert count_by_work(ROWS) == {"W1": 2, "W2": 1}


def test_users_of() -> None:
    assert users_of(ROWS, "W1") == ["ann", "bob"]
    assert users_of(ROWS, "W9") == []
