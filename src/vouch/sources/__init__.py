"""Real benchmarks -> vouch's task directories (AgentDojo, BFCL, HumanEval, ACEBench, tau2). Pinned versions.

Each source is one builder module and one entry of ``SOURCES`` (``SourceEntry``): docs/extending.md
says how to add one.
"""

from __future__ import annotations

from vouch.sources._registry import (
    SOURCES,
    AnswerFiles,
    BuildReport,
    SourceEntry,
    answer_data_paths,
    build_source,
    check_out_dir,
    data_stats,
    source_entry,
)
from vouch.sources._swebench_rundir import RunDir, StatusDisagreement, compare_tests_status, read_run_dir

__all__ = [
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
]
