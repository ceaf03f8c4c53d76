"""G's answer and each model's answers on the inputs an audit reported as questions about G or P.

The audit reports such inputs (``tasks[].ambiguous_inputs``) by their arguments alone; the errata
gives the maintainer what to decide with: what G answers there and what each model's passing
trials answer (their most common answer, and how many of them give it). Every program runs in the
engine, the trials being judged code as in the audit.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vouch.audit import decoded, outputs_spec
from vouch.core import AuditResults, Verdict
from vouch.errors import InfrastructureError
from vouch.exec import Executor, vouch_failure
from vouch.sources.trials import Problem

PER_CALL_S = 2.0
_STANDING = (Verdict.SOUND, Verdict.FLAGGED, Verdict.REFUTED, Verdict.REWARD_HACK)


def _answer(row: Mapping[str, Any]) -> str:
    if row.get("ok") and "value" in row:
        try:
            return json.dumps(row["value"])
        except (TypeError, ValueError):
            return repr(row["value"])
    if row.get("ok"):
        return f"an object: {row.get('opaque')}"
    return f"raised or stopped: {row.get('error')}"


def answer_errata(
    rows: Sequence[dict[str, Any]],
    results: AuditResults,
    problems: Mapping[str, Problem],
    programs: Mapping[str, str],
    executor: Executor,
) -> list[dict[str, Any]]:
    """``rows`` with G's and each model's answers added to every ``ambiguous_input`` row."""
    inputs: dict[str, list[list[Any]]] = {}
    position: dict[int, int] = {}
    """Row index -> the row's place among its task's inputs."""
    for index, row in enumerate(rows):
        if row["kind"] == "ambiguous_input" and row["task_id"] in problems:
            try:
                args = json.loads(row["input"])
            except (TypeError, ValueError):
                continue
            if isinstance(args, list):
                position[index] = len(inputs.setdefault(row["task_id"], []))
                inputs[row["task_id"]].append(args)
    if not inputs:
        return list(rows)
    by_program: dict[tuple[str, str], tuple[str, str]] = {}
    for trial in results.trials:
        if trial.task_id in inputs and trial.benchmark_pass and trial.verdict in _STANDING:
            program = programs.get(trial.trial_id)
            if program is not None:
                by_program.setdefault((trial.task_id, trial.program_hash or trial.trial_id), (trial.model, program))
    specs = []
    owners: list[tuple[str, str | None]] = []
    for task, args in inputs.items():
        problem = problems[task]
        specs.append(outputs_spec(problem.reference, problem.entry_point, args, f"G of {task}", PER_CALL_S))
        owners.append((task, None))
        for (t, _), (model, program) in by_program.items():
            if t == task:
                specs.append(outputs_spec(program, problem.entry_point, args, f"a trial of {task}", PER_CALL_S))
                owners.append((task, model))
    answers_g: dict[str, list[str]] = {}
    per_model: dict[tuple[str, str], list[Counter[str]]] = {}
    for spec, result, (task, owner) in zip(specs, executor.run_batch(specs), owners, strict=True):
        why = vouch_failure(result)
        if why is not None:
            raise InfrastructureError(f"export: {spec.name} could not be run by vouch: {why}")
        got = [_answer(r) for r in decoded(result, len(inputs[task]))]
        if owner is None:
            answers_g[task] = got
        else:
            slots = per_model.setdefault((task, owner), [Counter() for _ in got])
            for slot, answer in zip(slots, got, strict=True):
                slot[answer] += 1
    out = []
    for index, row in enumerate(rows):
        if index not in position:
            out.append(row)
            continue
        task, i = row["task_id"], position[index]
        models = {
            model: f"{slots[i].most_common(1)[0][0]} ({slots[i].most_common(1)[0][1]} of {sum(slots[i].values())})"
            for (t, model), slots in per_model.items()
            if t == task and i < len(slots) and slots[i]
        }
        out.append({**row, "g_answer": answers_g.get(task, ["?"] * (i + 1))[i], "models": models})
    return out
