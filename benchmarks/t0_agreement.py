"""Does vouch run T0 as the benchmark does? Its pass/fail against plain Python, trial by trial.

For every trial of an audit's results (``vouch audit function --problems NAME|FILE --json AUDIT``),
the trial's program and the task's T0 are run the benchmark's own way, in plain Python: one
process per distinct program, ``program + test + check(entry_point)`` in one namespace (as
human-eval, lm-eval and bigcode-evaluation-harness run MBPP's asserts), a timeout of 10 s. That
pass/fail is compared with the audit's ``benchmark_pass`` for the same trial; every disagreement
is printed. Ill-formed tasks (G fails T0) count too: their trials are still run by T0.

    .venv/bin/python benchmarks/t0_agreement.py AUDIT.json --problems mbpp --samples S [S2 ...]

The programs are the trials of the samples files (real model outputs); each runs in a throw-away
directory under a timeout, outside vouch's engine on purpose: this is the reference vouch's
engine is checked against.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from vouch.sources.problems import load_problem_set
from vouch.sources.trials._samples import load_samples, merge

TIMEOUT_S = 10.0


def plain_python(program: str, test: str, entry_point: str) -> bool:
    """Whether ``check(entry_point)`` passes with the program and test in one namespace."""
    return passes(f"{program}\n\n{test}\n\ncheck({entry_point})\n")


def passes(source: str) -> bool:
    """Whether ``source`` runs to its end in plain Python (``python -I``, a throw-away directory,
    ``TIMEOUT_S``): the benchmark's own way of running a test, outside vouch's engine."""
    with tempfile.TemporaryDirectory(prefix="vouch-plain-") as directory:
        path = Path(directory) / "run.py"
        path.write_text(source)
        try:
            done = subprocess.run(
                [sys.executable, "-I", str(path)],
                cwd=directory,
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--problems", required=True)
    parser.add_argument("--plus", action="store_true")
    parser.add_argument("--samples", type=Path, action="append", required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    problem_set = load_problem_set(args.problems, plus=args.plus)
    samples = merge([load_samples(s, problem_set.problems, aliases=problem_set.aliases) for s in args.samples])
    results = json.loads(args.results.read_text())
    vouch = {t["trial_id"]: t["benchmark_pass"] for t in results["trials"]}
    runs: dict[tuple[str, str], list[str]] = {}
    for trial in samples.trials:
        if trial.trial_id in vouch:
            problem = problem_set.problems[trial.task_id]
            runs.setdefault((trial.program(problem), trial.task_id), []).append(trial.trial_id)
    start = time.monotonic()
    with ThreadPoolExecutor(args.workers) as pool:
        outcomes = dict(
            zip(
                runs,
                pool.map(
                    lambda key: plain_python(
                        key[0], problem_set.problems[key[1]].test, problem_set.problems[key[1]].entry_point
                    ),
                    runs,
                ),
                strict=True,
            )
        )
    compared = agree = 0
    disagreements: list[str] = []
    for key, trial_ids in runs.items():
        for trial_id in trial_ids:
            compared += 1
            if outcomes[key] == vouch[trial_id]:
                agree += 1
            else:
                disagreements.append(f"{trial_id}: plain Python {outcomes[key]}, vouch {vouch[trial_id]}")
    print(f"{problem_set.describe()}")
    print(f"trials compared: {compared} ({len(runs)} distinct programs, {time.monotonic() - start:.0f} s)")
    print(f"agree: {agree}; disagree: {len(disagreements)}")
    print(f"passing by plain Python: {sum(outcomes[k] * len(v) for k, v in runs.items())}")
    for line in disagreements:
        print("  " + line)
    return 0 if not disagreements else 1


if __name__ == "__main__":
    raise SystemExit(main())
