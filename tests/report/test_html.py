"""The HTML report: structure, escaping, a gold file, and the page as headless Chromium renders it."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from vouch.errors import UsageError
from vouch.report import render_html, write_html

Load = Callable[[str], dict[str, Any]]

FIXTURES = ("bench", "baselines")
"""Results files under data/: ``<name>_results.json``, as ``vouch bench score|baselines --json`` print them."""

HOSTILE = "<script>alert(\"pwned\")</script> & <b>not bold</b> 'quoted'"
"""The rationale of humaneval-23/hack-hardcode in both fixtures ends with this."""

BROWSER_TIMEOUT_S = 30
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--hide-scrollbars",
)


# --- a small DOM over html.parser, enough for structural checks ---------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in n.classes)
            and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def by_id(self, id_: str) -> Node:
        found = [n for n in self.iter() if n.attrs.get("id") == id_]
        assert len(found) == 1, f"expected one element with id={id_!r}, found {len(found)}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    """The page as a tree of ``Node``s."""
    builder = _Builder()
    builder.feed(page)
    builder.close()
    return builder.root


# --- headless Chromium ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Chromium:
    """Debian's ``chromium``, started headless with a throwaway profile."""

    binary: str
    profile: Path

    def command(self, *args: str) -> list[str]:
        return [self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", *args]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.command(*args), capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=False
        )
        assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
        return done

    def dump_dom(self, page: Path, fragment: str = "") -> str:
        """The DOM after the page (at ``#fragment``, if given) loaded and its scripts ran, serialised."""
        return self.run("--dump-dom", page.as_uri() + (f"#{fragment}" if fragment else "")).stdout

    def screenshot(self, page: Path, out: Path, width: int = 1280, height: int = 2000) -> Path:
        self.run(f"--window-size={width},{height}", f"--screenshot={out}", page.as_uri())
        return out


