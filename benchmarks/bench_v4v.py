"""V4V speed: the six checks over the default builds of all three sources, mutation included.

Runs ``run_v4v`` on every task under ``--tasks`` (default: builds BFCL, HumanEval and AgentDojo
into a temporary directory first; building is not timed) with a fresh store, so that every
decision runs. Then, in the same run, the naive way for a sample of mutants: one fresh ``python``
process per mutant that loads the mutant verifier and decides every case of its task in-process
(no sandbox, candidates called directly: a lower bound on the naive cost), extrapolated per
source to every mutant of the run.

    python benchmarks/bench_v4v.py [--tasks DIR] [--sample 12] [--json] [--compare V4V.json]
                                   [--max-mutants N] [--repeat N]

``--compare`` takes the ``vouch v4v --json`` output of another vouch version on the same tasks
(e.g. the release before a speed change) and counts the tasks whose six check outcomes differ.

Prints the wall time per stage, mutants per second, and the ratio to the subprocess baseline.
Target: the whole V4V in at most 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from vouch.bench import Task, load_tasks
from vouch.sources import build_source
from vouch.store import Store
from vouch.v4v import run_v4v
from vouch.v4v._mutation import MAX_MUTANTS, mutants_of

_ONE_MUTANT = """
import json, sys
source, kind, entry_point, candidates, replay = json.load(sys.stdin)
class Env:
    pass
def env_for(candidate):
    env = Env()
    if kind == "code":
        namespace = {}
        exec(compile(candidate.get("source") or "", "candidate.py", "exec"), namespace)
        def call(function, args, timeout=None):
            try:
                return {"ok": True, "value": namespace[function](*args), "error": None}
            except Exception as exc:
                return {"ok": False, "value": None, "error": repr(exc)}
        env.call = call
    if replay:
        from vouch.sources.agentdojo._source import replay as run_replay
        states = run_replay(candidate["calls"], **replay)
        env.pre_state, env.post_state = states["pre_state"], states["post_state"]
    return env
namespace = {}
exec(compile(source, "verifier.py", "exec"), namespace)
out = []
for candidate in candidates:
    try:
        out.append(bool(namespace["verify"](candidate, env_for(candidate))))
    except Exception:
        out.append(None)
print(json.dumps(out))
"""


def _build(root: Path) -> None:
    for source in ("bfcl", "humaneval", "agentdojo"):
        started = time.perf_counter()
        build_source(source, root / source, seed=0, options={}, force=True)
        print(f"built {source} in {time.perf_counter() - started:.0f} s (not timed below)", file=sys.stderr)


def _subprocess_per_mutant(tasks: list[Task], sample: int, seed: int) -> dict[str, Any]:
    """Mean seconds of one fresh-process mutant run, per source, over a seeded sample of mutants."""
    rng = random.Random(seed)
    by_source: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        by_source[task.spec.source.benchmark].append(task)
    means: dict[str, float] = {}
    for source, group in sorted(by_source.items()):
        times: list[float] = []
        for task in rng.sample(group, min(sample, len(group))):
            reference = (task.root / "reference" / "verifier.py").read_text()
            plan = mutants_of(task, reference, rng, limit=1)
            if not plan.mutants:
                continue
            replay = dict(task.spec.replay_args) if task.spec.kind == "state" else None
            payload = json.dumps(
                [
                    plan.mutants[0].source,
                    task.spec.kind,
                    task.spec.entry_point,
                    [c.candidate for c in task.cases],
                    replay,
                ]
            )
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", _ONE_MUTANT], input=payload, capture_output=True, text=True)
            times.append(time.perf_counter() - started)
        if times:
            means[source] = statistics.mean(times)
    return means


def outcomes(rows: list[dict[str, Any]]) -> dict[str, dict[str, bool]]:
    """task id -> check -> passed, from V4V's task rows."""
    return {row["task_id"]: {name: bool(check["passed"]) for name, check in row["checks"].items()} for row in rows}


