"""Speed of replaying shared witnesses in the lightweight audit, against one pytest
subprocess per (witness, trial) execution, measured in the same run.

Target: at least 200 (witness, trial) executions a second on 2 cores, function level. The
lightweight audit replays a task's shared witnesses on every passing program of the task in one
engine run per program (each call under its own timer, values compared outside the trial's
process). Its rate is the pairs it replayed over the wall seconds of its replay stage. The
baseline is what a script without the engine does: ``python -m pytest`` on a witness file beside
the trial's program, a fresh subprocess per pair, timed on the witness files the same run wrote.

    .venv/bin/python benchmarks/bench_share.py [--samples FILE] [--limit-tasks 20] [--baseline-pairs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vouch.audit import PRELOAD, audit_humaneval
from vouch.audit.function._runs import AuditConfig
from vouch.exec import LocalExecutor

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
TARGET = 200.0


def _baseline(witness_files: list[Path], count: int, seed: int) -> float | None:
    """Seconds per pair of a fresh pytest subprocess running one witness on its trial's program."""
    chosen = random.Random(seed).sample(witness_files, min(count, len(witness_files)))
    if not chosen:
        return None
    started = time.monotonic()
    for path in chosen:
        with tempfile.TemporaryDirectory() as scratch:
            here = Path(scratch)
            shutil.copy(path, here / path.name)
            shutil.copy(path.parent / "model_solution.py", here / "solution.py")
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name],
                cwd=here,
                capture_output=True,
                timeout=60,
                check=False,
                # The fairest baseline: no third-party plugin loads at pytest's start.
                env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            )
    return (time.monotonic() - started) / len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description="shared-witness replay rate vs a pytest subprocess per pair")
    parser.add_argument("--samples", type=Path, default=DATA / "humaneval_codegen16b_samples.jsonl")
    parser.add_argument("--limit-tasks", type=int, default=20)
    parser.add_argument("--baseline-pairs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=0, help="audit rounds after task analysis (0: T1 only)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as witnesses,
        LocalExecutor(workers=args.workers, preload=PRELOAD) as executor,
    ):
        results = audit_humaneval(
            args.samples,
            executor=executor,
            witness_dir=Path(witnesses),
            limit_tasks=args.limit_tasks,
            config=AuditConfig(mode="lightweight", rounds=args.rounds),
        )
        pairs = sum(r.replayed for task in results.tasks for r in task.rounds)
        replay_s = results.config["stage_seconds"].get("replaying shared witnesses", 0.0)
        files = sorted(Path(witnesses).glob("*/test_witness_*.py"))
        per_pair = _baseline(files, args.baseline_pairs, seed=0)
    rate = pairs / replay_s if replay_s else 0.0
    base_rate = 1 / per_pair if per_pair else None
    print(f"lightweight replay: {pairs} (witness, trial) pairs in {replay_s:.1f} s = {rate:.0f} pairs/s")
    if base_rate is not None:
        timed = min(args.baseline_pairs, len(files))
        print(f"baseline (pytest subprocess per pair, {timed} pairs): {base_rate:.1f} pairs/s")
        print(f"ratio: {rate / base_rate:.0f}x")
    print(f"target {TARGET:.0f} pairs/s: {'met' if rate >= TARGET else 'NOT met'}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {"pairs": pairs, "replay_s": replay_s, "pairs_per_s": rate, "baseline_pairs_per_s": base_rate},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
