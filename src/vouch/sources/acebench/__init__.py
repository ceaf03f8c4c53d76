"""ACEBench's English normal and special categories as ``tool_call`` tasks (``_source``), their
hidden cases (``_cases``) and ACEBench's checking rules as the reference verifier (``_verifier``)."""
