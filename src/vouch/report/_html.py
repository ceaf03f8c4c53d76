"""The self-contained HTML report: the view model through the templates in ``templates/``.

Plots are inline SVG drawn here; the page loads nothing from the network. Every piece of text
from the results file (task ids, rationales, reasons, config values) goes through ``_e``.
"""

from __future__ import annotations

import functools
import html
import importlib
import importlib.resources
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from string import Template
from typing import Any

import vouch
from vouch.errors import UsageError
from vouch.report._view import (
    UNDEFINED,
    AllReject,
    CategoryCounts,
    Figures,
    Interval,
    ReportView,
    TaskResult,
    TaskView,
    build_view,
    count,
    pct,
    signed,
)

# Okabe-Ito: distinguishable with the common colour-vision deficiencies (yellow left out: too pale).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
OUTCOME_COLOURS = {"agree": "#1a7f37", "disagree": "#cf222e", "invalid": "#bf8700", "missing": "#8c959f"}
POSITIVE_CATEGORIES = ("gold", "variant")
NEGATIVE_CATEGORIES = ("error", "attack")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


@functools.cache
def _template(name: str) -> Template:
    return Template(importlib.resources.files("vouch.report").joinpath("templates", name).read_text("utf-8"))


def _ci(interval: Interval | None, scale: float = 100.0) -> str:
    if interval is None:
        return ""
    lo, hi = (f"{v * scale:.1f}".replace("-", "\u2212") for v in (interval.lo, interval.hi))
    return f' <span class="ci">[{lo}, {hi}]</span>'


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _svg(width: int, height: int, label: str, body: Iterable[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
        f' role="img" aria-label="{_e(label)}">' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, content: str, *, anchor: str = "start", cls: str = "", extra: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}{extra}>{_e(content)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1.0, extra: str = "") -> str:
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"'
        f' stroke-width="{width}"{extra}/>'
    )


def _rect(x: float, y: float, w: float, h: float, fill: str, extra: str = "", tip: str = "") -> str:
    head = f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{h:.1f}" fill="{fill}"{extra}'
    return f"{head}><title>{_e(tip)}</title></rect>" if tip else f"{head}/>"


# --- plots --------------------------------------------------------------------------------------


def _place(
    x: float, y: float, label: str, taken: list[tuple[float, float, float, float]], box: tuple[float, ...]
) -> str:
    """A label beside the point at (x, y), on the first side where it overlaps no label placed before."""
    w, h = 6.6 * len(label), 12.0
    sides = ((10, -8, "start"), (10, 16, "start"), (-10, -8, "end"), (-10, 16, "end"))
    for dx, dy, anchor in sides:
        x0 = x + dx if anchor == "start" else x + dx - w
        rect = (x0, y + dy - h + 2, x0 + w, y + dy + 2)
        inside = box[0] <= rect[0] and rect[2] <= box[2] and box[1] <= rect[1] and rect[3] <= box[3]
        if inside and not any(r[0] < rect[2] and rect[0] < r[2] and r[1] < rect[3] and rect[1] < r[3] for r in taken):
            taken.append(rect)
            return _text(x + dx, y + dy, label, anchor=anchor)
    return ""  # no free side: the legend and the tooltip still name the point


