"""HumanEval's problems as ``code`` tasks (``_source``), with the source edits its cases are built
from (``_edits``)."""
