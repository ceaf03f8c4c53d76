"""The audit store and the decision store on damaged files: a bad row is no verdict, a foreign file no store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vouch.audit import Verdict
from vouch.errors import InfrastructureError
from vouch.store import AuditStore, Store

KEY = "config"


def _witness(valid: bool) -> dict[str, Any]:
    return {
        "file": "test_witness_HumanEval_13_0_1.py",
        "source": "def test_w():\n    assert greatest_common_divisor(3, 5) == 1\n",
        "clause": "return the greatest common divisor",
        "origin": "offline",
        "input": [3, 5],
        "expected": 1,
        "actual": 5,
        "defect": "greatest_common_divisor(3, 5) returns 5 where P requires 1",
        "why_t0_misses": "T0 never asks for (3, 5)",
        "validation": {
            "reference_runs": [{"world": "reference", "outcome": "pass"}],
            "model_runs": [{"world": "model", "outcome": "fail", "exception": "AssertionError"}],
            "fails_by_assertion": True,
            "rejudged": True,
            "valid": valid,
        },
        "replay": "vouch audit replay test_witness_HumanEval_13_0_1.py",
    }


def _judgement(verdict: str, witnesses: list[dict[str, Any]] | None = None, passing: bool = True) -> dict[str, Any]:
    return {"benchmark_pass": passing, "verdict": verdict, "witnesses": witnesses or [], "evidence": {}, "reason": None}


READABLE = {
    "sound": _judgement("sound"),
    "not-passing": _judgement("not_passing", passing=False),
    "refuted-with-its-witness": _judgement("refuted", [_witness(True)]),
    "reward-hack-with-its-witness": _judgement("reward_hack", [_witness(True)]),
    "lightweight-report": {"report": {"task_id": "HumanEval/13", "well_formed": True}},
}

UNREADABLE = {
    "not-json": "{oops",
    "json-100000-deep": "[" * 100_000 + "]" * 100_000,
    "5000-digit-int": '{"verdict": "sound", "n": ' + "9" * 5_000 + "}",
    "not-an-object": "[1]",
    "no-verdict": json.dumps({"benchmark_pass": True}),
    "unknown-verdict": json.dumps(_judgement("excellent")),
    "benchmark-pass-not-bool": json.dumps({**_judgement("sound"), "benchmark_pass": "yes"}),
    "witness-of-another-shape": json.dumps(_judgement("sound", [{"file": 1}])),
    "evidence-of-another-shape": json.dumps({**_judgement("sound"), "evidence": "x"}),
    "refuted-without-witness": json.dumps(_judgement("refuted")),
    "reward-hack-without-witness": json.dumps(_judgement("reward_hack")),
    "refuted-with-an-invalid-witness": json.dumps(_judgement("refuted", [_witness(False)])),
    "refuted-yet-not-passing": json.dumps(_judgement("refuted", [_witness(True)], passing=False)),
    "report-of-another-shape": json.dumps({"report": {"well_formed": "x"}}),
}


def _write_raw(path: Path, task_id: str, text: str) -> None:
    db = sqlite3.connect(path)
    db.execute("INSERT INTO audit_judgements VALUES (?, ?, ?, ?, ?)", (KEY, task_id, "h", text, 0.0))
    db.commit()
    db.close()


@pytest.mark.parametrize("judgement", list(READABLE.values()), ids=list(READABLE))
def test_what_vouch_writes_is_read_back(tmp_path: Path, judgement: dict[str, Any]) -> None:
    store = AuditStore(tmp_path / "s.sqlite")
    store.put(KEY, "HumanEval/13", "h", judgement)
    assert store.get_many(KEY, [("HumanEval/13", "h")]) == {("HumanEval/13", "h"): judgement}
    assert store.dropped == 0


@pytest.mark.parametrize("text", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_an_unreadable_row_is_dropped_and_judged_again(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.sqlite"
    AuditStore(path).close()
    _write_raw(path, "HumanEval/13", text)
    store = AuditStore(path)
    assert store.get_many(KEY, [("HumanEval/13", "h")]) == {}
    assert store.dropped == 1
    # Its new judgement takes its place (a put over a kept row would be ignored).
    store.put(KEY, "HumanEval/13", "h", _judgement("sound"))
    found = store.get_many(KEY, [("HumanEval/13", "h")])
    assert found[("HumanEval/13", "h")]["verdict"] == Verdict.SOUND.value


def test_good_rows_beside_a_bad_one_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = AuditStore(path)
    store.put(KEY, "HumanEval/0", "h", _judgement("sound"))
    store.close()
    _write_raw(path, "HumanEval/13", json.dumps(_judgement("refuted")))
    found = AuditStore(path).get_many(KEY, [("HumanEval/0", "h"), ("HumanEval/13", "h")])
    assert list(found) == [("HumanEval/0", "h")]


def _db(path: Path, *statements: str) -> Path:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def _tables(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master"))
    finally:
        db.close()


FOREIGN = {
    "another-programs-database": (("CREATE TABLE foo (x)",), "not a vouch store"),
    "decisions-of-other-columns": (("CREATE TABLE decisions (x)",), "other columns"),
    "judgements-of-other-columns": (("CREATE TABLE audit_judgements (x)",), "other columns"),
    "meta-of-other-columns": (("CREATE TABLE meta (a, b, c)", "CREATE TABLE audit_meta (a, b, c)"), "other columns"),
    "version-not-a-number": (
        (
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO meta VALUES ('schema_version', 'banana')",
            "CREATE TABLE audit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO audit_meta VALUES ('audit_schema_version', 'banana')",
        ),
        "not a version number",
    ),
}


@pytest.mark.parametrize("kind", [Store, AuditStore], ids=["decision-store", "audit-store"])
@pytest.mark.parametrize(("statements", "says"), list(FOREIGN.values()), ids=list(FOREIGN))
def test_a_file_of_another_shape_is_refused_with_its_path(
    tmp_path: Path, kind: type[Store] | type[AuditStore], statements: tuple[str, ...], says: str
) -> None:
    path = _db(tmp_path / "other.sqlite", *statements)
    before = _tables(path)
    with pytest.raises(InfrastructureError) as caught:
        kind(path)
    message = str(caught.value)
    assert str(path) in message and says in message and "--store" in message
    assert _tables(path) == before  # no table was added to the file


def test_the_two_stores_still_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).put("v", "c", "t", "gold", "PASS", None, 0.1)
    AuditStore(path).put(KEY, "HumanEval/13", "h", _judgement("sound"))
    assert Store(path).count() == 1 and AuditStore(path).count(KEY) == 1


def test_a_decision_row_of_another_shape_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO decisions VALUES ('v', 'c', 't', 'gold', 'PASS', NULL, 'slow', 0)")
    db.commit()
    db.close()
    store = Store(path)
    assert store.get_many([("v", "c")]) == {}
    store.put("v", "c", "t", "gold", "FAIL", None, 0.2)
    assert store.get_many([("v", "c")])[("v", "c")].decision == "FAIL"
