"""Problem sets: HumanEval, MBPP (both shapes), EvalPlus's files and a user's own file."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from _shared_data import SHARED_DATA
from vouch.core import EQUALITY_SOURCE, equal
from vouch.errors import UsageError
from vouch.sources.problems import PROBLEM_SETS, ProblemsFileError, load_problem_set, mbpp_task_id


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _runs(program: str, test: str, entry: str) -> bool:
    """The benchmark's own way: program and test in one namespace, then check(candidate)."""
    namespace: dict[str, object] = {}
    try:
        exec(program + "\n" + test + f"\ncheck({entry})\n", namespace)
    except Exception:
        return False
    return True


HAND_WRITTEN = [
    {
        "task_id": "mine/add",
        "prompt": 'def add(a, b):\n    """Return a + b."""\n',
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    },
    {
        "task_id": "mine/first",
        "prompt": 'def first(xs):\n    """The first element of xs, or None when it is empty."""\n',
        "entry_point": "first",
        "canonical_solution": "    return xs[0] if xs else None\n",
        "test": "def check(candidate):\n    assert candidate([4, 5]) == 4\n",
    },
    {
        "task_id": "mine/shout",
        "prompt": 'def shout(s):\n    """s in capitals."""\n',
        "entry_point": "shout",
        "canonical_solution": "    return s.upper()\n",
        "test": "def check(candidate):\n    assert shout('a') == 'A'\n",
    },
]


def test_a_hand_written_file_in_human_evals_format_is_a_problem_set(tmp_path: Path) -> None:
    problems = load_problem_set(_write(tmp_path / "mine.jsonl", HAND_WRITTEN))
    assert sorted(problems.problems) == ["mine/add", "mine/first", "mine/shout"]
    assert problems.benchmark == "mine" and problems.name == "file" and len(problems.sha256) == 64
    for p in problems.problems.values():
        assert _runs(p.reference, p.test, p.entry_point), p.task_id


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json\n", "line 1: not JSON"),
        ("[1, 2]\n", "a line must be a JSON object"),
        (
            '{"task_id": "a", "prompt": "def f():\\n", "entry_point": "f", "canonical_solution": "  pass\\n"}\n',
            "test is missing",
        ),
        (
            '{"task_id": "a", "prompt": "def f():\\n", "entry_point": "f", "canonical_solution": "  pass\\n", '
            '"test": "x = 1"}\n',
            "defines no check",
        ),
        (
            '{"task_id": "a", "prompt": "def f():\\n", "entry_point": "f", "canonical_solution": "  pass\\n", '
            '"test": "def check(:"}\n',
            "test is not Python",
        ),
        ("", "holds no problem"),
        ('{"task_id": 2, "text": "t", "code": "def f(): pass", "test_list": []}\n', "test_list is empty"),
        (
            '{"task_id": 2, "text": "t", "code": "def f(): pass", "test_list": ["assert g() == 1"]}\n',
            "calls a function",
        ),
    ],
)
def test_a_malformed_problems_file_is_one_line(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ProblemsFileError) as err:
        load_problem_set(path)
    message = str(err.value)
    assert says in message and "\n" not in message and str(path) in message


def test_an_unknown_name_lists_the_sets() -> None:
    with pytest.raises(UsageError) as err:
        load_problem_set("humaneva")
    assert all(name in str(err.value) for name in PROBLEM_SETS)


@pytest.mark.parametrize(
    ("raw", "canonical"), [("Mbpp/2", "Mbpp/2"), ("MbppEval/2", "Mbpp/2"), ("2", "Mbpp/2"), (2, "Mbpp/2")]
)
def test_mbpp_task_ids_in_every_spelling(raw: object, canonical: str) -> None:
    assert mbpp_task_id(raw) == canonical


def test_humaneval_is_the_pinned_package() -> None:
    humaneval = load_problem_set("humaneval")
    assert len(humaneval.problems) == 164 and humaneval.benchmark == "humaneval"
    assert humaneval.resolve("0") == "HumanEval/0" and humaneval.resolve("HumanEval/163") == "HumanEval/163"


