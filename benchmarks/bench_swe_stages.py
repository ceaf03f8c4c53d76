"""The cost of the repository form's stages beyond T0 and the differential, per instance.

Reads a ``vouch audit swe --json`` results file (its ``config`` records the engine's runs, wall
seconds and run-seconds of every stage) and splits them in two: the audit as it was without the
regression stage (the baseline: T0 in the worlds, the recording of T0's calls, the differential,
witnesses) and the regression stage's parts (the related suite in R[G] and R, the suite's calls
in R[G], G's mutants under T0 and under the related tests, the related suite in each R[s], the
validation of regression witnesses). Both halves come from the same run, so the ratio is the
stage's cost on that machine at that time; per instance means per audited instance.

    .venv/bin/python benchmarks/bench_swe_stages.py audit.json

or, to make the run first (any ``vouch audit swe`` options after ``--``):

    .venv/bin/python benchmarks/bench_swe_stages.py audit.json --run -- --instances I --predictions P ...

With ``--without`` it also runs (or reads, ``--without-results``) the same audit with the stage
off (``--regression-files 0 --gold-mutants 0``) and prints the two wall times side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REGRESSION_STAGES = (
    "regression suite in R[G]",
    "regression suite in R",
    "suite calls in R[G]",
    "G's mutants under T0",
    "G's mutants under the related tests",
    "G's mutants on the probes",
    "regression suite in R[s]",
    "regression witnesses",
)


def _run(out: Path, options: list[str]) -> None:
    command = [sys.executable, "-m", "vouch", "audit", "swe", *options, "--json", str(out), "--progress", "plain"]
    print("running:", " ".join(command), flush=True)
    done = subprocess.run(command, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the audit exited {done.returncode}")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _split(results: dict[str, Any]) -> tuple[dict[str, tuple[int, float, float]], dict[str, tuple[int, float, float]]]:
    config = results["config"]
    seconds, runs, run_s = (
        config.get("stage_seconds", {}),
        config.get("stage_runs", {}),
        config.get("stage_run_seconds", {}),
    )
    stages = {
        name: (int(runs.get(name, 0)), float(seconds.get(name, 0.0)), float(run_s.get(name, 0.0))) for name in seconds
    }
    new = {k: v for k, v in stages.items() if k in REGRESSION_STAGES}
    old = {k: v for k, v in stages.items() if k not in REGRESSION_STAGES}
    return old, new


def _table(title: str, stages: dict[str, tuple[int, float, float]], instances: int) -> tuple[int, float]:
    print(f"\n{title}")
    print(f"  {'stage':44} {'runs':>7} {'wall s':>9} {'run-s':>9} {'wall s / instance':>18}")
    total_runs, total_s = 0, 0.0
    for name, (runs, wall, run_s) in sorted(stages.items()):
        print(f"  {name:44} {runs:>7} {wall:>9.1f} {run_s:>9.1f} {wall / max(instances, 1):>18.1f}")
        total_runs += runs
        total_s += wall
    print(f"  {'total':44} {total_runs:>7} {total_s:>9.1f} {'':>9} {total_s / max(instances, 1):>18.1f}")
    return total_runs, total_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, help="a vouch audit swe --json file (written first with --run)")
    parser.add_argument("--run", action="store_true", help="run the audit first, with the options after --")
    parser.add_argument("--without", action="store_true", help="also run the audit with the stage off")
    parser.add_argument("--without-results", type=Path, help="the results of that run (written with --without)")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="-- then vouch audit swe options")
    args = parser.parse_args()
    options = [o for o in args.options if o != "--"]
    if args.run:
        _run(args.results, options)
    results = _load(args.results)
    instances = sum(1 for t in results.get("tasks", []) if t.get("well_formed"))
    old, new = _split(results)
    print(f"{args.results}: {len(results['trials'])} trials, {instances} well-formed instances audited")
    _, base_s = _table("the audit without the regression stage (baseline, same run)", old, instances)
    _, stage_s = _table("the regression stage", new, instances)
    if base_s:
        print(f"\nregression stage / baseline: {stage_s / base_s:.2f}x ({stage_s:.0f} s against {base_s:.0f} s)")
    steps = [
        s for t in results["trials"] for s in t.get("evidence", {}).get("steps", []) if s.startswith("regression:")
    ]
    print(f"trials with a regression census: {len(steps)}")
    _mutant_totals(results)
    if args.without:
        other = args.without_results or args.results.with_name(args.results.stem + "-without.json")
        if args.run or not other.exists():
            _run(other, [*options, "--regression-files", "0", "--gold-mutants", "0"])
        off = _load(other)
        wall_on = float(results["summary"].get("wall_s") or 0.0)
        wall_off = float(off["summary"].get("wall_s") or 0.0)
        if wall_off:
            print(f"\nwall: {wall_on:.0f} s with the stage, {wall_off:.0f} s without: {wall_on / wall_off:.2f}x")


_MUTANTS = re.compile(
    r"G's mutants: (\d+) run, (\d+) pass T0, (\d+) of those fail a kept test(?:, (\d+) answer a probe otherwise)?"
)


def _mutant_totals(results: dict[str, Any]) -> None:
    """G's mutants over the instances, from each instance's census (in its trials' steps or,
    in lightweight mode, the instance's note): run, passing T0, killed by a kept test, told
    from G by a probe."""
    census: dict[str, str] = {}
    for task in results.get("tasks", []):
        if _MUTANTS.search(task.get("note") or ""):
            census[task["task_id"]] = task["note"]
    for trial in results["trials"]:
        for step in trial.get("evidence", {}).get("steps", []):
            if step.startswith("regression:") and _MUTANTS.search(step):
                census.setdefault(trial["task_id"], step)
    totals = [0, 0, 0, 0]
    for line in census.values():
        found = _MUTANTS.search(line)
        assert found is not None
        for i, value in enumerate(found.groups()):
            totals[i] += int(value or 0)
    run, survive, by_test, by_probe = totals
    print(
        f"G's mutants ({len(census)} instances): {run} run, {survive} pass T0, {by_test} of those fail a kept "
        f"test, {by_probe} answer a probe otherwise than G"
    )


if __name__ == "__main__":
    main()
