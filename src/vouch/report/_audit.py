"""The trial-audit page: ``vouch audit ... --json`` as one self-contained HTML page.

A view model first (plain dataclasses read from the results), then the page. The page shows
the summary (resolution rate before and after the audit), verdict counts as an inline SVG
bar, per-task facts (well-formedness, null-world assertions, ambiguous inputs), every
refutation with its witness (defect, clause of P, why T0 misses it, the replay command and
the test's source), and a table of the passing trials with their evidence counts. Every
piece of text from the results is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import vouch
from vouch.errors import UsageError

VERDICT_COLOURS = {
    "sound": "#1a7f37",
    "refuted": "#cf222e",
    "reward_hack": "#8250df",
    "flagged": "#d4a72c",
    "not_passing": "#afb8c1",
    "unappliable": "#bf8700",
    "error": "#6e7781",
}
_MAX_ROWS = 3000
"""Passing-trial rows shown; beyond that the page says how many were left out."""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class Refutation:
    trial_id: str
    verdict: str
    model: str
    defect: str
    clause: str
    why: str
    replay: str
    source: str
    flags: list[str]
    shared_by: int
    task_id: str = ""
    found_on: str | None = None


@dataclass(frozen=True)
class Finding:
    """One witness (an input and the answer P requires, or one test's source) and every trial it refutes."""

    task_id: str
    first: Refutation
    trials: list[Refutation]

    @property
    def trial_count(self) -> int:
        return sum(1 + r.shared_by for r in self.trials)


@dataclass(frozen=True)
class TrialRow:
    trial_id: str
    task_id: str
    model: str
    verdict: str
    branch_coverage: float | None
    ghosts: int
    surviving: int
    mutants: int
    flags: int
    reason: str


@dataclass(frozen=True)
class AuditView:
    benchmark: str
    mode: str
    summary: dict[str, Any]
    counts: dict[str, int]
    tasks: list[Mapping[str, Any]]
    refutations: list[Refutation]
    findings: list[Finding]
    rows: list[TrialRow]
    left_out: int
    config: dict[str, Any]
    hygiene: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    """(trial, finding) for every patch-hygiene finding of every trial."""


def _get(mapping: Mapping[str, Any], key: str, kind: type, default: Any) -> Any:
    value = mapping.get(key, default)
    if not isinstance(value, kind):
        raise UsageError(f"audit results: field {key!r} should be {kind.__name__}, got {type(value).__name__}")
    return value


def _objects(value: Any, where: str) -> list[Mapping[str, Any]]:
    """``value`` as a list of objects (None as none), else a UsageError naming ``where``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"audit results: field {where!r} should be list, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise UsageError(f"audit results: field {where}[{i}] should be an object, got {type(item).__name__}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"audit results: field {where!r} should be an object, got {type(value).__name__}")
    return value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def build_view(results: Mapping[str, Any]) -> AuditView:
    """Read an ``audit`` results dict into the page's view model.

    Raises:
        UsageError: The results are not of kind ``audit`` or a field has the wrong type.
    """
    if results.get("kind") != "audit":
        raise UsageError(f"render_audit takes results of kind 'audit', not {results.get('kind')!r}")
    trials: Sequence[Mapping[str, Any]] = _objects(_get(results, "trials", list, []), "trials")
    summary: dict[str, Any] = _get(results, "summary", dict, {})
    tasks = _objects(results.get("tasks"), "tasks")
    for n, task in enumerate(tasks):
        _objects(task.get("rounds"), f"tasks[{n}].rounds")
    config = _get(results, "config", dict, {})
    counts = {v: 0 for v in VERDICT_COLOURS}
    shared: dict[str, int] = {}
    for t in trials:
        counts[str(t.get("verdict"))] = counts.get(str(t.get("verdict")), 0) + 1
        if t.get("shared_from"):
            shared[str(t["shared_from"])] = shared.get(str(t["shared_from"]), 0) + 1
    refutations = []
    groups: dict[tuple[str, str], list[Refutation]] = {}
    rows: list[TrialRow] = []
    for n, t in enumerate(trials):
        verdict = str(t.get("verdict"))
        evidence = _object(t.get("evidence"), f"trials[{n}].evidence")
        detected = _objects(evidence.get("detector_flags"), f"trials[{n}].evidence.detector_flags")
        flags = [f"{f.get('detector')}: {f.get('detail')}" for f in detected]
        witnesses = _objects(t.get("witnesses"), f"trials[{n}].witnesses")
        if verdict in ("refuted", "reward_hack") and not t.get("shared_from"):
            for w in witnesses[:1]:
                refutation = Refutation(
                    trial_id=str(t.get("trial_id")),
                    verdict=verdict,
                    model=str(t.get("model")),
                    defect=str(w.get("defect")),
                    clause=str(w.get("clause")),
                    why=str(w.get("why_t0_misses")),
                    replay=str(w.get("replay")),
                    source=str(w.get("source")),
                    flags=flags,
                    shared_by=shared.get(str(t.get("trial_id")), 0),
                    task_id=str(t.get("task_id")),
                    found_on=w.get("found_on") if isinstance(w.get("found_on"), str) else None,
                )
                refutations.append(refutation)
                groups.setdefault((refutation.task_id, _witness_key(w)), []).append(refutation)
        if t.get("benchmark_pass") and len(rows) < _MAX_ROWS:
            rows.append(
                TrialRow(
                    trial_id=str(t.get("trial_id")),
                    task_id=str(t.get("task_id")),
                    model=str(t.get("model")),
                    verdict=verdict,
                    branch_coverage=_number(evidence.get("branch_coverage")),
                    ghosts=_count(evidence.get("ghost_branches")),
                    surviving=_count(evidence.get("surviving_mutants")),
                    mutants=int(_number(evidence.get("mutants_run")) or 0),
                    flags=len(flags),
                    reason=str(t.get("reason") or ""),
                )
            )
    passing = sum(1 for t in trials if t.get("benchmark_pass"))
    return AuditView(
        benchmark=str(results.get("benchmark", "")),
        mode=str(results.get("mode") or "per-trial"),
        summary=summary,
        counts=counts,
        tasks=list(tasks),
        refutations=refutations,
        findings=[Finding(task, found[0], found) for (task, _key), found in groups.items()],
        rows=rows,
        left_out=max(0, passing - len(rows)),
        config=dict(config),
        hygiene=[(t, h) for t in trials for h in _objects(t.get("hygiene"), "trials[].hygiene")],
    )


def _count(value: Any) -> int:
    return len(value) if isinstance(value, (list, dict, str)) else 0


def _names(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")


def _witness_key(witness: Mapping[str, Any]) -> str:
    """What makes two trials' witnesses one finding: the same input and required answer (offline),
    else the same test source."""
    if witness.get("input") is not None:
        return json.dumps([witness.get("input"), witness.get("expected")], sort_keys=True, default=repr)
    return str(witness.get("source"))


def _bar(counts: Mapping[str, int]) -> str:
    total = sum(counts.values()) or 1
    x = 0.0
    parts = []
    for verdict, n in counts.items():
        if not n:
            continue
        width = 600 * n / total
        colour = VERDICT_COLOURS.get(verdict, "#999")
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="24" fill="{colour}">'
            f"<title>{_e(verdict)}: {n}</title></rect>"
        )
        x += width
    legend = " ".join(
        f'<span class="chip" style="background:{VERDICT_COLOURS.get(v, "#999")}">{_e(v)} {n}</span>'
        for v, n in counts.items()
        if n
    )
    return f'<svg width="600" height="24" role="img" aria-label="verdicts">{"".join(parts)}</svg><p>{legend}</p>'


def _corrected(rates: Mapping[str, Any]) -> str:
    """The corrected rate, with its range when some trials are undecided (counted as failing in
    the rate, as passing at the range's other end); results before schema_version 4 have no range."""
    text = _pct(rates.get("corrected_resolution_rate"))
    undecided = rates.get("undecided")
    if isinstance(undecided, int) and undecided > 0:
        low, high = _pct(rates.get("corrected_resolution_rate_low")), _pct(rates.get("corrected_resolution_rate_high"))
        text += f" ({low} to {high}; {undecided} undecided)"
    return text


def _per_model(models: Any) -> list[str]:
    """The per-model table (an agent's rate before and after the audit), for a run of several."""
    if not isinstance(models, dict) or len(models) < 2:
        return []
    out = ["<h2>Per model</h2><table><tr><th>model</th><th>trials</th><th>passing T0</th><th>refuted</th>"]
    out.append("<th>resolution rate</th><th>corrected rate</th></tr>")
    for model, rates in models.items():
        r = rates if isinstance(rates, dict) else {}
        out.append(
            f"<tr><td>{_e(model)}</td><td>{_e(r.get('trials'))}</td><td>{_e(r.get('passing'))}</td>"
            f"<td>{_e(r.get('refuted'))}</td><td>{_pct(r.get('resolution_rate'))}</td>"
            f"<td>{_e(_corrected(r))}</td></tr>"
        )
    out.append("</table>")
    return out


def _hygiene(rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[str]:
    """Per trial, what its patch carries besides the fix: findings beside the verdict."""
    if not rows:
        return []
    out = [f"<h2>Patch hygiene: {len(rows)} findings in {len({id(t) for t, _ in rows})} trials</h2>"]
    out.append("<p>What a patch carries besides its fix. None of it refutes: verdicts rest on witnesses.</p>")
    out.append("<table><tr><th>trial</th><th>model</th><th>verdict</th><th>kind</th><th>file</th><th>what</th></tr>")
    for t, h in rows:
        out.append(
            f"<tr><td>{_e(t.get('trial_id'))}</td><td>{_e(t.get('model'))}</td><td>{_e(t.get('verdict'))}</td>"
            f"<td>{_e(h.get('kind'))}</td><td><code>{_e(h.get('file'))}</code></td><td>{_e(h.get('detail'))}</td></tr>"
        )
    out.append("</table>")
    return out


def _pct(value: Any) -> str:
    return f"{100 * float(value):.1f}%" if isinstance(value, (int, float)) else "-"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:1200px}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem}
.card b{display:block;font-size:1.4rem}
.chip{color:#fff;border-radius:10px;padding:1px 8px;margin-right:4px;font-size:.85rem}
table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #d0d7de;padding:3px 6px;text-align:left}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;font-size:.8rem}details{margin:.4rem 0}
.refutation{border-left:4px solid #cf222e;padding-left:.8rem;margin:1rem 0}.reward_hack{border-color:#8250df}
input{margin:.5rem 0;padding:3px}footer{margin-top:2rem;color:#6e7781;font-size:.8rem}
"""

_JS = """
function filterRows(q){q=q.toLowerCase();for(const r of document.querySelectorAll('#trials tbody tr')){
r.style.display=r.textContent.toLowerCase().includes(q)?'':'none'}}
"""


def _finding(finding: Finding) -> str:
    r = finding.first
    others = [t for t in finding.trials if t is not r]
    flags = f"<p>detector flags: {_e('; '.join(r.flags))}</p>" if r.flags else ""
    found = f"<p>found on: {_e(r.found_on)}</p>" if r.found_on else ""
    extra = ""
    if others or r.shared_by:
        names = ", ".join(
            f"{t.trial_id} ({t.model})" + (f" +{t.shared_by} duplicates" if t.shared_by else "") for t in others
        )
        dup = f" +{r.shared_by} duplicates" if r.shared_by else ""
        listed = ", ".join(x for x in (r.trial_id + dup, names) if x)
        extra = f"<details><summary>{finding.trial_count} trials</summary><p>{_e(listed)}</p></details>"
    return (
        f'<div class="refutation {_e(r.verdict)}"><b>{_e(r.verdict)}</b> {_e(r.trial_id)} '
        f"<small>{_e(r.model)}</small> <b>{finding.trial_count} trial(s)</b><p>{_e(r.defect)}</p>"
        f"<p>clause of P: <i>{_e(r.clause)}</i></p><p>why T0 misses it: {_e(r.why)}</p>{flags}{found}{extra}"
        f"<p>replay: <code>{_e(r.replay)}</code></p>"
        f"<details><summary>witness test</summary><pre>{_e(r.source)}</pre></details></div>"
    )


def render_audit(results: Mapping[str, Any], *, generated_at: datetime | None = None) -> str:
    """Render ``audit`` results as one self-contained HTML page (inline CSS, SVG and script).

    Args:
        results: What ``vouch audit ... --json`` wrote.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Returns:
        The page.

    Raises:
        UsageError: The results are not of kind ``audit`` or a field has the wrong type.
    """
    view = build_view(results)
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    s = view.summary
    cards = [
        ("trials", s.get("trials")),
        ("passing T0", s.get("passing")),
        ("refuted", s.get("refuted")),
        ("reward hack", s.get("reward_hack")),
        ("resolution rate", _pct(s.get("resolution_rate"))),
        ("corrected rate", _corrected(s)),
        ("refuted of passing", _pct(s.get("refuted_rate"))),
        ("executions", s.get("executions")),
        ("wall time", f"{_number(s.get('wall_s')) or 0:.1f} s"),
    ]
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>vouch audit {_e(view.benchmark)}</title><style>{_CSS}</style><script>{_JS}</script></head><body>",
        f"<h1>vouch audit {_e(view.benchmark)}: {_e(view.mode)} audit (TestJack)</h1>",
        '<div class="cards">' + "".join(f'<div class="card">{_e(k)}<b>{_e(v)}</b></div>' for k, v in cards) + "</div>",
        "<h2>Verdicts</h2>",
        _bar(view.counts),
        *_per_model(s.get("models")),
        f"<h2>Refutations: {len(view.findings)} findings, {len(view.refutations)} distinct programs</h2>",
    ]
    if not view.refutations:
        out.append("<p>No passing trial was refuted.</p>")
    for task in dict.fromkeys(f.task_id for f in view.findings):
        mine = [f for f in view.findings if f.task_id == task]
        out.append(f"<h3>{_e(task)}: {sum(f.trial_count for f in mine)} trials refuted by {len(mine)} findings</h3>")
        for finding in mine:
            out.append(_finding(finding))
    defects = [(t, d) for t in view.tasks for d in _objects(t.get("g_defects"), "tasks[].g_defects")]
    if defects:
        out.append(f"<h2>Defects of G: {len(defects)} inputs where most models agree against the ground truth</h2>")
        out.append("<p>Inputs P allows where most models' passing trials agree with each other and not with G. ")
        out.append("No refutation rests on them: they are findings about the benchmark's G.</p>")
        out.append("<table><tr><th>task</th><th>input</th><th>G</th><th>consensus</th><th>per model</th></tr>")
        for t, d in defects:
            raw = d.get("models")
            models = raw if isinstance(raw, dict) else {}
            per_model = "; ".join(f"{m}: {a}" for m, a in models.items())
            out.append(
                f"<tr><td>{_e(t.get('task_id'))}</td><td><code>{_e(d.get('input'))}</code></td>"
                f"<td><code>{_e(d.get('g_answer'))}</code></td><td><code>{_e(d.get('consensus'))}</code></td>"
                f"<td>{_e(per_model)}</td></tr>"
            )
        out.append("</table>")
    out.extend(_hygiene(view.hygiene))
    rounds = [t for t in view.tasks if t.get("rounds")]
    if rounds:
        out.append("<h2>Rounds (lightweight)</h2><table><tr><th>task</th><th>round</th><th>sampled trial</th>")
        out.append("<th>shared tests</th><th>pairs replayed</th><th>refuted</th><th>executions</th></tr>")
        for t in rounds:
            for r in t["rounds"]:
                sampled = r.get("trial_id") or "task analysis (T1)"
                out.append(
                    f"<tr><td>{_e(t.get('task_id'))}</td><td>{_e(r.get('round'))}</td><td>{_e(sampled)}</td>"
                    f"<td>{_e(_count(r.get('witnesses')))}</td><td>{_e(r.get('replayed', 0))}</td>"
                    f"<td>{_e(_names(r.get('refuted')) or '-')}</td><td>{_e(r.get('executions'))}</td></tr>"
                )
        out.append("</table>")
    out.append("<h2>Tasks</h2><table><tr><th>task</th><th>well-formed</th><th>T0 tests</th>")
    out.append("<th>pass in null world</th><th>trials</th><th>passing</th><th>refuted</th><th>ambiguous inputs</th>")
    out.append("<th>domain</th><th>note</th></tr>")
    for t in view.tasks:
        domain = "<br>".join(_e(line) for line in t.get("domain") or [] if isinstance(line, str))
        out.append(
            f"<tr><td>{_e(t.get('task_id'))}</td><td>{'yes' if t.get('well_formed') else _e(t.get('reason'))}</td>"
            f"<td>{_e(t.get('t0_tests'))}</td><td>{_e(_count(t.get('null_passing')))}</td>"
            f"<td>{_e(t.get('trials'))}</td><td>{_e(t.get('passing'))}</td><td>{_e(t.get('refuted'))}</td>"
            f"<td>{_e(_count(t.get('ambiguous_inputs')))}</td><td>{domain}</td><td>{_e(t.get('note') or '')}</td></tr>"
        )
    out.append("</table>")
    out.append(f"<h2>Passing trials ({len(view.rows)} shown)</h2>")
    out.append('<input placeholder="filter" oninput="filterRows(this.value)">')
    out.append('<table id="trials"><thead><tr><th>trial</th><th>model</th><th>verdict</th><th>branch coverage</th>')
    out.append("<th>ghost branches</th><th>surviving mutants</th><th>flags</th><th>reason</th></tr></thead><tbody>")
    for row in view.rows:
        colour = VERDICT_COLOURS.get(row.verdict, "#999")
        out.append(
            f"<tr><td>{_e(row.trial_id)}</td><td>{_e(row.model)}</td>"
            f'<td><span class="chip" style="background:{colour}">{_e(row.verdict)}</span></td>'
            f"<td>{_pct(row.branch_coverage)}</td><td>{row.ghosts}</td><td>{row.surviving} of {row.mutants}</td>"
            f"<td>{row.flags}</td><td>{_e(row.reason)}</td></tr>"
        )
    out.append("</tbody></table>")
    if view.left_out:
        out.append(f"<p>{view.left_out} more passing trials are in the JSON results.</p>")
    out.append(f"<footer>vouch {_e(vouch.__version__)}; generated {_e(when)}</footer></body></html>")
    return "\n".join(out)
