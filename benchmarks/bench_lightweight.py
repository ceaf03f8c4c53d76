"""The lightweight audit against the per-trial audit on the same trials, in one run.

Target (TestJack section 3.3, RQ2): the lightweight mode recovers at least 90% of the per-trial
audit's refutations at no more than 20% of its cost. Both audits run here, one after the other
on one engine pool, on the same samples (the per-trial audit is the baseline); then the
ablation (task analysis alone, ``--rounds 0``) and the static baseline in the manner of SWE-ABS
unless left out. Cost is counted as ``vouch audit compare`` counts it: engine executions and the
run-seconds of every stage beyond T0 (which both modes run alike), with wall time beside.

    .venv/bin/python benchmarks/bench_lightweight.py --samples ../shared/data/humaneval_3models_samples.jsonl \\
        [--samples MORE.jsonl] [--out DIR] [--no-ablation] [--no-static] [--limit-tasks N]

Writes ``per-trial.json``, ``lightweight.json`` (and ``ablation.json``, ``static.json``) and
``compare.json`` under ``--out``; prints the comparison table and the ratios against the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from vouch.audit import PRELOAD, AuditResults, audit_humaneval
from vouch.audit._compare import compare
from vouch.audit.function._runs import AuditConfig
from vouch.exec import LocalExecutor
from vouch.sources.trials._samples import load_problems, load_samples, merge

RECALL_TARGET = 0.90
COST_TARGET = 0.20


def main() -> None:
    parser = argparse.ArgumentParser(description="lightweight vs per-trial audit, same trials, one run")
    parser.add_argument("--samples", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, default=Path("bench-lightweight"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit-tasks", type=int, default=None)
    parser.add_argument("--no-ablation", action="store_true", help="skip task analysis alone (--rounds 0)")
    parser.add_argument("--no-static", action="store_true", help="skip the static baseline")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    problems = load_problems()
    samples = merge([load_samples(path, problems) for path in args.samples])
    base = AuditConfig(seed=args.seed, rounds=args.rounds)
    runs = {"per-trial": base, "lightweight": replace(base, mode="lightweight")}
    if not args.no_ablation:
        runs["ablation"] = replace(base, mode="lightweight", rounds=0)
    if not args.no_static:
        runs["static"] = replace(base, mode="static")
    paths: dict[str, Path] = {}
    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as witnesses,
        LocalExecutor(workers=args.workers, preload=PRELOAD) as executor,
    ):
        for name, config in runs.items():
            started = time.monotonic()
            results: AuditResults = audit_humaneval(
                samples,
                executor=executor,
                witness_dir=Path(witnesses) / name,
                config=config,
                limit_tasks=args.limit_tasks,
                problems=problems,
            )
            paths[name] = args.out / f"{name}.json"
            paths[name].write_text(results.model_dump_json(indent=1))
            s = results.summary
            print(
                f"{name}: {s.trials} trials, {s.passing} passing, {s.refuted} refuted, {s.executions} executions, "
                f"{time.monotonic() - started:.1f} s",
                flush=True,
            )
    body = compare(paths["per-trial"], paths["lightweight"], paths.get("ablation"), paths.get("static"))
    (args.out / "compare.json").write_text(json.dumps(body, indent=1))
    print(
        f"machine: {os.cpu_count()} CPUs, engine workers {args.workers}; samples: {', '.join(map(str, args.samples))}"
    )
    summary = body["summary"]
    base = body["per_trial"]
    print(
        f"{'run':<12} {'refuted':>8} {'recall':>8} {'precision':>9} {'executions':>11} {'run-s >T0':>10} {'ratio':>7}"
    )
    print(
        f"{'per-trial':<12} {summary['per_trial_refuted']:>8} {'':>8} {'':>9} {base['executions']:>11} "
        f"{base['audit_run_s']:>10.0f} {'1':>7}"
    )
    for name in ("lightweight", "ablation", "static"):
        if name not in body:
            continue
        run = body[name]
        agree = summary if name == "lightweight" else run
        ratio = summary["cost_ratio"] if name == "lightweight" else run["cost_ratio"]
        print(
            f"{name:<12} {agree['refuted']:>8} {_pct(agree['recall']):>8} {_pct(agree['precision']):>9} "
            f"{run['executions']:>11} {run['audit_run_s']:>10.0f} {_pct(ratio):>7}"
        )
    print(
        f"lightweight: recall {summary['recall']} of the per-trial refutations (target >= {RECALL_TARGET}), "
        f"cost ratio beyond T0 {summary['cost_ratio']} (target <= {COST_TARGET}; in units of each run's own "
        f"T0 in R[s]: {summary['cost_ratio_normalised']}; executions {summary['execution_ratio']})"
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


if __name__ == "__main__":
    main()
