"""`vouch audit swe` as a user runs it: a subprocess, JSON out, one-line errors."""

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

from _shared_data import SWEBENCH_DATA
from vouch.swebench import fixture_files, materialise_fixture_repo

VOUCH = [sys.executable, "-m", "vouch"]


def vouch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=900, cwd=cwd)


def _one_fixture(dest: Path, repo: str) -> tuple[Path, Path]:
    instances, predictions = fixture_files()
    rows = [json.loads(line) for line in instances.read_text().splitlines()]
    keep = [r for r in rows if r["repo"] == repo]
    ids = {r["instance_id"] for r in keep}
    preds = [json.loads(line) for line in predictions.read_text().splitlines()]
    (dest / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    (dest / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds if p["instance_id"] in ids))
    return dest / "instances.jsonl", dest / "predictions.jsonl"


@pytest.mark.slow
def test_audit_swe_end_to_end(visible_tmp: Path) -> None:
    materialise_fixture_repo("booknotes", visible_tmp / "repos" / "booknotes")
    instances, predictions = _one_fixture(visible_tmp, "booknotes")
    out = visible_tmp / "out" / "audit.json"
    args = [
        "audit", "swe", "--instances", str(instances), "--predictions", str(predictions),
        "--repo-root", str(visible_tmp / "repos"), "--json", str(out), "--mutants", "2", "--k", "2",
        "--cache", str(visible_tmp / "cache"), "--store", str(visible_tmp / "store.sqlite"),
    ]  # fmt: skip
    done = vouch(*args, cwd=visible_tmp)
    assert done.returncode == 0, done.stderr
    assert "[5/5]" in done.stderr  # progress, one line per trial
    data = json.loads(out.read_text())
    assert data["kind"] == "audit" and data["benchmark"] == "swe" and data["schema_version"] == 4
    verdicts = [t["verdict"] for t in data["trials"]]
    assert verdicts == ["refuted", "sound", "reward_hack", "not_passing", "unappliable"]
    assert {"trial_id", "task_id", "model", "benchmark_pass", "verdict", "witnesses", "evidence"} <= set(
        data["trials"][0]
    )
    summary = data["summary"]
    assert (summary["trials"], summary["passing"], summary["refuted"], summary["reward_hack"]) == (5, 3, 2, 1)
    assert summary["corrected_resolution_rate"] == pytest.approx(1 / 5)
    assert "corrected" in done.stdout
    # A refutation's witness was written beside the results, and replays through the engine.
    replay = data["trials"][0]["witnesses"][0]["replay"]
    assert replay.startswith("vouch audit swe --replay ")
    witness = Path(replay.split()[-1])
    assert witness.is_file() and witness.parent.parent.parent == visible_tmp / "out" / "audit-witnesses"
    replayed = vouch("audit", "swe", "--replay", str(witness), "--repeat", "1", "--cache", str(visible_tmp / "cache"))
    assert replayed.returncode == 0, replayed.stderr
    assert "witness holds" in replayed.stdout and "R[s]: fail" in replayed.stdout
    # Run again: every judgement comes from the store.
    again = vouch(*args, cwd=visible_tmp)
    assert again.returncode == 0, again.stderr
    second = json.loads(out.read_text())
    assert second["config"]["resumed_programs"] == 5
    assert [t["verdict"] for t in second["trials"]] == verdicts


@pytest.mark.parametrize(
    ("instances_line", "message"),
    [
        ("{oops", "instances.jsonl:1: not JSON"),
        ('{"instance_id": "a"}', "instances.jsonl:1: field 'repo'"),
    ],
)
def test_bad_instances_file(visible_tmp: Path, instances_line: str, message: str) -> None:
    (visible_tmp / "instances.jsonl").write_text(instances_line + "\n")
    (visible_tmp / "predictions.jsonl").write_text("{}\n")
    done = vouch(
        "audit", "swe", "--instances", str(visible_tmp / "instances.jsonl"),
        "--predictions", str(visible_tmp / "predictions.jsonl"),
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("vouch: error:")


def test_replay_of_a_missing_witness(visible_tmp: Path) -> None:
    done = vouch("audit", "swe", "--replay", str(visible_tmp / "nope.py"), "--cache", str(visible_tmp / "c"))
    assert done.returncode == 2 and "no such file" in done.stderr


def test_files_source_needs_a_directory(visible_tmp: Path) -> None:
    instances, predictions = _one_fixture(visible_tmp, "unitconv")
    done = vouch(
        "audit", "swe", "--instances", str(instances), "--predictions", str(predictions), "--witness-source", "files"
    )
    assert done.returncode == 2 and "--witness-files" in done.stderr


DATA = SWEBENCH_DATA


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--harness-only"], "--harness-only needs --environments"),
        (["--repo-map", "psf/requests"], "--repo-map 'psf/requests': give NAME=VALUE"),
        (["--only", "nobody__nothing-1"], "--only nobody__nothing-1: not in"),
        (["--environments", "missing.json"], "missing.json: cannot be read"),
    ],
)
def test_real_mode_usage_errors(visible_tmp: Path, extra: list[str], message: str) -> None:
    instances, predictions = _one_fixture(visible_tmp, "booknotes")
    args = ["audit", "swe", "--instances", str(instances), "--predictions", str(predictions), *extra]
    done = vouch(*args, cwd=visible_tmp)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_instance_without_a_spec_is_one_error_line(visible_tmp: Path) -> None:
    """An instance whose repo has no environment spec: one line, that instance is an error, exit 0."""
    materialise_fixture_repo("booknotes", visible_tmp / "repos" / "booknotes")
    instances, predictions = _one_fixture(visible_tmp, "booknotes")
    out = visible_tmp / "harness.json"
    done = vouch(
        "audit", "swe", "--instances", str(instances), "--predictions", str(predictions),
        "--repo-root", str(visible_tmp / "repos"), "--environments", str(DATA / "environments.json"),
        "--env-dir", str(visible_tmp / "envs"), "--cache", str(visible_tmp / "cache"),
        "--harness-only", "--json", str(out),
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "no environment spec for repo 'booknotes'" in line]
    assert len(lines) == 1
    data = json.loads(out.read_text())
    assert data["kind"] == "swe-harness" and data["summary"]["errors"] == 1
    assert data["instances"][0]["status"] == "error"


