"""V4V's check registry: the runner and the page read the same entries, and nothing else lists them."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys

import pytest

from vouch.bench import load_task
from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.errors import UsageError
from vouch.report import build_v4v_view, render_html
from vouch.report._v4v import CHECK_NAMES, check_name, renderer
from vouch.store import Store
from vouch.v4v import CHECKS, V4V_CHECKS, CheckResult, _registry, run_v4v, v4v_check
from vouch.v4v._registry import STAGES, V4VCheck, load_target

PURE = ["provenance", "label_consistency", "trivial_baselines"]
"""Checks that run no code: a V4V run of these alone starts no pool."""


def _task(root, task_id="t"):
    def case(case_id, label, category, sub, city, construction="test"):
        candidate = {"calls": [{"function": "get_weather", "args": {"city": city}}], "final_answer": None}
        derived = None if category == "gold" else "gold"
        return Case(
            id=case_id,
            label=label,
            category=category,
            subcategory=sub,
            candidate=candidate,
            provenance=Provenance(
                construction=construction, derived_from=derived, content_hash=content_hash(candidate)
            ),
            rationale="test",
        )

    cases = [
        case("gold", "positive", "gold", "gold", "Paris", construction="gold"),
        case("err", "negative", "error", "wrong_value", "London"),
        case("hack", "negative", "attack", "hack", "paris"),
    ]
    spec = TaskSpec(id=task_id, kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="t"))
    reference = {"verifier.py": "def verify(c, env):\n    return True\n"}
    write_task(root, TaskFiles(spec=spec, instruction="Weather in Paris.", reference=reference, cases=cases))
    return load_task(root / task_id)


@pytest.mark.parametrize("name", ["", "C1", "replay ", "Replay", "c7", "mutants"])
def test_an_unknown_check_is_one_error_that_lists_the_valid_ones(name, tmp_path):
    with pytest.raises(UsageError) as raised:
        v4v_check(name)
    assert str(raised.value) == f"unknown check {name!r}; valid checks: {', '.join(CHECKS)}"
    with pytest.raises(UsageError) as raised:
        run_v4v([_task(tmp_path)], store=Store(tmp_path / "s.sqlite"), checks=[name])
    assert str(raised.value) == f"unknown checks [{name!r}]; valid checks: {', '.join(CHECKS)}"


def test_runner_and_page_list_the_same_checks_from_the_registry():
    names = tuple(c.name for c in V4V_CHECKS)
    assert CHECKS == names == tuple(CHECK_NAMES) == _registry.check_names()
    assert [check_name(n) for n in names] == [c.label for c in V4V_CHECKS] == list(CHECK_NAMES.values())
    assert [c.label.split(" ")[0] for c in V4V_CHECKS] == [f"C{i}" for i in range(1, len(V4V_CHECKS) + 1)]
    empty = build_v4v_view({"kind": "v4v", "tasks": []})
    assert empty.checks == names
    page = render_html({"kind": "v4v", "tasks": []})
    assert re.findall(r"<dt>(C\d[^<]*)</dt><dd>([^<]*)</dd>", page) == [(c.label, c.summary) for c in V4V_CHECKS]
    assert inspect.signature(run_v4v).parameters["checks"].default == names


@pytest.mark.parametrize("check", V4V_CHECKS, ids=lambda c: c.name)
def test_every_entry_runs_and_renders_through_what_it_names(check):
    assert check.summary and check.label
    assert set(check.stages) <= set(STAGES)
    run = load_target(check.run)
    assert list(inspect.signature(run).parameters) == ["task", "inputs"]
    assert renderer(check.name) is (None if check.evidence is None else load_target(check.evidence))
    assert v4v_check(check.name) is check


def test_a_check_in_the_registry_alone_is_run_and_shown(tmp_path, monkeypatch):
    # A seventh check, declared by one entry: it runs C3's function and shows its evidence as C3 does.
    extra = V4VCheck(
        "c7_extra",
        "C7 extra",
        "The task's cases trace to their constructions.",
        "vouch.v4v._checks:run_provenance",
        "vouch.report._v4v:problems_evidence",
    )
    monkeypatch.setattr(_registry, "V4V_CHECKS", (*V4V_CHECKS, extra))
    body = run_v4v([_task(tmp_path)], store=Store(tmp_path / "s.sqlite"), checks=["c7_extra", "provenance"])
    row = body["tasks"][0]
    assert list(row["checks"]) == ["provenance", "c7_extra"]  # the registry's order
    assert row["checks"]["c7_extra"] == row["checks"]["provenance"]
    view = build_v4v_view({"kind": "v4v", **body})
    assert view.checks == (*CHECKS, "c7_extra")
    page = render_html({"kind": "v4v", **body})
    assert 'data-check="c7_extra" title="C7 extra">C7 extra</th>' in page
    assert page.count("No problems.</p>") == 2  # C3's view of the evidence, for both
    assert "<dt>C7 extra</dt><dd>The task's cases trace to their constructions.</dd>" in page
    assert "C1&ndash;C7 columns" in page


def test_a_check_needs_only_the_stages_it_names(tmp_path, monkeypatch):
    # The pure checks start no pool: a pool that is asked for fails the run.
    from vouch.v4v import _run

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started for checks that run no code")

    monkeypatch.setattr(_run, "make_executor", no_pool)
    monkeypatch.setattr(_run, "PoolSet", no_pool)
    body = run_v4v([_task(tmp_path)], store=Store(tmp_path / "s.sqlite"), checks=PURE)
    assert list(body["tasks"][0]["checks"]) == PURE
    with pytest.raises(UsageError, match=r"^repeat=1: repeatability needs at least 2 runs$"):
        run_v4v([_task(tmp_path)], store=Store(tmp_path / "s.sqlite"), checks=["repeatability"], repeat=1)


def test_the_results_keep_their_shape(tmp_path):
    body = run_v4v([_task(tmp_path)], store=Store(tmp_path / "s.sqlite"), checks=PURE)
    assert set(body) == {"tasks", "totals", "excluded", "retained", "checks_run", "stats", "errors"}
    row = body["tasks"][0]
    assert set(row) == {"task_id", "kind", "source", "retained", "checks"}
    assert all(set(c) == {"passed", "reason", "evidence"} for c in row["checks"].values())
    assert body["checks_run"] == PURE and list(body["totals"]) == PURE
    assert isinstance(CheckResult(True), CheckResult) and dataclasses.is_dataclass(CheckResult)


def test_the_page_reads_the_registry_without_the_engine():
    code = (
        "import json, sys\n"
        "from vouch.report import render_html\n"
        "page = render_html({'kind': 'v4v', 'tasks': []})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('vouch.exec', 'vouch.bench')))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
