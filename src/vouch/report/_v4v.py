"""The V4V page: the task-by-check matrix of ``vouch v4v --json`` with a drill-down per task.

VerifierBench records one outcome per task and check (its 1,332 outcomes are this table), so
the page is built around that matrix: one row per task, one cell per check, and under each row
the evidence of every check in readable form. Evidence is JSON a check wrote and later checks
may add fields to it, so fields the page does not know are shown as a key/value table rather
than dropped or refused. Every piece of text from the results goes through ``_e``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import vouch
from vouch.errors import UsageError
from vouch.report._html import _dl, _e, _rect, _svg, _template
from vouch.report._view import UNDEFINED, _flatten, _kind_of, _Reader, _show, count
from vouch.v4v import V4V_CHECKS, V4VCheck, check_names, find_check, load_target, v4v_check

State = Literal["passed", "failed", "not_run"]

CHECK_NAMES: dict[str, str] = {check.name: check.label for check in V4V_CHECKS}
"""V4V's checks in the paper's order, with the names the page shows. The page reads them from
``vouch.v4v._registry`` (which imports nothing of the engine: rendering a results file starts
none) each time it renders; this is the registry as vouch ships it."""

STATE_MARKS: dict[State, str] = {"passed": "\u2713", "failed": "\u2717", "not_run": "\u2013"}
STATE_WORDS: dict[State, str] = {"passed": "passed", "failed": "failed", "not_run": "not run"}
STATE_COLOURS: dict[State, str] = {"passed": "#1a7f37", "failed": "#cf222e", "not_run": "#afb8c1"}

_LONG_TEXT = 160
"""Strings longer than this (or with a line break) are shown pre-formatted."""


@dataclass(frozen=True)
class CheckCell:
    """One task's outcome on one check: a matrix cell and a section of its drill-down."""

    check: str
    state: State
    reason: str
    evidence: _Reader


@dataclass(frozen=True)
class TaskRow:
    """One task: a matrix row."""

    task_id: str
    kind: str
    source: str
    retained: bool
    cells: tuple[CheckCell, ...]

    @property
    def failed(self) -> tuple[str, ...]:
        """The checks this task failed, in column order."""
        return tuple(c.check for c in self.cells if c.state == "failed")


