"""A SWE-bench harness run directory as trials, and its per-test verdicts beside vouch's.

``swebench.harness.run_evaluation`` leaves, per prediction,
``logs/run_evaluation/<run_id>/<model>/<instance_id>/`` (``<model>`` is ``model_name_or_path``
with ``/`` spelled ``__``) holding ``patch.diff`` (the ``model_patch`` it applied),
``eval.sh``, ``test_output.txt``, ``run_instance.log`` and, once graded, ``report.json``:

    {"<instance_id>": {"patch_is_None": false, "patch_exists": true,
                       "patch_successfully_applied": true, "resolved": true,
                       "tests_status": {"FAIL_TO_PASS": {"success": [...], "failure": [...]},
                                        "PASS_TO_PASS": {"success": [...], "failure": [...]},
                                        "FAIL_TO_FAIL": {...}, "PASS_TO_FAIL": {...}}}}

(``grading.get_eval_report`` in swebench 4.x and 5.x; 5.x adds ``infra_failure``). An instance
directory without ``report.json`` is one the harness could not grade (its container or patch
failed: ``run_instance.log`` says why); it is listed, not audited. The instances themselves come
from the dataset file, as the harness read them.

The harness's ``tests_status`` is what its container's run of T0 said of every test; vouch runs
T0 itself, and a test the two disagree on (flaky, or dependent on the environment: network,
timing, paths) is reported per instance.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import UsageError
from vouch.swebench import SweInstance, SweTrial

__all__ = [
    "HarnessReport",
    "RunDir",
    "StatusDisagreement",
    "compare_tests_status",
    "read_run_dir",
]

_PATCH = "patch.diff"
_REPORT = "report.json"
_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS")


@dataclass(frozen=True)
class HarnessReport:
    """The harness's ``report.json`` of one instance."""

    instance_id: str
    resolved: bool
    patch_applied: bool
    passed: frozenset[str]
    """T0 ids in ``tests_status`` FAIL_TO_PASS or PASS_TO_PASS ``success``."""
    failed: frozenset[str]
    """T0 ids in their ``failure`` lists."""
    has_tests_status: bool


@dataclass(frozen=True)
class RunDir:
    """What a harness run directory holds."""

    path: Path
    run_id: str
    model: str
    """``model_name_or_path`` (the directory name with ``__`` read back as ``/``)."""
    trials: list[SweTrial]
    """One per instance directory with ``patch.diff`` and ``report.json``, in instance-file order."""
    reports: dict[str, HarnessReport]
    ungraded: dict[str, str] = field(default_factory=dict)
    """Instance directories the harness left without a report, with what is missing."""


@dataclass(frozen=True)
class StatusDisagreement:
    """A T0 test the harness's run and vouch's run of the agent's world judged differently."""

    test: str
    harness: Literal["pass", "fail"]
    vouch: Literal["pass", "fail"]


