"""``vouch bench score`` with verifiers that forge records or read vouch's own files.

A verifier under test runs in one process with the harness, so it can find the frame nonce on
the stack and write a well-formed record whose value is not valid data. That is its own
decision going wrong: every such case is INVALID, stored like any decision, and the score (and a
resume with the same store) finishes. A verifier that opens the data directory's labels, the
store or the results file (all readable to any user here) reads nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

VOUCH = [sys.executable, "-m", "vouch"]

FORGING_VERIFIER = r"""
import os, struct, sys

def verify(candidate, env):
    frame = sys._getframe(0)
    while frame is not None and not isinstance(frame.f_locals.get("nonce"), bytes):
        frame = frame.f_back
    body = b'{"outcome":"returned","value":' + VALUE + b',"exception":null}'
    record = b"VOUCH-FRAME-1\n" + frame.f_locals["nonce"] + struct.pack("<Q", len(body)) + body
    os.ftruncate(1000, 0)
    os.pwrite(1000, record, 0)
    os._exit(0)
"""


def vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-bench") / "tasks"
    proc = vouch("data", "build", "humaneval", "--out", str(out), "--limit", "2", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(b'{"__vouch__":"bytes","b64":"A"}', id="invalid-base64"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="json-100000-deep"),
    ],
)
def test_a_forged_undecodable_record_is_an_invalid_decision_stored_and_resumable(
    tasks: Path, tmp_path: Path, value: bytes
) -> None:
    names = sorted(p.name for p in tasks.iterdir() if (p / "task.toml").exists())
    hostile, honest = names[0], names[1]
    verifiers = tmp_path / "verifiers"
    (verifiers / hostile).mkdir(parents=True)
    (verifiers / hostile / "verifier.py").write_text(f"VALUE = {value!r}\n{FORGING_VERIFIER}")
    (verifiers / honest).mkdir(parents=True)
    (verifiers / honest / "verifier.py").write_text((tasks / honest / "reference" / "verifier.py").read_text())
    store, out = tmp_path / "store.sqlite", tmp_path / "bench.json"
    args = ("bench", "score", "--tasks", str(tasks), "--verifiers", str(verifiers), "--store", str(store))

    first = vouch(*args, "--json", str(out))
    assert first.returncode == 0, first.stderr[-2000:]
    cases = {name: len(list((tasks / name / "cases").glob("*.json"))) for name in names}
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT task_id, decision, reason FROM decisions").fetchall()
    assert len(rows) == sum(cases.values())
    forged = [(d, r) for task, d, r in rows if task == hostile]
    assert len(forged) == cases[hostile]
    assert all(d == "INVALID" and ("not valid data" in r or "not JSON" in r) for d, r in forged), forged[:3]
    assert any(d != "INVALID" for task, d, _ in rows if task == honest)

    again = vouch(*args, "--json", str(out))
    assert again.returncode == 0, again.stderr[-2000:]
    config = json.loads(out.read_text())["config"]
    assert (config["decisions_run"], config["decisions_reused"]) == (0, sum(cases.values()))


READING_VERIFIER = r"""
PATHS = {paths!r}

def verify(candidate, env):
    for path in PATHS:
        try:
            with open(path, "rb") as handle:
                if handle.read(1):
                    return True
        except OSError:
            pass
    return False
"""


@pytest.fixture
def readable_dir() -> Iterator[Path]:
    """A directory any user could read (not under /tmp, which is private in every run)."""
    root = Path(tempfile.mkdtemp(prefix=".vouch-hostile-", dir=Path.cwd()))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_verifier_reads_nothing_of_the_data_directory_the_store_or_the_outputs(
    tasks: Path, tmp_path: Path, readable_dir: Path
) -> None:
    data = readable_dir / "data"
    data.mkdir(mode=0o755)
    labels = data / "humaneval_codegen16b_labels_dev.jsonl"
    labels.write_text('{"trial_id": "HumanEval/0#0", "wrong": true}\n')
    store, out = readable_dir / "store.sqlite", readable_dir / "out" / "bench.json"
    out.parent.mkdir(mode=0o755)
    out.write_text('{"earlier": "results"}\n')
    for path in (labels, out):
        path.chmod(0o644)
    names = sorted(p.name for p in tasks.iterdir() if (p / "task.toml").exists())
    verifiers = tmp_path / "verifiers"
    paths = [str(labels), str(store), str(out)]
    for name in names:
        (verifiers / name).mkdir(parents=True)
        (verifiers / name / "verifier.py").write_text(READING_VERIFIER.format(paths=paths))
    args = ("--tasks", str(tasks), "--verifiers", str(verifiers), "--store", str(store), "--json", str(out))
    proc = subprocess.run(
        [*VOUCH, "bench", "score", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "VOUCH_DATA_DIR": str(data)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    with sqlite3.connect(store) as db:
        decisions = [d for (d,) in db.execute("SELECT decision FROM decisions")]
    assert decisions and set(decisions) == {"FAIL"}, decisions