def plot_tpr_tnr(view: ReportView) -> str:
    """TPR against TNR, one point per verifier set (and, for one set, one per kind)."""
    left, top, size = 58, 12, 380
    width, height = left + size + 16, top + size + 46

    def x(tnr: float) -> float:
        return left + tnr * size

    def y(tpr: float) -> float:
        return top + (1 - tpr) * size

    out = [
        _rect(left, top, size, size, "#ffffff", ' stroke="#d1d9e0"'),
        f'<polygon points="{x(0)},{y(0)} {x(1)},{y(0)} {x(0)},{y(1)}" fill="#fdf0f0"/>',
    ]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out += [_line(x(t), top, x(t), top + size, "#eaeef2"), _line(left, y(t), left + size, y(t), "#eaeef2")]
        out += [_text(x(t), top + size + 16, f"{t:.0%}", anchor="middle", cls="small")]
        out += [_text(left - 6, y(t) + 4, f"{t:.0%}", anchor="end", cls="small")]
    out += [_line(x(0), y(1), x(1), y(0), "#57606a", 1.2, ' stroke-dasharray="5 4"')]
    out += [_line(x(0.5), y(1), x(1), y(0.5), "#afb8c1", 1.0, ' stroke-dasharray="2 3"')]
    for at, label in ((0.1, "BAnorm 0"), (0.6, "BAnorm +50")):
        lx, ly = x(at), y(1 - at) if at < 0.5 else y(1.5 - at)
        out.append(_text(lx + 6, ly + 4, label, cls="small", extra=f' transform="rotate(45 {lx:.1f} {ly:.1f})"'))
    out.append(_text(left + size / 2, height - 6, "TNR: negatives rejected", anchor="middle"))
    ylab = f' transform="rotate(-90 14 {top + size / 2})"'
    out.append(_text(14, top + size / 2, "TPR: positives accepted", anchor="middle", extra=ylab))
    single = len(view.verifiers) == 1
    points = [("all tasks" if single else v.name, v.figures, _colour(i), True) for i, v in enumerate(view.verifiers)]
    if single:
        points += [(g.name, g.figures, _colour(0), False) for g in view.verifiers[0].by_kind]
    shown = [(n, f, c, m, x(f.tnr), y(f.tpr)) for n, f, c, m in points if f.tpr is not None and f.tnr is not None]
    taken: list[tuple[float, float, float, float]] = []
    for _, fig, colour, main, px, py in shown:  # intervals first, under every point
        width_, style = (2.0, ' opacity="0.55"') if main else (1.2, ' opacity="0.35" stroke-dasharray="4 2"')
        if fig.tnr_ci95:
            out.append(_line(x(fig.tnr_ci95.lo), py, x(fig.tnr_ci95.hi), py, colour, width_, style))
        if fig.tpr_ci95:
            out.append(_line(px, y(fig.tpr_ci95.lo), px, y(fig.tpr_ci95.hi), colour, width_, style))
    for name, fig, colour, main, px, py in shown:
        tip = f"{name}: TPR {pct(fig.tpr)}, TNR {pct(fig.tnr)}, BAnorm {signed(fig.ba_norm)}"
        fill, r = (colour, 7) if main else ("#ffffff", 5)
        out.append(
            f'<circle class="point" cx="{px:.1f}" cy="{py:.1f}" r="{r}" fill="{fill}" stroke="{colour}"'
            f' stroke-width="2"><title>{_e(tip)}</title></circle>'
        )
        taken.append((px - r, py - r, px + r, py + r))
    for name, _, _, _, px, py in sorted(shown, key=lambda p: not p[3]):  # main points claim label space first
        out.append(_place(px, py, name, taken, (left, top, left + size + 12, top + size)))
    return _svg(width, height, "TPR against TNR per verifier set", out)


