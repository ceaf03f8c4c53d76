"""V4V (Verifier4Verifier): six checks that a reference verifier and its suite can be trusted."""

from __future__ import annotations

from vouch.v4v._checks import CHECKS, CheckResult
from vouch.v4v._run import run_v4v

__all__ = ["CHECKS", "CheckResult", "run_v4v"]
