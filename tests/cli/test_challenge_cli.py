"""``vouch bench challenge`` as a user runs it: the table, the JSON report, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

VOUCH = [sys.executable, "-m", "vouch"]

pytestmark = pytest.mark.slow


def vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("challenge") / "tasks"
    proc = vouch("data", "build", "humaneval", "--out", str(out), "--limit", "2", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def bfcl(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("challenge-bfcl") / "tasks"
    proc = vouch("data", "build", "bfcl", "--out", str(out), "--limit", "2", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(p.parent for p in sorted(out.rglob("task.toml")))


@pytest.fixture(scope="module")
def task(tasks) -> Path:
    return tasks / "humaneval-0"


@pytest.fixture
def files(task, tmp_path):
    """The user's own valid candidate (here: the gold, copied out by the test) and two verifiers."""
    candidate = tmp_path / "candidate.json"
    candidate.write_text((task / "reference" / "gold.json").read_text())
    reference = tmp_path / "reference.py"
    reference.write_text((task / "reference" / "verifier.py").read_text())
    lax = tmp_path / "lax.py"
    lax.write_text("def verify(candidate, env):\n    return True\n")
    return {"candidate": candidate, "reference": reference, "lax": lax, "dir": tmp_path}


def _run(task: Path, verifier: Path, candidate: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return vouch(
        "bench", "challenge", "--task", str(task), "--verifier", str(verifier), "--candidate", str(candidate), *more
    )


def test_json_report_and_table(task, files):
    out = files["dir"] / "challenge.json"
    proc = _run(task, files["reference"], files["candidate"], "--json", str(out), "--seed", "4", "--fail-on-findings")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    for field in ("kind", "schema_version", "vouch_version", "seed", "config"):
        assert field in report
    assert report["kind"] == "challenge" and report["seed"] == 4 and report["task_id"] == "humaneval-0"
    assert report["original"]["decision"] == "PASS"
    assert report["counts"]["findings"] == 0 and report["counts"]["permitted"] >= 3
    assert report["counts"]["violations"] >= 1
    roles = {row["role"] for row in report["rows"]}
    assert roles == {"original", "permitted", "violation"}
    assert all(row["how"] and row["why"] for row in report["rows"])
    assert "challenge of humaneval-0" in proc.stdout and "rename_locals-1" in proc.stdout


def test_findings_exit_1_only_when_asked(task, files):
    without = _run(task, files["lax"], files["candidate"])
    assert without.returncode == 0, without.stderr[-2000:]
    assert "accepts a violation" in without.stdout or "accepts violation" in without.stdout
    gated = _run(task, files["lax"], files["candidate"], "--fail-on-findings")
    assert gated.returncode == 1, gated.stderr[-2000:]


def test_a_case_file_is_read_as_its_candidate_and_tool_call_tasks_work(bfcl, tmp_path):
    case = tmp_path / "case.json"
    case.write_text((bfcl / "cases" / "gold.json").read_text())  # the user's copy of a case file
    verifier = tmp_path / "names.py"
    names = [c["function"] for c in json.loads(case.read_text())["candidate"]["calls"]]
    verifier.write_text(
        f"def verify(candidate, env):\n    return [c['function'] for c in candidate['calls']] == {names!r}\n"
    )
    out = tmp_path / "r.json"
    proc = _run(bfcl, verifier, case, "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["task_kind"] == "tool_call"
    assert "change_required_value" in {r["construction"] for r in report["rows"] if r["finding"] == "accepts_violation"}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("candidate_not_json", "is not valid JSON"),
        ("candidate_wrong_kind", "does not fit a code task"),
        ("candidate_patch", "not patches"),
        ("verifier_syntax", "the verifier does not parse"),
        ("verifier_import", "the verifier does not import"),
        ("verifier_missing", "cannot read the verifier"),
        ("task_missing", "not a task directory"),
    ],
)
def test_bad_input_is_one_line_exit_2(task, files, setup, message):
    candidate, verifier, task_dir = files["candidate"], files["reference"], task
    bad = files["dir"] / "bad"
    if setup == "candidate_not_json":
        bad.write_text("{not json")
        candidate = bad
    elif setup == "candidate_wrong_kind":
        bad.write_text(json.dumps({"calls": [], "final_answer": "x"}))
        candidate = bad
    elif setup == "candidate_patch":
        bad.write_text(json.dumps({"patch": "--- a\n+++ b\n"}))
        candidate = bad
    elif setup == "verifier_syntax":
        bad.write_text("def verify(c, env:\n    return True\n")
        verifier = bad
    elif setup == "verifier_import":
        bad.write_text("raise ImportError('no such thing')\ndef verify(c, env):\n    return True\n")
        verifier = bad
    elif setup == "verifier_missing":
        verifier = files["dir"] / "nope.py"
    else:
        task_dir = files["dir"] / "no-task"
        task_dir.mkdir()
    proc = _run(task_dir, verifier, candidate)
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr[-1000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vouch: error:") and message in lines[0], proc.stderr


# A verifier of a tau2 task as a user might write one: the gold's tools in the gold's order, and
# the states the harness replayed readable (it cannot import tau2, which holds the answers).
TAU2_STRICT = """
GOLD = {gold!r}

def verify(candidate, env):
    assert isinstance(env.post_state, dict) and isinstance(env.pre_state, dict)
    return [c["function"] for c in candidate["calls"]] == GOLD
"""


def test_tau2_tasks_through_the_challenger(tmp_path):
    out = tmp_path / "tau2"
    build = ["data", "build", "tau2", "--out", str(out), "--domains", "retail", "--split", "test", "--limit", "2"]
    proc = vouch(*build, "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lax = tmp_path / "lax.py"
    lax.write_text("def verify(candidate, env):\n    return True\n")
    totals = {"unjustified_checks": 0, "accepted_violations": 0, "permitted": 0, "violations": 0}
    for task in sorted(p.parent for p in out.rglob("task.toml")):
        gold = json.loads((task / "reference" / "gold.json").read_text())
        candidate = tmp_path / "candidate.json"
        candidate.write_text(json.dumps(gold))
        strict = tmp_path / "strict.py"
        strict.write_text(TAU2_STRICT.format(gold=[c["function"] for c in gold["calls"]]))
        for verifier in (strict, lax):
            report = tmp_path / f"{task.name}-{verifier.stem}.json"
            proc = _run(task, verifier, candidate, "--json", str(report))
            assert proc.returncode == 0, proc.stderr[-2000:]
            body = json.loads(report.read_text())
            assert body["original"]["decision"] == "PASS", body["original"]
            for row in body["rows"][1:]:  # every derivation was checked on tau2's own environment
                assert row["evidence"].get("checked_by") == "replay on the public environment", row
            for key in totals:
                totals[key] += body["counts"][key]
    # The derivations replay on tau2's environment (the harness reads tau2's data): the strict
    # order check rejects permitted variants, and the lax verifier accepts the violations.
    assert totals["permitted"] > 0 and totals["violations"] > 0, totals
    assert totals["unjustified_checks"] > 0 and totals["accepted_violations"] > 0, totals
