"""HumanEval's problems as ``code`` tasks (``_source``), with the source edits its cases are built
from (``_edits``)."""

from __future__ import annotations

from vouch.sources.humaneval._edits import add_comments, reformat, rename_locals

__all__ = ["add_comments", "reformat", "rename_locals"]
