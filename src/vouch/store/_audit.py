"""The trial audit's tables: one judgement per distinct program, written as it comes; resumable.

Schema (version ``AUDIT_SCHEMA_VERSION``, kept in ``audit_meta`` so that these tables can
share a database file with the decision store, whose ``meta`` holds its own version):

```
audit_meta(key TEXT PRIMARY KEY, value TEXT)      -- audit_schema_version, created_by
audit_judgements(
  config_key   TEXT,  -- sha256 of what a judgement depends on besides the program: the
                      -- audit's resolved configuration (seed, k, witness source, caps) and
                      -- the vouch version
  task_id      TEXT,  -- HumanEval task_id or SWE-bench instance_id
  program_hash TEXT,  -- hash of the normalised program (function level) or of the patch
  judgement    TEXT,  -- JSON: benchmark_pass, verdict, witnesses, evidence, reason
  created_at   REAL,  -- unix time
  PRIMARY KEY (config_key, task_id, program_hash)
)
```

Each judgement is committed as it comes (WAL journal): a run killed halfway keeps every
program it finished, and a re-run with the same configuration judges only the rest.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import vouch
from vouch.errors import InfrastructureError

AUDIT_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit_judgements (
    config_key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    program_hash TEXT NOT NULL,
    judgement TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (config_key, task_id, program_hash)
);
"""


class AuditStore:
    """Judgements of distinct programs; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise InfrastructureError(f"cannot open the audit store {path}: {exc}") from None
        self._lock = threading.Lock()
        self._check_version()

    def _check_version(self) -> None:
        row = self._db.execute("SELECT value FROM audit_meta WHERE key = 'audit_schema_version'").fetchone()
        if row is None:
            self._db.execute(
                "INSERT OR IGNORE INTO audit_meta (key, value) VALUES ('audit_schema_version', ?), ('created_by', ?)",
                (str(AUDIT_SCHEMA_VERSION), f"vouch {vouch.__version__}"),
            )
        elif int(row[0]) != AUDIT_SCHEMA_VERSION:
            raise InfrastructureError(
                f"the store {self.path} has audit schema version {row[0]}, this vouch reads version "
                f"{AUDIT_SCHEMA_VERSION}; use another --store path or remove that file"
            )

    def get_many(self, config_key: str, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Judgements already stored under ``config_key`` for these (task_id, program_hash) pairs."""
        wanted = list(keys)
        found: dict[tuple[str, str], dict[str, Any]] = {}
        with self._lock:
            for i in range(0, len(wanted), 300):
                chunk = wanted[i : i + 300]
                marks = ",".join("(?, ?)" for _ in chunk)
                params: list[str] = [config_key] + [v for pair in chunk for v in pair]
                # Only "(?, ?)" placeholders are formatted in; the values are bound parameters.
                query = "SELECT task_id, program_hash, judgement FROM audit_judgements WHERE config_key = ? AND "
                query += f"(task_id, program_hash) IN (VALUES {marks})"
                for task_id, program_hash, text in self._db.execute(query, params):
                    found[(task_id, program_hash)] = json.loads(text)
        return found

    def put(self, config_key: str, task_id: str, program_hash: str, judgement: dict[str, Any]) -> None:
        """Store one judgement, committed at once; a second put of the same key is ignored."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO audit_judgements VALUES (?, ?, ?, ?, ?)",
                (config_key, task_id, program_hash, json.dumps(judgement), time.time()),
            )

    def count(self, config_key: str | None = None) -> int:
        """Judgements stored (under one configuration, when given)."""
        with self._lock:
            if config_key is None:
                row = self._db.execute("SELECT COUNT(*) FROM audit_judgements").fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM audit_judgements WHERE config_key = ?", (config_key,)
                ).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
