"""The in-run entry: pytest outcomes, failure kinds, branch coverage, call recording, overlays."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vouch.audit import SWE_PRELOAD
from vouch.exec import Call, Limits, LocalExecutor, RunSpec

LIMITS = Limits(timeout_s=120)  # the machine is shared: generous, never a timing assertion

LIB = """\
def clip(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def spin():
    while True:
        pass
"""

TESTS = """\
from lib import clip

def test_low():
    assert clip(-1, 0, 5) == 0

def test_mid():
    assert clip(3, 0, 5) == 3

def test_wrong():
    assert clip(9, 0, 5) == 9

def test_crash():
    clip(None, 0, 5)
"""


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as pool:
        yield pool


@pytest.fixture
def world(visible_tmp: Path) -> Path:
    (visible_tmp / "lib.py").write_text(LIB)
    (visible_tmp / "test_lib.py").write_text(TESTS)
    return visible_tmp


def _run(executor: LocalExecutor, world: Path, **kwargs: object) -> dict[str, object]:
    result = executor.run(
        RunSpec(
            Call("vouch.worlds._inrun:run_tests", args=(["test_lib.py"],), kwargs={"root": str(world), **kwargs}),
            limits=LIMITS,
        )
    )
    assert result.ok, (result.reason, result.stderr_tail)
    assert isinstance(result.value, dict)
    return result.value


def test_outcomes_and_failure_kinds(executor: LocalExecutor, world: Path) -> None:
    value = _run(executor, world)
    outcomes = value["outcomes"]
    assert outcomes == {
        "test_lib.py::test_low": "passed",
        "test_lib.py::test_mid": "passed",
        "test_lib.py::test_wrong": "failed",
        "test_lib.py::test_crash": "failed",
    }
    failures = value["failures"]
    assert isinstance(failures, dict)
    assert failures["test_lib.py::test_wrong"]["exception"] == "AssertionError"
    assert failures["test_lib.py::test_crash"]["exception"] == "TypeError"


def test_branch_coverage_shows_untaken_arcs(executor: LocalExecutor, world: Path) -> None:
    value = _run(executor, world, cover=["lib.py"])
    cov = value["coverage"]
    assert isinstance(cov, dict)
    entry = cov["lib.py"]
    executed = {tuple(a) for a in entry["executed_arcs"]}
    assert (2, 3) in executed  # value < low taken by test_low
    assert set(entry["branch_arcs"]) == {"2", "4"}
    assert not list(world.glob("**/__pycache__")), "nothing may be written into a world"


def test_records_literal_calls(executor: LocalExecutor, world: Path) -> None:
    value = _run(executor, world, record=["lib.py::clip"])
    calls = value["calls"]
    assert isinstance(calls, dict)
    recorded = calls["lib.py::clip"]
    assert {"args": ["-1", "0", "5"], "kwargs": {}} in recorded
    assert {"args": ["None", "0", "5"], "kwargs": {}} in recorded
    assert len(recorded) == 4


def test_a_recording_budget_records_the_chosen_tests_first_and_stops(executor: LocalExecutor, world: Path) -> None:
    """With a budget spent at once, only the first test's calls are recorded, and that test is
    the chosen one (the issue's own), not the file's first; every test still runs."""
    value = _run(
        executor,
        world,
        record=["lib.py::clip"],
        record_first=["test_lib.py::test_crash"],
        record_budget_s=0.0,
    )
    calls = value["calls"]
    assert isinstance(calls, dict)
    assert calls["lib.py::clip"] == [{"args": ["None", "0", "5"], "kwargs": {}}]
    outcomes = value["outcomes"]
    assert isinstance(outcomes, dict) and len(outcomes) == 4
    assert next(iter(outcomes)) == "test_lib.py::test_crash"


def test_overlay_replaces_a_module(executor: LocalExecutor, world: Path) -> None:
    value = _run(executor, world, overlay={"lib.py": "def clip(value, low, high):\n    return value\n"})
    outcomes = value["outcomes"]
    assert isinstance(outcomes, dict)
    assert outcomes["test_lib.py::test_low"] == "failed"
    assert outcomes["test_lib.py::test_wrong"] == "passed"
    assert (world / "lib.py").read_text() == LIB


def test_an_overlay_reaches_the_modules_import_pytest_loads(executor: LocalExecutor, visible_tmp: Path) -> None:
    """In pytest's own repository the world is pytest: a mutant of a module that ``import pytest``
    loads (``_pytest/compat.py``) is the one the tests see. The run is a fresh interpreter, as
    an environment's run is, so pytest is not imported before the run begins."""
    import _pytest

    installed = Path(_pytest.__file__).parent.parent
    shutil.copytree(installed / "_pytest", visible_tmp / "_pytest", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(installed / "pytest", visible_tmp / "pytest", ignore=shutil.ignore_patterns("__pycache__"))
    (visible_tmp / "test_world.py").write_text(
        "import _pytest.compat\n\n\ndef test_the_mutant_is_loaded():\n"
        "    assert getattr(_pytest.compat, 'VOUCH_MUTANT', None) == 1\n"
    )
    mutant = (visible_tmp / "_pytest" / "compat.py").read_text() + "\nVOUCH_MUTANT = 1\n"
    kwargs = {"argv": ["test_world.py"], "root": str(visible_tmp), "overlay": {"_pytest/compat.py": mutant}}
    result = executor.run(
        RunSpec(
            Call("vouch.worlds._foreign:run_inrun", args=(sys.executable, "run_tests", kwargs, {}, 60.0)),
            limits=LIMITS,
        )
    )
    assert result.ok, (result.reason, result.stderr_tail)
    assert isinstance(result.value, dict) and isinstance(result.value["result"], dict), result.value
    assert result.value["result"]["outcomes"] == {"test_world.py::test_the_mutant_is_loaded": "passed"}, result.value


def test_call_functions(executor: LocalExecutor, world: Path) -> None:
    calls = [
        {"module": "lib", "qualname": "clip", "args": ["7", "0", "5"]},
        {"module": "lib", "qualname": "clip", "args": ["None", "0", "5"]},
        {"module": "lib", "qualname": "missing", "args": []},
        {"module": "lib", "qualname": "spin", "args": []},
        {"module": "lib", "qualname": "clip", "args": ["-3", "0", "5"]},
    ]
    result = executor.run(
        RunSpec(Call("vouch.worlds._inrun:call_functions", args=(calls,), kwargs={"root": str(world)}))
    )
    assert result.ok
    assert result.value == [
        {"ok": True, "value": "5", "literal": "5", "exception": None},
        {"ok": False, "value": None, "literal": None, "exception": "TypeError"},
        {"ok": False, "value": None, "literal": None, "exception": "AttributeError"},
        {"ok": False, "value": None, "literal": None, "exception": "CallTimeout"},
        {"ok": True, "value": "0", "literal": "0", "exception": None},
    ]


def test_in_run_modules_keep_to_python_39() -> None:
    """_inrun, _foreign and the engine's pytest collector (which _inrun loads by path) run under an
    environment's interpreter (Python 3.9 for most of SWE-bench): no syntax or call newer than
    3.9 outside annotations."""
    import ast
    from pathlib import Path

    import vouch.worlds

    here = Path(vouch.worlds.__file__).parent
    for path in (here / "_inrun.py", here / "_foreign.py", here.parent / "exec" / "_pytest.py"):
        name = path.name
        source = path.read_text()
        tree = ast.parse(source, feature_version=(3, 9))
        assert "from __future__ import annotations" in source  # annotations are never evaluated
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip":
                assert not any(k.arg == "strict" for k in node.keywords), f"{name}:{node.lineno}: zip(strict=) is 3.10+"


FORGING_PLUGIN = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""

PLUGIN_SEEN = """\
import os


def test_plugins(request):
    manager = request.config.pluginmanager
    assert manager.hasplugin("xdist")
    assert not manager.hasplugin("forge")
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ
"""


def test_a_plugin_the_world_ships_is_not_loaded(executor: LocalExecutor, world: Path) -> None:
    """A ``*.dist-info/entry_points.txt`` with a ``pytest11`` entry in the world (what a patch can
    add) is not loaded, conftest or not; the environment's own plugins are, under their names."""
    (world / "forge_plugin.py").write_text(FORGING_PLUGIN)
    meta = world / "forge-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: forge\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[pytest11]\nforge = forge_plugin\n")
    (world / "test_seen.py").write_text(PLUGIN_SEEN)
    for noconftest in (False, True):
        value = _run(executor, world, noconftest=noconftest)
        assert value["outcomes"]["test_lib.py::test_wrong"] == "failed"
        result = executor.run(
            RunSpec(
                Call("vouch.worlds._inrun:run_tests", args=(["test_seen.py"],), kwargs={"root": str(world)}),
                limits=LIMITS,
            )
        )
        assert result.ok and isinstance(result.value, dict)
        assert result.value["outcomes"] == {"test_seen.py::test_plugins": "passed"}, result.value["failures"]


def test_a_start_up_file_in_the_world_is_not_imported(executor: LocalExecutor, world: Path) -> None:
    """A ``sitecustomize.py`` or ``usercustomize.py`` at the world's import root (what a patch can
    add) is not imported when the environment's interpreter starts; the world still imports
    first, from ``PYTHONPATH`` as the environment gives it."""
    for name in ("sitecustomize.py", "usercustomize.py"):
        (world / name).write_text("import os\nos.environ['VOUCH_TEST_START_UP'] = __file__\n")
    (world / "test_start_up.py").write_text(
        "import os\nimport lib\n\n\ndef test_nothing_ran_at_start_up():\n"
        "    assert 'VOUCH_TEST_START_UP' not in os.environ\n"
        f"    assert lib.__file__ == {str(world / 'lib.py')!r}\n"
    )
    kwargs = {"argv": ["test_start_up.py"], "root": str(world), "harness": ["-rA"]}
    env = {"PYTHONPATH": str(world)}
    result = executor.run(
        RunSpec(
            Call("vouch.worlds._foreign:run_inrun", args=(sys.executable, "run_tests", kwargs, env, 60.0)),
            limits=LIMITS,
        )
    )
    assert result.ok, (result.reason, result.stderr_tail)
    assert isinstance(result.value, dict) and isinstance(result.value["result"], dict), result.value
    outcomes = result.value["result"]["outcomes"]
    # (pytest finds its rootdir above the world here, as a harness run does)
    assert [(k.rsplit("/", 1)[-1], v) for k, v in outcomes.items()] == [
        ("test_start_up.py::test_nothing_ran_at_start_up", "passed")
    ], result.value["log"][-2000:]
