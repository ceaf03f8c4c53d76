"""tau2-bench's domains as ``state`` tasks (``_source``): databases, call replay and tau2's own
evaluator (``_world``), the harness entry runs use (``_replay``) and the labelled cases (``_cases``)."""
