"""The agent's tools: confined to the public files, hidden paths unreadable from every run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vouch.agent import CONFIGS, Toolbox, Workspace, hidden_paths
from vouch.bench import PRELOAD, load_task
from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.exec import LocalExecutor, RunSpec, Script

SECRET = "SECRET-REFERENCE-7f3a"
GOOD = "def add(a, b):\n    return a + b\n"
PROMPT = 'def add(a, b):\n    """Add.\n    >>> add(2, 3)\n    5\n    >>> add(-1, 1)\n    0\n    """\n'


def _case(case_id: str, label: str, category: str, sub: str, candidate: dict) -> Case:
    return Case(
        id=case_id,
        label=label,
        category=category,
        subcategory=sub,
        candidate=candidate,
        provenance=Provenance(construction="test", content_hash=content_hash(candidate)),
        rationale=f"{SECRET} case",
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Outside /tmp (private in runs): without hiding, a run could read these files.
    from _scratch import scratch_root

    base = scratch_root() / f"agent-tools-{os.getpid()}"
    tasks = base / "tasks"
    task = TaskFiles(
        spec=TaskSpec(
            id="code-add",
            kind="code",
            source=SourceInfo(benchmark="test", version="0", original_id="add"),
            entry_point="add",
        ),
        instruction="Write add(a, b).",
        environment={"prompt.py": PROMPT, "sub/notes.md": "public notes"},
        reference={
            "verifier.py": f"# {SECRET}\ndef verify(candidate, env):\n"
            "    return env.call('add', [2, 3])['value'] == 5\n"
        },
        cases=[_case("gold", "positive", "gold", "gold", {"source": GOOD})],
    )
    write_task(tasks, task)
    env = tasks / "code-add" / "environment"
    (env / "leak.py").symlink_to(tasks / "code-add" / "reference" / "verifier.py")
    (env / "leakdir").symlink_to(tasks / "code-add" / "reference")
    yield tasks
    import shutil

    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def executor():
    with LocalExecutor(preload=[*PRELOAD, "vouch.agent._runside"]) as pool:
        yield pool


def _toolbox(root: Path, executor, executions: int = 20) -> Toolbox:
    task = load_task(root / "code-add")
    hidden = hidden_paths([task], root, root.parent / "out")
    return Toolbox(task, executor, CONFIGS["default"], executions=executions, hidden=hidden)


@pytest.mark.parametrize(
    "name",
    [
        "reference/verifier.py",
        "../code-add/reference/verifier.py",
        "environment/../reference/verifier.py",
        "environment/../../code-add/cases/gold.json",
        "cases/gold.json",
        "environment/leak.py",
        "environment/leakdir/verifier.py",
        "/etc/passwd",
        "~/x",
        "",
        "environment/\0",
    ],
)
def test_read_file_refuses_everything_outside_the_public_set(root: Path, name: str) -> None:
    workspace = Workspace(load_task(root / "code-add"))
    assert workspace.text(name) is None
    assert all(SECRET not in (workspace.text(n) or "") for n in workspace.files)


def test_the_public_set(root: Path) -> None:
    workspace = Workspace(load_task(root / "code-add"))
    assert sorted(workspace.files) == [
        "environment/prompt.py",
        "environment/sub/notes.md",
        "instruction.md",
        "task.toml",
    ]
    assert workspace.text("./environment/sub/../prompt.py") == PROMPT
    assert workspace.listing("environment/sub") == ["environment/sub/notes.md"]
    assert "replay" not in (workspace.text("task.toml") or "")


_SNOOP = """
import json, os
root = {root!r}
found = {{}}
for path in [root + "/code-add/reference/verifier.py", root + "/code-add/cases/gold.json",
             "task/environment/leak.py"]:
    try:
        found[path] = open(path).read()
    except OSError as exc:
        found[path] = type(exc).__name__
for path in [root, root + "/code-add", root + "/code-add/reference", root + "/code-add/cases"]:
    try:
        found[path] = sorted(os.listdir(path))
    except OSError as exc:
        found[path] = type(exc).__name__
