"""``vouch bench generate`` then ``vouch bench score`` on real tasks, against a scripted model.

The model is a loopback OpenAI-compatible server replaying scripted turns; the real openai SDK
in a ``vouch`` subprocess talks to it. Four agents on four real tasks (HumanEval, BFCL, and an
AgentDojo user task as a state and a tool-call task):

- humaneval-0: a good agent (inspects, runs the public examples, writes, self-tests, submits)
- the BFCL task: an agent whose verifier rejects everything
- the AgentDojo state task: an agent that tries to read hidden files (read_file and run_python)
  and to import AgentDojo's own task classes, sends malformed tool-call JSON, an unknown tool and
  a text-only reply, then writes a verifier of the states (which imports AgentDojo in vain)
- the AgentDojo tool-call task: an agent that spends its whole execution budget before writing
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from loopback import KEY, OpenAIServer, Turn, call, task_of, turn_index

from _scratch import scratch_root

pytestmark = pytest.mark.slow

VOUCH = [sys.executable, "-m", "vouch"]
# A suite started in the background of a non-interactive shell (or under nohup) inherits SIGINT
# ignored, and so would the command: Ctrl-C is restored for it, as a terminal would have it.
WITH_CTRL_C = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])",
    "-m",
    "vouch",
]
HE, STATE, TOOLCALL = "humaneval-0", "agentdojo-banking-user_task_0-state", "agentdojo-banking-user_task_0-toolcall"
REJECT_ALL = "def verify(candidate, env):\n    return False\n"
BAD_SOURCE = "def has_close_elements(numbers, threshold):\n    return True\n"


def vouch(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def tasks() -> Any:
    base = scratch_root() / f"agent-cycle-{os.getpid()}"
    root = base / "tasks"
    proc = vouch("data", "build", "humaneval", "--out", str(root / "humaneval"), "--limit", "1", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = vouch("data", "build", "bfcl", "--out", str(root / "bfcl"), "--limit", "1", "--no-check")
    assert proc.returncode == 0, proc.stderr[-2000:]
    from vouch.sources import build_source

    build_source("agentdojo", root / "agentdojo", seed=0, options={"user_tasks": ["banking/user_task_0"]})
    yield root
    shutil.rmtree(base, ignore_errors=True)


def _task_dir(root: Path, task_id: str) -> Path:
    return next(p.parent for p in root.rglob("task.toml") if p.parent.name == task_id)


def _bfcl_id(root: Path) -> str:
    return next(p.parent.name for p in (root / "bfcl").rglob("task.toml"))


def _gold(root: Path, task_id: str) -> dict[str, Any]:
    return json.loads((_task_dir(root, task_id) / "reference" / "gold.json").read_text())


def _reference(root: Path, task_id: str) -> str:
    return (_task_dir(root, task_id) / "reference" / "verifier.py").read_text()


SNOOP = """
import json, os
found = {{}}
for path in {paths!r}:
    try:
        found[path] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read()
    except OSError as exc:
        found[path] = type(exc).__name__
try:  # AgentDojo's task classes hold the ground truth and the utility check
    from agentdojo.default_suites.v1.banking.user_tasks import UserTask0
    found["agentdojo"] = UserTask0.GROUND_TRUTH_OUTPUT
except ImportError as exc:
    found["agentdojo"] = type(exc).__name__
print("FOUND " + json.dumps(found))
"""

STATE_VERIFIER = """
def verify(candidate, env):
    try:  # a verifier under test cannot import AgentDojo's own check either
        from agentdojo.default_suites.v1.banking.user_tasks import UserTask0
        raise RuntimeError("imported " + UserTask0.__name__)
    except ImportError:
        pass
    before = env.pre_state["bank_account"]["transactions"]
    after = env.post_state["bank_account"]["transactions"]
    new = [t for t in after if t not in before]
    return any(t["recipient"] == "UK12345678901234567890" and abs(t["amount"] - 98.7) < 1e-9 for t in new)
