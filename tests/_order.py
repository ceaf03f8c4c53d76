"""The order the suite's files run in (``tests/conftest.py``), kept apart from the conftest:
which ``conftest`` an ``import conftest`` finds depends on what pytest imported last."""

from __future__ import annotations

# The files that take longest, longest first (seconds on 2 cores, each file whole in one process):
# in several processes they start first, so that the short files fill the other processes while a
# long one runs, and no process runs a long file alone at the end while the rest are idle.
LONGEST_FILES = (
    "cli/test_exec_cli.py",
    "exec/test_ray.py",
    "worlds/test_env.py",
    "cli/test_challenge_cli.py",
    "audit/test_swe_lightweight.py",
    "audit/test_swe_cli.py",
    "audit/test_swe_regression.py",
    "audit/test_adversarial_matrix.py",
    "cli/test_bench_cli.py",
    "audit/test_trust_function.py",
    "export/test_export_humaneval.py",
    "audit/test_swe_agent_witness.py",
    "bench/test_multi_case.py",
    "v4v/test_upstream.py",
    "export/test_export_swe.py",
    "audit/test_swe_audit.py",
    "exec/test_rootless.py",
    "audit/test_search_reach.py",
    "audit/test_inspect_log.py",
    "exec/test_executor.py",
    "audit/test_swe_env_audit.py",
)
