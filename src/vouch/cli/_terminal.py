"""Text vouch did not write, made safe to print: no control character reaches the terminal.

A trial's exception message, a verdict's reason, a witness's defect, a task id or a model name
from the user's data can hold ESC sequences (clear the screen, move the cursor, retitle the
window), carriage returns and line breaks (a forged line such as ``0 refuted``), or Unicode's
bidirectional overrides (text that reads otherwise than it is). ``shown`` writes each such
character as a visible escape (``\\x1b``, ``\\n``, ``\\u202e``), so a line vouch prints is the line
it wrote. The commands apply it where they print what they did not write; line breaks vouch
writes between lines are its own.
"""

from __future__ import annotations

import re

from rich.markup import escape as _markup_escape

__all__ = ["escape", "shown"]

_MARKS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_MARKS}]")
"""C0 and C1 controls (ESC, CR and LF among them), DEL, and Unicode's line separators and
bidirectional marks, embeddings, overrides and isolates."""
_UNSAFE_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_MARKS}]")
"""The same but for line feeds and tabs."""


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown(text: object, *, lines: bool = False) -> str:
    """``text`` (any value, as ``str`` gives it) with every control character written as a
    visible escape: one line, exactly what the terminal shows. ``lines`` keeps line breaks and
    tabs (a run's own output, printed as the lines it wrote)."""
    unsafe = _UNSAFE_IN_LINES if lines else _UNSAFE
    return unsafe.sub(_escape, str(text))


def escape(text: object) -> str:
    """``shown(text)`` with rich's markup escaped: the one way the commands print a line that
    holds what vouch did not write through a console that reads markup."""
    return _markup_escape(shown(text))
