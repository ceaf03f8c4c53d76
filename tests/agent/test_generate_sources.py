"""``vouch bench generate`` then ``vouch bench score`` on the newer sources: a tau2-bench retail
task, an AgentDojo injection task (both state tasks, sealed from the benchmark) and an ACEBench
task, each against a scripted model on a loopback OpenAI-compatible server.

Each agent replays the gold's calls on the public environment (state tasks), writes a verifier
of its own, self-tests it on the gold and submits; the scores then come from the hidden cases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from loopback import KEY, OpenAIServer, Turn, call, task_of, turn_index

from _scratch import scratch_root

pytestmark = pytest.mark.slow

VOUCH = [sys.executable, "-m", "vouch"]

# The verifiers the scripted agents write: the gold's functions, in any order; a state task's
# also reads the states the harness replayed (its run cannot import the benchmark).
CALL_VERIFIER = """
GOLD = {names!r}

def verify(candidate, env):
    return sorted(c["function"] for c in candidate["calls"]) == sorted(GOLD)
"""
STATE_VERIFIER = CALL_VERIFIER.replace(
    "def verify(candidate, env):\n",
    "def verify(candidate, env):\n    assert env.pre_state and isinstance(env.post_state, dict)\n",
)


def vouch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def tasks() -> Any:
    base = scratch_root() / f"agent-sources-{os.getpid()}"
    root = base / "tasks"
    builds = [
        ("tau2", "--domains", "retail", "--split", "test", "--limit", "1"),
        ("agentdojo", "--subset", "injection", "--limit", "1"),
        ("acebench", "--limit", "1"),
    ]
    for source, *options in builds:
        proc = vouch("data", "build", source, "--out", str(root / source), *options, "--no-check")
        assert proc.returncode == 0, proc.stderr[-2000:]
    yield root
    shutil.rmtree(base, ignore_errors=True)


def _task_dirs(root: Path) -> dict[str, Path]:
    return {p.parent.name: p.parent for p in root.rglob("task.toml")}


def _gold(task_dir: Path) -> dict[str, Any]:
    return json.loads((task_dir / "reference" / "gold.json").read_text())


def _script(root: Path) -> Any:
    turns: dict[str, list[Turn]] = {}
    for task_id, task_dir in _task_dirs(root).items():
        gold = _gold(task_dir)
        names = [c["function"] for c in gold["calls"]]
        if tomllib.loads((task_dir / "task.toml").read_text())["kind"] == "state":
            source = STATE_VERIFIER.format(names=names)
            steps = [call("run_public", {"calls": gold["calls"]})]
        else:
            source = CALL_VERIFIER.format(names=names)
            steps = [call("read_file", {"path": "environment/tools.json"})]
        turns[task_id] = [
            *steps,
            call("write_verifier", {"source": source}),
            call("self_test", {"candidate": gold, "expect": "valid"}),
            call("submit"),
        ]

    def script(body: dict[str, Any]) -> Turn:
        mine, n = turns[task_of(body)], turn_index(body)
        return mine[n] if n < len(mine) else call("submit")

    return script


def test_generate_and_score_the_newer_sources(tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    with OpenAIServer(_script(tasks)) as server:
        env |= {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY}
        args = ["bench", "generate", "--tasks", str(tasks), "--model", "openai/scripted", "--out", str(out)]
        proc = vouch(*args, "--json", str(tmp_path / "generate.json"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    generated = {r["task_id"]: r for r in json.loads((tmp_path / "generate.json").read_text())["tasks"]}
    ids = _task_dirs(tasks)
    sources = {task_id.split("-")[0] for task_id in ids}
    assert sources == {"tau2", "agentdojo", "acebench"} and set(generated) == set(ids)
    for task_id, row in generated.items():
        # The agent's replay of the gold on the public environment worked, and its verifier
        # passed the gold in the self-test: the sealed run read the states the harness replayed.
        assert row["submitted"] and row["final_verifier_positive_pass"], (task_id, row)
        trace = (out / task_id / "trace.jsonl").read_text()
        assert "replay failed" not in trace and "FileNotFoundError" not in trace, task_id
    proc = vouch(
        "bench", "score", "--tasks", str(tasks), "--verifiers", str(out),
        "--json", str(tmp_path / "bench.json"), "--store", str(tmp_path / "store.sqlite"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {t["task_id"]: t for t in json.loads((tmp_path / "bench.json").read_text())["tasks"]}
    assert set(rows) == set(ids)
    for task_id, row in rows.items():
        assert "INVALID" not in row["decisions"].values(), (task_id, row["decisions"])
        assert row["tpr"] > 0, (task_id, row)  # it accepts the gold at least
