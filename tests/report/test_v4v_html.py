"""The V4V page: the task-by-check matrix, its drill-down, escaping, bad input, the CLI and Chromium.

The fixtures are real ``vouch v4v --json`` output: ``v4v_results.json`` over 3 HumanEval and 2
BFCL tasks (all six checks; C5 and C6 fail on some), and ``v4v_defects_results.json`` over a
HumanEval task whose suite was broken by hand (a negative case given the gold's candidate, a
stale content hash) with C1-C4 only, so C5 and C6 were not run.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_html import Chromium, Node, _chromium_binary, _mask, parse

from vouch.errors import UsageError
from vouch.report import render_html
from vouch.report._v4v import CHECK_NAMES, render_v4v

Load = Callable[[str], dict[str, Any]]

FIXTURES = ("v4v", "v4v_defects")
HOSTILE = "<script>alert(\"v4v\")</script> & <img src=x onerror=alert(1)> 'q'"


def _state(check: dict[str, Any] | None) -> str:
    return "not_run" if check is None else ("passed" if check["passed"] else "failed")


def _drill(dom: Node, task_id: str) -> Node:
    (row,) = dom.find_all("tr", "task-row", data_task_id=task_id)
    return dom.by_id(row.attrs["aria-controls"])


def _section(dom: Node, task_id: str, check: str) -> Node:
    (section,) = _drill(dom, task_id).find_all("section", "check", data_check=check)
    return section


@pytest.mark.parametrize("name", FIXTURES)
def test_matrix_has_a_row_per_task_and_a_cell_per_check(name: str, load_results: Load) -> None:
    results = load_results(name)
    dom = parse(render_v4v(results))
    heads = [th.attrs["data-check"] for th in dom.by_id("matrix").find_all("th", "check-head")]
    assert heads == list(CHECK_NAMES)
    rows = dom.by_id("matrix").find_all("tr", "task-row")
    assert [r.attrs["data-task-id"] for r in rows] == [t["task_id"] for t in results["tasks"]]
    for row, task in zip(rows, results["tasks"], strict=True):
        cells = row.find_all("td", "cell")
        assert [c.attrs["data-check"] for c in cells] == heads
        assert [c.attrs["data-state"] for c in cells] == [_state(task["checks"].get(h)) for h in heads]
        assert row.attrs["data-retained"] == str(task["retained"]).lower()
        drill = dom.by_id(row.attrs["aria-controls"])
        assert "hidden" in drill.attrs, "drill-downs start closed"
        assert [s.attrs["data-check"] for s in drill.find_all("section", "check")] == heads


@pytest.mark.parametrize("name", FIXTURES)
def test_totals_match_what_v4v_counted(name: str, load_results: Load) -> None:
    results = load_results(name)
    dom = parse(render_v4v(results))
    for row in dom.by_id("totals").find_all("tr", "total"):
        check = row.attrs["data-check"]
        passed, failed, not_run = (int(td.text()) for td in row.find_all("td", "num"))
        want = results["totals"].get(check, {"passed": 0, "failed": 0})
        assert (passed, failed) == (want["passed"], want["failed"])
        assert not_run == len(results["tasks"]) - passed - failed
    cards = {c.attrs["data-card"]: c.find_all("div", "value")[0].text() for c in dom.find_all("div", "card")}
    assert cards["retained"] == str(results["retained"])
    assert cards["excluded"] == str(len(results["excluded"]))


def test_header_shows_envelope_and_sources(load_results: Load) -> None:
    dom = parse(render_v4v(load_results("v4v")))
    meta = dom.by_id("run-meta").text()
    for part in ("vouch version", "0.1.0", "schema version", "seed", "tasks dir", "C6 mutation testing"):
        assert part in meta
    sources = {r.attrs["data-source"]: [td.text() for td in r.find_all("td")] for r in dom.find_all("tr", "source")}
    # source, tasks, retained, excluded, then failures per check C1, C2, ... (blank when none)
    assert sources["bfcl"][:4] == ["bfcl", "2", "0", "2"] and sources["bfcl"][8] == "2"
    assert sources["humaneval"][:4] == ["humaneval", "3", "0", "3"] and sources["humaneval"][9] == "3"
    options = [o.attrs["value"] for o in dom.by_id("filter-source").find_all("option")]
    assert options == ["", "bfcl", "humaneval"]
    states = [o.attrs["value"] for o in dom.by_id("filter-state").find_all("option")]
    assert states == ["", "failing", *map(str, range(len(CHECK_NAMES)))]
    assert dom.by_id("filter-search").attrs["type"] == "search"


def test_source_falls_back_to_the_task_id_prefix(load_results: Load) -> None:
    results = load_results("v4v")
    for task in results["tasks"]:
        del task["source"]
    dom = parse(render_v4v(results))
    assert [r.attrs["data-source"] for r in dom.find_all("tr", "task-row")] == [
        t["task_id"].split("-")[0] for t in results["tasks"]
    ]


def test_mutation_drill_down_lists_every_undetected_mutant_with_its_diff(load_results: Load) -> None:
    results = load_results("v4v")
    evidence = results["tasks"][2]["checks"]["mutation"]["evidence"]
    section = _section(parse(render_v4v(results)), "humaneval-0", "mutation")
    assert section.attrs["data-state"] == "failed"
    assert "8 of 18 mutants go undetected by the suite" in section.text()
    mutants = section.find_all("div", "mutant")
    assert [m.attrs["data-mutant-id"] for m in mutants] == [u["id"] for u in evidence["undetected"]]
    for card, mutant in zip(mutants, evidence["undetected"], strict=True):
        (diff,) = card.find_all("pre", "diff")
        assert diff.text().splitlines() == mutant["diff"].splitlines()
        assert mutant["description"] in card.text() and mutant["operator"] in card.text()
        assert any(s.attrs.get("class") == "del" for s in diff.find_all("span"))


def test_trivial_baselines_show_scores_against_the_threshold(load_results: Load) -> None:
    section = _section(parse(render_v4v(load_results("v4v"))), "bfcl-multiple-multiple_144", "trivial_baselines")
    rows = {r.attrs["data-baseline"]: r for r in section.find_all("tr", "baseline")}
    assert set(rows) == {"always_pass", "always_fail", "gold_exact_match", "shape_only", "random_mean"}
    assert "+30.77" in rows["shape_only"].text() and rows["shape_only"].find_all("span", "s-failed")
    assert not rows["gold_exact_match"].find_all("span", "s-failed")
    assert "mean over 50 seeds" in rows["random_mean"].text()
    assert "threshold 20" in section.text()


def test_replay_provenance_and_label_drill_downs(load_results: Load) -> None:
    dom = parse(render_v4v(load_results("v4v_defects")))
    replay = _section(dom, "humaneval-2", "replay")
    (table,) = replay.find_all("table", "records")
    assert [th.text() for th in table.find_all("th")] == [
        "case_id",
        "label",
        "category",
        "decision",
        "reason",
        "rationale",
    ]
    (row,) = table.find_all("tbody")[0].find_all("tr")
    cells = [td.text() for td in row.find_all("td")]
    assert cells[:4] == ["err-arithmetic-0", "negative", "error", "PASS"]
    assert "candidate replaced by the gold by hand" in cells[5]
    assert "alt-codegen-2" in _section(dom, "humaneval-2", "provenance").text()
    assert "same candidate as err-arithmetic-0" in _section(dom, "humaneval-2", "label_consistency").text()
    for check in ("trivial_baselines", "mutation"):
        section = _section(dom, "humaneval-2", check)
        assert section.attrs["data-state"] == "not_run" and "not run" in section.text()


def test_flaky_cases_equivalent_mutants_and_unknown_evidence_are_shown(load_results: Load) -> None:
    results = load_results("v4v")
    checks = results["tasks"][0]["checks"]
    checks["repeatability"]["passed"] = False
    checks["repeatability"]["evidence"]["flaky"] = [{"case_id": "gold", "decisions": ["PASS", "FAIL", "PASS"]}]
    checks["mutation"]["evidence"]["equivalent"] = [
        {"id": "m1", "operator": "constant_change", "description": "1 -> 2", "diff": "-a\n+b\n", "why": "dead code"}
    ]
    checks["mutation"]["evidence"]["operators"] = {"constant_change": 4, "note": "line one\nline two"}
    checks["c7_new"] = {"passed": True, "reason": None, "evidence": {"score": 0.5, "items": [{"x": 1}, {"y": None}]}}
    dom = parse(render_v4v(results))
    task_id = results["tasks"][0]["task_id"]
    flaky = _section(dom, task_id, "repeatability")
    assert flaky.attrs["data-state"] == "failed" and "PASS · FAIL · PASS" in flaky.text()
    mutation = _section(dom, task_id, "mutation")
    (equivalent,) = mutation.find_all("div", "mutant", data_mutant_id="m1")
    assert "dead code" in equivalent.text() and equivalent.find_all("pre", "diff")
    assert "line one\nline two" in [p.text() for p in mutation.find_all("pre", "text")]
    assert "constant_change" in mutation.find_all("table", "kv")[-1].text()
    heads = [th.attrs["data-check"] for th in dom.by_id("matrix").find_all("th", "check-head")]
    assert heads == [*CHECK_NAMES, "c7_new"]
    new = _section(dom, task_id, "c7_new")
    assert "score" in new.text() and "0.5" in new.text() and new.find_all("table", "records")
    others = [r for r in dom.find_all("tr", "task-row") if r.attrs["data-task-id"] != task_id]
    assert {r.find_all("td", "cell")[-1].attrs["data-state"] for r in others} == {"not_run"}


def test_exclusions_list_tasks_with_reasons_and_link_to_rows(load_results: Load) -> None:
    results = load_results("v4v")
    dom = parse(render_v4v(results))
    rows = dom.by_id("exclusions").find_all("tr", "exclusion")
    assert [r.attrs["data-task-id"] for r in rows] == [x["task_id"] for x in results["excluded"]]
    first = rows[0]
    assert "shape_only 30.77" in first.text() and "C5 trivial baselines" in first.text()
    (link,) = first.find_all("a")
    assert dom.by_id(link.attrs["href"][1:]).attrs["data-task-id"] == results["excluded"][0]["task_id"]
    results["tasks"] = [t for t in results["tasks"] if t["retained"]]
    results["excluded"] = []
    assert parse(render_v4v(results)).by_id("no-exclusions")


def test_hostile_text_is_escaped(load_results: Load) -> None:
    results = load_results("v4v")
    task = results["tasks"][2]
    task["task_id"] = HOSTILE
    task["source"] = HOSTILE
    mutation = task["checks"]["mutation"]
    mutation["reason"] = HOSTILE
    mutation["evidence"]["undetected"][0]["diff"] = f"--- a\n+++ b\n-{HOSTILE}\n+</pre><script>alert(2)</script>\n"
    mutation["evidence"]["undetected"][0]["id"] = HOSTILE
    mutation["evidence"][HOSTILE] = HOSTILE
    task["checks"][HOSTILE] = {"passed": False, "reason": HOSTILE, "evidence": {"x": [HOSTILE]}}
    results["config"]["tasks"] = HOSTILE
    results["excluded"][2]["task_id"] = HOSTILE
    defects = load_results("v4v_defects")
    defects["tasks"][0]["checks"]["replay"]["evidence"]["disagreements"][0]["rationale"] = HOSTILE
    for page in (render_v4v(results), render_v4v(defects)):
        dom = parse(page)
        assert len(dom.find_all("script")) == 1, "only the page's own script may be a <script> element"
        assert not dom.find_all("img")
        assert not [n for n in dom.iter() if any(a.startswith("on") for a in n.attrs)], "an event handler got through"
    dom = parse(render_v4v(results))
    (row,) = dom.find_all("tr", "task-row", data_task_id=HOSTILE)
    assert row.attrs["data-source"] == HOSTILE
    section = _section(dom, HOSTILE, "mutation")
    assert f"-{HOSTILE}" in section.find_all("pre", "diff")[0].text()
    assert HOSTILE in dom.by_id("run-meta").text() and HOSTILE in dom.by_id("exclusions").text()
    assert HOSTILE in _section(dom, HOSTILE, HOSTILE).text()
    assert HOSTILE in parse(render_v4v(defects)).find_all("section", "check")[0].text()


def test_page_is_self_contained(load_results: Load) -> None:
    page = render_v4v(load_results("v4v"))
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    dom = parse(page)
    assert not dom.find_all("link") and not dom.find_all("img")
    assert all("src" not in n.attrs for n in dom.iter())
    assert all(n.attrs["href"].startswith("#") for n in dom.find_all("a"))


def test_page_matches_gold(load_results: Load, report_data: Path) -> None:
    """The whole page, byte for byte but for volatile text. VOUCH_REGOLD=1 rewrites the gold."""
    page = _mask(render_v4v(load_results("v4v")))
    gold = report_data / "v4v.gold.html"
    if os.environ.get("VOUCH_REGOLD") == "1":
        gold.write_text(page, "utf-8")
    assert gold.exists(), f"no gold file {gold}; create it with VOUCH_REGOLD=1"
    expected = gold.read_text("utf-8")
    if page != expected:
        diff = difflib.unified_diff(expected.splitlines(), page.splitlines(), "gold", "now", lineterm="", n=1)
        pytest.fail("page differs from gold (VOUCH_REGOLD=1 to accept):\n" + "\n".join(list(diff)[:60]))


def test_render_html_dispatches_v4v(load_results: Load) -> None:
    results = load_results("v4v")
    assert parse(render_html(results)).by_id("matrix")


def test_check_names_follow_v4v() -> None:
    from vouch.v4v import CHECKS

    assert tuple(CHECK_NAMES) == CHECKS


def _set(results: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    target: Any = results
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is _DELETE:
        del target[int(last) if isinstance(target, list) else last]
    else:
        target[int(last) if isinstance(target, list) else last] = value
    return results


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("tasks", _DELETE, "'tasks'"),
        ("tasks", {"humaneval-0": {}}, "'tasks'"),
        ("tasks.0", "humaneval-0", "'tasks[0]'"),
        ("tasks.0.task_id", "", "'tasks[0].task_id'"),
        ("tasks.0.task_id", 7, "'tasks[0].task_id'"),
        ("tasks.1.checks", _DELETE, "'tasks[1].checks'"),
        ("tasks.1.checks", ["replay"], "'tasks[1].checks'"),
        ("tasks.1.checks.mutation", True, "'tasks[1].checks.mutation'"),
        ("tasks.1.checks.replay.passed", "yes", "'tasks[1].checks.replay.passed'"),
        ("tasks.1.checks.replay.passed", _DELETE, "'tasks[1].checks.replay.passed'"),
        ("tasks.1.checks.replay.evidence", [], "'tasks[1].checks.replay.evidence'"),
        ("tasks.1.checks.replay.reason", 3, "'tasks[1].checks.replay.reason'"),
        ("tasks.1.checks.replay.evidence.disagreements", "none", "'tasks[1].checks.replay.evidence.disagreements'"),
        ("tasks.2.checks.mutation.evidence.undetected.0", "m", "'tasks[2].checks.mutation.evidence.undetected[0]'"),
        (
            "tasks.0.checks.trivial_baselines.evidence.ba_norm.shape_only",
            "high",
            "'tasks[0].checks.trivial_baselines.evidence.ba_norm.shape_only'",
        ),
        ("tasks.3.retained", "no", "'tasks[3].retained'"),
        ("excluded", {"humaneval-0": "mutation"}, "'excluded'"),
        ("excluded.0.failed_checks", "mutation", "'excluded[0].failed_checks'"),
        ("config", [], "'config'"),
        ("kind", "bench-ish", "'kind'"),
    ],
)
def test_malformed_field_is_a_one_line_usage_error_naming_it(
    path: str, value: Any, field: str, load_results: Load
) -> None:
    with pytest.raises(UsageError, match=re.escape(field)) as caught:
        render_v4v(_set(load_results("v4v"), path, value))
    assert "\n" not in str(caught.value)


def test_results_that_are_not_an_object_are_named() -> None:
    with pytest.raises(UsageError, match=re.escape("(top level)")):
        render_v4v([("kind", "v4v")])  # type: ignore[arg-type]


# --- the command line ----------------------------------------------------------------------------


def _vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vouch", *args], capture_output=True, text=True, timeout=120)


def test_vouch_report_renders_v4v_end_to_end(tmp_path: Path, report_data: Path) -> None:
    out = tmp_path / "pages" / "v4v.html"
    done = _vouch("report", str(report_data / "v4v_results.json"), "--html", str(out))
    assert done.returncode == 0, done.stderr
    dom = parse(out.read_text("utf-8"))
    results = json.loads((report_data / "v4v_results.json").read_text("utf-8"))
    assert len(dom.find_all("tr", "task-row")) == len(results["tasks"])
    assert dom.find_all("div", "mutant")


def test_vouch_report_names_the_bad_field(tmp_path: Path, load_results: Load) -> None:
    results = load_results("v4v")
    results["tasks"][1]["checks"]["mutation"] = "skipped"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(results), "utf-8")
    done = _vouch("report", str(bad), "--html", str(tmp_path / "out.html"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "'tasks[1].checks.mutation'" in lines[0], done.stderr
    assert not (tmp_path / "out.html").exists()


# --- in a real browser ---------------------------------------------------------------------------


@pytest.mark.slow
def test_v4v_page_in_headless_chromium(tmp_path: Path, load_results: Load) -> None:
    """Scripts run to their end, drill-downs start closed, and a link to a task opens its drill-down."""
    chromium = Chromium(_chromium_binary(), tmp_path / "profile")
    results = load_results("v4v")
    page = tmp_path / "v4v.html"
    page.write_text(render_v4v(results), "utf-8")
    dom = parse(chromium.dump_dom(page))
    assert dom.find_all("html")[0].attrs.get("data-js") == "ready", "the page's script did not run to its end"
    assert dom.by_id("matrix-count").text() == "5 of 5 tasks"
    assert all("hidden" in d.attrs for d in dom.find_all("tr", "drill"))
    opened = parse(chromium.dump_dom(page, "task-2"))
    assert opened.by_id("task-2").attrs["aria-expanded"] == "true"
    assert "hidden" not in opened.by_id("drill-2").attrs
    assert opened.by_id("drill-2").find_all("pre", "diff")
    assert all("hidden" in d.attrs for d in opened.find_all("tr", "drill") if d.attrs["id"] != "drill-2")
    # Filters come from the query string: failing C6, one source, an id search, and all at once.
    expected = {
        "show=5": [t["task_id"] for t in results["tasks"] if not t["checks"]["mutation"]["passed"]],
        "show=0": [],
        "source=bfcl": [t["task_id"] for t in results["tasks"] if t["source"] == "bfcl"],
        "q=EVAL-1": ["humaneval-1"],
        "show=failing&source=humaneval&q=-2": ["humaneval-2"],
    }
    for query, shown in expected.items():
        dom = parse(chromium.run("--dump-dom", f"{page.as_uri()}?{query}").stdout)
        visible = [r.attrs["data-task-id"] for r in dom.find_all("tr", "task-row") if "hidden" not in r.attrs]
        assert visible == shown, query
        assert dom.by_id("matrix-count").text() == f"{len(shown)} of 5 tasks"
    shot = chromium.screenshot(page, tmp_path / "v4v.png")
    assert shot.stat().st_size > 10_000, f"screenshot is {shot.stat().st_size} bytes: a blank page?"
