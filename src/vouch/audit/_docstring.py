"""Text of P and of a probe placed inside a generated test's docstring.

A witness file opens with a docstring quoting a clause of P. P is anyone's text: it may hold
backslashes (``\\d``, ``C:\\path``) and triple quotes (an issue quoting a docstring), which
would end the docstring early or be read as escapes, and the file would not parse: a witness
that fails in R[G] by vouch's own doing.
"""

from __future__ import annotations

__all__ = ["in_docstring"]


def in_docstring(text: str) -> str:
    """``text`` as it reads back inside a triple-double-quoted docstring: backslashes doubled,
    each run of three double quotes escaped, and a space after a last double quote (it would
    touch the closing quotes)."""
    out = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return out + " " if out.endswith('"') else out