@dataclass(frozen=True)
class Exclusion:
    """An excluded task, the checks it failed and each check's reason."""

    task_id: str
    failed_checks: tuple[str, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class V4VView:
    """Everything the V4V page shows, read from one ``v4v`` results dict."""

    schema_version: str
    vouch_version: str
    seed: str
    tasks_dir: str
    config: tuple[tuple[str, str], ...]
    checks: tuple[str, ...]
    checks_run: tuple[str, ...]
    tasks: tuple[TaskRow, ...]
    exclusions: tuple[Exclusion, ...]

    @property
    def sources(self) -> tuple[str, ...]:
        """The task sources, sorted."""
        return tuple(sorted({t.source for t in self.tasks}))

    def tally(self, check: str, tasks: Iterable[TaskRow] | None = None) -> dict[State, int]:
        """How many of ``tasks`` (default all) passed, failed and did not run ``check``."""
        out: dict[State, int] = {"passed": 0, "failed": 0, "not_run": 0}
        for task in self.tasks if tasks is None else tasks:
            out[next(c.state for c in task.cells if c.check == check)] += 1
        return out


def check_name(check: str) -> str:
    """The name the page shows for a check: ``mutation`` -> ``C6 mutation testing``; a check this
    vouch does not know, by its key."""
    known = find_check(check)
    return check if known is None else known.label


def _task_row(row: _Reader, columns: list[str]) -> TaskRow:
    task_id = row.text("task_id")
    if not task_id:
        raise row.bad("task_id", "a non-empty string")
    if not isinstance(row.data.get("checks"), Mapping):
        raise row.bad("checks", "an object of check name -> {passed, reason, evidence}")
    checks = row.obj("checks")
    cells: dict[str, CheckCell] = {}
    for name in checks.data:
        check = checks.obj(str(name))
        passed = check.flag("passed")
        if passed is None:
            raise check.bad("passed", "true or false")
        state: State = "passed" if passed else "failed"
        cells[name] = CheckCell(name, state, check.text("reason"), check.obj("evidence"))
        if name not in columns:
            columns.append(name)
    retained = row.flag("retained")
    return TaskRow(
        task_id=task_id,
        kind=row.text("kind"),
        # Task ids are ``<source>-...``: the prefix stands in when a row does not say.
        source=row.text("source") or task_id.split("-", 1)[0],
        retained=all(c.state == "passed" for c in cells.values()) if retained is None else retained,
        cells=tuple(cells.values()),
    )


def build_v4v_view(results: Mapping[str, Any]) -> V4VView:
    """Reads a ``v4v`` results dict into the page's view model, checking every field it uses.

    Args:
        results: What ``vouch v4v --json`` wrote.

    Returns:
        The view model: the six checks (and any further ones the rows carry) as columns, every
        task with a cell per column (``not_run`` where a row has no entry), the exclusions.

    Raises:
        UsageError: a field is missing or has the wrong type; the message names its path
            (``tasks[2].checks.mutation``).
    """
    top = _Reader(results, "")
    if results.get("kind") != "v4v":
        raise top.bad("kind", "'v4v'")
    if not isinstance(results.get("tasks"), list):
        raise top.bad("tasks", "a list of task rows ({task_id, retained, checks})")
    columns = list(check_names())
    read = [_task_row(row, columns) for row in top.rows("tasks")]
    tasks = []
    for t in read:
        have = {c.check: c for c in t.cells}
        row_cells = tuple(have.get(n) or CheckCell(n, "not_run", "", _Reader({}, "")) for n in columns)
        tasks.append(TaskRow(t.task_id, t.kind, t.source, t.retained, row_cells))
    config = top.obj("config")
    checks_run = top.strings("checks_run") or config.strings("checks")
    by_id = {t.task_id: t for t in tasks}
    if "excluded" in results:
        listed = [(r.text("task_id"), r.strings("failed_checks"), r.text("reason")) for r in top.rows("excluded")]
    else:
        listed = [(t.task_id, t.failed, "") for t in tasks if not t.retained]
    exclusions = []
    for task_id, failed, reason in listed:
        task = by_id.get(task_id)
        cells = {c.check: c for c in task.cells} if task else {}
        reasons = [f"{check_name(c)}: {cells[c].reason}" for c in failed if c in cells and cells[c].reason]
        exclusions.append(Exclusion(task_id, failed, tuple(([reason] if reason else []) + reasons)))
    return V4VView(
        schema_version=_show(results.get("schema_version")),
        vouch_version=_show(results.get("vouch_version")),
        seed=_show(results.get("seed")),
        tasks_dir="" if config.data.get("tasks") is None else _show(config.data["tasks"]),
        config=tuple(_flatten(config.data)),
        checks=tuple(columns),
        checks_run=checks_run,
        tasks=tuple(tasks),
        exclusions=tuple(exclusions),
    )


# --- evidence, generically ----------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if value is None:
        return '<span class="muted">null</span>'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and ("\n" in value or len(value) > _LONG_TEXT):
        return f'<pre class="text">{_e(value)}</pre>'
    return _e(value)


def value_html(value: Any) -> str:
    """Any JSON value, readable: a list of objects as a table, an object as key/value rows."""
    if isinstance(value, Mapping):
        return kv_table(value)
    if isinstance(value, list):
        if not value:
            return '<span class="muted">none</span>'
        if all(isinstance(v, Mapping) for v in value):
            return records_table(value)
        if all(not isinstance(v, Mapping | list) for v in value):
            return " &middot; ".join(_scalar(v) for v in value)
        return '<ol class="values">' + "".join(f"<li>{value_html(v)}</li>" for v in value) + "</ol>"
    return _scalar(value)


def kv_table(data: Mapping[str, Any], keys: Iterable[str] | None = None) -> str:
    """An object (or the given keys of it) as a two-column table."""
    shown = list(data if keys is None else keys)
    if not shown:
        return ""
    rows = "".join(f'<tr><th scope="row">{_e(k)}</th><td>{value_html(data[k])}</td></tr>' for k in shown)
    return f'<table class="kv">{rows}</table>'


Cell = Callable[[Any], str]


def records_table(
    rows: Sequence[Mapping[str, Any]], first: Sequence[str] = (), cells: Mapping[str, Cell] | None = None
) -> str:
    """Objects as a table: the ``first`` columns present, then every other key in first-seen order."""
    shown = cells or {}
    keys = [k for k in first if any(k in r for r in rows)]
    for row in rows:
        keys += [k for k in row if k not in keys]
    head = "".join(f"<th>{_e(k)}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td>{shown.get(k, value_html)(r.get(k))}</td>" for k in keys) + "</tr>" for r in rows
    )
    return f'<table class="records"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _mono(value: Any) -> str:
    return f'<code class="case-id">{_e(value)}</code>' if value not in (None, "") else UNDEFINED


