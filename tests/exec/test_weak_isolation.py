"""When user namespaces are missing: refuse clearly, or run weak when asked, and say so.

The machine here has user namespaces, so the test takes them away for real: it runs a small
program inside a user namespace whose ``user.max_user_namespaces`` is 0, where the engine's
probe fails exactly as on a host without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

PROGRAM = r"""
import json, sys
from vouch.errors import IsolationUnavailable
from vouch.exec import LocalExecutor, RunSpec, Script
out = {}
try:
    with LocalExecutor(workers=1, warm_pytest=False) as pool:
        pool.run(RunSpec(entry=Script("m.py"), files={"m.py": "print(1)"}))
    out["refused"] = False
except IsolationUnavailable as exc:
    out["refused"] = True
    out["message"] = str(exc)
with LocalExecutor(workers=1, warm_pytest=False, allow_weak=True) as pool:
    r = pool.run(RunSpec(entry=Script("m.py"), files={"m.py": "print('weak run')"}))
    out["status"] = r.status.value
    out["stdout"] = r.stdout_tail
    out["isolation"] = r.isolation.to_dict()
print(json.dumps(out))
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_no_user_namespaces_refuses_then_runs_weak_when_asked():
    script = f'echo 0 > /proc/sys/user/max_user_namespaces && exec {sys.executable} -c "$PROGRAM"'
    env = dict(os.environ, PROGRAM=PROGRAM)
    proc = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["refused"] is True
    assert "namespaces" in out["message"] and "--allow-weak-isolation" in out["message"]
    assert out["status"] == "ok"
    assert out["stdout"] == "weak run\n"
    iso = out["isolation"]
    assert iso["level"] == "weak"
    assert iso["network"] is True
    assert iso["user_namespace"] is False
    assert "namespaces" in iso["weak_reason"]