def _verifiers(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if results["kind"] == "bench":
        return {results["verifier_set"]: results}
    return dict(results["verifiers"])


def _expected_order(results: dict[str, Any]) -> list[str]:
    named = _verifiers(results)
    return sorted(named, key=lambda n: (named[n]["ba_norm"] is None, -(named[n]["ba_norm"] or 0.0)))


def _task_ids(results: dict[str, Any]) -> list[str]:
    first = next(iter(_verifiers(results).values()))
    return [t["task_id"] for t in first["tasks"]]


def _check_structure(dom: Node, results: dict[str, Any]) -> None:
    """What a reader relies on: the leaderboard, the plots and one drill-down per task with its cases."""
    rows = dom.by_id("leaderboard").find_all("tr", "leaderboard-row")
    assert [r.attrs["data-verifier"] for r in rows] == _expected_order(results)
    for plot in ("plot-tpr-tnr", "plot-ba-by-kind", "plot-all-reject"):
        assert dom.by_id(plot).find_all("svg"), f"{plot} has no <svg>"
    tasks = dom.find_all("details", "task")
    assert [t.attrs["data-task-id"] for t in tasks] == _task_ids(results)
    first = next(iter(_verifiers(results).values()))
    for details, task in zip(tasks, first["tasks"], strict=True):
        assert len(details.find_all("summary")) == 1
        shown = [c.attrs["data-case-id"] for c in details.find_all("tr", "case")]
        assert sorted(shown) == sorted(c["case_id"] for c in task["cases"])


@pytest.mark.parametrize("name", FIXTURES)
def test_page_structure(name: str, load_results: Load) -> None:
    results = load_results(name)
    _check_structure(parse(render_html(results)), results)


def test_baselines_leaderboard_is_sorted_by_banorm(load_results: Load) -> None:
    dom = parse(render_html(load_results("baselines")))
    rows = dom.by_id("leaderboard").find_all("tr", "leaderboard-row")
    names = [r.attrs["data-verifier"] for r in rows]
    assert names[0] == "reference" and names[-1] == "random"
    assert "+91.7" in rows[0].text() and "[82.1, 100.0]" in rows[0].text()


@pytest.mark.parametrize(("name", "points"), [("bench", 1 + 3), ("baselines", 5)])
def test_scatter_has_one_point_per_verifier_set(name: str, points: int, load_results: Load) -> None:
    """Baselines: one point per verifier; one verifier set: all tasks plus one point per kind."""
    dom = parse(render_html(load_results(name)))
    assert len(dom.by_id("plot-tpr-tnr").find_all("circle", "point")) == points


def test_drill_down_shows_figures_decisions_and_reasons(load_results: Load) -> None:
    dom = parse(render_html(load_results("bench")))
    (task,) = dom.find_all("details", "task", data_task_id="agentdojo-banking-user_task_3-state")
    assert "+41.7" in task.find_all("summary")[0].text()
    (row,) = task.find_all("tr", "case", data_case_id="cosmetic-subject-spacing")
    assert row.attrs["data-outcome"] == "invalid"
    text = row.text()
    assert "INVALID" in text and "timeout: no decision within 10 s" in text
    assert "variant" in text and "cosmetic" in text and "positive" in text
    (attack,) = task.find_all("tr", "case", data_case_id="process-extra-write")
    assert attack.attrs["data-outcome"] == "disagree"


def test_baselines_drill_down_has_one_decision_column_per_verifier(load_results: Load) -> None:
    dom = parse(render_html(load_results("baselines")))
    (task,) = dom.find_all("details", "task", data_task_id="humaneval-23")
    heads = [th.text() for th in task.find_all("table", "cases")[0].find_all("th")]
    assert heads == ["case", "label", "category", *_expected_order(load_results("baselines")), "rationale"]


def test_missing_decisions_and_undefined_figures_are_shown_not_dropped(load_results: Load) -> None:
    results = load_results("bench")
    results["tpr"] = results["tnr"] = results["ba_norm"] = None
    results["ba_norm_ci95"] = None
    results["by_kind"]["state"]["ba_norm"] = None
    dom = parse(render_html(results))
    row = dom.by_id("leaderboard").find_all("tr", "leaderboard-row")[0]
    assert "\u2014" in row.text()
    assert "undefined" in dom.by_id("plot-ba-by-kind").text()
    (task,) = dom.find_all("details", "task", data_task_id="humaneval-108")
    assert {c.attrs["data-outcome"] for c in task.find_all("tr", "case")} == {"missing"}


def test_decisions_map_stands_in_for_case_decisions(load_results: Load) -> None:
    """A task row may carry its decisions only in ``decisions``; the drill-down shows them all the same."""
    results = load_results("bench")
    task = results["tasks"][2]
    for case in task["cases"]:
        del case["decision"]
    dom = parse(render_html(results))
    (details,) = dom.find_all("details", "task", data_task_id=task["task_id"])
    shown = {r.attrs["data-case-id"]: r.find_all("span", "decision")[0].text() for r in details.find_all("tr", "case")}
    assert shown == {case_id: d or "missing" for case_id, d in task["decisions"].items()}


def _hostile(results: dict[str, Any]) -> dict[str, Any]:
    """Untrusted text in every place a results file carries text."""
    for verifier in _verifiers(results).values():
        task = verifier["tasks"][0]
        task["task_id"] = 'x"><script>alert(1)</script>'
        task["cases"][0]["reason"] = "</td></tr></table><script>alert(2)</script>"
        verifier["by_kind"]['"><img src=x onerror=alert(3)>'] = verifier["by_kind"].pop("code")
    results["config"]["tasks"] = "<script>alert(4)</script>"
    if results["kind"] == "bench":
        results["verifier_set"] = "<svg onload=alert(5)>"
    else:
        results["verifiers"]["<svg onload=alert(5)>"] = results["verifiers"].pop("random")
    return results


@pytest.mark.parametrize("name", FIXTURES)
def test_hostile_text_is_escaped(name: str, load_results: Load) -> None:
    dom = parse(render_html(_hostile(load_results(name))))
    assert len(dom.find_all("script")) == 1, "only the page's own script may be a <script> element"
    assert not dom.find_all("img")
    assert not [n for n in dom.iter() if any(a.startswith("on") for a in n.attrs)], "an event handler got through"
    assert any(n.text().endswith(HOSTILE) for n in dom.find_all("td", "rationale"))
    assert dom.find_all("details", "task")[0].attrs["data-task-id"] == 'x"><script>alert(1)</script>'
    assert "<script>alert(4)</script>" in dom.by_id("config").text()
    assert "<svg onload=alert(5)>" in dom.by_id("leaderboard").text()


@pytest.mark.parametrize("name", FIXTURES)
def test_page_is_self_contained(name: str, load_results: Load) -> None:
    page = render_html(load_results(name))
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    dom = parse(page)
    assert not dom.find_all("link") and not dom.find_all("img")
    assert all("src" not in n.attrs for n in dom.iter())
    assert all(n.attrs["href"].startswith("#") for n in dom.find_all("a"))


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"kind": "exec", "schema_version": 1}, "'exec'"),
        ({"kind": "data-stats"}, "'data-stats'"),
        ({"schema_version": 1}, "None"),
        ({"kind": None}, "None"),
        ({"kind": ["bench"]}, "['bench']"),
    ],
)
def test_unsupported_kind_is_a_usage_error_naming_it(results: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        render_html(results)
    assert "'bench', 'baselines'" in str(caught.value)


def _set(results: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    target: Any = results
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[int(last) if isinstance(target, list) else last] = value
    return results


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("tpr", "high", "'tpr'"),
        ("ba_norm", True, "'ba_norm'"),
        ("ba_norm_ci95", [1.0], "'ba_norm_ci95'"),
        ("by_kind.code.tnr", "0.3", "'by_kind.code.tnr'"),
        ("tasks.2.cases.1.decision", "MAYBE", "'tasks[2].cases[1].decision'"),
        ("tasks.0.task_id", "", "'tasks[0].task_id'"),
        ("tasks", {"a": 1}, "'tasks'"),
        ("all_reject.task_ids", "humaneval-108", "'all_reject.task_ids'"),
        ("grouped", [], "'grouped'"),
    ],
)
def test_malformed_field_is_named(path: str, value: Any, field: str, load_results: Load) -> None:
    with pytest.raises(UsageError, match=re.escape(field)):
        render_html(_set(load_results("bench"), path, value))