def plot_ba_by_kind(view: ReportView) -> str:
    """BAnorm of every verifier set on all tasks and on each kind, with 95% interval bars."""
    left, plot_w, right, top = 118, 340, 58, 24
    n = len(view.verifiers)
    bar = 16 if n == 1 else 10
    row_h = n * (bar + 3) + 18
    rows: list[str | None] = [None, *view.kinds]
    width, height = left + plot_w + right, top + len(rows) * row_h + 26

    def x(ba: float) -> float:
        return left + (max(-100.0, min(100.0, ba)) + 100) / 200 * plot_w

    out = []
    for tick in (-100, -50, 0, 50, 100):
        out.append(_line(x(tick), top - 4, x(tick), top + len(rows) * row_h, "#57606a" if tick == 0 else "#eaeef2"))
        out.append(
            _text(x(tick), top - 9, f"{tick:+d}".replace("-", "\u2212") if tick else "0", anchor="middle", cls="small")
        )
    for r, kind in enumerate(rows):
        y0 = top + r * row_h + 9
        first = view.verifiers[0].figures_of(kind)
        mid = y0 + n * (bar + 3) / 2
        out.append(_text(left - 10, mid, kind or "all tasks", anchor="end"))
        if first and first.tasks is not None:
            out.append(_text(left - 10, mid + 13, count(first.tasks, "task"), anchor="end", cls="small"))
        if r:
            out.append(_line(8, y0 - 9, width - 8, y0 - 9, "#eaeef2"))
        for i, verifier in enumerate(view.verifiers):
            fig, yb = verifier.figures_of(kind), y0 + i * (bar + 3)
            if fig is None or fig.ba_norm is None:
                out.append(_text(x(0) + 4, yb + bar - 1, "undefined", cls="small"))
                continue
            x0, x1 = sorted((x(0), x(fig.ba_norm)))
            tip = f"{verifier.name} on {kind or 'all tasks'}: BAnorm {signed(fig.ba_norm)}"
            out.append(_rect(x0, yb, max(x1 - x0, 2.0), bar, _colour(i), ' opacity="0.85"', tip))
            if fig.ba_norm_ci95:
                lo, hi, mid = x(fig.ba_norm_ci95.lo), x(fig.ba_norm_ci95.hi), yb + bar / 2
                out += [_line(lo, mid, hi, mid, "#24292f", 1.3)]
                out += [_line(end, yb + 1, end, yb + bar - 1, "#24292f", 1.3) for end in (lo, hi)]
            out.append(f'<circle cx="{x(fig.ba_norm):.1f}" cy="{yb + bar / 2:.1f}" r="3" fill="{_colour(i)}"/>')
            out.append(_text(left + plot_w + 8, yb + bar - 1, signed(fig.ba_norm), cls="small" if n > 1 else ""))
    out.append(_text(left + plot_w / 2, height - 4, "BAnorm; whiskers: 95% interval over tasks", anchor="middle"))
    return _svg(width, height, "BAnorm by kind with 95% intervals", out)


def _short(name: str, limit: int = 22) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "\u2026"


def plot_all_reject(view: ReportView) -> str:
    """Share of tasks whose verifier accepts no positive, and their share of the positive FAILs."""
    measures: list[tuple[str, str, Callable[[AllReject], float | None]]] = [
        ("tasks whose verifier accepts no positive", "#24292f", lambda a: a.share_of_tasks),
        ("their share of all positive FAILs, case-weighted", "#6e7781", lambda a: a.fail_share_case_weighted),
        ("their share of all positive FAILs, task-weighted", "#afb8c1", lambda a: a.fail_share_task_weighted),
    ]
    left, plot_w, bar, top = 200, 440, 12, 58
    row_h = len(measures) * (bar + 2) + 16
    width, height = left + plot_w + 130, top + len(view.verifiers) * row_h + 18
    out = []
    for m, (label, colour, _) in enumerate(measures):
        out += [_rect(left, 4 + m * 16, 11, 11, colour), _text(left + 16, 14 + m * 16, label, cls="small")]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        xt = left + t * plot_w
        out += [
            _line(xt, top - 2, xt, height - 18, "#eaeef2"),
            _text(xt, height - 4, f"{t:.0%}", anchor="middle", cls="small"),
        ]
    for i, verifier in enumerate(view.verifiers):
        y0, ar = top + i * row_h + 4, verifier.all_reject
        name = _text(left - 10, y0 + 1.5 * (bar + 2) + 4, _short(verifier.name, 28), anchor="end")
        out.append(name.replace("</text>", f"<title>{_e(verifier.name)}</title></text>"))
        for m, (label, colour, get) in enumerate(measures):
            value, yb = get(ar), y0 + m * (bar + 2)
            if value is None:
                out.append(_text(left + 4, yb + bar - 1, "undefined (no positive FAIL at all)", cls="small"))
                continue
            out.append(_rect(left, yb, max(value * plot_w, 2.0), bar, colour, tip=f"{verifier.name}: {label}"))
            note = f" ({count(ar.tasks)} of {count(verifier.figures.tasks)} tasks)" if m == 0 else ""
            out.append(_text(left + value * plot_w + 6, yb + bar - 1, pct(value, 0) + note, cls="small"))
    return _svg(width, height, "All-reject share per verifier set", out)


