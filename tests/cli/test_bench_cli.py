"""``vouch bench`` as a user runs it, including a SIGKILL halfway and a resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

VOUCH = [sys.executable, "-m", "vouch"]


def vouch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "tasks"
    proc = vouch("data", "build", "humaneval", "--out", str(out), "--limit", "3", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def _verifiers(root: Path, tasks: Path, body: str) -> Path:
    for task in sorted(p for p in tasks.iterdir() if (p / "task.toml").exists()):
        (root / task.name).mkdir(parents=True, exist_ok=True)
        reference = (task / "reference" / "verifier.py").read_text()
        (root / task.name / "verifier.py").write_text(reference + body)
    return root


@pytest.mark.slow
def test_score_json_fields(tasks, tmp_path):
    verifiers = _verifiers(tmp_path / "ref", tasks, "")
    out = tmp_path / "bench.json"
    proc = vouch(
        "bench",
        "score",
        "--tasks",
        str(tasks),
        "--verifiers",
        str(verifiers),
        "--json",
        str(out),
        "--store",
        str(tmp_path / "store.sqlite"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["kind"] == "bench"
    for field in ("ba_norm", "tpr", "tnr", "fpr_attack", "by_kind", "by_source", "all_reject", "tasks"):
        assert field in result
    for field in ("ba_norm", "tpr", "tnr", "fpr_attack"):
        assert len(result[f"{field}_ci95"]) == 2
    assert result["ba_norm"] >= 90  # the reference verifiers on their own suites
    assert {t["task_id"] for t in result["tasks"]} == {"humaneval-0", "humaneval-1", "humaneval-2"}


def test_missing_verifier_counts_as_invalid(tasks, tmp_path):
    verifiers = _verifiers(tmp_path / "v", tasks, "")
    (verifiers / "humaneval-1" / "verifier.py").unlink()
    out = tmp_path / "bench.json"
    proc = vouch(
        "bench",
        "score",
        "--tasks",
        str(tasks),
        "--verifiers",
        str(verifiers),
        "--json",
        str(out),
        "--store",
        str(tmp_path / "store.sqlite"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    task = next(t for t in json.loads(out.read_text())["tasks"] if t["task_id"] == "humaneval-1")
    assert task["ba_norm"] == -100
    assert all(c["decision"] == "INVALID" and c["reason"] == "missing verifier" for c in task["cases"])


@pytest.mark.slow
def test_sigkill_halfway_then_resume_decides_each_case_exactly_once(tasks, tmp_path):
    slow = (
        "\nimport time as _t\n_verify = verify\n\n"
        "def verify(candidate, env):\n    _t.sleep(0.3)\n    return _verify(candidate, env)\n"
    )
    verifiers = _verifiers(tmp_path / "slow", tasks, slow)
    store = tmp_path / "store.sqlite"
    args = [*VOUCH, "bench", "score", "--tasks", str(tasks), "--verifiers", str(verifiers), "--store", str(store)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if store.exists():
            with sqlite3.connect(store) as db:
                try:
                    stored = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
                except sqlite3.OperationalError:
                    stored = 0
            if stored >= 5:
                break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stored >= 5
    with sqlite3.connect(store) as db:
        before = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    total = sum(len(list((t / "cases").glob("*.json"))) for t in tasks.iterdir() if (t / "cases").exists())
    assert 5 <= before < total
    out = tmp_path / "resumed.json"
    done = vouch(
        "bench",
        "score",
        "--tasks",
        str(tasks),
        "--verifiers",
        str(verifiers),
        "--store",
        str(store),
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["config"]["decisions_run"] == total - before
    assert result["config"]["decisions_reused"] == before
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT verifier_hash, case_key, COUNT(*) FROM decisions GROUP BY 1, 2").fetchall()
    assert len(rows) == total and all(n == 1 for *_, n in rows)
    again = vouch(
        "bench",
        "score",
        "--tasks",
        str(tasks),
        "--verifiers",
        str(verifiers),
        "--store",
        str(store),
        "--json",
        str(out),
    )
    assert json.loads(out.read_text())["config"]["decisions_run"] == 0, again.stderr[-500:]


def test_v4v_exclusions_are_left_out_and_counted(tasks, tmp_path):
    verifiers = _verifiers(tmp_path / "ref", tasks, "")
    v4v = tmp_path / "v4v.json"
    v4v.write_text(
        json.dumps(
            {
                "kind": "v4v",
                "tasks": [
                    {"task_id": "humaneval-1", "retained": False, "checks": {"replay": {"passed": False}}},
                    {"task_id": "humaneval-0", "retained": True, "checks": {}},
                ],
            }
        )
    )
    out = tmp_path / "bench.json"
    proc = vouch(
        "bench",
        "score",
        "--tasks",
        str(tasks),
        "--verifiers",
        str(verifiers),
        "--v4v",
        str(v4v),
        "--json",
        str(out),
        "--store",
        str(tmp_path / "store.sqlite"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["excluded"]["count"] == 1
    assert "replay" in result["excluded"]["tasks"]["humaneval-1"]
    assert {t["task_id"] for t in result["tasks"]} == {"humaneval-0", "humaneval-2"}


def test_compare_two_runs(tasks, tmp_path):
    good = _verifiers(tmp_path / "good", tasks, "")
    lazy = _verifiers(tmp_path / "lazy", tasks, "\n\ndef verify(candidate, env):\n    return True\n")
    runs = []
    for name, verifiers in (("good", good), ("lazy", lazy)):
        out = tmp_path / f"{name}.json"
        proc = vouch(
            "bench",
            "score",
            "--tasks",
            str(tasks),
            "--verifiers",
            str(verifiers),
            "--json",
            str(out),
            "--store",
            str(tmp_path / "store.sqlite"),
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(out)
    diff = tmp_path / "diff.json"
    proc = vouch("bench", "compare", str(runs[0]), str(runs[1]), "--json", str(diff))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(diff.read_text())
    assert result["kind"] == "bench-compare"
    assert result["tasks_compared"] == 3
    assert result["ba_norm_diff"] < -50  # accepting everything loses against the reference
    lo, hi = result["ba_norm_diff_ci95"]
    assert lo <= result["ba_norm_diff"] <= hi
