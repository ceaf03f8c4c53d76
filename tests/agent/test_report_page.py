"""The generate page (``vouch.report._generate``): escaping, the findings, bad input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vouch.report import render_generate, render_html

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _row(task_id: str, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "task_id": task_id,
        "kind": "code",
        "status": "generated",
        "end_reason": "turns",
        "submitted": False,
        "verifier_written": False,
        "executions_used": 20,
        "executions_budget": 20,
        "exhausted": ["executions", "turns"],
        "exhausted_before_verifier": True,
        "positive_self_tests": 0,
        "positive_self_test_passes": 0,
        "negative_self_tests": 0,
        "negative_self_test_fails": 0,
        "never_positive_pass": True,
        "malformed_tool_calls": 1,
        "input_tokens": 10,
        "output_tokens": 5,
        "cost_usd": None,
        "wall_s": 1.5,
        "turns": 3,
        "tool_calls": {"run_python": 20},
        "trace": [{"t": 0.1, "kind": "tool", "title": "run_python [ok]", "body": "</pre><script>alert(1)</script>"}],
    }
    return row | fields


def _results(*rows: dict[str, object]) -> dict[str, object]:
    return {
        "kind": "generate",
        "schema_version": 1,
        "vouch_version": "0",
        "seed": None,
        "config": {"out": "out", "harness": {"name": "default", "system_prompt": "line 1\nline 2"}},
        "model": "openai/<b>m</b>",
        "harness": "default",
        "verifiers_dir": "out",
        "summary": {"tasks": len(rows), "exhausted_before_verifier": 1, "never_positive_pass": 1},
        "unfinished": ["late-task"],
        "tasks": list(rows),
    }


def test_page_shows_the_findings_and_escapes_everything() -> None:
    page = render_generate(_results(_row("<img src=x>")), generated_at=WHEN)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x>" not in page and "&lt;img src=x&gt;" in page
    assert "openai/&lt;b&gt;m&lt;/b&gt;" in page
    assert "exhausted before the verifier" in page and "never saw a positive PASS" in page
    assert "late-task" in page and "2026-01-01 00:00 UTC" in page
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")


def test_report_dispatch_reaches_the_page() -> None:
    page = render_html(_results(_row("t1", never_positive_pass=False, exhausted=[], exhausted_before_verifier=False)))
    assert "t1" in page and "never saw a positive PASS</span>" not in page


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"kind": "generate"}, "needs 'tasks'"),
        ({"kind": "generate", "tasks": [1]}, "needs 'tasks'"),
        ({"kind": "generate", "tasks": [], "summary": []}, "needs 'summary'"),
    ],
)
def test_bad_results(results: dict[str, object], message: str) -> None:
    from vouch.errors import UsageError

    with pytest.raises(UsageError, match=message):
        render_generate(results)
