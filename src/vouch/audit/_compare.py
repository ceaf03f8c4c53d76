"""``vouch audit compare``: the lightweight audit against the per-trial one (TestJack RQ2, Table 3).

Recall is the share of the per-trial audit's refutations the other run also refutes; precision
the share of the other run's refutations the per-trial audit also makes. Cost is counted three
ways from each run's own record: engine executions, the seconds its runs took (summed over runs),
and wall time; model tokens where a model wrote witnesses. T0 (in R[G], R and R[s]) is what the
benchmark itself runs and both modes run it alike, so ``cost_ratio`` is over the audit's work
beyond T0: the run-seconds of every other stage, lightweight over per-trial.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vouch.errors import UsageError

T0_STAGES = ("T0 in R[G] and R", "T0 in R[s]")
"""Stages both modes run alike (the benchmark's own evaluation)."""
T0_IN_RS = "T0 in R[s]"
"""The same runs in both modes (T0 of every distinct program): the yardstick of the machine's
speed during each run, for ``cost_ratio_normalised``."""
_REFUTED = ("refuted", "reward_hack")


def _load(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not an audit results file ({exc})") from exc
    if not isinstance(body, dict) or body.get("kind") != "audit" or "trials" not in body:
        raise UsageError(f"{path}: not an audit results file (no kind 'audit' with trials)")
    return body


def _refuted(body: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in body["trials"]:
        if t.get("verdict") in _REFUTED:
            out.setdefault(t["task_id"], set()).add(t["trial_id"])
    return out


def _cost(body: dict[str, Any], basis: str = "stage_run_seconds") -> dict[str, Any]:
    config = body.get("config") or {}
    run_s = config.get(basis) or {}
    runs = config.get("stage_runs") or {}
    agent = config.get("agent") or {}
    return {
        "executions": body["summary"]["executions"],
        "audit_executions": sum(n for stage, n in runs.items() if stage not in T0_STAGES),
        "audit_run_s": round(sum(s for stage, s in run_s.items() if stage not in T0_STAGES), 3),
        "t0_run_s": round(float(run_s.get(T0_IN_RS) or 0.0), 3),
        "wall_s": body["summary"]["wall_s"],
        "tokens": int(agent.get("input_tokens") or 0) + int(agent.get("output_tokens") or 0),
    }


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _normalised(light: dict[str, Any], base: dict[str, Any]) -> float | None:
    """``cost_ratio`` with each run's run-seconds counted in units of its own T0 in R[s].

    Both modes run T0 on the same distinct programs, so that stage is the same work in both; a
    run made while the machine was busier is slower in it by as much as in the rest. Dividing by
    it takes the load out of a comparison of two runs made at different times.
    """
    if not light["t0_run_s"] or not base["t0_run_s"]:
        return None
    return _ratio(light["audit_run_s"] / light["t0_run_s"], base["audit_run_s"] / base["t0_run_s"])


def _agreement(reference: dict[str, set[str]], other: dict[str, set[str]]) -> dict[str, Any]:
    ref = set().union(*reference.values()) if reference else set()
    got = set().union(*other.values()) if other else set()
    both = ref & got
    return {
        "refuted": len(got),
        "recovered": len(both),
        "recall": _ratio(len(both), len(ref)),
        "precision": _ratio(len(both), len(got)),
    }


def compare(
    per_trial: Path, lightweight: Path, ablation: Path | None = None, static: Path | None = None
) -> dict[str, Any]:
    """The comparison as JSON-ready data: totals, each run's cost, and per task; the ablation
    (task analysis alone) and the static baseline (``--mode static``) beside, when given
    (TestJack's Table 4).

    Raises:
        UsageError: A file that is not audit results, runs over different trials, or the two
            files in the wrong modes.
    """
    base, light = _load(per_trial), _load(lightweight)
    if base.get("mode", "per-trial") != "per-trial":
        raise UsageError(f"{per_trial}: mode {base.get('mode')!r}; the first file is the per-trial audit")
    if light.get("mode") != "lightweight":
        raise UsageError(f"{lightweight}: mode {light.get('mode')!r}; the second file is a lightweight audit")
    ids = {t["trial_id"] for t in base["trials"]}
    if {t["trial_id"] for t in light["trials"]} != ids:
        raise UsageError(f"{per_trial} and {lightweight} judge different trials; audit the same samples in both modes")
    reference, refuted = _refuted(base), _refuted(light)
    # Run-seconds when both runs recorded them; results written before they were recorded are
    # compared by their stages' wall seconds (said in ``cost_basis``).
    both = all((b.get("config") or {}).get("stage_run_seconds") for b in (base, light))
    basis = "stage_run_seconds" if both else "stage_seconds"
    cost_base, cost_light = _cost(base, basis), _cost(light, basis)
    rounds = {r["task_id"]: r.get("rounds", []) for r in light.get("tasks", [])}
    tasks = []
    for task_id in sorted(set(reference) | set(refuted) | set(rounds), key=_task_order):
        tasks.append(
            {
                "task_id": task_id,
                "per_trial_refuted": len(reference.get(task_id, ())),
                "rounds": len([r for r in rounds.get(task_id, []) if r.get("round", 0) > 0]),
                "by_task_analysis": sum(len(r["refuted"]) for r in rounds.get(task_id, []) if r.get("round") == 0),
                **_agreement({task_id: reference.get(task_id, set())}, {task_id: refuted.get(task_id, set())}),
                "missed": sorted(reference.get(task_id, set()) - refuted.get(task_id, set()), key=_task_order),
                "executions": sum(r.get("executions", 0) for r in rounds.get(task_id, [])),
            }
        )
    summary = {
        "mode": "lightweight",
        "rounds": (light.get("config") or {}).get("rounds"),
        "executions": cost_light["executions"],
        **_agreement(reference, refuted),
        "per_trial_refuted": sum(len(v) for v in reference.values()),
        "cost_ratio": _ratio(cost_light["audit_run_s"], cost_base["audit_run_s"]),
        "cost_basis": "run-seconds beyond T0" if both else "stage wall seconds beyond T0",
        "cost_ratio_normalised": _normalised(cost_light, cost_base),
        "execution_ratio": _ratio(cost_light["audit_executions"], cost_base["audit_executions"]),
        "wall_ratio": _ratio(cost_light["wall_s"], cost_base["wall_s"]),
        "token_ratio": _ratio(cost_light["tokens"], cost_base["tokens"]),
    }
    out: dict[str, Any] = {
        "kind": "audit-compare",
        "per_trial": {"file": str(per_trial), **cost_base},
        "lightweight": {"file": str(lightweight), **cost_light},
        "summary": summary,
        "tasks": tasks,
    }
    for name, path, mode in (("ablation", ablation, "lightweight"), ("static", static, "static")):
        if path is None:
            continue
        other = _load(path)
        if other.get("mode") != mode:
            raise UsageError(f"{path}: mode {other.get('mode')!r}; the {name} run is a {mode} audit")
        if {t["trial_id"] for t in other["trials"]} != ids:
            raise UsageError(f"{path} judges other trials than {per_trial}")
        cost = _cost(other, basis)
        out[name] = {
            "file": str(path),
            **cost,
            **_agreement(reference, _refuted(other)),
            "cost_ratio": _ratio(cost["audit_run_s"], cost_base["audit_run_s"]),
        }
    return out


def _task_order(task_id: str) -> tuple[str, int]:
    head, _, tail = task_id.rpartition("/")
    tail = tail.split("#")[0]
    return (head, int(tail)) if tail.isdigit() else (task_id, 0)