def _legend(view: ReportView, anchors: Mapping[str, str]) -> tuple[str, str]:
    """The plots' colour key, and (for one verifier set) links to its all-reject tasks."""
    dots = [
        f'<span class="dot" style="background:{_colour(i)}"></span>{_e(v.name)}' for i, v in enumerate(view.verifiers)
    ]
    if len(view.verifiers) > 1:
        return " ".join(dots), ""
    ids = view.verifiers[0].all_reject.task_ids
    links = ", ".join(f'<a href="#{anchors[t]}">{_e(t)}</a>' if t in anchors else _e(t) for t in ids)
    return dots[0] + " on all tasks; hollow: each kind", f" All-reject tasks: {links}." if links else ""


# --- tables -------------------------------------------------------------------------------------


def _mini_interval(fig: Figures, colour: str) -> str:
    w, h, pad = 170, 16, 4

    def x(ba: float) -> float:
        return pad + (max(-100.0, min(100.0, ba)) + 100) / 200 * (w - 2 * pad)

    out = [_line(pad, h / 2, w - pad, h / 2, "#d1d9e0"), _line(x(0), 2, x(0), h - 2, "#8c959f")]
    if fig.ba_norm_ci95:
        lo, hi = x(fig.ba_norm_ci95.lo), x(fig.ba_norm_ci95.hi)
        out.append(_rect(lo, h / 2 - 3, max(hi - lo, 2), 6, colour, ' opacity="0.35" rx="3"'))
    if fig.ba_norm is not None:
        out.append(f'<circle cx="{x(fig.ba_norm):.1f}" cy="{h / 2}" r="4" fill="{colour}"/>')
    return _svg(w, h, "BAnorm interval", out)


def _leaderboard(view: ReportView) -> str:
    rows = []
    for i, v in enumerate(view.verifiers):
        f, ar = v.figures, v.all_reject
        rows.append(
            f'<tr class="leaderboard-row" data-verifier="{_e(v.name)}"><td class="num">{i + 1}</td>'
            f'<td class="name"><span class="dot" style="background:{_colour(i)}"></span>{_e(v.name)}</td>'
            f'<td class="num ba">{signed(f.ba_norm)}</td>'
            f"<td>{_mini_interval(f, _colour(i))}{_ci(f.ba_norm_ci95, 1.0)}</td>{_rates(f, ba=False)}"
            f'<td class="num">{pct(f.fpr_attack_pooled)}</td><td class="num">{count(ar.tasks)}</td>'
            f'<td class="num">{count(f.tasks)}</td><td class="num">{count(f.cases)}</td></tr>'
        )
    return "".join(rows)


def _outcome_of(category: str, decision: str) -> str:
    if decision in ("invalid", "missing"):
        return decision
    if category not in POSITIVE_CATEGORIES + NEGATIVE_CATEGORIES:
        return "missing"
    return "agree" if (decision == "pass") == (category in POSITIVE_CATEGORIES) else "disagree"


