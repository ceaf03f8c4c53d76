"""The price of sealing: a verifier under test on AgentDojo state tasks, sealed against open.

``vouch bench score`` runs verifiers under test in a sealed pool that cannot import AgentDojo
(its task classes hold the checks); their states are replayed in a second pool and shipped as
JSON snapshots over the service channel. The open pool, which reference verifiers use, replays
inside the verifier's own run. This script decides the same cases with the same verifier (one
that reads both states) both ways, in the same process, and prints both times and the ratio.

    .venv/bin/python benchmarks/bench_sealed.py --tasks tasks/agentdojo [--limit 20]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vouch.bench import Decision, decide_cases, load_tasks, preload_for, sealed_executor
from vouch.exec import LocalExecutor

VERIFIER = """
def verify(candidate, env):
    # Something changed, and every call the candidate made ran: reads both snapshots in full.
    return env.post_state != env.pre_state and bool(candidate.get("calls"))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="sealed vs open pools on AgentDojo state tasks")
    parser.add_argument("--tasks", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None, help="first N state tasks")
    args = parser.parse_args()
    tasks = [t for t in load_tasks(args.tasks) if t.spec.kind == "state"][: args.limit]
    items = [(t, c, VERIFIER) for t in tasks for c in t.cases]
    print(f"{len(tasks)} state tasks, {len(items)} decisions")
    timings = {}
    decisions = {}
    for name in ("open", "sealed"):
        pools = LocalExecutor(preload=preload_for(tasks)) if name == "open" else sealed_executor(tasks)
        with pools as executor:
            decide_cases(executor, items[:2])  # start the pools (and warm AgentDojo) before timing
            started = time.monotonic()
            results = decide_cases(executor, items)
            timings[name] = time.monotonic() - started
        decisions[name] = [r.decision for r in results]
        invalid = sum(r.decision is Decision.INVALID for r in results)
        print(f"{name}: {timings[name]:.1f} s, {1000 * timings[name] / len(items):.1f} ms/decision, {invalid} INVALID")
    same = sum(a == b for a, b in zip(decisions["open"], decisions["sealed"], strict=True))
    print(f"same decision on {same} of {len(items)} cases")
    print(f"sealed / open = {timings['sealed'] / timings['open']:.2f}x")


if __name__ == "__main__":
    main()
