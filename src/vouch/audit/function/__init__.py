"""The function form of the audit: HumanEval-style trials (a prompt P, a test suite T0, a
canonical solution G and passing programs), judged per trial, lightweight or static.

``audit_humaneval`` (re-exported by ``vouch.audit``) is the entry. The stages: T0 and its reading
(``_runs``), P and T0 read offline (``_prompt``), the trial's evidence and verdict (``_trial``),
the offline witness source's input search (``_preconditions``, ``_inputs``, ``_generate``,
``_offline``), the model's (``_agent``, ``_agent_tools``), witness files and their validation
(``_witness``), what runs inside the sandbox (``_inrun``), and the modes' form (``_form``,
``_lightweight``).
"""

from __future__ import annotations

from vouch.audit.function._witness import (
    CANARY,
    CANARY_WRONG,
    MARKER,
    ReplayPlan,
    WitnessFile,
    load_replay,
    validation_spec,
)
from vouch.audit.function._witness import record as witness_record
from vouch.audit.function._witness import render as render_witness
from vouch.audit.function._witness import write as write_witness

__all__ = [
    "CANARY",
    "CANARY_WRONG",
    "MARKER",
    "ReplayPlan",
    "WitnessFile",
    "load_replay",
    "render_witness",
    "validation_spec",
    "witness_record",
    "write_witness",
]
