"""Deciding one tau2 case: through the engine against a fresh ``python`` running tau2's evaluator.

For one retail and one airline task (the first of each domain's test split whose gold writes),
the gold case is decided (a) by the task's reference verifier through the engine (a warm pool
that has the domain databases loaded: one forked run a decision) and (b) by a fresh ``python``
process that imports tau2, loads the domain with tau2's own ``get_environment`` and runs the same
evaluators on the same calls, with nothing of vouch in it. Both in the same run; the script
prints each time, the ratio, and checks that both give the same verdict.

    .venv/bin/python benchmarks/bench_tau2.py [--repeat 10] [--fresh 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vouch.bench import Decision, decide_cases, load_tasks, preload_for
from vouch.core import write_task
from vouch.exec import LocalExecutor
from vouch.sources.tau2 import _source as _tau2
from vouch.sources.tau2 import _world as world

FRESH = """
import json, sys
from loguru import logger
logger.disable("tau2")
import importlib
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.evaluator.evaluator_action import ActionEvaluator
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
from tau2.evaluator.evaluator_env import EnvironmentEvaluator

domain, task_id, candidate = json.loads(sys.stdin.read())
module = importlib.import_module(f"tau2.domains.{domain}.environment")
task = next(t for t in module.get_tasks(None) if t.id == task_id)
env = module.get_environment()
messages = []
for i, call in enumerate(candidate["calls"]):
    tool_call = ToolCall(id=f"call_{i}", name=call["function"], arguments=call["args"], requestor="assistant")
    messages += [AssistantMessage(role="assistant", tool_calls=[tool_call]), env.get_response(tool_call)]
if candidate.get("final_answer"):
    messages.append(AssistantMessage(role="assistant", content=candidate["final_answer"]))
reward = EnvironmentEvaluator.calculate_reward(module.get_environment, task, messages).reward
basis = {b.value for b in task.evaluation_criteria.reward_basis}
if "ACTION" in basis:
    reward *= ActionEvaluator.calculate_reward(task, messages).reward
if "COMMUNICATE" in basis:
    reward *= CommunicateEvaluator.calculate_reward(task, messages).reward
print(json.dumps(reward))
"""


def _first_writing_test_task(domain: str) -> str:
    loaded = world.load_domain(domain)
    kinds = world.tool_kinds(domain)
    test = set(loaded.splits["test"])
    for task_id, task in loaded.tasks.items():
        actions = task.evaluation_criteria.actions or [] if task.evaluation_criteria else []
        if task_id in test and any(kinds.get(a.name) == "write" for a in actions):
            return f"{domain}/{task_id}"
    raise SystemExit(f"no {domain} test task writes")


def main() -> None:
    parser = argparse.ArgumentParser(description="one tau2 decision: engine vs a fresh python running tau2")
    parser.add_argument("--repeat", type=int, default=10, help="engine decisions timed per task")
    parser.add_argument("--fresh", type=int, default=3, help="fresh processes timed per task")
    args = parser.parse_args()
    picked = [_first_writing_test_task(d) for d in ("retail", "airline")]
    with tempfile.TemporaryDirectory(prefix="vouch-bench-tau2-") as tmp:
        for task in _tau2.build(Path(tmp), seed=0, options={"tasks": picked, "split": "test"}).tasks:
            write_task(Path(tmp), task)
        tasks = load_tasks(Path(tmp))
        rows = []
        with LocalExecutor(workers=1, preload=preload_for(tasks)) as pool:
            for task in tasks:
                gold = next(c for c in task.cases if c.category == "gold")
                verifier = (task.root / "reference" / "verifier.py").read_text()
                decide_cases(pool, [(task, gold, verifier)])  # the pool is started and warm
                engine = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    [result] = decide_cases(pool, [(task, gold, verifier)])
                    engine.append(time.perf_counter() - started)
                fresh = []
                payload = json.dumps(
                    [task.spec.replay_args["domain"], task.spec.replay_args["task_id"], gold.candidate]
                )
                for _ in range(args.fresh):
                    started = time.perf_counter()
                    out = subprocess.run(
                        [sys.executable, "-c", FRESH], input=payload, capture_output=True, text=True, check=True
                    )
                    fresh.append(time.perf_counter() - started)
                reward = json.loads(out.stdout.strip().splitlines()[-1])
                same = (result.decision is Decision.PASS) == (reward == 1.0)
                rows.append((task.id, statistics.median(engine), statistics.median(fresh), same))
    for task_id, engine_s, fresh_s, same in rows:
        print(
            f"{task_id}: engine {1000 * engine_s:.0f} ms/decision (median of {args.repeat}), fresh python + tau2 "
            f"{1000 * fresh_s:.0f} ms (median of {args.fresh}): {fresh_s / engine_s:.1f}x; "
            f"same verdict: {'yes' if same else 'NO'}"
        )
    total_engine = sum(r[1] for r in rows)
    total_fresh = sum(r[2] for r in rows)
    print(f"fresh python / engine = {total_fresh / total_engine:.1f}x (both tasks)")


if __name__ == "__main__":
    main()
