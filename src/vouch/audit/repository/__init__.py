"""The repository form of the audit: SWE-bench-style trials (an instance's repository at a base
commit, the gold patch G, the test patch T0 and each trial's patch), judged per trial or
lightweight.

``audit_swe`` and ``run_swe_command`` (re-exported by ``vouch.audit``) are the entries. The
stages: the instance's worlds and T0 (``_audit``), the engine's runs and the one validation rule
applied to them (``_runs``), the offline witness source's differential probes (``_witness``,
``_evidence``), the model's (``_agent``, ``_agent_tools``), the A.2 rule across agents
(``_ambiguity``), replaying a witness (``_replay``), the modes' form (``_lightweight``) and the
command (``_command``). The SWE-bench machinery below it (instances, environments, the harness
and its logs) is ``vouch.swebench``'s.
"""
