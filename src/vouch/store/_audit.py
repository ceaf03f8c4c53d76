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
  program_hash TEXT,  -- function level: hash of the normalised program folded with the task's
                      -- digest (P, T0, G, entry point; ``function._audit.judgement_key``), so
                      -- the same task id with another G or T0 is judged anew (rows written
                      -- before that fold are simply never found); repository level: the
                      -- patch's hash
  judgement    TEXT,  -- JSON: benchmark_pass, verdict, witnesses, evidence, reason
  created_at   REAL,  -- unix time
  PRIMARY KEY (config_key, task_id, program_hash)
)
```

Each judgement is committed as it comes (WAL journal): a run killed halfway keeps every
program it finished, and a re-run with the same configuration judges only the rest.

A stored row is read back only when it is a judgement vouch could have written (``_readable``):
JSON of the right shape, and a refutation that carries its validated witness. Any other row
(a damaged file, an edited row) is dropped and its program judged again: the store saves work,
it never decides a verdict. A file whose tables are not these, or a version that is not a
number, is refused with the path and what to do.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

import vouch
from vouch._json import BAD_JSON
from vouch.core import Evidence, TaskReport, Verdict, Witness
from vouch.errors import InfrastructureError
from vouch.store._sqlite import check_tables, read_version

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
            check_tables(self._db, path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Read before the tables are made: a file refused leaves with no table added.
            version = read_version(self._db, path, "audit_meta", "audit_schema_version")
            self._db.executescript(_SCHEMA)
            self._check_version(version)
        except sqlite3.Error as exc:
            raise InfrastructureError(
                f"cannot open the audit store {path}: {exc}; use another --store path or remove that file"
            ) from None
        self._lock = threading.Lock()
        self.dropped = 0
        """Rows found unreadable and dropped (their programs are judged again)."""

    def _check_version(self, version: int | None) -> None:
        if version is None:
            self._db.execute(
                "INSERT OR IGNORE INTO audit_meta (key, value) VALUES ('audit_schema_version', ?), ('created_by', ?)",
                (str(AUDIT_SCHEMA_VERSION), f"vouch {vouch.__version__}"),
            )
        elif version != AUDIT_SCHEMA_VERSION:
            raise InfrastructureError(
                f"the store {self.path} has audit schema version {version}, this vouch reads version "
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
                bad: list[tuple[str, str]] = []
                for task_id, program_hash, text in self._db.execute(query, params).fetchall():
                    judgement = _readable(text)
                    if judgement is None:
                        bad.append((task_id, program_hash))
                    else:
                        found[(task_id, program_hash)] = judgement
                # Dropped, so that the program's new judgement can take its place.
                for task_id, program_hash in bad:
                    self._db.execute(
                        "DELETE FROM audit_judgements WHERE config_key = ? AND task_id = ? AND program_hash = ?",
                        (config_key, task_id, program_hash),
                    )
                self.dropped += len(bad)
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


_REFUTATIONS = ("refuted", "reward_hack")


def _readable(text: object) -> dict[str, Any] | None:
    """A stored row's judgement when it is one vouch could have written, else None.

    Two shapes are stored: a trial's judgement (``verdict``, ``benchmark_pass``, ``witnesses``,
    ``evidence``, and in the repository-level form the rest of a ``TrialResult``), and a
    lightweight instance's report (``{"report": TaskReport}``). A refutation must carry a
    validated witness: that is what a refutation is, and a row without one is not evidence.
    """
    if not isinstance(text, (str, bytes)):
        return None
    try:
        value = json.loads(text)
    except BAD_JSON:
        return None
    if not isinstance(value, dict):
        return None
    try:
        if set(value) == {"report"}:
            TaskReport.model_validate(value["report"])
            return value
        verdict = Verdict(str(value.get("verdict")))
        witnesses = TypeAdapter(list[Witness]).validate_python(value.get("witnesses", []))
        Evidence.model_validate(value.get("evidence", {}))
    except (ValueError, ValidationError, RecursionError):
        return None
    if not isinstance(value.get("benchmark_pass"), bool):
        return None
    if verdict.value in _REFUTATIONS and not (value["benchmark_pass"] and any(w.validation.valid for w in witnesses)):
        return None
    return value