def _decision(value: Any) -> str:
    word = "missing" if value is None else str(value)
    return f'<span class="decision d-{_e(word.lower())}">{_e(word)}</span>'


CASE_CELLS: dict[str, Cell] = {"case_id": _mono, "decision": _decision}


def _diff(text: str) -> str:
    """A unified diff, pre-formatted and escaped, added and removed lines marked."""
    out = []
    for line in text.splitlines():
        cls = ""
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        out.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


# --- evidence of each check ---------------------------------------------------------------------

Shown = tuple[str, frozenset[str]]
"""What a check's renderer made, and which evidence keys it showed (the rest go generic)."""


def _records(ev: _Reader, key: str, title: str, first: Sequence[str]) -> str:
    rows = ev.rows(key)
    if not rows:
        return f'<p class="muted">No {_e(title)}.</p>'
    table = records_table([r.data for r in rows], first, CASE_CELLS)
    return f"<h5>{_e(title)} ({len(rows)})</h5>{table}"


def replay_evidence(ev: _Reader) -> Shown:
    lead = f"<p>{count(ev.integer('cases'), 'case')} replayed through the reference verifier.</p>"
    order = ("case_id", "label", "category", "decision", "reason", "rationale")
    return lead + _records(ev, "disagreements", "cases that disagree with their label", order), frozenset(
        {"cases", "disagreements"}
    )


def repeatability_evidence(ev: _Reader) -> Shown:
    lead = f"<p>{count(ev.integer('runs'), 'run')}, each in a fresh pool with its own hash seed and order.</p>"
    return lead + _records(ev, "flaky", "flaky cases (decision per run)", ("case_id", "decisions")), frozenset(
        {"runs", "flaky"}
    )


def problems_evidence(ev: _Reader) -> Shown:
    return _records(ev, "problems", "problems", ("case_id", "problem")), frozenset({"problems"})


def _score_bar(score: float | None, threshold: float | None) -> str:
    w, h = 200, 14

    def x(ba: float) -> float:
        return (max(-100.0, min(100.0, ba)) + 100) / 200 * w

    out = [_rect(0, h / 2 - 1, w, 2, "#eaeef2"), _rect(x(0) - 0.5, 1, 1, h - 2, "#8c959f")]
    if threshold is not None:
        out.append(_rect(x(threshold) - 1, 0, 2, h, "#cf222e", tip=f"threshold {threshold:g}"))
    if score is not None:
        x0, x1 = sorted((x(0), x(score)))
        over = threshold is not None and score > threshold
        out.append(_rect(x0, 3, max(x1 - x0, 2.0), h - 6, "#cf222e" if over else "#0072B2", tip=f"{score:g}"))
    return _svg(w, h, "BAnorm against the threshold", out)


