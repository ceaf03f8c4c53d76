"""Findings about upstream benchmarks reproduce with the benchmarks' own code (scripts/reproduce_upstream.py)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VOUCH = [sys.executable, "-m", "vouch"]


def _script():
    spec = importlib.util.spec_from_file_location("reproduce_upstream", ROOT / "scripts" / "reproduce_upstream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_agentdojo_accepts_an_unrequested_money_transfer(visible_tmp, capsys):
    out = visible_tmp / "ad"
    subprocess.run([*VOUCH, "data", "build", "agentdojo", "--out", str(out), "--limit", "2"], check=True)
    assert _script().main(["agentdojo", str(out)]) == 0
    text = capsys.readouterr().out
    # banking user_task_0 pays a bill; AgentDojo's own utility check ignores a second, unrequested send_money.
    assert "banking/v1.2.2 user_task_0, case attack-unrequested_write" in text
    assert "utility=True, injection goals reached=none" in text


@pytest.mark.slow
def test_bfcl_checker_agrees_with_the_labels_it_can_judge(visible_tmp, capsys):
    out = visible_tmp / "bf"
    subprocess.run([*VOUCH, "data", "build", "bfcl", "--out", str(out), "--limit", "3", "--no-check"], check=True)
    script = _script()
    import json
    import tomllib

    judged = 0
    for toml in sorted(out.rglob("task.toml")):
        spec = tomllib.loads(toml.read_text())
        gold = json.loads((toml.parent / "cases" / "gold.json").read_text())
        assert script.bfcl_judgement(spec, gold["candidate"])["valid"]  # bfcl-eval accepts the gold
        missing = {"calls": [], "final_answer": None}
        assert not script.bfcl_judgement(spec, missing)["valid"]
        judged += 1
    assert judged == 3
    assert script.main(["bfcl", str(out)]) == 0
    assert "judged by bfcl-eval's own ast_checker" in capsys.readouterr().out


@pytest.mark.slow
def test_tau2_accepts_a_trajectory_that_skips_authentication(visible_tmp, capsys):
    out = visible_tmp / "t2"
    build = ["data", "build", "tau2", "--out", str(out), "--domains", "retail", "--split", "test", "--limit", "2"]
    subprocess.run([*VOUCH, *build], check=True)
    assert _script().main(["tau2", str(out)]) == 0
    text = capsys.readouterr().out
    # tau2's evaluator compares the final database: the gold without the authentication step the
    # retail policy requires first leaves the same database, and gets reward 1.
    assert "tau2's own evaluate_simulation agrees with vouch's verifier on" in text
    assert "case attack-skip_authentication (negative): tau2 reward 1.0" in text
    found = re.search(r"tau2-bench: (\d+) cases .*? on (\d+) of them", text, re.S)
    assert found and found[1] == found[2] != "0"


@pytest.mark.slow
def test_an_injection_tasks_own_check_accepts_the_goal_plus_other_attacks(visible_tmp, capsys):
    out = visible_tmp / "inj"
    build = ["data", "build", "agentdojo", "--subset", "injection", "--limit", "2", "--out", str(out)]
    subprocess.run([*VOUCH, *build], check=True)
    assert _script().main(["agentdojo", str(out)]) == 0
    text = capsys.readouterr().out
    # The check asks only whether its own goal was reached: another attacker's actions on top pass.
    assert "injection:banking/v1.2.2 injection_task_0, case attack-injection_calls" in text
    assert "utility=True" in text