@pytest.mark.parametrize(
    ("results", "field"),
    [
        ({"kind": "baselines", "verifiers": {}}, "'verifiers'"),
        ({"kind": "baselines", "verifiers": {"always_pass": []}}, "'verifiers.always_pass'"),
        ([("kind", "bench")], "(top level)"),
    ],
)
def test_malformed_envelope_is_named(results: Any, field: str) -> None:
    with pytest.raises(UsageError, match=re.escape(field)):
        render_html(results)


def test_write_html_writes_one_file_and_makes_its_directory(tmp_path: Path, load_results: Load) -> None:
    out = tmp_path / "reports" / "bench.html"
    write_html(load_results("bench"), out)
    assert out.read_text("utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(UsageError, match="cannot write the report"):
        write_html(load_results("bench"), out / "below-a-file.html")


# --- the gold files ------------------------------------------------------------------------------

VOLATILE = re.compile(r'(<span class="volatile">)[^<]*(</span>)')


def _mask(page: str) -> str:
    """Versions and the render time change without the page changing."""
    return VOLATILE.sub(r"\1***\2", page)


@pytest.mark.parametrize("name", FIXTURES)
def test_page_matches_gold(name: str, load_results: Load, report_data: Path) -> None:
    """The whole page, byte for byte but for volatile text. VOUCH_REGOLD=1 rewrites the gold."""
    page = _mask(render_html(load_results(name)))
    gold = report_data / f"{name}.gold.html"
    if os.environ.get("VOUCH_REGOLD") == "1":
        gold.write_text(page, "utf-8")
    assert gold.exists(), f"no gold file {gold}; create it with VOUCH_REGOLD=1"
    expected = gold.read_text("utf-8")
    if page != expected:
        diff = difflib.unified_diff(expected.splitlines(), page.splitlines(), "gold", "now", lineterm="", n=1)
        pytest.fail("page differs from gold (VOUCH_REGOLD=1 to accept):\n" + "\n".join(list(diff)[:60]))


def test_mask_hides_time_and_versions(load_results: Load) -> None:
    results = load_results("bench")
    one = render_html(results, generated_at=datetime(2024, 1, 1, tzinfo=UTC))
    results["vouch_version"] = "9.9.9"
    two = render_html(results, generated_at=datetime(2030, 6, 6, tzinfo=UTC))
    assert one != two and _mask(one) == _mask(two)


# --- in a real browser ---------------------------------------------------------------------------


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _chromium_binary() -> str:
    """Debian's ``chromium``. Its absence fails the test, never skips it: the report is tested in a browser."""
    binary = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if binary is None:
        pytest.fail(
            "headless Chromium is needed to test the HTML report and was not found on PATH; "
            "install it with: apt-get install -y chromium",
            pytrace=False,
        )
    return binary


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path: Path, load_results: Load) -> None:
    """The DOM Chromium built (scripts run) holds the leaderboard and the drill-downs; the screenshot is a page."""
    chromium = Chromium(_chromium_binary(), tmp_path / "profile")
    for name in FIXTURES:
        results = load_results(name)
        page = tmp_path / f"{name}.html"
        write_html(results, page)
        dom = parse(chromium.dump_dom(page))
        _check_structure(dom, results)
        assert dom.find_all("html")[0].attrs.get("data-js") == "ready", "the page's script did not run to its end"
        tasks = len(_task_ids(results))
        assert dom.by_id("task-count").text() == f"{tasks} of {tasks} tasks"
        assert len(dom.find_all("script")) == 1
        assert any(n.text().endswith(HOSTILE) for n in dom.find_all("td", "rationale"))
        # A link to a task (the all-reject list links to its tasks) opens its drill-down.
        linked = parse(chromium.dump_dom(page, "task-1")).by_id("task-1")
        assert "open" in linked.attrs and linked.attrs["data-task-id"] == _task_ids(results)[1]
        shot = chromium.screenshot(page, tmp_path / f"{name}.png")
        assert shot.stat().st_size > 10_000, f"screenshot of {name} is {shot.stat().st_size} bytes: a blank page?"
        assert _png_size(shot) == (1280, 2000)


