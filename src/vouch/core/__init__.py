"""Pydantic models of what vouch writes to disk and prints as JSON; pure, no I/O."""

from __future__ import annotations

from vouch.core._envelope import SCHEMA_VERSION, Envelope, ExecReport, IsolationReport

__all__ = ["SCHEMA_VERSION", "Envelope", "ExecReport", "IsolationReport"]