"""


def make_script(root: Path) -> Any:
    state_dir = _task_dir(root, STATE)
    bfcl = _bfcl_id(root)
    scripts: dict[str, list[Turn]] = {
        HE: [
            call("list_files"),
            call("read_file", {"path": "environment/prompt.py"}),
            call("run_public", {"source": _gold(root, HE)["source"]}),
            call("write_verifier", {"source": _reference(root, HE)}),
            call("self_test", {"candidate": _gold(root, HE), "expect": "valid"}),
            call("self_test", {"candidate": {"source": BAD_SOURCE}, "expect": "invalid"}),
            call("submit"),
        ],
        bfcl: [
            call("read_file", {"path": "instruction.md"}),
            call("write_verifier", {"source": REJECT_ALL}),
            call("self_test", {"candidate": _gold(root, bfcl), "expect": "valid"}),
            call("submit"),
        ],
        STATE: [
            Turn(
                calls=[
                    ("read_file", {"path": "reference/verifier.py"}),
                    ("read_file", {"path": "../" + STATE + "/cases/gold.json"}),
                    ("read_file", {"path": str(state_dir / "reference" / "gold.json")}),
                    ("list_files", {"directory": "../.."}),
                ]
            ),
            call(
                "run_python",
                {
                    "code": SNOOP.format(
                        paths=[
                            str(state_dir / "reference" / "verifier.py"),
                            str(state_dir / "reference"),
                            str(state_dir / "cases"),
                            str(root),
                        ]
                    )
                },
            ),
            Turn(calls=[("write_verifier", '{"source": "def verify(')]),  # arguments cut mid-JSON
            call("shell", {"cmd": "cat reference/verifier.py"}),  # no such tool
            Turn(text="I believe I am done."),  # no tool call at all
            call("run_public", {"calls": [{"function": "read_file", "args": {"file_path": "bill-december-2023.txt"}}]}),
            call("reset"),
            call("write_verifier", {"source": STATE_VERIFIER}),
            call("self_test", {"candidate": _gold(root, STATE), "expect": "valid"}),
            call("submit"),
        ],
    }

    def script(body: dict[str, Any]) -> Turn:
        task, n = task_of(body), turn_index(body)
        if task == TOOLCALL:  # spends the budget, writes late, never submits
            if n == 6:
                return call("write_verifier", {"source": _reference(root, TOOLCALL)})
            return call("run_python", {"code": f"print({n})"})
        turns = scripts[task]
        return turns[n] if n < len(turns) else call("submit")

    return script


CONFIG = 'base = "default"\ndescription = "tight budgets for the test"\n[budgets]\nexecutions = 4\nturns = 10\n'


def _env(url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return env | {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY} | extra


@pytest.fixture(scope="module")
def cycle(tasks: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("cycle")
    (work / "tight.toml").write_text(CONFIG)
    (work / "prices.toml").write_text('"openai/scripted" = {input = 1.0, output = 10.0}\n')
    out = scratch_root() / f"agent-cycle-out-{os.getpid()}"
    with OpenAIServer(make_script(tasks)) as server:
        args = [
            "bench", "generate", "--tasks", str(tasks), "--model", "openai/scripted", "--out", str(out),
            "--config", str(work / "tight.toml"), "--concurrency", "2", "--prices", str(work / "prices.toml"),
            "--json", str(work / "generate.json"),
        ]  # fmt: skip
        first = vouch(*args, env=_env(server.url))
        requests_first = len(server.requests)
        again = vouch(*args[:-2], env=_env(server.url))
        requests_again = len(server.requests) - requests_first
    yield {
        "first": first,
        "again": again,
        "requests_again": requests_again,
        "results": json.loads((work / "generate.json").read_text()) if first.returncode == 0 else None,
        "out": out,
        "work": work,
        "tasks": tasks,
    }
    shutil.rmtree(out, ignore_errors=True)


def _row(cycle: Any, task_id: str) -> dict[str, Any]:
    return next(r for r in cycle["results"]["tasks"] if r["task_id"] == task_id)


def test_generate_writes_the_layout_score_reads(cycle: Any) -> None:
    assert cycle["first"].returncode == 0, cycle["first"].stderr[-3000:]
    results = cycle["results"]
    assert results["kind"] == "generate" and results["schema_version"] == 1
    assert {"vouch_version", "seed", "config"} <= set(results)
    assert results["config"]["harness"]["budgets"]["executions"] == 4
    assert len(results["tasks"]) == 4 and not results["unfinished"]
    for row in results["tasks"]:
        task_out = cycle["out"] / row["task_id"]
        assert (task_out / "verifier.py").is_file() and (task_out / "done.json").is_file()
        events = [json.loads(line) for line in (task_out / "trace.jsonl").read_text().splitlines()]
        assert events[0]["type"] == "start" and events[-1]["type"] == "end"
        assert {"message", "model_reply", "tool"} <= {e["type"] for e in events}
        assert row["input_tokens"] == 100 * row["model_calls"] and row["output_tokens"] == 20 * row["model_calls"]
        assert row["cost_usd"] == pytest.approx(row["model_calls"] * (100 * 1.0 + 20 * 10.0) / 1e6)


def test_the_good_agent(cycle: Any) -> None:
    row = _row(cycle, HE)
    assert row["submitted"] and row["end_reason"] == "submitted"
    assert row["executions_used"] == 3 and not row["budget_exhausted"]
    assert not row["never_positive_pass"] and row["final_verifier_positive_pass"]
    assert (row["negative_self_tests"], row["negative_self_test_fails"]) == (1, 1)


def test_the_reject_all_agent_never_saw_a_positive_pass(cycle: Any) -> None:
    row = _row(cycle, _bfcl_id(cycle["tasks"]))
    assert row["submitted"] and row["positive_self_tests"] == 1
    assert row["positive_self_test_passes"] == 0 and row["never_positive_pass"]
    assert cycle["results"]["summary"]["never_positive_pass"] >= 1


def test_the_agent_that_exhausts_its_budget(cycle: Any) -> None:
    row = _row(cycle, TOOLCALL)
    assert row["budget_exhausted"] and row["exhausted"] == ["executions", "turns"]
    assert row["exhausted_before_verifier"] and row["executions_used"] == 4
    assert row["refused_executions"] == 10 - 4 - 1  # every run_python after the fourth, but the write
    assert not row["submitted"] and row["end_reason"] == "turns" and row["verifier_written"]
    assert cycle["results"]["summary"]["exhausted_before_verifier"] == 1


def test_the_snooping_agent_gets_nothing_hidden(cycle: Any) -> None:
    row = _row(cycle, STATE)
    trace = (cycle["out"] / STATE / "trace.jsonl").read_text()
    events = [json.loads(line) for line in trace.splitlines()]
    reads = [e for e in events if e["type"] == "tool" and e["name"] in ("read_file", "list_files")][:4]
    assert [e["status"] for e in reads[:3]] == ["error"] * 3
    assert json.loads(json.dumps(reads[3]["data"]))["files"] == []
    [run] = [e for e in events if e["type"] == "tool" and e["name"] == "run_python"]
    found = json.loads(run["result"].split("FOUND ", 1)[1].split("\n", 1)[0])
    state_dir = _task_dir(cycle["tasks"], STATE)
    nothing = ([], "", "FileNotFoundError")  # the tasks root is an empty directory to the run
    assert found[str(cycle["tasks"])] == []
    for path in ("reference", "cases", "reference/verifier.py"):
        assert found[str(state_dir / path)] in nothing
    assert found["agentdojo"] in ("ModuleNotFoundError", "ImportError")
    # What the model was told (tool results, user messages) holds nothing withheld. (The test
    # scripted the model's own write_verifier with the reference text, so only replies to it count.)
    told = json.dumps(
        [[e["result"], e["data"]] for e in events if e["type"] == "tool"]
        + [e["content"] for e in events if e.get("role") in ("user", "system")]
    )
    assert "Reference verifier: AgentDojo" not in told
    for case in (state_dir / "cases").glob("*.json"):
        assert json.loads(case.read_text())["rationale"] not in trace
    assert row["submitted"] and row["final_verifier_positive_pass"]


def test_malformed_replies_are_answered_and_counted(cycle: Any) -> None:
    row = _row(cycle, STATE)
    assert row["malformed_tool_calls"] == 2 and row["replies_without_tool_call"] == 1
    events = [json.loads(line) for line in (cycle["out"] / STATE / "trace.jsonl").read_text().splitlines()]
    malformed = [e for e in events if e["type"] == "tool" and e["status"] == "malformed"]
    assert "not valid JSON" in malformed[0]["result"] and "unknown tool 'shell'" in malformed[1]["result"]


def test_resume_skips_finished_tasks(cycle: Any) -> None:
    assert cycle["again"].returncode == 0, cycle["again"].stderr[-2000:]
    assert cycle["requests_again"] == 0
    assert cycle["again"].stderr.count(": reused,") == 4


def test_score_reads_the_generated_verifiers(cycle: Any) -> None:
    work = cycle["work"]
    proc = vouch(
        "bench", "score", "--tasks", str(cycle["tasks"]), "--verifiers", str(cycle["out"]),
        "--json", str(work / "bench.json"), "--store", str(work / "store.sqlite"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {t["task_id"]: t for t in json.loads((work / "bench.json").read_text())["tasks"]}
    assert rows[HE]["ba_norm"] >= 90  # the good agent wrote the reference verifier
    assert rows[_bfcl_id(cycle["tasks"])]["all_reject"] is True
    assert rows[_bfcl_id(cycle["tasks"])]["tpr"] == 0
    # The state verifier reads snapshots replayed outside its sealed run: it decides every case.
    assert rows[STATE]["tpr"] > 0.5 and rows[STATE]["tnr"] > 0
    assert "INVALID" not in rows[STATE]["decisions"].values()


def test_report_renders_the_generate_results(cycle: Any) -> None:
    work = cycle["work"]
    proc = vouch("report", str(work / "generate.json"), "--html", str(work / "generate.html"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (work / "generate.html").read_text()
    for task_id in (HE, STATE, TOOLCALL):
        assert task_id in page
    assert "exhausted before the verifier" in page and "<script src" not in page


@pytest.mark.parametrize(
    ("env", "code", "names"),
    [
        ({"OPENAI_API_KEY": ""}, 2, "OPENAI_API_KEY"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, 3, "http://127.0.0.1:9/v1"),
    ],
)
def test_missing_key_or_unreachable_endpoint_is_one_line_before_any_task(
    tasks: Path, tmp_path: Path, env: dict[str, str], code: int, names: str
) -> None:
    base = _env("http://127.0.0.1:9/v1")
    proc = vouch(
        "bench", "generate", "--tasks", str(tasks), "--model", "openai/m", "--out", str(tmp_path / "out"),
        env=base | env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == code
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and names in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


def test_ctrl_c_keeps_finished_tasks(tasks: Path, tmp_path: Path) -> None:
    release = threading.Event()
    bfcl = _bfcl_id(tasks)

    def script(body: dict[str, Any]) -> Turn:
        if task_of(body) == HE:
            release.wait(60)  # holds the second task mid-generation until the test has pressed Ctrl-C
        return call("write_verifier", {"source": REJECT_ALL}) if turn_index(body) == 0 else call("submit")

    out = tmp_path / "out"
    with OpenAIServer(script) as server:
        args = ["bench", "generate", "--tasks", str(tasks), "--model", "openai/m", "--out", str(out),
                "--concurrency", "1", "--task", bfcl, "--task", HE]  # fmt: skip
        proc = subprocess.Popen([*WITH_CTRL_C, *args], env=_env(server.url), stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not (out / bfcl / "done.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        while not any(task_of(b) == HE for b in list(server.requests)) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        # The held reply goes out only once the command has ended or had ample time to see the
        # Ctrl-C: a fixed half second let a loaded machine finish the second task first.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        release.set()
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 130, stderr[-2000:]
        assert (out / bfcl / "done.json").exists() and (out / bfcl / "verifier.py").exists()
        assert not (out / HE / "done.json").exists() and not (out / HE / "verifier.py").exists()
        again = vouch(*args, env=_env(server.url))
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{bfcl}: reused" in again.stderr and f"{HE}: generated" in again.stderr