def _stacked(c: CategoryCounts) -> str:
    w, h = 180, 14
    parts = [("pass", c.passed), ("fail", c.failed), ("invalid", c.invalid), ("missing", c.missing)]
    total = max(sum(n for _, n in parts), 1)
    out, x0 = [], 0.0
    for name, n in parts:
        seg = n / total * w
        colour = OUTCOME_COLOURS[_outcome_of(c.category, name)]
        out.append(_rect(x0, 0, seg, h, colour, tip=f"{c.category}: {n} {name.upper()}"))
        x0 += seg
    return _svg(w, h, f"decisions on {c.category} cases", out)


def _grouped(view: ReportView) -> str:
    boxes = []
    for i, v in enumerate(view.verifiers):
        g = v.grouped
        rows = "".join(
            f'<tr class="category" data-category="{_e(c.category)}"><td>{_e(c.category)}</td>'
            + "".join(f'<td class="num">{n}</td>' for n in (c.cases, c.passed, c.failed, c.invalid, c.missing))
            + f"<td>{_stacked(c)}</td></tr>"
            for c in g.by_category
        )
        counts = {k: count(getattr(g, k)) for k in ("fail", "invalid", "missing")}
        boxes.append(
            _template("grouped.html").substitute(
                name=_e(v.name), colour=_colour(i), not_accepted=count(g.positives_not_accepted), rows=rows, **counts
            )
        )
    return "".join(boxes)


def _rates(f: Figures, *, ba: bool = True) -> str:
    """Table cells: BAnorm (unless ``ba`` is false), TPR, TNR and FPRh, each with its interval."""
    cells = [(signed(f.ba_norm), f.ba_norm_ci95, 1.0)] if ba else []
    cells += [(pct(f.tpr), f.tpr_ci95, 100.0), (pct(f.tnr), f.tnr_ci95, 100.0)]
    cells.append((pct(f.fpr_attack), f.fpr_attack_ci95, 100.0))
    return "".join(f'<td class="num">{value}{_ci(ci, scale)}</td>' for value, ci, scale in cells)


def _by_group(view: ReportView) -> str:
    blocks = []
    for v in view.verifiers:
        rows = "".join(
            f'<tr><td class="muted">{what}</td><td>{_e(g.name)}</td><td class="num">{count(g.figures.tasks)}</td>'
            f'<td class="num">{count(g.figures.cases)}</td>{_rates(g.figures)}</tr>'
            for what, groups in (("kind", v.by_kind), ("source", v.by_source))
            for g in groups
        )
        counts = " &middot; ".join(f"{_e(k)} {_e(n)}" for k, n in v.counts) or UNDEFINED
        opened = " open" if len(view.verifiers) == 1 else ""
        blocks.append(_template("by_group.html").substitute(name=_e(v.name), opened=opened, rows=rows, counts=counts))
    return "".join(blocks)


# --- tasks --------------------------------------------------------------------------------------


def _decision_cells(result: TaskResult, case_id: str, *, split: bool) -> str:
    """One verifier's decision on a case: badge and reason in one cell, or (``split``) in two."""
    d = result.decision(case_id)
    badge = f'<span class="decision o-{d.outcome}">{_e(d.decision or "missing")}</span>'
    if split:
        return f'<td>{badge}</td><td class="reason">{_e(d.reason or "")}</td>'
    return f'<td>{badge}<span class="reason">{_e(d.reason or "")}</span></td>'


