"""The test suite's wall time in the order ``tests/conftest.py`` gives (the longest files first)
against pytest-xdist's own order (files by number of tests, ``VOUCH_TEST_ORDER=xdist``), in one
run: the same selection, the same number of processes, the two orders alternating.

    python benchmarks/bench_test_order.py [--fast] [--rounds N] [--workers N] [--json]

``--fast`` times the contributors' tier (``-m "not slow"``, the selection of ``scripts/test
--fast``); without it, the whole suite (what CI runs). Each figure is pytest's wall time of one
run; the medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(order: str, *, fast: bool, workers: int) -> float:
    """Seconds of one ``pytest -n workers`` run in ``order`` ("vouch" or "xdist"); fails loudly
    when a test fails (a failed run's time says nothing of the order)."""
    env = {**os.environ}
    env.pop("VOUCH_TEST_ORDER", None)
    if order == "xdist":
        env["VOUCH_TEST_ORDER"] = "xdist"
    command = [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider"]
    command += ["-m", "not slow"] if fast else []
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"bench_test_order: the {order} run failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help='time -m "not slow" (scripts/test --fast)')
    parser.add_argument("--rounds", type=int, default=1, help="runs of each order, alternating")
    parser.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 4))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"vouch": [], "xdist": []}
    for _ in range(args.rounds):
        for order in ("vouch", "xdist"):
            times[order].append(one_run(order, fast=args.fast, workers=args.workers))
            print(f"{order}: {times[order][-1]:.1f} s", file=sys.stderr, flush=True)
    vouch, xdist = statistics.median(times["vouch"]), statistics.median(times["xdist"])
    body = {
        "selection": "not slow" if args.fast else "whole suite",
        "workers": args.workers,
        "runs": times,
        "longest_first_s": round(vouch, 1),
        "xdist_order_s": round(xdist, 1),
        "ratio": round(xdist / vouch, 2),
    }
    if args.json:
        print(json.dumps(body, indent=1))
    else:
        print(
            f"{body['selection']}, {args.workers} processes: longest files first {vouch:.1f} s, "
            f"xdist's order {xdist:.1f} s, ratio {xdist / vouch:.2f}x"
        )


if __name__ == "__main__":
    main()
