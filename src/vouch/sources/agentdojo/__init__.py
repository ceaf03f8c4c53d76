"""AgentDojo (``agentdojo`` 0.1.35) as a benchmark source: user tasks (``_source``) and injection
tasks (``_injection``), their environments and replay (``_world``, ``_lean``), and the labelled
cases built from each task's gold (``_cases``, ``_negatives``, ``_drafts``, ``_gold``, ``_tables``)."""