def _task(task: TaskView, index: int, colours: Mapping[str, str]) -> str:
    single = len(colours) == 1
    chips, figure_rows = [], []
    for r in task.results:
        dot = "" if single else f'<span class="dot" style="background:{colours[r.verifier]}"></span>'
        marks = ((c.case_id, r.decision(c.case_id)) for c in task.cases)
        strip = "".join(
            f'<i class="o-{d.outcome}" title="{_e(i)}: {_e(d.decision or "missing")}"></i>' for i, d in marks
        )
        chips.append(f'<span class="chip" title="{_e(r.verifier)}">{dot}<b>{signed(r.ba_norm)}</b>')
        chips.append(f'<span class="strip">{strip}</span></span>')
        warn = {True: '<span class="badge warn">accepts no positive</span>', False: "no", None: UNDEFINED}[r.all_reject]
        cells = "".join(
            f'<td class="num">{v}</td>' for v in (signed(r.ba_norm), pct(r.tpr), pct(r.tnr), pct(r.fpr_attack))
        )
        figure_rows.append(f"<tr><td>{dot}{_e(r.verifier)}</td>{cells}<td>{warn}</td></tr>")
    case_rows = []
    for c in task.cases:
        sub = f' <span class="muted">/ {_e(c.subcategory)}</span>' if c.subcategory else ""
        outcome = task.results[0].decision(c.case_id).outcome
        case_rows.append(
            f'<tr class="case" data-case-id="{_e(c.case_id)}" data-outcome="{outcome}">'
            f'<td class="mono">{_e(c.case_id)}</td><td>{_e(c.label)}</td><td>{_e(c.category)}{sub}</td>'
            + "".join(_decision_cells(r, c.case_id, split=single) for r in task.results)
            + f'<td class="rationale">{_e(c.rationale)}</td></tr>'
        )
    lead = task.results[0]
    attacks = f", {count(task.attacks, 'attack')}" if task.attacks else ""
    return _template("task.html").substitute(
        anchor=f"task-{index}",
        task_id=_e(task.task_id),
        kind=_e(task.kind),
        source=_e(task.source),
        wrong=str(len(task.cases) - lead.count("agree", task.cases)),
        all_reject="true" if lead.all_reject else "false",
        search=_e(f"{task.task_id} {task.kind} {task.source}".lower()),
        counts=f"{count(task.positives, 'positive')}, {count(task.negatives, 'negative')}{attacks}",
        flags='<span class="badge warn">all-reject</span>' if single and lead.all_reject else "",
        chips="".join(chips),
        figure_rows="".join(figure_rows),
        decision_heads="<th>decision</th><th>reason</th>"
        if single
        else "".join(f"<th>{_e(r.verifier)}</th>" for r in task.results),
        case_rows="".join(case_rows),
    )


# --- the page -----------------------------------------------------------------------------------


def _cards(view: ReportView) -> str:
    v = view.verifiers[0]
    f = v.figures
    who = "" if view.kind == "bench" else f" &middot; best: {_e(v.name)}"
    cards = [
        (f"BAnorm{who}", signed(f.ba_norm), _ci(f.ba_norm_ci95, 1.0)),
        ("TPR", pct(f.tpr), _ci(f.tpr_ci95)),
        ("TNR", pct(f.tnr), _ci(f.tnr_ci95)),
        ("FPR<sub>h</sub> on attacks", pct(f.fpr_attack), _ci(f.fpr_attack_ci95)),
        ("all-reject tasks", f"{count(v.all_reject.tasks)} / {count(f.tasks)}", ""),
    ]
    return "".join(
        f'<div class="card"><div class="label">{label}</div><div class="value">{value}</div>{ci}</div>'
        for label, value, ci in cards
    )


def _dl(pairs: Iterable[tuple[str, str]]) -> str:
    return "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in pairs)


