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
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import vouch
from vouch.errors import InfrastructureError

SCHEMA_VERSION = 1
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
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise InfrastructureError(f"cannot open the store {path}: {exc}") from None
        self._lock = threading.Lock()
        self._check_version()

    def _check_version(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('created_by', ?)",
                (str(SCHEMA_VERSION), f"vouch {vouch.__version__}"),
            )
        elif int(row[0]) != SCHEMA_VERSION:
            raise InfrastructureError(
                f"the store {self.path} has schema version {row[0]}, this vouch reads version {SCHEMA_VERSION}; "
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
                for vh, ck, decision, reason, duration in self._db.execute(query, params):
                    found[(vh, ck)] = StoredDecision(decision, reason, duration)
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
