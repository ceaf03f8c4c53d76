"""The engine's one pytest collector (``vouch.exec._pytest.make_collector``): what it records for
each kind of outcome, and that every in-run test execution uses it and no other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vouch
from vouch.exec import Call, LocalExecutor, RunSpec
from vouch.exec._pytest import make_collector

TESTS = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_passes():
    assert 1 == 1

def test_asserts():
    assert 1 == 2, "one is not two"

def test_fails_by_pytest_fail():
    pytest.fail("said so")

def test_raises():
    raise KeyError("k")

def test_skips():
    pytest.skip("not here")

def test_setup_error(broken):
    pass

def test_fails_then_teardown_errors(bad_teardown):
    assert False, "first failure"

def test_teardown_error_only(bad_teardown):
    pass
"""


def test_each_outcome_as_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_kinds.py").write_text(TESTS)
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    monkeypatch.chdir(tmp_path)
    collector = make_collector()
    argv = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", "test_kinds.py", "test_broken.py"]
    pytest.main(argv, plugins=[collector])
    tests = {nodeid.split("::")[-1]: entry for nodeid, entry in collector.tests.items()}
    assert tests["test_passes"] == {"outcome": "passed"}
    assert tests["test_asserts"]["outcome"] == "failed"
    assert tests["test_asserts"]["exception"] == "AssertionError"
    assert tests["test_asserts"]["message"].startswith("one is not two")
    assert tests["test_asserts"]["crash"].startswith("AssertionError: one is not two")
    assert tests["test_fails_by_pytest_fail"]["exception"] == "Failed"
    assert tests["test_raises"]["exception"] == "KeyError" and tests["test_raises"]["message"] == "'k'"
    assert tests["test_skips"]["outcome"] == "skipped" and "exception" not in tests["test_skips"]
    assert tests["test_setup_error"]["outcome"] == "error"
    assert tests["test_setup_error"]["exception"] == "RuntimeError" and tests["test_setup_error"]["when"] == "setup"
    first = tests["test_fails_then_teardown_errors"]
    assert first["outcome"] == "failed" and first["exception"] == "AssertionError" and first["when"] == "call"
    assert tests["test_teardown_error_only"]["outcome"] == "error"
    assert tests["test_teardown_error_only"]["when"] == "teardown"
    collection = tests["test_broken.py"]
    assert collection["outcome"] == "error" and collection["exception"] == "CollectionError"
    assert "no_such_module_here" in collection["message"]
    # The two views the worlds' runs report.
    assert collector.outcomes["test_kinds.py::test_skips"] == "skipped"
    assert set(collector.failures) == {n for n, e in collector.tests.items() if "exception" in e}


def test_every_in_run_test_execution_uses_the_one_collector() -> None:
    """No module of vouch but the engine's defines a pytest reporting hook."""
    root = Path(vouch.__file__).parent
    hooks = ("pytest_runtest_logreport", "pytest_runtest_makereport", "pytest_collectreport")
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in hooks:
                found.append(str(path.relative_to(root)))
    assert sorted(set(found)) == ["exec/_pytest.py"]


PLUGIN_PROBE = """
def test_probe(request):
    assert request.config.pluginmanager.has_plugin("hypothesispytest") is {expected}
"""


def test_runs_load_installed_plugins_only_when_named(executor: LocalExecutor) -> None:
    # hypothesis (a test dependency) installs a pytest plugin by entry point; vouch's own pytest
    # runs leave such plugins out (their weight is in every run's fork) unless a run names one.
    for extra, expected in (([], False), (["-p", "hypothesispytest"], True)):
        spec = RunSpec(
            entry=Call("vouch.exec._pytest:run_pytest", args=([*extra, "-q", "test_probe.py"],)),
            files={"test_probe.py": PLUGIN_PROBE.format(expected=expected)},
        )
        result = executor.run(spec)
        assert result.ok, result
        assert result.value["counts"] == {"passed": 1}, (extra, result.value)
