"""Leave one model out: choose the audit's setting with the other models' labels, report the one left out.

A user's trials come from a model the audit was never tuned on. Given one audit results file per
candidate setting (each made by ``audit_recall.py --run``, e.g. with a different ``--widen``),
this script, for each model in turn, picks the setting that does best on the *other* models'
labelled trials (the highest recall whose precision is at least ``--precision``; when none
reaches it, the highest precision) and prints the left-out model's recall and precision under
that setting, per split. Nothing is chosen with the left-out model's labels. Then the same for
tasks: the setting chosen on one split's tasks (every model) is reported on the other split's.

    .venv/bin/python benchmarks/audit_lomo.py --setting base=A.json --setting wide=A.json+B.json \\
        --samples S [S2] --labels L [L2] [--precision 0.95]

``A.json+B.json`` is A with the trials of the tasks B audited taken from B (a setting that
changes some tasks' domains audited on those tasks only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from audit_recall import SPLITS, Score, merged_labels, score, split_of


def _part(
    labels: dict[str, dict[str, Any]], results: dict[str, Any], models: set[str], split: str
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The labels and results of ``models``' trials in ``split`` ("both": every labelled task)."""
    trials = [t for t in results["trials"] if t["model"] in models]
    ids = {t["trial_id"] for t in trials}
    part = {t: row for t, row in labels.items() if t in ids and (split == "both" or split_of(row["task_id"]) == split)}
    return part, {**results, "trials": trials}


def overlaid(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One results file from a whole run and runs of some of its tasks under another setting: a
    later run's trials replace the earlier's on the tasks it audited (a setting that changes only
    some tasks' domains need only audit those)."""
    merged = dict(runs[0])
    for part in runs[1:]:
        redone = {t["task_id"] for t in part["tasks"]}
        merged["trials"] = [t for t in merged["trials"] if t["task_id"] not in redone] + part["trials"]
    return merged


def choose(scores: dict[str, Score], precision: float) -> str:
    """The setting with the highest recall at ``precision`` or above (else the most precise)."""
    good = [name for name, s in scores.items() if s.precision >= precision]
    if good:
        return max(good, key=lambda name: (scores[name].recall, scores[name].precision))
    return max(scores, key=lambda name: (scores[name].precision, scores[name].recall))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setting", action="append", required=True, metavar="NAME=AUDIT.json")
    parser.add_argument("--samples", type=Path, nargs="+", required=True, help="the samples files audited, in order")
    parser.add_argument("--labels", type=Path, nargs="+", required=True, help="one labels file per samples file")
    parser.add_argument("--precision", type=float, default=0.95, help="the precision a chosen setting must keep")
    args = parser.parse_args()
    labels = merged_labels(args.samples, args.labels)
    settings: dict[str, dict[str, Any]] = {}
    for pair in args.setting:
        name, _, paths = pair.partition("=")
        if not paths:
            sys.exit(f"--setting {pair}: expected NAME=AUDIT.json[+PART.json...]")
        settings[name] = overlaid([json.loads(Path(p).read_text()) for p in paths.split("+")])
    models = sorted({t["model"] for r in settings.values() for t in r["trials"]})
    header = f"{'':<10}{'model':<26}{'setting':<12}{'reach':>7}{'refuted':>8}{'false':>7}{'recall':>8}{'precision':>10}"
    print("every setting, every model (dev half):")
    print(header)
    for name, results in settings.items():
        for model in models:
            s, _ = score(*_part(labels, results, {model}, "both"))
            print(
                f"{'':<10}{model:<26}{name:<12}{s.reachable:>7}{s.refuted:>8}"
                f"{s.refuted - s.true_refuted:>7}{s.recall:>8.1%}{s.precision:>10.1%}"
            )
    print(f"\nleft out: the setting chosen on the other models' dev half (precision >= {args.precision:.0%})")
    print(header.replace("          ", "split     ", 1))
    for model in models:
        others = set(models) - {model}
        chosen = choose({n: score(*_part(labels, r, others, "both"))[0] for n, r in settings.items()}, args.precision)
        for split in (*SPLITS, "both"):
            s, _ = score(*_part(labels, settings[chosen], {model}, split))
            print(
                f"{split:<10}{model:<26}{chosen:<12}{s.reachable:>7}{s.refuted:>8}"
                f"{s.refuted - s.true_refuted:>7}{s.recall:>8.1%}{s.precision:>10.1%}"
            )

    print("\nleft-out tasks: the setting chosen on one split's tasks (every model), reported on the other's")
    print(header.replace("          ", "split     ", 1))
    for chosen_on, reported in (SPLITS, SPLITS[::-1]):
        scores = {n: score(*_part(labels, r, set(models), chosen_on))[0] for n, r in settings.items()}
        chosen = choose(scores, args.precision)
        s, _ = score(*_part(labels, settings[chosen], set(models), reported))
        print(
            f"{reported:<10}{'all (chosen on ' + chosen_on + ')':<26}{chosen:<12}{s.reachable:>7}{s.refuted:>8}"
            f"{s.refuted - s.true_refuted:>7}{s.recall:>8.1%}{s.precision:>10.1%}"
        )


if __name__ == "__main__":
    main()
