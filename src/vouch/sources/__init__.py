"""Real benchmarks -> vouch's task directories (AgentDojo, BFCL, HumanEval). Pinned versions."""

from __future__ import annotations

from vouch.sources._registry import SOURCES, BuildReport, answer_data_paths, build_source, check_out_dir, data_stats

__all__ = ["SOURCES", "BuildReport", "answer_data_paths", "build_source", "check_out_dir", "data_stats"]
