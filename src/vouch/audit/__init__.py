"""TestJack's trial audit: re-judge benchmark-passing trials with validated witness tests.

The result models (``vouch.core``'s audit models, re-exported here) are shared by the
function-level form (``audit_humaneval``) and the repository-level form (``vouch audit swe``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vouch.audit._agent_calls import AgentUsage, WitnessAgent, witness_agent
from vouch.audit._function import PRELOAD, audit_humaneval
from vouch.audit._runs import MODES, AuditConfig
from vouch.core import (
    FORMAT_VERSION,
    PASSING_VERDICTS,
    AuditResults,
    AuditSummary,
    ChecklistItem,
    DetectorFlag,
    Evidence,
    GhostBranch,
    RunRecord,
    SurvivingMutant,
    T0Result,
    TaskReport,
    TrialResult,
    Validation,
    Verdict,
    Witness,
    decide_verdict,
    failed_run,
    summarise,
)

if TYPE_CHECKING:
    from vouch.audit._swe import SWE_PRELOAD, SweAuditConfig, audit_swe

_SWE_NAMES = ("SWE_PRELOAD", "SweAuditConfig", "audit_swe")


def __getattr__(name: str) -> object:
    # The repository form (and vouch.worlds under it) loads on first use only: the function
    # form imports nothing of it.
    if name in _SWE_NAMES:
        from vouch.audit import _swe

        return getattr(_swe, name)
    raise AttributeError(f"module 'vouch.audit' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "MODES",
    "PASSING_VERDICTS",
    "PRELOAD",
    "SWE_PRELOAD",
    "AgentUsage",
    "AuditConfig",
    "AuditResults",
    "AuditSummary",
    "ChecklistItem",
    "DetectorFlag",
    "Evidence",
    "GhostBranch",
    "RunRecord",
    "SurvivingMutant",
    "SweAuditConfig",
    "T0Result",
    "TaskReport",
    "TrialResult",
    "Validation",
    "Verdict",
    "Witness",
    "WitnessAgent",
    "audit_humaneval",
    "audit_swe",
    "decide_verdict",
    "failed_run",
    "summarise",
    "witness_agent",
]