def trivial_baselines_evidence(ev: _Reader) -> Shown:
    threshold = ev.num("threshold")
    scores = ev.obj("ba_norm")
    rows = []
    for name in scores.data:
        score = scores.num(str(name))
        over = threshold is not None and score is not None and score > threshold
        verdict = '<span class="pill s-failed">above</span>' if over else '<span class="muted">at or below</span>'
        shown = UNDEFINED if score is None else f"{score:+.2f}".replace("-", "\u2212")
        note = f" (mean over {count(ev.integer('random_seeds'), 'seed')})" if name == "random_mean" else ""
        rows.append(
            f'<tr class="baseline" data-baseline="{_e(name)}"><td><code>{_e(name)}</code>{_e(note)}</td>'
            f'<td class="num">{shown}</td><td>{_score_bar(score, threshold)}</td><td>{verdict}</td></tr>'
        )
    limit = UNDEFINED if threshold is None else f"{threshold:g}"
    html = (
        f"<p>Each trivial verifier's BAnorm on this task's cases against the threshold <b>{limit}</b>: "
        "a suite that a trivial verifier scores above it on is too weak.</p>"
        '<table class="baselines"><thead><tr><th>trivial verifier</th><th class="num">BAnorm</th>'
        "<th>on [&minus;100, 100], red line: threshold</th><th>threshold</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return html, frozenset({"threshold", "ba_norm", "random_seeds"})


MUTANT_KEYS = frozenset({"id", "operator", "description", "diff"})


def _mutants(ev: _Reader, key: str, title: str) -> str:
    rows = ev.rows(key)
    if not rows:
        return ""
    cards = []
    for m in rows:
        diff = m.text("diff")
        rest = [k for k in m.data if k not in MUTANT_KEYS]
        cards.append(
            f'<div class="mutant" data-mutant-id="{_e(m.text("id"))}"><div class="mutant-head">'
            f'<code>{_e(m.text("id"))}</code> <span class="badge">{_e(m.text("operator"))}</span> '
            f"{_e(m.text('description'))}</div>{_diff(diff) if diff else ''}{kv_table(m.data, rest)}</div>"
        )
    return f"<h5>{_e(title)} ({len(rows)})</h5>" + "".join(cards)


def mutation_evidence(ev: _Reader) -> Shown:
    made, total, detected = ev.integer("mutants"), ev.integer("mutants_total"), ev.integer("detected")
    sampled = f" (a seeded sample of {count(total)})" if ev.flag("sampled") else ""
    lead = (
        f"<p>{count(detected)} of {count(made, 'mutant')} of the reference verifier{_e(sampled)} detected: "
        "some case got a different valid decision (PASS against FAIL).</p>"
    )
    body = _mutants(ev, "undetected", "undetected mutants") + _mutants(
        ev, "equivalent", "mutants shown equivalent, with the evidence"
    )
    keys = {"mutants", "mutants_total", "sampled", "detected", "undetected", "equivalent"}
    return lead + body, frozenset(keys)


def renderer(check: str) -> Callable[[_Reader], Shown] | None:
    """The function that shows a check's evidence (its registry entry's ``evidence``), or None."""
    known = find_check(check)
    return None if known is None or known.evidence is None else load_target(known.evidence)


def evidence_html(cell: CheckCell) -> str:
    """A check's evidence: its own view of the fields it knows, a key/value table of the rest."""
    render = renderer(cell.check)
    html, known = render(cell.evidence) if render and cell.state != "not_run" else ("", frozenset[str]())
    rest = [k for k in cell.evidence.data if k not in known]
    if rest:
        html += ("<h5>other evidence</h5>" if render else "") + kv_table(cell.evidence.data, rest)
    return html


# --- the page -----------------------------------------------------------------------------------


def _pill(state: State) -> str:
    return f'<span class="pill s-{state}">{STATE_WORDS[state]}</span>'


def _drill(task: TaskRow, i: int, width: int) -> str:
    sections = []
    for j, cell in enumerate(task.cells):
        reason = f'<p class="reason">{_e(cell.reason)}</p>' if cell.reason else ""
        body = evidence_html(cell) if cell.state != "not_run" else '<p class="muted">This check was not run.</p>'
        sections.append(
            f'<section class="check s-{cell.state}" id="drill-{i}-{j}" data-check="{_e(cell.check)}"'
            f' data-state="{cell.state}"><h4>{_pill(cell.state)} {_e(check_name(cell.check))}</h4>{reason}{body}'
            "</section>"
        )
    return (
        f'<tr class="drill" id="drill-{i}" data-task-id="{_e(task.task_id)}" hidden><td colspan="{width}">'
        f'<div class="drill-body">{"".join(sections)}</div></td></tr>'
    )


def _matrix(view: V4VView) -> str:
    rows = []
    index = {c: j for j, c in enumerate(view.checks)}
    for i, t in enumerate(view.tasks):
        cells = "".join(
            f'<td class="cell s-{c.state}" data-check="{_e(c.check)}" data-state="{c.state}" data-col="{j}"'
            f' title="{_e(check_name(c.check))}: {STATE_WORDS[c.state]}{": " + _e(c.reason) if c.reason else ""}">'
            f"{STATE_MARKS[c.state]}</td>"
            for j, c in enumerate(t.cells)
        )
        verdict = (
            '<span class="pill s-passed">retained</span>'
            if t.retained
            else _pill("failed").replace("failed</", "excluded</")
        )
        failed = " ".join(str(index[c]) for c in t.failed)
        rows.append(
            f'<tr class="task-row" id="task-{i}" data-index="{i}" data-task-id="{_e(t.task_id)}"'
            f' data-source="{_e(t.source)}" data-retained="{str(t.retained).lower()}" data-failed="{failed}"'
            f' data-search="{_e(t.task_id.lower())}" tabindex="0" aria-expanded="false" aria-controls="drill-{i}">'
            f'<th scope="row" class="task-id"><span class="caret" aria-hidden="true"></span>{_e(t.task_id)}</th>'
            f'<td class="muted">{_e(t.source)}</td><td class="muted">{_e(t.kind)}</td>{cells}<td>{verdict}</td></tr>'
        )
        rows.append(_drill(t, i, len(view.checks) + 4))
    return "\n".join(rows)


def _stack(tally: Mapping[State, int]) -> str:
    w, h, total = 160, 12, max(sum(tally.values()), 1)
    out, x0 = [], 0.0
    for state, n in tally.items():
        out.append(_rect(x0, 0, n / total * w, h, STATE_COLOURS[state], tip=f"{n} {STATE_WORDS[state]}"))
        x0 += n / total * w
    return _svg(w, h, "passed, failed and not run", out)


def _totals(view: V4VView) -> str:
    rows = []
    for check in view.checks:
        tally = view.tally(check)
        rows.append(
            f'<tr class="total" data-check="{_e(check)}"><td>{_e(check_name(check))}</td>'
            + "".join(f'<td class="num">{tally[s]}</td>' for s in ("passed", "failed", "not_run"))
            + f"<td>{_stack(tally)}</td></tr>"
        )
    return "".join(rows)


def _by_source(view: V4VView) -> str:
    rows = []
    for source in view.sources:
        tasks = [t for t in view.tasks if t.source == source]
        kept = sum(t.retained for t in tasks)
        failing = "".join(f'<td class="num">{view.tally(c, tasks)["failed"] or ""}</td>' for c in view.checks)
        rows.append(
            f'<tr class="source" data-source="{_e(source)}"><td>{_e(source)}</td><td class="num">{len(tasks)}</td>'
            f'<td class="num">{kept}</td><td class="num">{len(tasks) - kept}</td>{failing}</tr>'
        )
    return "".join(rows)


def _exclusions(view: V4VView) -> str:
    anchors = {t.task_id: f"task-{i}" for i, t in reversed(list(enumerate(view.tasks)))}
    rows = []
    for x in view.exclusions:
        link = f'<a href="#{anchors[x.task_id]}">{_e(x.task_id)}</a>' if x.task_id in anchors else _e(x.task_id)
        checks = " ".join(f'<span class="pill s-failed">{_e(check_name(c))}</span>' for c in x.failed_checks)
        reasons = "".join(f"<li>{_e(r)}</li>" for r in x.reasons) or f"<li>{UNDEFINED}</li>"
        rows.append(
            f'<tr class="exclusion" data-task-id="{_e(x.task_id)}"><td class="task-id">{link}</td>'
            f'<td>{checks}</td><td><ul class="reasons">{reasons}</ul></td></tr>'
        )
    if not rows:
        return '<p class="muted" id="no-exclusions">No task was excluded: every task passed every check it ran.</p>'
    return (
        '<table id="exclusions"><thead><tr><th>task</th><th>failed checks</th><th>reasons</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _checks_now() -> list[V4VCheck]:
    """The registry's checks as it holds them when the page is rendered."""
    return [v4v_check(name) for name in check_names()]


def _glossary() -> str:
    """The footer's list of the checks: each one's name and what it asks of a task."""
    return "\n".join(
        f"    <dt>{html.escape(c.label, quote=False)}</dt><dd>{html.escape(c.summary, quote=False)}</dd>"
        for c in _checks_now()
    )


def _check_range() -> str:
    """``C1&ndash;C6``: the first and last checks' numbers."""
    numbers = [c.label.split(" ")[0] for c in _checks_now()]
    return "&ndash;".join(html.escape(n) for n in (numbers[0], numbers[-1]))


def render_v4v(results: Mapping[str, Any], *, generated_at: datetime | None = None) -> str:
    """Renders a ``v4v`` results dict as one self-contained HTML page.

    Args:
        results: What ``vouch v4v --json`` wrote.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Returns:
        The page: the envelope and totals, the task-by-check matrix with filters and a drill-down
        per task, and the exclusions; inline CSS and script, no external resource.

    Raises:
        UsageError: a field is missing or has the wrong type; the message names its path.
    """
    if not isinstance(results, Mapping):
        raise UsageError(f"results field '(top level)' must be an object, got {_kind_of(results)}")
    view = build_v4v_view(results)
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    kept = sum(t.retained for t in view.tasks)
    meta = [
        ("kind", "<code>v4v</code>"),
        ("vouch version", f'<span class="volatile">{_e(view.vouch_version)}</span>'),
        ("schema version", _e(view.schema_version)),
        ("seed", f"<code>{_e(view.seed)}</code>"),
        ("tasks dir", f"<code>{_e(view.tasks_dir)}</code>" if view.tasks_dir else UNDEFINED),
        ("checks run", ", ".join(_e(check_name(c)) for c in view.checks_run) or UNDEFINED),
    ]
    cards = [("tasks", str(len(view.tasks))), ("retained", str(kept)), ("excluded", str(len(view.tasks) - kept))]
    cards += [("task\u2013check outcomes", str(sum(c.state != "not_run" for t in view.tasks for c in t.cells)))]
    heads = "".join(
        f'<th class="check-head" data-check="{_e(c)}" title="{_e(check_name(c))}">{_e(check_name(c))}</th>'
        for c in view.checks
    )
    return _template("v4v.html").substitute(
        title=_e(f"vouch: V4V on {view.tasks_dir or 'a task set'}"),
        meta=_dl(meta),
        config=_dl((f"<code>{_e(k)}</code>", _e(v)) for k, v in view.config),
        config_count=len(view.config),
        cards="".join(
            f'<div class="card" data-card="{_e(k)}"><div class="label">{_e(k)}</div><div class="value">{v}</div></div>'
            for k, v in cards
        ),
        totals=_totals(view),
        source_heads="".join(f'<th class="num">{_e(check_name(c).split(" ")[0])}</th>' for c in view.checks),
        by_source=_by_source(view),
        source_options="".join(f'<option value="{_e(s)}">{_e(s)}</option>' for s in view.sources),
        check_options="".join(
            f'<option value="{j}">failing {_e(check_name(c))}</option>' for j, c in enumerate(view.checks)
        ),
        check_heads=heads,
        matrix=_matrix(view),
        task_count=len(view.tasks),
        exclusions=_exclusions(view),
        glossary=_glossary(),
        check_range=_check_range(),
        renderer_version=_e(vouch.__version__),
        generated_at=_e(when),
    )
