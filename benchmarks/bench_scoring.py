"""Scoring speed: reference verifiers on 5,000 tool-call and state cases, engine against subprocesses.

Builds AgentDojo state tasks (all of them: ~1,700 cases) and BFCL tool-call tasks for the rest
of ``--cases`` (default 5,000), then decides every case with its reference verifier through the
engine (the cases of one task in one sandboxed run, each its own decision), and, in the same
run, every case again with one sandboxed run per decision (the engine's way before multi-case
runs; the decisions must be the same), and a sample of the same cases with one plain ``python``
subprocess per case (no sandbox: a lower bound on the naive way), extrapolated to all cases per
kind.

    python benchmarks/bench_scoring.py [--cases 5000] [--baseline-sample 200] [--no-state]
                                       [--no-single] [--json]

Prints the wall time, decisions per second, the engine's share of the wall time (the time
the runs themselves took, summed over the workers) and the ratio to the subprocess baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vouch.bench import PRELOAD, decide_cases, load_tasks
from vouch.exec import LocalExecutor
from vouch.sources import build_source

_ONE_CASE = """
import json, sys
source, candidate, tools, replay = json.load(sys.stdin)
class Env:
    pass
env = Env()
env.tools = tools
if replay:
    from vouch.sources.agentdojo._source import replay as run_replay
    states = run_replay(candidate["calls"], **replay)
    env.pre_state, env.post_state = states["pre_state"], states["post_state"]
namespace = {}
exec(compile(source, "verifier.py", "exec"), namespace)
print(json.dumps(namespace["verify"](candidate, env)))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--baseline-sample", type=int, default=200)
    parser.add_argument("--no-state", action="store_true", help="tool-call cases only (no AgentDojo)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-run-per-decision baseline")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vouch-bench-", dir="/var/tmp") as tmp:
        state_tasks = []
        if not args.no_state:
            build_source("agentdojo", Path(tmp) / "agentdojo", seed=0, options={}, force=True)
            state_tasks = [t for t in load_tasks(Path(tmp) / "agentdojo") if t.spec.kind == "state"]
        wanted = args.cases - sum(len(t.cases) for t in state_tasks)
        out = Path(tmp) / "bfcl"
        limit = max(20, wanted // 19)
        while True:
            build_source("bfcl", out, seed=0, options={"limit": limit}, force=True)
            tasks = load_tasks(out)
            n = sum(len(t.cases) for t in tasks)
            if n >= wanted or limit > 2000:
                break
            limit = int(limit * wanted / n) + 5
        tool_items = [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in tasks for c in t.cases]
        state_items = [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in state_tasks for c in t.cases]
        items = tool_items[:wanted] + state_items

        preload = [*PRELOAD]
        if state_items:
            preload += ["vouch.sources.agentdojo._source", "vouch.sources.agentdojo._world:warm"]
        with LocalExecutor(preload=preload) as executor:
            info = executor.start()
            started = time.perf_counter()
            results = decide_cases(executor, items)
            wall = time.perf_counter() - started
            single_wall, same = None, None
            if not args.no_single:
                started = time.perf_counter()
                singles = decide_cases(executor, items, multi_case=False)
                single_wall = time.perf_counter() - started
                same = sum(a.decision == b.decision for a, b in zip(results, singles, strict=True))
        in_runs = sum(r.duration_s for r in results)

        sub_total = 0.0
        sub_times: list[float] = []
        agree = sampled = 0
        groups = ((tool_items[:wanted], 0, args.baseline_sample), (state_items, len(items) - len(state_items), 20))
        for group, offset, share in groups:
            if not group:
                continue
            step = max(1, len(group) // share)
            times = []
            for index in list(range(0, len(group), step))[:share]:
                task, case, source = group[index]
                replay = dict(task.spec.replay_args) if task.spec.kind == "state" else None
                payload = json.dumps([source, case.candidate, task.tools, replay])
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-c", _ONE_CASE], input=payload, capture_output=True, text=True)
                times.append(time.perf_counter() - t0)
                said = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
                decided = {"true": "PASS", "false": "FAIL"}.get(said, "INVALID")
                agree += decided == results[offset + index].decision.value
                sampled += 1
            sub_times += times
            sub_total += statistics.mean(times) * len(group)

    figures = {
        "cases": len(items),
        "tasks": len({t.id for t, _, _ in items}),
        "workers": info.workers,
        "engine_wall_s": round(wall, 2),
        "decisions_per_s": round(len(items) / wall, 1),
        "engine_share": round(in_runs / (wall * info.workers), 3),
        "state_cases": len(state_items),
        "tool_call_cases": len(items) - len(state_items),
        "subprocess_sample": sampled,
        "subprocess_mean_ms": round(1000 * statistics.mean(sub_times), 2),
        "subprocess_extrapolated_s": round(sub_total, 1),
        "subprocess_over_engine": round(sub_total / wall, 1),
        "sample_agreement": round(agree / sampled, 3),
        "cpus": os.cpu_count(),
        "single_run_wall_s": round(single_wall, 2) if single_wall is not None else None,
        "single_over_multi_case": round(single_wall / wall, 1) if single_wall is not None else None,
        "same_decisions_as_single_runs": same,
        "redecided_alone": sum(r.note is not None for r in results),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"{figures['cases']} cases ({figures['tool_call_cases']} BFCL tool-call, {figures['state_cases']} AgentDojo "
        f"state) of {figures['tasks']} tasks, reference verifiers, {info.workers} workers"
    )
    print(
        f"engine:     {figures['engine_wall_s']:8.2f} s   ({figures['decisions_per_s']} decisions/s; runs take "
        f"{100 * figures['engine_share']:.0f}% of the workers' time)"
    )
    if single_wall is not None:
        print(
            f"one run per decision: {single_wall:8.2f} s   ({figures['single_over_multi_case']}x the multi-case "
            f"runs; same decision on {same} of {len(items)} cases; {figures['redecided_alone']} re-decided alone)"
        )
    print(
        f"subprocess: {figures['subprocess_extrapolated_s']:8.1f} s   (one `python -c` per case, serial, no sandbox: "
        f"{figures['subprocess_mean_ms']} ms each over a sample of {sampled}, extrapolated per kind)"
    )
    print(
        f"ratio:      {figures['subprocess_over_engine']:8.1f}x   "
        f"(decisions agree on {100 * figures['sample_agreement']:.0f}% of the sample)"
    )


if __name__ == "__main__":
    main()
