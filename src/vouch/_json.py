"""JSON from files vouch did not write: every way such a document fails is one ``UsageError``.

``json.loads`` fails in more ways than ``JSONDecodeError``: a document nested deeper than the
interpreter's recursion limit raises ``RecursionError``, an integer of more digits than
``sys.get_int_max_str_digits()`` a plain ``ValueError``, and bytes that are not UTF-8
``UnicodeDecodeError``. Readers of input files parse through here, so that each of these
becomes one line naming the file (and line) instead of a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from vouch.errors import UsageError

BAD_JSON: tuple[type[Exception], ...] = (ValueError, RecursionError)
"""What ``json.loads`` raises on a hostile document (``JSONDecodeError`` and
``UnicodeDecodeError`` are ``ValueError``s)."""


def why_not_json(exc: BaseException) -> str:
    """What was wrong with a document ``json.loads`` refused, in a few words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, json.JSONDecodeError):
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        return f"{exc.msg} at {where}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
    text = str(exc).split(";")[0].strip()
    if "integer string conversion" in text:  # sys.get_int_max_str_digits()
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    return text or type(exc).__name__


def loads(text: str | bytes, where: object) -> Any:
    """``json.loads(text)``, or a ``UsageError`` ``WHERE: not JSON (why)``.

    Args:
        text: The document (bytes are decoded as UTF-8).
        where: The file, or ``file:line``, named in the error.

    Raises:
        UsageError: The document is not JSON vouch can read.
    """
    try:
        return json.loads(text)
    except BAD_JSON as exc:
        raise UsageError(f"{where}: not JSON ({why_not_json(exc)})") from None
