"""View models of a results file: frozen dataclasses the HTML templates read, nothing else.

A results dict is JSON someone handed us, so every field is read through a small reader that
names the field at fault (``verifiers.random.tasks[3].tpr``) when its type is wrong. A figure
may be null: it stays ``None`` here and the page shows it as undefined.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from vouch.errors import UsageError

SUPPORTED_KINDS = ("bench", "baselines")
"""Values of ``kind`` the report can render."""

DECISIONS = ("PASS", "FAIL", "INVALID", "ERROR")
"""ERROR: vouch could not make the decision (its own failure); shown as missing, never as the verifier's."""
CATEGORY_ORDER = ("gold", "variant", "error", "attack")
Outcome = Literal["agree", "disagree", "invalid", "missing"]


@dataclass(frozen=True)
class Interval:
    """A 95% interval ``[lo, hi]`` in the unit of the figure it bounds."""

    lo: float
    hi: float


@dataclass(frozen=True)
class Figures:
    """The headline figures of one verifier set, or of one kind or source within it."""

    ba_norm: float | None
    ba_norm_ci95: Interval | None
    tpr: float | None
    tpr_ci95: Interval | None
    tnr: float | None
    tnr_ci95: Interval | None
    fpr_attack: float | None
    fpr_attack_ci95: Interval | None
    fpr_attack_pooled: float | None
    tasks: int | None
    cases: int | None


@dataclass(frozen=True)
class Group:
    """The figures of one kind (``tool_call``, ...) or one source (``bfcl``, ...)."""

    name: str
    figures: Figures


@dataclass(frozen=True)
class CategoryCounts:
    """Decisions on the cases of one category, for the grouped case-level view."""

    category: str
    cases: int
    passed: int
    failed: int
    invalid: int
    missing: int


@dataclass(frozen=True)
class Grouped:
    """Of the positives not accepted, how many were an explicit FAIL, INVALID or missing."""

    positives_not_accepted: int | None
    fail: int | None
    invalid: int | None
    missing: int | None
    by_category: tuple[CategoryCounts, ...]


@dataclass(frozen=True)
class AllReject:
    """Tasks whose verifier accepts no positive, and their share of the positive FAILs."""

    tasks: int | None
    share_of_tasks: float | None
    fail_share_case_weighted: float | None
    fail_share_task_weighted: float | None
    task_ids: tuple[str, ...]


@dataclass(frozen=True)
class CaseInfo:
    """A labelled case of a task, as its verifiers saw it."""

    case_id: str
    label: str
    category: str
    subcategory: str
    rationale: str


@dataclass(frozen=True)
class CaseDecision:
    """One verifier's decision on one case; ``decision`` None means it is missing."""

    decision: str | None
    reason: str | None
    outcome: Outcome


@dataclass(frozen=True)
class TaskResult:
    """One verifier on one task: its figures and its decision per case id."""

    verifier: str
    tpr: float | None
    tnr: float | None
    ba_norm: float | None
    fpr_attack: float | None
    all_reject: bool | None
    decisions: Mapping[str, CaseDecision]

    def decision(self, case_id: str) -> CaseDecision:
        """The decision on ``case_id``; a case this verifier has no entry for is missing."""
        return self.decisions.get(case_id, CaseDecision(None, None, "missing"))

    def count(self, outcome: Outcome, cases: tuple[CaseInfo, ...]) -> int:
        """How many of ``cases`` had the given outcome under this verifier."""
        return sum(self.decision(c.case_id).outcome == outcome for c in cases)


@dataclass(frozen=True)
class TaskView:
    """One task for the drill-down: its cases and every verifier's result on it."""

    task_id: str
    kind: str
    source: str
    positives: int | None
    negatives: int | None
    attacks: int | None
    cases: tuple[CaseInfo, ...]
    results: tuple[TaskResult, ...]


@dataclass(frozen=True)
class VerifierView:
    """One verifier set: one leaderboard row and everything behind it."""

    name: str
    figures: Figures
    by_kind: tuple[Group, ...]
    by_source: tuple[Group, ...]
    grouped: Grouped
    all_reject: AllReject
    excluded_count: int | None
    excluded_tasks: tuple[str, ...]
    counts: tuple[tuple[str, str], ...]

    def figures_of(self, kind: str | None) -> Figures | None:
        """The figures on all tasks (``kind`` None) or on one kind; None when that kind has none."""
        if kind is None:
            return self.figures
        return next((g.figures for g in self.by_kind if g.name == kind), None)


@dataclass(frozen=True)
class ReportView:
    """Everything the page shows, computed from one results dict."""

    kind: str
    schema_version: str
    vouch_version: str
    seed: str
    config: tuple[tuple[str, str], ...]
    verifiers: tuple[VerifierView, ...]
    tasks: tuple[TaskView, ...]
    kinds: tuple[str, ...]


UNDEFINED = "\u2014"
"""How the page shows a figure that is null (undefined), such as TNR on a task without negatives."""


