"""Hostile runs through ``vouch exec`` as a user runs it: what a run writes is that
run's outcome, and a run sees only what the caller asked it to see."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

VOUCH = [sys.executable, "-m", "vouch"]

FORGE = r"""
import os, struct, sys
frame = sys._getframe(0)
while frame is not None and not isinstance(frame.f_locals.get("nonce"), bytes):
    frame = frame.f_back
body = b'{"outcome":"completed","value":' + VALUE + b',"exception":null}'
record = b"VOUCH-FRAME-1\n" + frame.f_locals["nonce"] + struct.pack("<Q", len(body)) + body
os.ftruncate(1000, 0)
os.pwrite(1000, record, 0)
os._exit(0)
"""


def vouch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(b'{"__vouch__":"bytes","b64":"A"}', id="invalid-base64"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="json-100000-deep"),
    ],
)
def test_exec_reports_a_forged_undecodable_record_as_the_runs_error(tmp_path: Path, value: bytes) -> None:
    script = tmp_path / "forge.py"
    script.write_text(f"VALUE = {value!r}\n{FORGE}")
    proc = vouch("exec", str(script), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["status"] == "error"
    assert "not valid data" in report["reason"] or "not JSON" in report["reason"], report["reason"]


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import sys\nsys.exit(3)\n", 3),
        ("raise SystemExit(4)\n", 4),
        ("import sys\nsys.exit('a message')\n", 1),
        ("raise ValueError('x')\n", 1),
    ],
)
def test_exec_reports_the_scripts_own_exit_code(tmp_path: Path, source: str, code: int) -> None:
    script = tmp_path / "exits.py"
    script.write_text(source)
    proc = vouch("exec", str(script), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert (report["status"], report["exit_code"]) == ("error", code), report


CWD_PROBE = """
import json, os, sys
caller = os.environ.get("CALLER", "")
print(json.dumps({
    "on_sys_path": [p for p in sys.path if p and os.path.realpath(p) == os.path.realpath(caller)],
    "labels_readable": os.path.exists(os.path.join(caller, "results.json")),
    "imports_callers_module": __import__("importlib.util").util.find_spec("callers_module") is not None,
}))
"""


def test_a_run_never_sees_the_callers_working_directory(tmp_path: Path) -> None:
    """Started from a directory under /tmp holding labels and a module, ``vouch exec`` gives
    its run neither: not on sys.path, not bound back, not importable."""
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "results.json").write_text('{"labels": ["positive"]}')
    (caller / "callers_module.py").write_text("X = 1\n")
    script = caller / "probe.py"
    script.write_text(CWD_PROBE.replace('os.environ.get("CALLER", "")', repr(str(caller))))
    proc = vouch("exec", "probe.py", "--json", cwd=caller)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["status"] == "ok", report
    assert json.loads(report["stdout_tail"]) == {
        "on_sys_path": [],
        "labels_readable": False,
        "imports_callers_module": False,
    }
