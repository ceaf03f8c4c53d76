"""Where tests put files a sandboxed run must read (importable as ``_scratch`` from any test).

Not in ``conftest.py``: several directories have a ``conftest`` module, and which one
``import conftest`` finds depends on what pytest imported last.
"""

from __future__ import annotations

import os
from pathlib import Path

from vouch.exec import visible_in_runs


def scratch_root() -> Path:
    """``tests/.scratch``, or a root-owned, world-searchable place when the checkout is somewhere
    runs cannot read (under /tmp, or in a home such as /root). ``$VOUCH_TEST_SCRATCH`` overrides
    both: the suite run as another user (``test_rootless.py``) gets a directory of its own."""
    if os.environ.get("VOUCH_TEST_SCRATCH"):
        return Path(os.environ["VOUCH_TEST_SCRATCH"])
    here = Path(__file__).resolve().parent / ".scratch"
    if visible_in_runs(here) is None:
        return here
    return Path("/var/lib/vouch-test-scratch")