def pct(value: float | None, digits: int = 1) -> str:
    """A rate in [0, 1] as a percentage: ``0.405`` -> ``40.5%``."""
    return UNDEFINED if value is None else f"{value * 100:.{digits}f}%"


def signed(value: float | None) -> str:
    """A BAnorm with its sign and a true minus sign: ``-3.57`` -> ``\u22123.6``."""
    return UNDEFINED if value is None else f"{value:+.1f}".replace("-", "\u2212")


def count(value: int | None, noun: str = "") -> str:
    """A count, with ``noun`` made plural as needed: ``count(1, "attack")`` -> ``1 attack``."""
    shown = UNDEFINED if value is None else str(value)
    return f"{shown} {noun}{'' if value == 1 else 's'}" if noun else shown


class _Reader:
    """Typed access to one JSON object, naming the dotted path of a field that is wrong."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, Mapping):
            raise UsageError(f"results field {path or '(top level)'!r} must be an object, got {_kind_of(data)}")
        self.data: Mapping[str, Any] = data
        self.path = path

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def bad(self, key: str, want: str) -> UsageError:
        value = self.data.get(key)
        return UsageError(f"results field {self._at(key)!r} must be {want}, got {value!r} ({_kind_of(value)})")

    def num(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.bad(key, "a number or null")
        return float(value)

    def integer(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(key, "an integer or null")
        return value

    def flag(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.bad(key, "true, false or null")
        return value

    def text(self, key: str, default: str = "") -> str:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.bad(key, "a string")
        return value

    def interval(self, key: str) -> Interval | None:
        value = self.data.get(key)
        if value is None:
            return None
        ok = isinstance(value, list | tuple) and len(value) == 2
        if not ok or any(isinstance(v, bool) or not isinstance(v, int | float | None) for v in value):
            raise self.bad(key, "[lo, hi] or null")
        return None if value[0] is None or value[1] is None else Interval(float(value[0]), float(value[1]))

    def obj(self, key: str) -> _Reader:
        value = self.data.get(key)
        return _Reader({} if value is None else value, self._at(key))

    def items(self, key: str) -> list[tuple[str, _Reader]]:
        return [(name, self.obj(key).obj(name)) for name in self.obj(key).data]

    def rows(self, key: str) -> list[_Reader]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.bad(key, "a list")
        return [_Reader(row, f"{self._at(key)}[{i}]") for i, row in enumerate(value)]

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of strings; a mapping gives its keys (``excluded.tasks`` maps id -> reason)."""
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, dict):
            value = sorted(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "a list of strings")
        return tuple(value)


