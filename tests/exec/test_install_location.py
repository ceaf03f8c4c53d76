"""Runs import vouch's own run-side modules from the pool's copy of vouch, wherever it lives.

Every run gets its own /tmp (its disk budget): a vouch installed under /tmp (a venv or a
checkout there) must still be readable in a run, or every run that imports vouch's run side
(``vouch.exec._apart``, the audit's witness runs) fails with vouch's own import error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import vouch

_PROBE = r"""
import json, sys
from vouch.exec import Limits, LocalExecutor, RunSpec, Script
SOURCE = (
    "import sys, vouch, vouch.exec._apart\n"
    "print(vouch.__file__)\n"
    "print(vouch.exec._apart.__file__)\n"
)
import vouch
with LocalExecutor(workers=1, warm_pytest=False) as pool:
    results = [
        pool.run(RunSpec(entry=Script("main.py"), files={"main.py": SOURCE}, limits=Limits(timeout_s=30), **extra))
        for extra in ({}, {"keep_workdir": True})
    ]
print(json.dumps({
    "host": vouch.__file__,
    "runs": [[r.status.value, r.reason, r.stdout_tail, r.stderr_tail[-1500:]] for r in results],
}))
"""


def test_a_run_imports_vouchs_run_side_from_a_copy_of_vouch_under_tmp() -> None:
    """A pool whose vouch package lives under /tmp gives its runs that package, read-only."""
    top = tempfile.mkdtemp(prefix="vouch-install-", dir="/tmp")
    try:
        site = os.path.join(top, "site")
        package = Path(vouch.__file__).parent
        shutil.copytree(package, os.path.join(site, "vouch"), ignore=shutil.ignore_patterns("__pycache__"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
        env["PYTHONPATH"] = site
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE],
            cwd=top,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        outcome = json.loads(proc.stdout.strip().splitlines()[-1])
        assert outcome["host"].startswith(site), outcome  # the copy is the vouch that ran the pool
        for status, reason, stdout, stderr in outcome["runs"]:
            assert status == "ok", (reason, stderr)
            assert stdout.splitlines() == [
                os.path.join(site, "vouch", "__init__.py"),
                os.path.join(site, "vouch", "exec", "_apart.py"),
            ]
    finally:
        shutil.rmtree(top, ignore_errors=True)
