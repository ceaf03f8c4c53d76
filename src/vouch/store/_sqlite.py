"""The one module that owns sqlite3.

Schema (version ``SCHEMA_VERSION``, checked on open; a store of another version is refused
with the path and both versions, never silently migrated):

```
meta(key TEXT PRIMARY KEY, value TEXT)            -- schema_version, created_by
decisions(
  verifier_hash TEXT,  -- sha256 of the verifier's source ("missing" for none)
  case_key      TEXT,  -- sha256 of what the decision depends on: task spec, public
                       -- environment and the candidate (not the label)
  task_id TEXT, case_id TEXT,
  decision TEXT,       -- PASS, FAIL or INVALID
  reason TEXT,         -- why INVALID, else NULL
  duration_s REAL,
  created_at REAL,     -- unix time
  PRIMARY KEY (verifier_hash, case_key)
)
```

Each decision is committed as it comes (WAL journal): a run killed halfway keeps every
decision it finished, and the primary key makes a re-run write each decision exactly once.

A file is opened as a store only when it is new or holds vouch's tables alone, each with its
own columns (``check_tables``): vouch never adds its tables to another program's database,
nor reads rows of another shape as decisions. A stored decision that is not PASS, FAIL or
INVALID is dropped and decided again.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vouch
from vouch.errors import InfrastructureError

SCHEMA_VERSION = 1
_COLUMNS = {
    "meta": ("key", "value"),
    "decisions": (
        "verifier_hash",
        "case_key",
        "task_id",
        "case_id",
        "decision",
        "reason",
        "duration_s",
        "created_at",
    ),
}
TABLE_COLUMNS = {
    **_COLUMNS,
    # The audit store's (vouch.store._audit), which may share the file.
    "audit_meta": ("key", "value"),
    "audit_judgements": ("config_key", "task_id", "program_hash", "judgement", "created_at"),
}
"""Every table a store file may hold, with its columns in order."""
_DECISIONS = ("PASS", "FAIL", "INVALID")
SHARED_PREFIX = "shared:"
"""Keys of decisions stored once more under what several tasks share (``vouch.bench._share``):
the same decision as a task's own row, so ``count`` leaves them out."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
    verifier_hash TEXT NOT NULL,
    case_key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('PASS', 'FAIL', 'INVALID')),
    reason TEXT,
    duration_s REAL NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (verifier_hash, case_key)
);
"""


def default_store_path() -> Path:
    """``$VOUCH_STORE``, else ``.vouch/store.sqlite`` in the working directory."""
    return Path(os.environ.get("VOUCH_STORE", ".vouch/store.sqlite"))


@dataclass(frozen=True)
class StoredDecision:
    decision: str
    reason: str | None
    duration_s: float


class Store:
    """A decision store; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            check_tables(self._db, path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Read before the tables are made: a file refused leaves with no table added.
            version = read_version(self._db, path, "meta", "schema_version")
            self._db.executescript(_SCHEMA)
            self._check_version(version)
        except sqlite3.Error as exc:
            raise InfrastructureError(
                f"cannot open the store {path}: {exc}; use another --store path or remove that file"
            ) from None
        self._lock = threading.Lock()

    def _check_version(self, version: int | None) -> None:
        if version is None:
            self._db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?), ('created_by', ?)",
                (str(SCHEMA_VERSION), f"vouch {vouch.__version__}"),
            )
        elif version != SCHEMA_VERSION:
            raise InfrastructureError(
                f"the store {self.path} has schema version {version}, this vouch reads version {SCHEMA_VERSION}; "
                "use another --store path or remove that file"
            )

    def get_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StoredDecision]:
        """Decisions already stored for these (verifier_hash, case_key) pairs."""
        wanted = list(keys)
        found: dict[tuple[str, str], StoredDecision] = {}
        with self._lock:
            for i in range(0, len(wanted), 400):
                chunk = wanted[i : i + 400]
                marks = ",".join("(?, ?)" for _ in chunk)
                params = [v for pair in chunk for v in pair]
                # Only "(?, ?)" placeholders are formatted in; the values are bound parameters.
                query = "SELECT verifier_hash, case_key, decision, reason, duration_s FROM decisions WHERE "
                query += f"(verifier_hash, case_key) IN (VALUES {marks})"
                for vh, ck, decision, reason, duration in self._db.execute(query, params).fetchall():
                    if _readable(decision, reason, duration):
                        found[(vh, ck)] = StoredDecision(decision, reason, float(duration))
                    else:  # dropped, so that the case's new decision can take its place
                        self._db.execute("DELETE FROM decisions WHERE verifier_hash = ? AND case_key = ?", (vh, ck))
        return found

    def put(
        self,
        verifier_hash: str,
        case_key: str,
        task_id: str,
        case_id: str,
        decision: str,
        reason: str | None,
        duration_s: float,
    ) -> None:
        """Store one decision, committed at once; a second put of the same key is ignored."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (verifier_hash, case_key, task_id, case_id, decision, reason, duration_s, time.time()),
            )

    def count(self) -> int:
        with self._lock:
            query = "SELECT COUNT(*) FROM decisions WHERE verifier_hash NOT LIKE ?"
            return int(self._db.execute(query, (SHARED_PREFIX + "%",)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _readable(decision: Any, reason: Any, duration: Any) -> bool:
    """A row vouch could have written (sqlite's CHECK holds only for rows written by this schema)."""
    return (
        decision in _DECISIONS
        and (reason is None or isinstance(reason, str))
        and isinstance(duration, (int, float))
        and not isinstance(duration, bool)
    )


def check_tables(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is another program's database, or holds a vouch table of other columns.

    Raises:
        InfrastructureError: naming the file, the table and what to do.
    """
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    others = sorted(t for t in tables if t not in TABLE_COLUMNS and not t.startswith("sqlite_"))
    if others:
        raise InfrastructureError(
            f"{path} is not a vouch store (it holds the tables {', '.join(others[:5])}); "
            "use another --store path or remove that file"
        )
    for table, columns in TABLE_COLUMNS.items():
        if table not in tables:
            continue
        # The table name comes from vouch's own TABLE_COLUMNS, never from the file.
        found = tuple(row[1] for row in db.execute(f"PRAGMA table_info({table})"))
        if found != columns:
            raise InfrastructureError(
                f"the store {path} has a table {table} of other columns ({', '.join(found) or 'none'}) than "
                f"this vouch writes ({', '.join(columns)}); use another --store path or remove that file"
            )


def read_version(db: sqlite3.Connection, path: Path, table: str, key: str) -> int | None:
    """The schema version stored under ``key`` in ``table`` (vouch's own names), or None when unset.

    Raises:
        InfrastructureError: The stored version is not a number.
    """
    query = {
        "meta": "SELECT value FROM meta WHERE key = ?",
        "audit_meta": "SELECT value FROM audit_meta WHERE key = ?",
    }[table]
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is None:
        return None
    row = db.execute(query, (key,)).fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise InfrastructureError(
            f"the store {path} has {key} {str(row[0])[:40]!r}, not a version number; "
            "use another --store path or remove that file"
        ) from None
