"""V4V (Verifier4Verifier): six checks that a reference verifier and its suite can be trusted.

The checks are declared in ``vouch.v4v._registry`` (``V4V_CHECKS``). Importing this package
imports only that registry; ``run_v4v`` and ``CheckResult`` (and the engine with them) are
imported when first used, so the V4V page can read the registry without the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vouch.v4v._registry import CHECKS, V4V_CHECKS, V4VCheck, check_names, find_check, load_target, v4v_check

if TYPE_CHECKING:
    from vouch.v4v._checks import CheckResult
    from vouch.v4v._mutation import MAX_MUTANTS
    from vouch.v4v._run import load_for_v4v, run_v4v

__all__ = [
    "CHECKS",
    "MAX_MUTANTS",
    "V4V_CHECKS",
    "CheckResult",
    "V4VCheck",
    "check_names",
    "find_check",
    "load_for_v4v",
    "load_target",
    "run_v4v",
    "v4v_check",
]


def __getattr__(name: str) -> Any:
    if name == "run_v4v":
        from vouch.v4v._run import run_v4v

        return run_v4v
    if name == "load_for_v4v":
        from vouch.v4v._run import load_for_v4v

        return load_for_v4v
    if name == "MAX_MUTANTS":
        from vouch.v4v._mutation import MAX_MUTANTS

        return MAX_MUTANTS
    if name == "CheckResult":
        from vouch.v4v._checks import CheckResult

        return CheckResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