def read_run_dir(path: Path, instances: Sequence[SweInstance]) -> RunDir:
    """Read ``logs/run_evaluation/<run_id>/<model>`` into trials and the harness's reports.

    Args:
        path: The model's directory of a harness run.
        instances: The dataset the harness ran (every instance directory must be one of them).

    Returns:
        The trials (``harness_resolved`` from each report) and the reports by instance id.

    Raises:
        UsageError: Not a directory, no instance directories, an instance directory that is not
            in the dataset, or a ``report.json`` of another shape (one line naming the file).
    """
    if not path.is_dir():
        raise UsageError(f"--run-dir {path}: no such directory; give logs/run_evaluation/<run_id>/<model>")
    known = {i.instance_id: n for n, i in enumerate(instances)}
    dirs = sorted(d for d in path.iterdir() if d.is_dir())
    if not any((d / _PATCH).is_file() or (d / _REPORT).is_file() for d in dirs):
        nested = [d.name for d in dirs if any((c / _PATCH).is_file() for c in d.iterdir() if c.is_dir())]
        hint = f" (it holds model directories: give {path / nested[0]})" if nested else ""
        raise UsageError(
            f"--run-dir {path}: no <instance_id>/patch.diff or report.json under it; "
            f"give logs/run_evaluation/<run_id>/<model>{hint}"
        )
    reports: dict[str, HarnessReport] = {}
    patches: dict[str, str] = {}
    ungraded: dict[str, str] = {}
    for d in dirs:
        if d.name not in known:
            raise UsageError(f"--run-dir {path}: {d.name}/ is not an instance of the instances file; pass the dataset")
        report_file, patch_file = d / _REPORT, d / _PATCH
        if not report_file.is_file():
            ungraded[d.name] = "no report.json (the harness did not grade it; see its run_instance.log)"
            continue
        reports[d.name] = _read_report(report_file, d.name)
        if patch_file.is_file():
            patches[d.name] = patch_file.read_text(encoding="utf-8", errors="replace")
        elif reports[d.name].patch_applied:
            ungraded[d.name] = "report.json but no patch.diff"
            del reports[d.name]
        else:
            patches[d.name] = ""  # the prediction had no patch (patch_is_None)
    model = path.name.replace("__", "/")
    order = sorted(patches, key=lambda i: known[i])
    trials = [
        SweTrial(
            trial_id=f"{i}#0",
            instance_id=i,
            model=model,
            patch=patches[i],
            harness_resolved=reports[i].resolved,
        )
        for i in order
    ]
    return RunDir(path=path, run_id=path.parent.name, model=model, trials=trials, reports=reports, ungraded=ungraded)


def _read_report(file: Path, instance_id: str) -> HarnessReport:
    try:
        body = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(
            f"{file}: cannot be read ({exc.strerror}); give the report.json swebench's harness wrote"
        ) from None
    except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
        raise UsageError(
            f"{file}: not JSON ({why_not_json(exc)}); give the report.json swebench's harness wrote"
        ) from None
    if not isinstance(body, dict) or not isinstance(body.get(instance_id), dict):
        raise UsageError(f"{file}: no object under {instance_id!r}; a swebench report.json is keyed by instance id")
    entry: dict[str, Any] = body[instance_id]
    resolved = entry.get("resolved")
    if not isinstance(resolved, bool):
        raise UsageError(f"{file}: 'resolved' is {resolved!r}, not true or false")
    status = entry.get("tests_status")
    passed: set[str] = set()
    failed: set[str] = set()
    if status is not None:
        if not isinstance(status, dict):
            raise UsageError(f"{file}: 'tests_status' is {type(status).__name__}, not an object")
        for name in _LISTS:
            part = status.get(name, {})
            if not isinstance(part, dict):
                raise UsageError(f"{file}: tests_status.{name} is {type(part).__name__}, not an object")
            for key, into in (("success", passed), ("failure", failed)):
                ids = part.get(key, [])
                if not isinstance(ids, list) or not all(isinstance(t, str) for t in ids):
                    raise UsageError(f"{file}: tests_status.{name}.{key} is not a list of test ids")
                into.update(ids)
    return HarnessReport(
        instance_id=instance_id,
        resolved=resolved,
        patch_applied=bool(entry.get("patch_successfully_applied")),
        passed=frozenset(passed),
        failed=frozenset(failed),
        has_tests_status=status is not None,
    )


def compare_tests_status(
    report: HarnessReport, failed: Collection[str], skipped: Collection[str] = ()
) -> list[StatusDisagreement]:
    """The T0 tests the harness's run and vouch's run judged differently.

    Args:
        report: The harness's report (its ``tests_status``).
        failed: T0 ids vouch's run of the agent's world failed (or did not find in its log).
        skipped: T0 ids vouch's run skipped: they count neither way, as in the harness's grading.

    Returns:
        Each test the harness passed and vouch failed, or the harness failed and vouch passed.
    """
    out: list[StatusDisagreement] = []
    for test in sorted(report.passed | report.failed):
        if test in skipped:
            continue
        harness: Literal["pass", "fail"] = "pass" if test in report.passed else "fail"
        ours: Literal["pass", "fail"] = "fail" if test in failed else "pass"
        if harness != ours:
            out.append(StatusDisagreement(test, harness, ours))
    return out