def _kind_of(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _flatten(config: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(_flatten(value, name + "."))
        else:
            out.append((name, _show(value)))
    return out


def _figures(r: _Reader) -> Figures:
    return Figures(
        ba_norm=r.num("ba_norm"),
        ba_norm_ci95=r.interval("ba_norm_ci95"),
        tpr=r.num("tpr"),
        tpr_ci95=r.interval("tpr_ci95"),
        tnr=r.num("tnr"),
        tnr_ci95=r.interval("tnr_ci95"),
        fpr_attack=r.num("fpr_attack"),
        fpr_attack_ci95=r.interval("fpr_attack_ci95"),
        fpr_attack_pooled=r.num("fpr_attack_pooled"),
        tasks=r.integer("tasks") if "tasks" in r.data and not isinstance(r.data["tasks"], list) else None,
        cases=r.integer("cases") if "cases" in r.data and not isinstance(r.data["cases"], list) else None,
    )


def _outcome(label: str, decision: str | None) -> Outcome:
    if decision is None or decision == "ERROR":
        return "missing"
    if decision == "INVALID":
        return "invalid"
    wanted = "PASS" if label == "positive" else "FAIL"
    return "agree" if decision == wanted else "disagree"


def _decision(r: _Reader, key: str) -> str | None:
    value = r.data.get(key)
    if value is not None and value not in DECISIONS:
        raise r.bad(key, "PASS, FAIL, INVALID, ERROR or null")
    return value


def _verifier(name: str, r: _Reader) -> VerifierView:
    grouped, reject, excluded = r.obj("grouped"), r.obj("all_reject"), r.obj("excluded")
    categories = [
        CategoryCounts(cat, *(c.integer(k) or 0 for k in ("cases", "pass", "fail", "invalid", "missing")))
        for cat, c in grouped.items("by_category")
    ]
    categories.sort(key=lambda c: (_rank(CATEGORY_ORDER, c.category), c.category))
    counts = r.obj("counts")
    fig = _figures(r)
    # At the top level ``tasks`` is the list of task rows; the counts live beside it.
    fig = replace(
        fig,
        tasks=fig.tasks if fig.tasks is not None else counts.integer("tasks") or len(r.rows("tasks")),
        cases=fig.cases if fig.cases is not None else counts.integer("cases"),
    )
    return VerifierView(
        name=name,
        figures=fig,
        by_kind=tuple(Group(k, _figures(g)) for k, g in r.items("by_kind")),
        by_source=tuple(Group(k, _figures(g)) for k, g in r.items("by_source")),
        grouped=Grouped(
            positives_not_accepted=grouped.integer("positives_not_accepted"),
            fail=grouped.integer("fail"),
            invalid=grouped.integer("invalid"),
            missing=grouped.integer("missing"),
            by_category=tuple(categories),
        ),
        all_reject=AllReject(
            tasks=reject.integer("tasks"),
            share_of_tasks=reject.num("share_of_tasks"),
            fail_share_case_weighted=reject.num("fail_share_case_weighted"),
            fail_share_task_weighted=reject.num("fail_share_task_weighted"),
            task_ids=reject.strings("task_ids"),
        ),
        excluded_count=excluded.integer("count"),
        excluded_tasks=excluded.strings("tasks"),
        counts=tuple((k, _show(v)) for k, v in counts.data.items()),
    )


def _rank(order: tuple[str, ...], value: str) -> int:
    return order.index(value) if value in order else len(order)


def _tasks(named: list[tuple[str, _Reader]]) -> tuple[TaskView, ...]:
    """Joins every verifier's task rows on task id, keeping the first-seen order of tasks and cases."""
    heads: dict[str, _Reader] = {}
    cases: dict[str, dict[str, CaseInfo]] = {}
    results: dict[str, list[TaskResult]] = {}
    for name, r in named:
        for row in r.rows("tasks"):
            task_id = row.text("task_id")
            if not task_id:
                raise row.bad("task_id", "a non-empty string")
            heads.setdefault(task_id, row)
            known = cases.setdefault(task_id, {})
            decisions: dict[str, CaseDecision] = {}
            listed = row.obj("decisions")
            for case_id in listed.data:
                decisions[case_id] = CaseDecision(_decision(listed, case_id), None, "missing")
            for c in row.rows("cases"):
                info = CaseInfo(
                    c.text("case_id"), c.text("label"), c.text("category"), c.text("subcategory"), c.text("rationale")
                )
                known.setdefault(info.case_id, info)
                listed_decision = decisions[info.case_id].decision if info.case_id in decisions else None
                decision = _decision(c, "decision") if "decision" in c.data else listed_decision
                decisions[info.case_id] = CaseDecision(decision, c.text("reason") or None, "missing")
            for case_id in decisions:
                known.setdefault(case_id, CaseInfo(case_id, "", "", "", ""))
            final = {
                cid: CaseDecision(d.decision, d.reason, _outcome(known[cid].label, d.decision))
                for cid, d in decisions.items()
            }
            results.setdefault(task_id, []).append(
                TaskResult(
                    name,
                    row.num("tpr"),
                    row.num("tnr"),
                    row.num("ba_norm"),
                    row.num("fpr_attack"),
                    row.flag("all_reject"),
                    final,
                )
            )
    out = []
    for task_id, head in heads.items():
        ordered = sorted(
            cases[task_id].values(),
            key=lambda c: (c.label != "positive", _rank(CATEGORY_ORDER, c.category)),
        )
        out.append(
            TaskView(
                task_id=task_id,
                kind=head.text("kind", "?"),
                source=head.text("source", "?"),
                positives=head.integer("positives"),
                negatives=head.integer("negatives"),
                attacks=head.integer("attacks"),
                cases=tuple(ordered),
                results=tuple(results[task_id]),
            )
        )
    return tuple(out)


def build_view(results: Mapping[str, Any]) -> ReportView:
    """Computes the view model of a ``bench`` or ``baselines`` results dict.

    Args:
        results: What ``vouch bench score --json`` or ``vouch bench baselines --json`` wrote.

    Returns:
        The view model, verifier sets in leaderboard order (BAnorm high to low, undefined last).

    Raises:
        UsageError: the kind is not one the report renders, or a field has the wrong type.
    """
    top = _Reader(results, "")
    kind = results.get("kind")
    if kind not in SUPPORTED_KINDS:
        raise UsageError(
            f"cannot render results of kind {kind!r}: the report supports "
            f"{', '.join(map(repr, (*SUPPORTED_KINDS, 'v4v', 'generate', 'audit')))}"
        )
    if kind == "bench":
        named = [(top.text("verifier_set", "verifier set"), top)]
    else:
        named = top.items("verifiers")
        if not named:
            raise top.bad("verifiers", "a non-empty object of verifier name -> results")
    views = [_verifier(name, r) for name, r in named]
    order = sorted(
        range(len(views)), key=lambda i: (views[i].figures.ba_norm is None, -(views[i].figures.ba_norm or 0.0))
    )
    named = [named[i] for i in order]
    kinds = {g.name for v in views for g in v.by_kind} | {t.text("kind") for _, r in named for t in r.rows("tasks")}
    return ReportView(
        kind=kind,
        schema_version=_show(results.get("schema_version")),
        vouch_version=_show(results.get("vouch_version")),
        seed=_show(results.get("seed")),
        config=tuple(_flatten(top.obj("config").data)),
        verifiers=tuple(views[i] for i in order),
        tasks=_tasks(named),
        kinds=tuple(sorted(kinds - {""})),
    )
