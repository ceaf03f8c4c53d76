"""Where the suite reads the registered public corpora (importable as ``_shared_data``).

``$VOUCH_DATA_DIR`` when set (a checkout anywhere, say under /tmp, pointed at the data);
otherwise ``../shared/data`` beside the repository's root. The suite runs offline: it reads the
corpora from there rather than downloading them.
"""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "data"

SHARED_DATA = Path(os.environ["VOUCH_DATA_DIR"]) if os.environ.get("VOUCH_DATA_DIR") else _BESIDE
"""The data directory every test reads the corpora from."""

SWEBENCH_DATA = SHARED_DATA / "swebench"
"""The SWE-bench Verified slice: instances, environments and the agents' predictions."""
