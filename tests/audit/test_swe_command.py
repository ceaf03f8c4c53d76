"""``vouch.audit.run_swe_command``: ``vouch audit swe`` as a library call, with the command's checks
and lines (the command's own output and exit codes are tests/audit/test_swe_cli.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vouch.audit import SweCommand, run_swe_command
from vouch.errors import UsageError
from vouch.swebench import fixture_files


@pytest.fixture
def fixture_inputs() -> tuple[Path, Path]:
    return fixture_files()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"predictions_files": ()}, "give --instances FILE and --predictions FILE or --run-dir DIR"),
        ({"only": ("nobody__nothing-1",)}, "--only nobody__nothing-1: not in"),
        ({"harness_only": True}, "--harness-only needs --environments"),
        ({"environments_file": Path("missing.json")}, "missing.json: cannot be read"),
    ],
)
def test_a_bad_request_is_one_usage_error_before_any_run(
    fixture_inputs: tuple[Path, Path], visible_tmp: Path, change: dict[str, object], message: str
) -> None:
    instances, predictions = fixture_inputs
    lines: list[str] = []
    fields: dict[str, object] = {
        "instances_file": instances,
        "predictions_files": (predictions,),
        "cache_dir": visible_tmp / "cache",
        "store_path": visible_tmp / "store.sqlite",
        **change,
    }
    with pytest.raises(UsageError, match=message.replace("-", r"\-")):
        run_swe_command(SweCommand(**fields), note=lines.append)  # type: ignore[arg-type]
    assert not (visible_tmp / "store.sqlite").exists(), "nothing ran"


def test_a_run_directory_without_a_resolved_instance_says_so_after_what_it_read(
    fixture_inputs: tuple[Path, Path], visible_tmp: Path
) -> None:
    instances, predictions = fixture_inputs
    prediction = json.loads(predictions.read_text().splitlines()[0])
    iid, model = prediction["instance_id"], prediction["model_name_or_path"]
    graded = visible_tmp / "logs" / "run_evaluation" / "r1" / model.replace("/", "__") / iid
    graded.mkdir(parents=True)
    (graded / "patch.diff").write_text(prediction["model_patch"])
    nothing = {"success": [], "failure": []}
    status = {k: nothing for k in ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")}
    report = {"patch_exists": True, "patch_successfully_applied": True, "resolved": False, "tests_status": status}
    (graded / "report.json").write_text(json.dumps({iid: report}))
    lines: list[str] = []
    with pytest.raises(UsageError, match="no resolved instance to audit"):
        run_swe_command(SweCommand(instances_file=instances, run_dir=graded.parent), note=lines.append)
    assert lines == [f"run r1 of {model}: 1 graded instances (0 resolved), 0 ungraded; 0 trials"]
