"""BFCL's Python sets as ``tool_call`` tasks (``_source``) and possible-answer matching as the
reference verifier (``_verifier``)."""
