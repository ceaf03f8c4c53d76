"""The one exception root of vouch, and the exit code each kind of error maps to.

Outcomes (a verifier that says FAIL, code under test that crashes) are data, never these.
These are for broken infrastructure and bad usage.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 3


class VouchError(Exception):
    """Root of every error vouch raises on purpose."""

    exit_code = EXIT_INFRASTRUCTURE


class UsageError(VouchError):
    """The caller asked for something invalid: a missing file, a bad value."""

    exit_code = EXIT_USAGE


class InfrastructureError(VouchError):
    """vouch's own machinery failed: a sandbox that cannot start, a store that cannot open."""

    exit_code = EXIT_INFRASTRUCTURE


class IsolationUnavailable(InfrastructureError):
    """A primitive full isolation needs is missing, and weaker isolation was not allowed."""


class EngineCrashed(InfrastructureError):
    """The engine's pool process died; the runs it had in hand have no result."""


class ClusterUnavailable(InfrastructureError):
    """The cluster an executor was pointed at does not answer, or offers nowhere to run."""
