"""The command line: thin click commands over the library."""

from __future__ import annotations

from vouch.cli._audit import run_audit
from vouch.cli._main import main

__all__ = ["main", "run_audit"]