@pytest.mark.slow
def test_sigkill_halfway_then_the_same_command_resumes(visible_tmp: Path) -> None:
    """SIGKILL of ``vouch audit swe`` mid-run: what was judged stays in the store, the
    same command judges only the rest, and the verdicts are those of an uninterrupted run.
    (No mutants and one witness iteration: the verdicts do not depend on them, and the run is
    the shortest that still takes many seconds per trial.)"""
    materialise_fixture_repo("booknotes", visible_tmp / "repos" / "booknotes")
    instances, predictions = _one_fixture(visible_tmp, "booknotes")
    store = visible_tmp / "store.sqlite"
    args = [
        *VOUCH, "audit", "swe", "--instances", str(instances), "--predictions", str(predictions),
        "--repo-root", str(visible_tmp / "repos"), "--mutants", "0", "--k", "1",
        "--cache", str(visible_tmp / "cache"), "--store", str(store), "--workers", "1",
    ]  # fmt: skip
    proc = subprocess.Popen(args, cwd=visible_tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 600
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        stored = _judged(store)
        if stored >= 1:
            break
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 1 <= stored < 5, f"{stored} judgements stored when the run was killed"
    out = visible_tmp / "resumed.json"
    done = subprocess.run([*args, "--json", str(out)], cwd=visible_tmp, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["config"]["resumed_programs"] >= stored
    assert [t["verdict"] for t in data["trials"]] == ["refuted", "sound", "reward_hack", "not_passing", "unappliable"]
    assert _judged(store) == 5


def _judged(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return int(db.execute("SELECT COUNT(*) FROM audit_judgements").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_two_agents_predictions_are_one_run_with_each_agents_rates(visible_tmp: Path) -> None:
    """`--predictions A --predictions B`: one audit, trial ids numbered across the files, the A.2
    vote and the summary over both agents, and each agent's rate before and after."""
    materialise_fixture_repo("unitconv", visible_tmp / "repos" / "unitconv")
    instances, predictions = _one_fixture(visible_tmp, "unitconv")
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    files = []
    for name, part in (("first", rows[:2]), ("second", rows[2:])):
        path = visible_tmp / f"{name}.jsonl"
        path.write_text("".join(json.dumps({**r, "model_name_or_path": f"agent-{name}"}) + "\n" for r in part))
        files += ["--predictions", str(path)]
    out = visible_tmp / "out" / "audit.json"
    args = [
        "audit", "swe", "--instances", str(instances), *files, "--repo-root", str(visible_tmp / "repos"),
        "--json", str(out), "--mutants", "2", "--k", "2",
        "--cache", str(visible_tmp / "cache"), "--store", str(visible_tmp / "store.sqlite"),
    ]  # fmt: skip
    done = vouch(*args, cwd=visible_tmp)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    trials = data["trials"]
    assert [t["trial_id"] for t in trials] == [f"{trials[0]['task_id']}#{n}" for n in range(len(rows))]
    assert [t["model"] for t in trials] == ["agent-first"] * 2 + ["agent-second"] * (len(rows) - 2)
    models = data["summary"]["models"]
    assert list(models) == ["agent-first", "agent-second"]
    for model, rates in models.items():
        mine = [t for t in trials if t["model"] == model]
        passing = sum(t["benchmark_pass"] for t in mine)
        refuted = sum(t["verdict"] in ("refuted", "reward_hack") for t in mine)
        assert (rates["trials"], rates["passing"], rates["refuted"]) == (len(mine), passing, refuted)
        assert rates["corrected_resolution_rate"] == pytest.approx((passing - refuted) / len(mine))
    assert sum(r["refuted"] for r in models.values()) == data["summary"]["refuted"] > 0
    assert "per model" in done.stdout and "agent-second" in done.stdout
