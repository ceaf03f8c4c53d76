"""An MBPP export run MBPP's own way: its setup code, the program and each of ``test_list`` in one
namespace, in plain Python (as lm-eval and bigcode-evaluation-harness run MBPP).

For every task whose exported ``test_list`` holds added tests: G (the row's ``code``) must pass,
every refuted trial must fail, and every passing trial the audit left standing (``sound`` or
``flagged``) must pass.

    .venv/bin/python benchmarks/export_mbpp_check.py AUDIT.json EXPORT_DIR --samples S [S2 ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from t0_agreement import passes
from vouch.sources.problems import load_problem_set
from vouch.sources.trials._samples import load_samples, merge


def mbpp_way(row: dict[str, object], code: str) -> bool:
    tests = [str(t) for t in row["test_list"]]  # type: ignore[attr-defined]
    return passes("\n".join([str(row["test_setup_code"]), code, *tests]) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("export", type=Path)
    parser.add_argument("--samples", type=Path, action="append", required=True)
    args = parser.parse_args()
    results = json.loads(args.results.read_text())
    problem_set = load_problem_set(str(results["config"]["problems"].get("name", "mbpp")))
    samples = merge([load_samples(s, problem_set.problems, aliases=problem_set.aliases) for s in args.samples])
    programs = {t.trial_id: t.program(problem_set.problems[t.task_id]) for t in samples.trials}
    rows = {f"Mbpp/{r['task_id']}": r for r in map(json.loads, (args.export / "mbpp.jsonl").read_text().splitlines())}
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    for task, row in rows.items():
        if not row["test_setup_code"]:
            continue  # no added test: the original asserts
        counts["tasks"] += 1
        counts["g_passes"] += mbpp_way(row, row["code"])
        for trial in results["trials"]:
            if trial["task_id"] != task or not trial["benchmark_pass"]:
                continue
            passes = mbpp_way(row, programs[trial["trial_id"]])
            if trial["verdict"] in ("refuted", "reward_hack"):
                counts["refuted"] += 1
                counts["refuted_failing"] += not passes
                wrong += [f"{trial['trial_id']} refuted, passes"] if passes else []
            elif trial["verdict"] in ("sound", "flagged"):
                counts["standing"] += 1
                counts["standing_passing"] += passes
                wrong += [] if passes else [f"{trial['trial_id']} {trial['verdict']}, fails"]
    print(
        f"tasks with added tests: {counts['tasks']}; G passes {counts['g_passes']}; "
        f"refuted trials failing {counts['refuted_failing']} of {counts['refuted']}; "
        f"standing trials passing {counts['standing_passing']} of {counts['standing']}"
    )
    for line in wrong:
        print("  " + line)
    return 0 if not wrong and counts["g_passes"] == counts["tasks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
