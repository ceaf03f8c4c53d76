"""The ``generate`` page: what ``vouch bench generate --json`` found, with a trace viewer per task.

The columns are the findings VerifierBench sections 3.3 and 4 name: budgets exhausted (and
exhausted before the first verifier was written), executions used, and self-tests that never
saw a complete positive PASS. Under each row, the condensed trace: messages, tool calls with
their results, budget events. One self-contained page: inline CSS and SVG, no script from
anywhere. Every piece of text from the results goes through ``_e``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import vouch
from vouch.errors import UsageError

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#59636e}.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:1rem 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:.5rem .8rem;min-width:9rem}
.card b{display:block;font-size:1.3rem}.card.warn b{color:#cf222e}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #d0d7de;padding:.3rem .4rem;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.flag{color:#cf222e;font-weight:600}.ok{color:#1a7f37}.muted{color:#8c959f}
details{margin:.4rem 0;border:1px solid #d0d7de;border-radius:6px;padding:.3rem .6rem}
summary{cursor:pointer;font-weight:600}.step{border-left:3px solid #d0d7de;margin:.4rem 0;padding:.1rem .6rem}
.step.assistant{border-color:#0072B2}.step.tool{border-color:#009E73}.step.budget,.step.no_tool_call{border-color:#cf222e}
.step.user,.step.system{border-color:#8c959f}.step .h{font-size:12px;color:#59636e}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.4rem;border-radius:4px;margin:.2rem 0;
font-size:12px;max-height:24rem;overflow:auto}footer{margin-top:2rem;color:#8c959f;font-size:12px}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any, spec: str = "") -> str:
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _e(format(value, spec))
    return _e(value)


def _card(label: str, value: Any, warn: bool = False) -> str:
    return f'<div class="card{" warn" if warn else ""}"><b>{_num(value)}</b>{_e(label)}</div>'


def _bar(used: Any, budget: Any) -> str:
    """Executions used against the budget, as a small inline SVG bar."""
    if not isinstance(used, int) or not isinstance(budget, int) or budget <= 0:
        return ""
    width = 80
    filled = round(width * min(used, budget) / budget)
    colour = "#cf222e" if used >= budget else "#0072B2"
    return (
        f'<svg width="{width}" height="10" role="img" aria-label="{used} of {budget}">'
        f'<rect width="{width}" height="10" fill="#eaeef2"/><rect width="{filled}" height="10" fill="{colour}"/></svg>'
    )


def _verifier(row: Mapping[str, Any]) -> str:
    if row.get("submitted"):
        return '<span class="ok">submitted</span>'
    if row.get("verifier_written"):
        return "written, not submitted"
    return '<span class="flag">none</span>'


def _exhausted(row: Mapping[str, Any]) -> str:
    which = row.get("exhausted") or []
    if not which:
        return '<span class="muted">-</span>'
    text = _e(", ".join(str(w) for w in which))
    if row.get("exhausted_before_verifier"):
        text += ' <span class="flag">exhausted before the verifier</span>'
    return text


def _self_tests(row: Mapping[str, Any]) -> str:
    positive = f"{_num(row.get('positive_self_test_passes'))}/{_num(row.get('positive_self_tests'))} valid PASS"
    negative = f"{_num(row.get('negative_self_test_fails'))}/{_num(row.get('negative_self_tests'))} invalid FAIL"
    flag = ' <span class="flag">never saw a positive PASS</span>' if row.get("never_positive_pass") else ""
    return f"{positive}, {negative}{flag}"


def _row(row: Mapping[str, Any]) -> str:
    cost = row.get("cost_usd")
    cells = [
        _e(row.get("task_id", "?")),
        _e(row.get("kind", "?")),
        _e(row.get("status", "?")),
        _e(row.get("end_reason", "?")),
        _verifier(row),
        f"{_num(row.get('executions_used'))}/{_num(row.get('executions_budget'))} "
        + _bar(row.get("executions_used"), row.get("executions_budget")),
        _exhausted(row),
        _self_tests(row),
        _num(row.get("malformed_tool_calls")),
        f"{_num(row.get('input_tokens'))} / {_num(row.get('output_tokens'))}",
        _num(cost, ".4f") if cost is not None else _num(None),
        _num(row.get("wall_s"), ".1f"),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _trace(row: Mapping[str, Any]) -> str:
    steps = row.get("trace") or []
    if not isinstance(steps, list):
        steps = []
    parts = []
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        kind = str(step.get("kind", "?"))
        t = step.get("t")
        when = f"{t:.1f} s" if isinstance(t, (int, float)) else ""
        parts.append(
            f'<div class="step {_e(kind)}"><div class="h">{_e(when)} {_e(step.get("title", kind))}</div>'
            f"<pre>{_e(step.get('body', ''))}</pre></div>"
        )
    error = f'<p class="flag">{_e(row["error"])}</p>' if row.get("error") else ""
    return (
        f"<details><summary>{_e(row.get('task_id', '?'))}: {len(parts)} steps, "
        f"{_e(row.get('turns', '?'))} turns, {_e(row.get('tool_calls', {}))}</summary>{error}{''.join(parts)}</details>"
    )


def _config(config: Any) -> str:
    if not isinstance(config, Mapping):
        return ""
    found = config.get("harness")
    harness: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    rows = []
    for key, value in {**{k: v for k, v in config.items() if k not in ("harness", "prices")}, **harness}.items():
        shown = f"<pre>{_e(value)}</pre>" if isinstance(value, str) and "\n" in value else _e(value)
        rows.append(f"<tr><th>{_e(key)}</th><td>{shown}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def render_generate(results: Mapping[str, Any], *, generated_at: datetime | None = None) -> str:
    """Renders a ``generate`` results dict (``vouch bench generate --json``) as one HTML page.

    Args:
        results: The results object, with ``tasks`` (one analysis per task) and ``summary``.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Returns:
        The page: inline CSS and SVG, nothing loaded from anywhere.

    Raises:
        UsageError: ``tasks`` is not a list of objects or ``summary`` is not an object.
    """
    tasks = results.get("tasks")
    summary = results.get("summary", {})
    if not isinstance(tasks, list) or not all(isinstance(t, Mapping) for t in tasks):
        raise UsageError("a generate results file needs 'tasks': a list of per-task objects")
    if not isinstance(summary, Mapping):
        raise UsageError("a generate results file needs 'summary': an object")
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    cost = summary.get("cost_usd")
    cards = "".join(
        [
            _card("tasks", summary.get("tasks")),
            _card("submitted", summary.get("submitted")),
            _card("verifiers written", summary.get("verifiers_written")),
            _card("budget exhausted", summary.get("budget_exhausted"), bool(summary.get("budget_exhausted"))),
            _card(
                "exhausted before the verifier",
                summary.get("exhausted_before_verifier"),
                bool(summary.get("exhausted_before_verifier")),
            ),
            _card(
                "never saw a positive PASS",
                summary.get("never_positive_pass"),
                bool(summary.get("never_positive_pass")),
            ),
            _card("malformed tool calls", summary.get("malformed_tool_calls")),
            _card("executions used", summary.get("executions_used")),
            _card("output tokens", summary.get("output_tokens")),
            _card("cost ($)", None if cost is None else round(float(cost), 4)),
        ]
    )
    unfinished = results.get("unfinished") or []
    note = (
        f'<p class="flag">unfinished (run the command again to resume): {_e(", ".join(map(str, unfinished)))}</p>'
        if unfinished
        else ""
    )
    heads = (
        "task", "kind", "status", "end", "verifier", "executions", "budgets exhausted",
        "self-tests", "malformed", "tokens in / out", "cost $", "wall s",
    )  # fmt: skip
    table = (
        "<table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in heads)
        + "</tr></thead><tbody>"
        + "".join(_row(t) for t in tasks)
        + "</tbody></table>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>vouch: verifier generation, {_e(results.get("model", "?"))}</title><style>{_CSS}</style></head>
<body>
<h1>Verifier generation: {_e(results.get("model", "?"))}</h1>
<p class="meta">harness {_e(results.get("harness", "?"))}; verifiers in {_e(results.get("verifiers_dir", "?"))};
score them with <code>vouch bench score --verifiers {_e(results.get("verifiers_dir", "DIR"))}</code></p>
{note}<div class="cards">{cards}</div>
<h2>Tasks</h2>{table}
<h2>Traces</h2>{"".join(_trace(t) for t in tasks)}
<h2>Configuration</h2>{_config(results.get("config"))}
<footer>vouch {_e(results.get("vouch_version", "?"))} results, rendered by vouch {_e(vouch.__version__)} on {_e(when)}
</footer>
</body></html>
"""
