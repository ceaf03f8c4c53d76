"""Real benchmarks -> vouch's task directories (AgentDojo, BFCL, HumanEval, ACEBench, tau2). Pinned versions.

Each source is one builder module and one entry of ``SOURCES`` (``SourceEntry``): docs/extending.md
says how to add one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from vouch.sources._registry import (
    MIN_ATTACKS,
    MIN_NEGATIVES,
    MIN_POSITIVES,
    MIN_VARIANTS,
    SOURCES,
    AnswerFiles,
    BuildReport,
    SourceEntry,
    answer_data_paths,
    build_source,
    check_out_dir,
    data_stats,
    source_entry,
    sources_taking,
)

if TYPE_CHECKING:
    from vouch.sources.swebench import RunDir, StatusDisagreement, compare_tests_status, read_run_dir

_RUN_DIR_NAMES = ("RunDir", "StatusDisagreement", "compare_tests_status", "read_run_dir")


def __getattr__(name: str) -> object:
    # A SWE-bench harness run directory (and vouch.swebench under it) loads on first use only:
    # the other sources, and the function form of the audit that reads samples, import none of it.
    if name in _RUN_DIR_NAMES:
        return getattr(importlib.import_module("vouch.sources.swebench"), name)
    raise AttributeError(f"module 'vouch.sources' has no attribute {name!r}")


__all__ = [
    "MIN_ATTACKS",
    "MIN_NEGATIVES",
    "MIN_POSITIVES",
    "MIN_VARIANTS",
    "SOURCES",
    "AnswerFiles",
    "BuildReport",
    "RunDir",
    "SourceEntry",
    "StatusDisagreement",
    "answer_data_paths",
    "build_source",
    "check_out_dir",
    "compare_tests_status",
    "data_stats",
    "read_run_dir",
    "source_entry",
    "sources_taking",
]