def render_view(view: ReportView, *, generated_at: datetime | None = None) -> str:
    """Renders a view model to one self-contained HTML page.

    Args:
        view: What ``build_view`` computed.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Returns:
        The page, a complete HTML document.
    """
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    v0 = view.verifiers[0]
    excluded = ""
    if v0.excluded_count:
        excluded = f"{v0.excluded_count} by V4V: " + ", ".join(f"<code>{_e(t)}</code>" for t in v0.excluded_tasks)
    meta = [
        ("kind", f"<code>{_e(view.kind)}</code>"),
        ("vouch version", f'<span class="volatile">{_e(view.vouch_version)}</span>'),
        ("schema version", _e(view.schema_version)),
        ("seed", f"<code>{_e(view.seed)}</code>"),
        ("tasks", f"{count(v0.figures.tasks)} scored" + (f", {excluded} excluded" if excluded else "")),
    ]
    if view.kind == "bench":
        heading, subtitle = "Verifier scores", f"Verifier set <b>{_e(v0.name)}</b> on its tasks' hidden cases."
        note = "One verifier set, with 95% bootstrap intervals over tasks."
    else:
        heading = "Baseline verifiers"
        subtitle = f"{len(view.verifiers)} reference points on the same tasks: what a verifier must beat."
        note = "One row per verifier set, best BAnorm first, with 95% bootstrap intervals over tasks."
    colours = {v.name: _colour(i) for i, v in enumerate(view.verifiers)}
    legend, reject_links = _legend(view, {t.task_id: f"task-{i}" for i, t in enumerate(view.tasks)})
    return _template("page.html").substitute(
        title=_e(f"vouch: {heading.lower()}" + (f" \u2014 {v0.name}" if view.kind == "bench" else "")),
        heading=heading,
        subtitle=subtitle,
        meta=_dl(meta),
        config=_dl((f"<code>{_e(k)}</code>", _e(v)) for k, v in view.config),
        config_count=len(view.config),
        cards=_cards(view),
        leaderboard_note=note,
        leaderboard=_leaderboard(view),
        plot_tpr_tnr=plot_tpr_tnr(view),
        plot_ba_by_kind=plot_ba_by_kind(view),
        plot_all_reject=plot_all_reject(view),
        legend=legend,
        reject_links=reject_links,
        grouped=_grouped(view),
        by_group=_by_group(view),
        kind_options="".join(f'<option value="{_e(k)}">{_e(k)}</option>' for k in view.kinds),
        wrong_name=_e(v0.name),
        task_count=len(view.tasks),
        tasks="\n".join(_task(t, i, colours) for i, t in enumerate(view.tasks)),
        renderer_version=_e(vouch.__version__),
        generated_at=_e(when),
    )


OTHER_KINDS: dict[str, str] = {
    "v4v": "vouch.report._v4v:render_v4v",
    "generate": "vouch.report._generate:render_generate",
    "audit": "vouch.report._audit:render_audit",
}
"""Results kinds with a page of their own: kind -> "module:function", imported when asked for.
Each function takes ``(results, *, generated_at)`` and returns the whole page."""


def render_html(results: Mapping[str, Any], *, generated_at: datetime | None = None) -> str:
    """Renders a ``bench`` or ``baselines`` results dict as one self-contained HTML page.

    Args:
        results: What ``vouch bench score --json`` or ``vouch bench baselines --json`` wrote.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Returns:
        The page: inline CSS, inline SVG plots and a little inline JavaScript, no external resource.

    Raises:
        UsageError: ``results["kind"]`` is not a kind the report renders, or a field has the wrong type.
    """
    renderer = OTHER_KINDS.get(str(results.get("kind"))) if isinstance(results, Mapping) else None
    if renderer is not None:
        module, _, name = renderer.partition(":")
        render: Callable[..., str] = getattr(importlib.import_module(module), name)
        return render(results, generated_at=generated_at)
    return render_view(build_view(results), generated_at=generated_at)


def write_html(results: Mapping[str, Any], out: Path, *, generated_at: datetime | None = None) -> None:
    """Renders ``results`` (see ``render_html``) and writes the page to ``out``, making its directory.

    Args:
        results: A ``bench`` or ``baselines`` results dict.
        out: Where the page goes; an existing file is replaced.
        generated_at: The time stamped in the footer; now (UTC) when not given.

    Raises:
        UsageError: the results cannot be rendered, or ``out`` cannot be written.
    """
    write_page(render_html(results, generated_at=generated_at), out)


def write_page(page: str, out: Path) -> None:
    """Writes a rendered page to ``out``, making its directory.

    Raises:
        UsageError: ``out`` cannot be written.
    """
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the report to {str(out)!r}: {exc.strerror or exc}") from exc