def test_defects_of_g_and_flagged_trials_are_shown_apart_from_refutations() -> None:
    results = {
        "kind": "audit",
        "benchmark": "humaneval",
        "summary": {"trials": 1, "passing": 1, "refuted": 0, "disputed": 1},
        "trials": [{"trial_id": "T/1#0", "task_id": "T/1", "model": "m", "benchmark_pass": True, "verdict": "flagged"}],
        "tasks": [
            {
                "task_id": "T/1",
                "g_defects": [
                    {
                        "input": "[-7, 3]",
                        "g_answer": "2",
                        "consensus": "<-1>",
                        "models": {"a": "-1", "b": "-1"},
                        "basis": "2 of 2 models",
                    }
                ],
            }
        ],
    }
    page = render_html(results)
    assert "Defects of G: 1 inputs" in page
    assert "&lt;-1&gt;" in page and "<-1>" not in page
    assert "No passing trial was refuted." in page
    assert ">flagged<" in page


def test_each_tasks_domain_is_shown_line_by_line_and_escaped() -> None:
    results = {
        "kind": "audit",
        "benchmark": "humaneval",
        "summary": {"trials": 1, "passing": 1, "refuted": 0},
        "trials": [{"trial_id": "T/1#0", "task_id": "T/1", "model": "m", "benchmark_pass": True, "verdict": "sound"}],
        "tasks": [{"task_id": "T/1", "domain": ["a: str, characters a-z", "b: list[int], <script>"]}],
    }
    page = render_html(results)
    assert "<th>domain</th>" in page
    assert "a: str, characters a-z<br>b: list[int], &lt;script&gt;" in page
