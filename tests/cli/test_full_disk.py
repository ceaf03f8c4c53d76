"""A full disk under the store or the output: one clear line, exit 3, the store intact,
and the same command resumes once there is space again.

Each scenario runs in a mount namespace of its own (``unshare --mount``), with the store or the
output on a small tmpfs that a filler file has all but filled.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from vouch.corpora import demo_samples_file

DEMO = demo_samples_file()
_DISK_KB = 4096

_INSPECT = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("integrity=" + db.execute("PRAGMA integrity_check").fetchone()[0])
print("stored=" + str(db.execute("SELECT COUNT(*) FROM audit_judgements").fetchone()[0]))
"""
_SCENARIO = """
set -u
mount -t tmpfs -o size={disk_kb}k tmpfs {disk}
head -c {filler} /dev/zero > {disk}/filler 2>/dev/null
{audit} --store {store} --json {first_json} 2> {stderr}
echo "first=$?"
{python} {inspect} {store}
cp {store} {kept}
rm {disk}/filler
{audit} --store {store} --json {second_json} 2>/dev/null
echo "second=$?"
"""


def _run_full(tmp_path: Path, *, store_on_disk: bool, room_kb: int) -> tuple[dict[str, str], str, Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    store = (disk if store_on_disk else tmp_path) / "store.sqlite"
    first_json = (tmp_path if store_on_disk else disk) / "first.json"
    inspect = tmp_path / "inspect.py"
    inspect.write_text(_INSPECT)
    audit = [sys.executable, "-m", "vouch", "audit", "humaneval", "--samples", str(DEMO), "--limit-tasks", "3"]
    script = _SCENARIO.format(
        disk_kb=_DISK_KB,
        disk=shlex.quote(str(disk)),
        filler=(_DISK_KB - room_kb) * 1024,
        audit=shlex.join([*audit, "--workers", "2"]),
        store=shlex.quote(str(store)),
        first_json=shlex.quote(str(first_json)),
        second_json=shlex.quote(str(tmp_path / "second.json")),
        stderr=shlex.quote(str(tmp_path / "stderr.txt")),
        kept=shlex.quote(str(tmp_path / "kept.sqlite")),
        python=shlex.quote(sys.executable),
        inspect=shlex.quote(str(inspect)),
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    marks = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return marks, (tmp_path / "stderr.txt").read_text(), tmp_path / "second.json"


def _judgements(path: Path) -> int:
    return int(sqlite3.connect(path).execute("SELECT COUNT(*) FROM audit_judgements").fetchone()[0])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("store_on_disk", "room_kb"),
    [(True, 160), (False, 2)],
    ids=["store-fills-the-disk", "results-json-fills-the-disk"],
)
def test_a_full_disk_is_one_line_exit_3_and_the_store_survives(
    tmp_path: Path, store_on_disk: bool, room_kb: int
) -> None:
    marks, stderr, second = _run_full(tmp_path, store_on_disk=store_on_disk, room_kb=room_kb)
    assert marks["first"] == "3", (marks, stderr)
    lines = [line for line in stderr.splitlines() if line.startswith("vouch: error:")]
    assert len(lines) == 1 and "no space left on the device" in lines[0], stderr
    assert "Traceback" not in stderr, stderr
    assert marks["integrity"] == "ok"
    assert int(marks["stored"]) > 0, "the disk filled before the first judgement: the scenario tests nothing"
    # The same command, with space again, resumes from what was stored and finishes.
    assert marks["second"] == "0", marks
    body = json.loads(second.read_text())
    assert body["summary"]["trials"] == 30
    assert body["config"]["resumed_programs"] >= int(marks["stored"])
    if not store_on_disk:
        assert int(marks["stored"]) == _judgements(tmp_path / "kept.sqlite") > 0  # every judgement kept
