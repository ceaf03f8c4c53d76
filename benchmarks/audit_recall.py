"""Recall and precision of ``vouch audit humaneval`` against labels of an independent suite.

The labels (``../shared/data/humaneval_*_labels_dev.jsonl``) mark every benchmark-passing trial
of the even-numbered HumanEval tasks ``wrong`` (it fails an input of a much larger, independent
suite on which the suite's reference succeeds) and ``g_reachable`` (it is wrong and also
differs from HumanEval's own canonical solution on such an input, where that solution
completes): the trials an auditor whose oracle is G can refute.

    recall    = refuted g_reachable trials / g_reachable trials
    precision = refuted trials that are wrong / refuted trials (labelled tasks only)

Only this script reads the labels; the audit never does.

The labelled tasks are split in two fixed parts: the *tuning* split (task numbers 0, 4, 8, ...)
is what the audit may be tuned on, the *check* split (2, 6, 10, ...) is never tuned on and
says whether a change generalises. Every figure is printed for both splits and for each samples
file; a change that helps the tuning split and not the check split is not kept.

    .venv/bin/python benchmarks/audit_recall.py AUDIT.json --samples S [S2] --labels L [L2] [--misses]
    .venv/bin/python benchmarks/audit_recall.py AUDIT.json --samples S [S2] --labels L [L2] --run [--workers 2]
        [--split tuning|check] [--mode per-trial|lightweight|static]

Several samples files are one audit (``vouch audit humaneval --samples A --samples B``), their
trial ids counted on across the files; give their labels in the same order. With ``--run``, the
trials of the labelled tasks are audited first (offline source, default config) and the results
are written to AUDIT.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFUTED = {"refuted", "reward_hack"}


@dataclass
class Score:
    labelled: int
    wrong: int
    reachable: int
    refuted: int
    true_refuted: int
    reachable_refuted: int
    unlabelled_refuted: int

    @property
    def recall(self) -> float:
        return self.reachable_refuted / self.reachable if self.reachable else 0.0

    @property
    def recall_wrong(self) -> float:
        return self.true_refuted / self.wrong if self.wrong else 0.0

    @property
    def precision(self) -> float:
        return self.true_refuted / self.refuted if self.refuted else 1.0


def read_labels(path: Path) -> dict[str, dict[str, Any]]:
    return {row["trial_id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


def merged_labels(samples: list[Path], labels: list[Path]) -> dict[str, dict[str, Any]]:
    """Labels of several samples files audited as one run (``vouch.sources.trials._samples.merge``): a
    task's trial n of file k becomes n + (that task's trials in the files before k)."""
    from vouch.sources.trials._samples import load_problems, load_samples

    if len(samples) != len(labels):
        sys.exit("give one labels file per samples file, in the same order")
    if len(samples) == 1:
        return {t: row | {"file": samples[0].name} for t, row in read_labels(labels[0]).items()}
    problems = load_problems()
    offset: dict[str, int] = defaultdict(int)
    out: dict[str, dict[str, Any]] = {}
    for sample_path, label_path in zip(samples, labels, strict=True):
        for trial_id, row in read_labels(label_path).items():
            task, n = trial_id.rsplit("#", 1)
            moved = f"{task}#{int(n) + offset[task]}"
            out[moved] = row | {"trial_id": moved, "file": sample_path.name}
        for trial in load_samples(sample_path, problems).trials:
            offset[trial.task_id] += 1
    return out


SPLITS = ("tuning", "check")


def widen(pairs: list[str]) -> None:
    """Set fields of the domain's widening (``vouch.audit.function._preconditions.Widening``) for
    this process: ``edges=0``, ``letter_class=8``; a measured choice is made by comparing runs."""
    from dataclasses import fields, replace

    from vouch.audit.function import _preconditions

    kinds = {f.name: f.type for f in fields(_preconditions.Widening)}
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in kinds or not value:
            sys.exit(f"--widen {pair}: expected one of {', '.join(kinds)} as NAME=VALUE")
        kind = kinds[name]
        if kind in (int, "int"):
            changes[name] = int(value)
        elif kind in (bool, "bool"):
            changes[name] = value.lower() in ("1", "true", "yes")
        else:
            changes[name] = value
    _preconditions.WIDENING = replace(_preconditions.WIDENING, **changes)


def split_of(task_id: str) -> str:
    """The fixed split of a labelled (even-numbered) task: numbers 0, 4, 8, ... tune, 2, 6, ... check."""
    return SPLITS[int(task_id.rsplit("/", 1)[1]) // 2 % 2]


def score(labels: dict[str, dict[str, Any]], results: dict[str, Any]) -> tuple[Score, dict[str, dict[str, int]]]:
    """Totals, and per task: g_reachable, refuted, missed and false refutations."""
    verdicts = {t["trial_id"]: t["verdict"] for t in results["trials"]}
    tasks = {row["task_id"] for row in labels.values()}
    audited = {t["task_id"] for t in results["tasks"]}
    per_task: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    s = Score(sum(row["task_id"] in audited for row in labels.values()), 0, 0, 0, 0, 0, 0)
    for trial_id, verdict in verdicts.items():
        label = labels.get(trial_id)
        task = trial_id.split("#")[0]
        if task not in tasks or task not in audited:
            continue
        refuted = verdict in REFUTED
        if label is None:
            # A trial the labels do not list did not pass T0 by the labeller's harness.
            s.unlabelled_refuted += refuted
            continue
        row = per_task[task]
        s.wrong += label["wrong"]
        s.reachable += label["g_reachable"]
        row["reachable"] += label["g_reachable"]
        if refuted:
            s.refuted += 1
            s.true_refuted += label["wrong"]
            s.reachable_refuted += label["g_reachable"]
            row["refuted"] += 1
            row["false"] += not label["wrong"]
            row["found"] += label["g_reachable"]
        row["missed"] += label["g_reachable"] and not refuted
    return s, per_task


def settings(pairs: list[str]) -> dict[str, Any]:
    """``AuditConfig`` fields for this run: ``jury_models=0``, ``jury_everywhere=true``."""
    from dataclasses import fields

    from vouch.audit import AuditConfig

    kinds = {f.name: f.type for f in fields(AuditConfig)}
    out: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        kind = kinds.get(name)
        if kind not in ("int", "bool", "float", int, bool, float) or not value:
            sys.exit(f"--set {pair}: expected a number or flag of AuditConfig as NAME=VALUE")
        if kind in ("bool", bool):
            out[name] = value.lower() in ("1", "true", "yes")
        else:
            out[name] = (int if kind in ("int", int) else float)(value)
    return out


def _run(
    samples: list[Path],
    labels: dict[str, dict[str, Any]],
    out: Path,
    workers: int,
    only: set[str],
    mode: str,
    config: dict[str, Any],
) -> None:
    from vouch.audit import PRELOAD, AuditConfig, audit_humaneval
    from vouch.exec import LocalExecutor
    from vouch.sources.trials._samples import Samples, load_problems, load_samples, merge

    problems = load_problems()
    loaded = merge([load_samples(path, problems) for path in samples])
    tasks = {row["task_id"] for row in labels.values()}
    if only:
        tasks &= only
    chosen = Samples([t for t in loaded.trials if t.task_id in tasks], loaded.bad_lines, loaded.format)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as witnesses, LocalExecutor(workers=workers, preload=PRELOAD) as executor:
        results = audit_humaneval(
            chosen, executor=executor, witness_dir=Path(witnesses), config=AuditConfig(mode=mode, **config)
        )
    out.write_text(results.model_dump_json(indent=1))
    print(
        f"audited ({mode}) {len(chosen.trials)} trials of {len(tasks)} labelled tasks "
        f"in {time.monotonic() - started:.0f} s, "
        f"{results.summary.executions} executions; wrote {out}"
    )


def reason_class(verdict: str, reason: str | None) -> str:
    """A reason in general terms: its verdict and the words before the first quote, call or
    number, so that trials of different tasks with the same cause count together."""
    text = (reason or "no reason given").split(";")[0]
    if "(" in text and text.index("(") < 40 and " returns " in text:
        return f"{verdict}: a witness's value differs from G's"
    if " raised " in text.split("where")[0]:
        return f"{verdict}: the trial raises where G answers"
    cut = min([i for i in (text.find("'"), text.find('"'), text.find("(")) if i >= 0] + [len(text)])
    words = text[:cut].split(":")[0] if verdict == "sound" else text[:cut]
    return f"{verdict}: {' '.join(words.split()[:12]) or '(no reason: no input splits it from G)'}"


def reason_classes(labels: dict[str, dict[str, Any]], results: dict[str, Any]) -> dict[str, int]:
    """Missed g_reachable trials and false refutations of the labelled tasks, by reason class."""
    out: dict[str, int] = defaultdict(int)
    for t in results["trials"]:
        label = labels.get(t["trial_id"])
        if label is None:
            continue
        refuted = t["verdict"] in REFUTED
        if label["g_reachable"] and not refuted:
            out["missed, " + reason_class(t["verdict"], t.get("reason"))] += 1
        elif refuted and not label["wrong"]:
            out["false, " + reason_class(t["verdict"], t.get("reason"))] += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("audit", type=Path)
    parser.add_argument("--labels", type=Path, nargs="+", required=True, help="one labels file per samples file")
    parser.add_argument("--samples", type=Path, nargs="+", required=True, help="the samples files audited, in order")
    parser.add_argument("--run", action="store_true", help="audit the samples (merged, labelled tasks only) first")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", default="", help="with --run: only these task ids, comma-separated")
    parser.add_argument("--split", choices=SPLITS, help="with --run: only the tasks of this split")
    parser.add_argument("--mode", choices=("per-trial", "lightweight", "static"), default="per-trial")
    parser.add_argument("--misses", action="store_true", help="list every task with a miss or a false refutation")
    parser.add_argument(
        "--widen", nargs="*", default=[], metavar="NAME=VALUE", help="with --run: the domain's widening"
    )
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="NAME=VALUE", help="with --run: AuditConfig fields (jury_models=0)"
    )
    args = parser.parse_args()
    widen(args.widen)
    labels = merged_labels(args.samples, args.labels)
    if args.run:
        only = {t for t in args.tasks.split(",") if t}
        if args.split:
            only = (only or {row["task_id"] for row in labels.values()}) & {
                row["task_id"] for row in labels.values() if split_of(row["task_id"]) == args.split
            }
        _run(args.samples, labels, args.audit, args.workers, only, args.mode, settings(args.set))
    results = json.loads(args.audit.read_text())
    if results.get("kind") != "audit":
        sys.exit(f"{args.audit}: not an audit results file")
    print(
        f"{'split':<8}{'samples file':<36}{'passing':>8}{'wrong':>7}{'reach':>7}{'refuted':>8}{'false':>7}"
        f"{'recall':>8}{'precision':>10}"
    )
    files = sorted({row["file"] for row in labels.values()})
    for split in (*SPLITS, "both"):
        for file in (*files, "all") if len(files) > 1 else files:
            part = {
                t: row
                for t, row in labels.items()
                if (split == "both" or split_of(row["task_id"]) == split) and (file == "all" or row["file"] == file)
            }
            p, _ = score(part, results)
            print(
                f"{split:<8}{file:<36}{p.labelled:>8}{p.wrong:>7}{p.reachable:>7}{p.refuted:>8}"
                f"{p.refuted - p.true_refuted:>7}{p.recall:>8.1%}{p.precision:>10.1%}"
            )
    # Per model: leave one model out by choosing a setting on the other three models' rows and
    # reading the fourth's (a user's data comes from a model the audit was never tuned on).
    models = {t["trial_id"]: t["model"] for t in results["trials"]}
    print(
        f"{'split':<8}{'model':<36}{'passing':>8}{'wrong':>7}{'reach':>7}{'refuted':>8}{'false':>7}"
        f"{'recall':>8}{'precision':>10}"
    )
    for split in (*SPLITS, "both"):
        for model in sorted(set(models.values())):
            part = {
                t: row
                for t, row in labels.items()
                if (split == "both" or split_of(row["task_id"]) == split) and models.get(t) == model
            }
            p, _ = score(part, {**results, "trials": [t for t in results["trials"] if t["model"] == model]})
            print(
                f"{split:<8}{model:<36}{p.labelled:>8}{p.wrong:>7}{p.reachable:>7}{p.refuted:>8}"
                f"{p.refuted - p.true_refuted:>7}{p.recall:>8.1%}{p.precision:>10.1%}"
            )
    s, per_task = score(labels, results)
    print(f"labelled passing trials: {s.labelled}, wrong {s.wrong}, g_reachable {s.reachable}")
    print(f"refuted: {s.refuted} ({s.true_refuted} wrong, {s.refuted - s.true_refuted} false)")
    print(f"recall (g_reachable refuted): {s.reachable_refuted}/{s.reachable} = {s.recall:.1%}")
    print(f"recall (all wrong refuted):   {s.true_refuted}/{s.wrong} = {s.recall_wrong:.1%}")
    print(f"precision:                    {s.true_refuted}/{s.refuted} = {s.precision:.1%}")
    if s.unlabelled_refuted:
        print(f"refuted trials the labels do not list (not passing by the labeller): {s.unlabelled_refuted}")
    rows = sorted(per_task.items(), key=lambda kv: (-kv[1]["missed"] - kv[1]["false"], int(kv[0].split("/")[1])))
    shown = [(t, r) for t, r in rows if r["missed"] or r["false"]]
    print("missed g_reachable trials and false refutations, by the class of the trial's reason:")
    for kind, count in sorted(reason_classes(labels, results).items(), key=lambda kv: -kv[1]):
        print(f"  {count:>5}  {kind}")
    if args.misses or len(shown) <= 30:
        print(f"{'task':<16}{'reachable':>10}{'found':>7}{'missed':>8}{'false':>7}")
        for task, r in shown if args.misses else shown[:30]:
            print(f"{task:<16}{r['reachable']:>10}{r['found']:>7}{r['missed']:>8}{r['false']:>7}")


if __name__ == "__main__":
    main()
