"""The SQLite store: decisions keyed by content hashes, written as they come; resumable."""

from __future__ import annotations

from vouch.store._audit import AUDIT_SCHEMA_VERSION, AuditStore
from vouch.store._sqlite import SCHEMA_VERSION, SHARED_PREFIX, Store, StoredDecision, default_store_path

__all__ = [
    "AUDIT_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "SHARED_PREFIX",
    "AuditStore",
    "Store",
    "StoredDecision",
    "default_store_path",
]
