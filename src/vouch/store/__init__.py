"""The SQLite store: decisions keyed by content hashes, written as they come; resumable."""

from __future__ import annotations

from vouch.store._sqlite import SCHEMA_VERSION, Store, StoredDecision, default_store_path

__all__ = ["SCHEMA_VERSION", "Store", "StoredDecision", "default_store_path"]