def test_mbpp_is_read_from_the_data_directory_and_g_passes_t0_where_mbpp_does() -> None:
    mbpp = load_problem_set("mbpp", data_dir=SHARED_DATA)
    assert len(mbpp.problems) == 427 and mbpp.benchmark == "mbpp"
    assert mbpp.resolve("MbppEval/2") == mbpp.resolve("2") == "Mbpp/2"
    # Every G is a program (CodeT's file puts MBPP's own indentation under a four-space docstring);
    # a few fail their own T0 as the file has them (asserts on math.isclose without the import
    # MBPP's test_imports held, a recursion past Python's limit): the audit reports those ill-formed.
    failing = [p.task_id for p in mbpp.problems.values() if not _runs(p.reference, p.test, p.entry_point)]
    assert 0 < len(failing) < 15, failing


def test_the_original_mbpp_shape_calls_the_function_by_name_with_its_setup_and_imports(tmp_path: Path) -> None:
    row = {
        "task_id": 7,
        "text": "Write a function to add the first n numbers.",
        "code": "import math\ndef total(n):\n  return sum(range(n + 1))",
        "test_list": ["assert total(3) == EXPECTED", "assert math.isclose(total(4), 10)"],
        "test_imports": ["import math"],
        "test_setup_code": "EXPECTED = 6",
    }
    problems = load_problem_set(_write(tmp_path / "mbpp.jsonl", [row]))
    p = problems.problems["Mbpp/7"]
    assert problems.benchmark == "mbpp" and p.entry_point == "total"
    assert "add the first n numbers" in p.prompt
    assert _runs(p.reference, p.test, p.entry_point)
    assert not _runs("def total(n):\n    return n\n", p.test, p.entry_point)


def test_evalplus_files_give_base_tests_by_default_and_extended_inputs_with_plus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {
        "task_id": "Mbpp/9",
        "prompt": '"""\nWrite a function to halve a number.\nassert half(4) == 2.0\n"""\n',
        "entry_point": "half",
        "canonical_solution": "def half(x):\n    return x / 2\n",
        "assertion": "assert half(4) == 2.0",
        "base_input": [[4]],
        "plus_input": [[3], [-1]],
        "atol": 0,
    }
    with gzip.open(tmp_path / "MbppPlus-v0.2.0.jsonl.gz", "wt") as handle:
        handle.write(json.dumps(row) + "\n")
    monkeypatch.setenv("VOUCH_DATA_DIR", str(tmp_path))
    base = load_problem_set("mbpp+")
    plus = load_problem_set("mbpp+", plus=True)
    wrong_on_odd = "def half(x):\n    return x // 2 if x % 2 == 0 else 0\n"
    assert base.benchmark == "mbpp" and base.resolve("MbppEval/9") == "Mbpp/9"
    assert _runs(wrong_on_odd, base.problems["Mbpp/9"].test, "half")
    assert not _runs(wrong_on_odd, plus.problems["Mbpp/9"].test, "half")
    assert _runs(plus.problems["Mbpp/9"].reference, plus.problems["Mbpp/9"].test, "half")


def test_an_evalplus_set_missing_from_every_data_directory_says_where_to_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOUCH_DATA_DIR", str(tmp_path))
    with pytest.raises(UsageError) as err:
        load_problem_set("humaneval+")
    assert "HumanEvalPlus" in str(err.value) and str(tmp_path) in str(err.value)


@pytest.mark.parametrize(
    ("actual", "expected", "same"),
    [
        (1.0, 1.0 + 1e-9, True),
        (1.0, 1.1, False),
        (float("nan"), float("nan"), True),
        ((1, 2), [1, 2], False),
        ([1.0, (2, 3.0)], [1.0, (2, 3.0000000001)], True),
        ({"a": 1}, {"a": 1.0}, True),
        ("a", 1, False),
    ],
)
def test_one_equality_rule_in_vouch_and_in_the_text_it_writes(actual: object, expected: object, same: bool) -> None:
    namespace: dict[str, object] = {}
    exec(EQUALITY_SOURCE, namespace)
    assert equal(actual, expected) is same
    assert namespace["_vouch_equal"](actual, expected) is same  # type: ignore[operator]
    assert equal(1.0, 1.05, 0.1) and not math.isclose(1.0, 1.05, abs_tol=1e-6)
