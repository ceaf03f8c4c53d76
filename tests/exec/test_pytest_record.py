"""The one record of a pytest run (``vouch.exec.PytestRun``): what the collector writes is what
every reader reads back, and a record without its shape is refused with one error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from vouch.exec import PytestOutcome, PytestRecordError, PytestRun
from vouch.exec._pytest import make_collector

TESTS = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

def test_passes():
    assert 1 == 1

def test_asserts():
    assert 1 == 2, "one is not two"

def test_skips():
    pytest.skip("not here")

def test_setup_error(broken):
    pass
"""


def test_the_collectors_record_reads_back_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_record_kinds.py").write_text(TESTS)
    monkeypatch.chdir(tmp_path)
    collector = make_collector()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "test_record_kinds.py"], plugins=[collector])
    sys.modules.pop("test_record_kinds", None)  # imported into this process: no other run finds it
    record = collector.record(code)
    assert PytestRun.from_json(record.to_json()) == record
    assert record.exit_code == 1
    by_name = {nodeid.split("::")[-1]: test for nodeid, test in record.tests.items()}
    assert list(by_name) == ["test_passes", "test_asserts", "test_skips", "test_setup_error"]
    asserts = by_name["test_asserts"]
    assert (asserts.outcome, asserts.exception, asserts.when) == ("failed", "AssertionError", "call")
    assert asserts.crash is not None and asserts.crash.startswith("AssertionError: one is not two")
    assert by_name["test_setup_error"].outcome == "error"
    assert record.counts == {"passed": 1, "failed": 1, "skipped": 1, "error": 1}
    # The derived views keep the shape every run's value had: outcomes, failures, counts.
    data = record.to_json()
    assert data["outcomes"] == collector.outcomes
    assert data["failures"] == collector.failures


def test_a_test_runs_value_with_other_keys_reads_as_its_record() -> None:
    """A repository world's test run carries its log, coverage and recorded calls beside the record."""
    value = {
        "exit_code": 1,
        "outcomes": {"t.py::a": "passed", "t.py::b": "failed", "t.py::c": "rerun"},
        "failures": {"t.py::b": {"exception": "KeyError", "message": "'k'", "when": "call"}},
        "counts": {"passed": 1, "failed": 1, "rerun": 1},
        "coverage": None,
        "log": "....",
    }
    record = PytestRun.from_json(value)
    assert record.tests["t.py::b"] == PytestOutcome("failed", "KeyError", "'k'", "call", None)
    assert record.tests["t.py::c"].outcome == "rerun"
    assert list(record.failures) == ["t.py::b"]
    assert list(record.in_file("t.py")) == ["t.py::a", "t.py::b", "t.py::c"]


GOOD: dict[str, Any] = {"exit_code": 0, "outcomes": {"t.py::a": "failed"}}


@pytest.mark.parametrize(
    ("data", "names"),
    [
        (None, "JSON object"),
        (["t.py::a", "passed"], "JSON object"),
        ({"outcomes": {}}, "exit_code"),
        ({**GOOD, "exit_code": True}, "exit_code"),
        ({**GOOD, "exit_code": "0"}, "exit_code"),
        ({"exit_code": 0}, "outcomes"),
        ({**GOOD, "outcomes": [["t.py::a", "passed"]]}, "outcomes"),
        ({**GOOD, "outcomes": {"t.py::a": 1}}, "outcome"),
        ({**GOOD, "outcomes": {"t.py::a": {"outcome": "passed"}}}, "outcome"),
        ({**GOOD, "failures": "AssertionError"}, "failures"),
        ({**GOOD, "failures": {"t.py::b": {"exception": "AssertionError"}}}, "failures of 't.py::b'"),
        ({**GOOD, "failures": {"t.py::a": "AssertionError"}}, "failures['t.py::a']"),
        ({**GOOD, "failures": {"t.py::a": {"exception": 7}}}, "exception=7"),
        ({**GOOD, "failures": {"t.py::a": {"message": ["x"]}}}, "message="),
        ({**GOOD, "crashes": {"t.py::b": "AssertionError"}}, "crashes of 't.py::b'"),
        ({**GOOD, "crashes": {"t.py::a": 3}}, "crash=3"),
    ],
)
def test_a_record_without_its_shape_is_refused_with_one_error_naming_the_part(data: Any, names: str) -> None:
    with pytest.raises(PytestRecordError) as caught:
        PytestRun.from_json(data)
    assert names in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_huge_forged_value_is_quoted_short() -> None:
    with pytest.raises(PytestRecordError) as caught:
        PytestRun.from_json({"exit_code": "x" * 100_000, "outcomes": {}})
    assert len(str(caught.value)) < 200
