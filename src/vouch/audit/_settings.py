"""The settings both forms of the audit share, and the failure that stops either.

The function form's ``AuditConfig`` (``function._runs``) and the repository form's
``SweAuditConfig`` (``repository._audit``) extend ``AuditSettings``; each form's store key hashes
its whole config.
"""

from __future__ import annotations

from dataclasses import dataclass

from vouch.errors import InfrastructureError


@dataclass(frozen=True)
class AuditSettings:
    """The settings both forms of the audit share, and all that the modes (``_modes``) read.

    ``AuditConfig`` (function form) and ``repository._audit.SweAuditConfig`` (repository form) extend it with
    their own; each form's store key hashes its whole config.
    """

    seed: int = 0
    """Seeds every sampler: the lightweight mode's rounds, mutant and input sampling."""
    k: int = 3
    """Generate-and-validate iterations per trial (TestJack uses 3)."""
    witness_source: str = "offline"
    """A name of ``_sources.SOURCES``."""
    repeats: int = 3
    """Runs of each witness in each world during validation (the one validation rule)."""
    agent_model: str | None = None
    """The auditing model, PROVIDER/MODEL (``agent`` source): it writes witnesses, the checklist, re-judges."""
    agent_config: str | None = None
    """Harness config of the auditing model (built-in name or .toml); None: the witness defaults."""
    mode: str = "per-trial"
    """A name of ``_modes.REGISTRY`` that serves the form (``MODES``, ``REPOSITORY_MODES``)."""
    rounds: int = 3
    """Lightweight mode: audit rounds per task after task analysis."""


class CanaryFailed(InfrastructureError):
    """The pool failed the audit's known-answer check: no verdict it gave could be trusted."""
