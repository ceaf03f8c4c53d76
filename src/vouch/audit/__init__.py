"""TestJack's trial audit: re-judge benchmark-passing trials with validated witness tests.

The result models (``vouch.core``'s audit models, re-exported here) are shared by the
function-level form (``audit_humaneval``) and the repository-level form (``vouch audit swe``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vouch.audit._agent_calls import AgentUsage, WitnessAgent, witness_agent
from vouch.audit._compare import compare
from vouch.audit._form import AuditForm, Found, Judged, Replayed
from vouch.audit._modes import (
    FORMS,
    MODES,
    REGISTRY,
    REPOSITORY_MODES,
    Mode,
    Rounds,
    audit,
    check,
    conclude_failing,
    lightweight,
    per_trial,
)
from vouch.audit._sources import SOURCES, WitnessSource
from vouch.audit._validation import FUNCTION, REPOSITORY, WitnessForm, replayed
from vouch.audit.function._audit import PRELOAD, audit_humaneval, judgement_key
from vouch.audit.function._jobs import ProgramJob, Search, SearchRun
from vouch.audit.function._offline import decoded, outputs_spec
from vouch.audit.function._prompt import WRAPPERS, assertions
from vouch.audit.function._runs import AuditConfig
from vouch.audit.function._trial import files_search, offline_search
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
    from vouch.audit.repository._audit import SWE_PRELOAD, audit_fixture, audit_swe
    from vouch.audit.repository._command import SweCommand, SweCommandResult, replay_swe_witness, run_swe_command
    from vouch.audit.repository._model import RepoSearch, RepoSearchRun, SweAuditConfig
    from vouch.audit.repository._witness import test_file_name

_SWE_NAMES = {
    "SWE_PRELOAD": "repository._audit",
    "SweAuditConfig": "repository._model",
    "test_file_name": "repository._witness",
    "RepoSearch": "repository._model",
    "RepoSearchRun": "repository._model",
    "audit_fixture": "repository._audit",
    "audit_swe": "repository._audit",
    "SweCommand": "repository._command",
    "SweCommandResult": "repository._command",
    "replay_swe_witness": "repository._command",
    "run_swe_command": "repository._command",
}


def __getattr__(name: str) -> object:
    # The repository form (and vouch.worlds under it) loads on first use only: the function
    # form imports nothing of it.
    if name in _SWE_NAMES:
        import importlib

        return getattr(importlib.import_module(f"vouch.audit.{_SWE_NAMES[name]}"), name)
    raise AttributeError(f"module 'vouch.audit' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "FORMS",
    "FUNCTION",
    "MODES",
    "PASSING_VERDICTS",
    "PRELOAD",
    "REGISTRY",
    "REPOSITORY",
    "REPOSITORY_MODES",
    "SOURCES",
    "SWE_PRELOAD",
    "WRAPPERS",
    "AgentUsage",
    "AuditConfig",
    "AuditForm",
    "AuditResults",
    "AuditSummary",
    "ChecklistItem",
    "DetectorFlag",
    "Evidence",
    "Found",
    "GhostBranch",
    "Judged",
    "Mode",
    "ProgramJob",
    "Replayed",
    "RepoSearch",
    "RepoSearchRun",
    "Rounds",
    "RunRecord",
    "Search",
    "SearchRun",
    "SurvivingMutant",
    "SweAuditConfig",
    "SweCommand",
    "SweCommandResult",
    "T0Result",
    "TaskReport",
    "TrialResult",
    "Validation",
    "Verdict",
    "Witness",
    "WitnessAgent",
    "WitnessForm",
    "WitnessSource",
    "assertions",
    "audit",
    "audit_fixture",
    "audit_humaneval",
    "audit_swe",
    "check",
    "compare",
    "conclude_failing",
    "decide_verdict",
    "decoded",
    "failed_run",
    "files_search",
    "judgement_key",
    "lightweight",
    "offline_search",
    "outputs_spec",
    "per_trial",
    "replay_swe_witness",
    "replayed",
    "run_swe_command",
    "summarise",
    "test_file_name",
    "witness_agent",
]
