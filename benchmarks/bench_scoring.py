"""Scoring speed: reference verifiers on ~5,000 tool-call cases, engine against subprocesses.

Builds BFCL tool-call tasks until at least ``--cases`` cases (default 5,000), then decides
every case with its reference verifier through the engine (each decision its own sandboxed
run), and, in the same run, a sample of the same cases with one plain ``python`` subprocess
per case (no sandbox: a lower bound on the naive way), extrapolated to all cases.

    python benchmarks/bench_scoring.py [--cases 5000] [--baseline-sample 300] [--json]

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
source, candidate, tools = json.load(sys.stdin)
namespace = {}
exec(compile(source, "verifier.py", "exec"), namespace)
class Env:
    pass
env = Env()
env.tools = tools
print(json.dumps(namespace["verify"](candidate, env)))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--baseline-sample", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vouch-bench-", dir="/var/tmp") as tmp:
        out = Path(tmp) / "bfcl"
        limit = max(20, args.cases // 19)
        while True:
            build_source("bfcl", out, seed=0, options={"limit": limit}, force=True)
            tasks = load_tasks(out)
            n = sum(len(t.cases) for t in tasks)
            if n >= args.cases or limit > 2000:
                break
            limit = int(limit * args.cases / n) + 5
        items = [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in tasks for c in t.cases]
        items = items[: args.cases]

        with LocalExecutor(preload=PRELOAD) as executor:
            info = executor.start()
            started = time.perf_counter()
            results = decide_cases(executor, items)
            wall = time.perf_counter() - started
        in_runs = sum(r.duration_s for r in results)

        sample = items[:: max(1, len(items) // args.baseline_sample)][: args.baseline_sample]
        sub_times = []
        agree = 0
        for (task, case, source), result in zip(
            sample, results[:: max(1, len(items) // args.baseline_sample)], strict=False
        ):
            payload = json.dumps([source, case.candidate, task.tools])
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", _ONE_CASE], input=payload, capture_output=True, text=True)
            sub_times.append(time.perf_counter() - t0)
            decided = (
                "PASS" if proc.stdout.strip() == "true" else "FAIL" if proc.stdout.strip() == "false" else "INVALID"
            )
            agree += decided == result.decision.value
        sub_total = statistics.mean(sub_times) * len(items)

    figures = {
        "cases": len(items),
        "tasks": len({t.id for t, _, _ in items}),
        "workers": info.workers,
        "engine_wall_s": round(wall, 2),
        "decisions_per_s": round(len(items) / wall, 1),
        "engine_share": round(in_runs / (wall * info.workers), 3),
        "subprocess_sample": len(sample),
        "subprocess_mean_ms": round(1000 * statistics.mean(sub_times), 2),
        "subprocess_extrapolated_s": round(sub_total, 1),
        "subprocess_over_engine": round(sub_total / wall, 1),
        "sample_agreement": round(agree / len(sample), 3),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{figures['cases']} cases of {figures['tasks']} BFCL tasks, reference verifiers, {info.workers} workers")
    print(
        f"engine:     {figures['engine_wall_s']:8.2f} s   ({figures['decisions_per_s']} decisions/s; runs take "
        f"{100 * figures['engine_share']:.0f}% of the workers' time)"
    )
    print(
        f"subprocess: {figures['subprocess_extrapolated_s']:8.1f} s   (one `python -c` per case, serial, no sandbox: "
        f"{figures['subprocess_mean_ms']} ms each over a sample of {len(sample)}, extrapolated)"
    )
    print(
        f"ratio:      {figures['subprocess_over_engine']:8.1f}x   "
        f"(decisions agree on {100 * figures['sample_agreement']:.0f}% of the sample)"
    )


if __name__ == "__main__":
    main()