print(json.dumps(found))
"""


def test_run_python_sees_nothing_hidden_while_an_unhidden_run_would(root: Path, executor) -> None:
    code = _SNOOP.format(root=str(root))
    # The control: the same program, run without hidden paths, reads the secret.
    control = executor.run(RunSpec(entry=Script("main.py"), files={"main.py": code}))
    assert SECRET in control.stdout_tail
    toolbox = _toolbox(root, executor)
    outcome = toolbox.call("run_python", {"code": code})
    assert outcome.counted and outcome.data["status"] == "ok"
    assert SECRET not in outcome.text
    found = json.loads(outcome.text.split("--- stdout ---\n")[1].split("\n--- stderr")[0])
    assert found[str(root)] == []  # the whole tasks root is an empty directory to the run
    assert found[str(root) + "/code-add/reference/verifier.py"] in ("FileNotFoundError", "")
    assert found["task/environment/leak.py"] == "FileNotFoundError"  # the symlink was never copied


def test_a_self_tested_verifier_cannot_read_the_reference_either(root: Path, executor) -> None:
    toolbox = _toolbox(root, executor)
    snooper = (
        "def verify(candidate, env):\n"
        f"    return {SECRET!r} in open({str(root / 'code-add' / 'reference' / 'verifier.py')!r}).read()\n"
    )
    assert toolbox.call("write_verifier", {"source": snooper}).status == "ok"
    outcome = toolbox.call("self_test", {"candidate": {"source": GOOD}, "expect": "valid"})
    assert outcome.data["decision"] != "PASS"


def test_run_public_runs_the_prompts_examples(root: Path, executor) -> None:
    toolbox = _toolbox(root, executor)
    good = toolbox.call("run_public", {"source": GOOD})
    bad = toolbox.call("run_public", {"source": "def add(a, b):\n    return a - b\n"})
    assert good.data["ok"] is True and bad.data["ok"] is False
    assert '"passed": false' in bad.text


def test_execution_budget_refuses_and_verifier_checks(root: Path, executor) -> None:
    toolbox = _toolbox(root, executor, executions=1)
    assert toolbox.call("run_python", {"code": "print(1)"}).counted
    refused = toolbox.call("self_test", {"candidate": {"source": GOOD}, "expect": "valid"})
    assert refused.status == "refused" and not refused.counted
    assert toolbox.state.executions_used == 1
    syntax = toolbox.call("write_verifier", {"source": "def verify(:\n"})
    assert syntax.status == "error" and toolbox.state.verifier is None
    assert toolbox.call("submit", {}).status == "error"  # nothing written yet
    assert toolbox.call("nope", {}).status == "malformed"
    assert toolbox.call("read_file", {"wrong": 1}).status == "malformed"


def test_the_challenge_tool_runs_the_challenger_with_every_hidden_path(root: Path, executor) -> None:
    task = load_task(root / "code-add")
    hidden = hidden_paths([task], root, root.parent / "out")
    toolbox = Toolbox(task, executor, CONFIGS["with-challenger"], executions=20, hidden=hidden)
    assert "challenge" in toolbox.specs
    assert toolbox.call("write_verifier", {"source": "def verify(candidate, env):\n    return False\n"}).status == "ok"
    outcome = toolbox.call("challenge", {"candidate": {"source": GOOD}})
    assert outcome.status == "ok" and outcome.counted, outcome.text
    assert "REJECTS the candidate you hold valid" in outcome.text
    # A file elsewhere under the tasks root: the challenger alone hides only the task's own
    # withheld directories; the tool adds the rest, so the verifier cannot read this either.
    other = root / "other-secret.txt"
    other.write_text("x")
    snooper = f"def verify(candidate, env):\n    return open({str(other)!r}).read() == 'x'\n"
    assert toolbox.call("write_verifier", {"source": snooper}).status == "ok"
    outcome = toolbox.call("challenge", {"candidate": {"source": GOOD}})
    assert "accepts the original" not in outcome.text, outcome.text
    assert outcome.data["counts"]["findings"] >= 1
    # The control: the challenger on the bare executor lets the same verifier read the file.
    from vouch.bench import run_challenge

    bare = run_challenge(task, snooper, {"source": GOOD}, executor)
    assert bare.original.decision.value == "PASS"


@pytest.mark.parametrize(
    ("name", "arguments", "status"),
    [
        ("read_file", {"path": 5}, "error"),
        ("read_file", {"path": "instruction.md", "offset": "x"}, "ok"),
        ("read_file", {"path": "instruction.md", "offset": -3}, "ok"),
        ("list_files", {"directory": None}, "ok"),
        ("run_public", {"source": 5}, "error"),
        ("run_public", {"calls": []}, "error"),
        ("self_test", {"candidate": "x", "expect": "valid"}, "error"),
        ("self_test", {"candidate": {"source": GOOD}, "expect": ["valid"]}, "error"),
        ("self_test", {"candidate": {"source": GOOD, "patch": "x"}, "expect": "valid"}, "error"),
        ("write_verifier", {"source": None}, "error"),
        ("write_verifier", {"source": "x = (", "extra": 1}, "malformed"),
        ("submit", {"now": True}, "malformed"),
        ("reset", {}, "malformed"),  # a code task has no reset
    ],
)
def test_odd_arguments_get_an_answer_never_a_crash(
    root: Path, executor, name: str, arguments: dict, status: str
) -> None:
    toolbox = _toolbox(root, executor)
    toolbox.call("write_verifier", {"source": "def verify(candidate, env):\n    return True\n"})
    outcome = toolbox.call(name, arguments)
    assert outcome.status == status, outcome.text
    assert outcome.text and not outcome.counted
