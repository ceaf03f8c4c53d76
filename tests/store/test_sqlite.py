"""The decision store: schema version, exactly-once writes, threads."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from vouch.errors import InfrastructureError
from vouch.store import SCHEMA_VERSION, Store


def test_put_is_exactly_once_and_get_many_finds_it(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.put("v1", "c1", "t", "gold", "PASS", None, 0.1)
    store.put("v1", "c1", "t", "gold", "FAIL", "later", 0.2)  # ignored: same key
    store.put("v1", "c2", "t", "bad", "INVALID", "timeout", 3.0)
    found = store.get_many([("v1", "c1"), ("v1", "c2"), ("v2", "c1")])
    assert found[("v1", "c1")].decision == "PASS"
    assert found[("v1", "c2")].reason == "timeout"
    assert ("v2", "c1") not in found
    assert store.count() == 2


def test_concurrent_puts_from_threads(tmp_path):
    store = Store(tmp_path / "s.sqlite")

    def work(n: int) -> None:
        for i in range(200):
            store.put(f"v{n}", f"c{i}", "t", f"c{i}", "PASS", None, 0.0)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count() == 800


def test_a_store_of_another_schema_version_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(InfrastructureError, match="schema version"):
        Store(path)


def test_an_unopenable_store_is_an_infrastructure_error(tmp_path):
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(InfrastructureError, match="cannot open the store"):
        Store(tmp_path / "dir.sqlite")