def compare_outcomes(rows: list[dict[str, Any]], other: dict[str, Any]) -> dict[str, Any]:
    """Task by task, whether this run's C1-C6 outcomes are another run's (``vouch v4v --json``)."""
    theirs = outcomes(other.get("results", other)["tasks"])
    ours = outcomes(rows)
    shared = sorted(set(ours) & set(theirs))
    differing = [
        {"task_id": t, "checks": sorted(n for n in ours[t] if ours[t][n] != theirs[t].get(n))}
        for t in shared
        if ours[t] != theirs[t]
    ]
    return {"tasks": len(shared), "same": len(shared) - len(differing), "differing": differing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, default=None, help="task sets to screen (default: build all three)")
    parser.add_argument("--sample", type=int, default=12, help="mutants per source for the subprocess baseline")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compare", type=Path, default=None, help="a `vouch v4v --json` file to compare outcomes with")
    parser.add_argument("--max-mutants", type=int, default=MAX_MUTANTS, help="mutants per task (vouch v4v's default)")
    parser.add_argument("--repeat", type=int, default=3, help="C2's runs, the first included (vouch v4v's default)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vouch-bench-v4v-", dir="/var/tmp") as tmp:
        root = args.tasks
        if root is None:
            root = Path(tmp) / "tasks"
            _build(root)
        tasks = load_tasks(root)
        stages: dict[str, float] = {}
        last = {"stage": "", "at": time.perf_counter()}

        def progress(stage: str, done: int, total: int) -> None:
            now = time.perf_counter()
            if stage != last["stage"]:
                if last["stage"]:
                    print(f"{last['stage']}: {now - last['at']:.1f} s", file=sys.stderr, flush=True)
                last.update(stage=stage, at=now)
            stages[stage] = now - last["at"]

        started = time.perf_counter()
        body = run_v4v(
            tasks,
            store=Store(Path(tmp) / "store.sqlite"),
            progress=progress,
            max_mutants=args.max_mutants,
            repeat=args.repeat,
        )
        wall = time.perf_counter() - started
        mutants_by_source: dict[str, int] = defaultdict(int)
        for row in body["tasks"]:
            evidence = row["checks"].get("mutation", {}).get("evidence", {})
            mutants_by_source[row["source"]] += int(evidence.get("mutants", 0))
        means = _subprocess_per_mutant(tasks, args.sample, seed=0)

    stats = body["stats"]
    naive = sum(means.get(source, 0.0) * n for source, n in mutants_by_source.items())
    figures = {
        "tasks": len(tasks),
        "cases": sum(len(t.cases) for t in tasks),
        "retained": body["retained"],
        "wall_s": round(wall, 1),
        "stage_s": {k: round(v, 1) for k, v in stages.items()},
        "mutants": stats.get("mutants", 0),
        "mutant_decisions": stats.get("mutant_decisions", 0),
        "probe_decisions": stats.get("probe_decisions", 0),
        "mutation_wall_s": stats.get("mutation_wall_s"),
        "mutants_per_s": round(stats.get("mutants", 0) / stats["mutation_wall_s"], 1)
        if stats.get("mutation_wall_s")
        else None,
        "subprocess_per_mutant_s": {k: round(v, 3) for k, v in means.items()},
        "subprocess_extrapolated_s": round(naive, 1),
        "subprocess_over_mutation_stage": round(naive / stats["mutation_wall_s"], 1)
        if stats.get("mutation_wall_s")
        else None,
        "max_mutants": args.max_mutants,
        "repeat": args.repeat,
        "target_s": 600,
        "cpus": os.cpu_count(),
    }
    if args.compare is not None:
        figures["compare"] = compare_outcomes(body["tasks"], json.loads(args.compare.read_text()))
    if args.json:
        print(json.dumps(figures))
        return
    print(f"V4V over {figures['tasks']} tasks ({figures['cases']} cases): {figures['wall_s']} s wall (target 600 s)")
    print("  stages: " + ", ".join(f"{k} {v} s" for k, v in figures["stage_s"].items()))
    print(
        f"mutation: {figures['mutants']} mutants, {figures['mutant_decisions']} mutant decisions + "
        f"{figures['probe_decisions']} probe decisions in {figures['mutation_wall_s']} s: "
        f"{figures['mutants_per_s']} mutants/s"
    )
    if "compare" in figures:
        compared = figures["compare"]
        print(
            f"outcomes against {args.compare}: the same on {compared['same']} of {compared['tasks']} tasks"
            + (f"; differing: {compared['differing'][:10]}" if compared["differing"] else "")
        )
    print(
        f"subprocess per mutant (fresh python, all cases of its task, no sandbox): "
        f"{figures['subprocess_per_mutant_s']} s each -> {figures['subprocess_extrapolated_s']} s for all mutants: "
        f"{figures['subprocess_over_mutation_stage']}x the engine's mutation stage"
    )


if __name__ == "__main__":
    main()
