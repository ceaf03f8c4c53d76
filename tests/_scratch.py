"""Where tests put files a sandboxed run must read (importable as ``_scratch`` from any test).

Not in ``conftest.py``: several directories have a ``conftest`` module, and which one
``import conftest`` finds depends on what pytest imported last.
"""

from __future__ import annotations

from pathlib import Path

from vouch.exec import visible_in_runs


def scratch_root() -> Path:
    """``tests/.scratch``, or a root-owned, world-searchable place when the checkout is somewhere
    runs cannot read (under /tmp, or in a home such as /root)."""
    here = Path(__file__).resolve().parent / ".scratch"
    if visible_in_runs(here) is None:
        return here
    return Path("/var/lib/vouch-test-scratch")
