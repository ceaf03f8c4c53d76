"""Readers of trials other tools produced: samples files of HumanEval problems (``_samples``),
Inspect eval logs (``_inspect``), EvalPlus results (``_evalplus``) and Harbor job directories
(``_harbor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vouch.sources.trials._evalplus import (
    EvalPlusEntry,
    EvalPlusLabel,
    EvalPlusResults,
    Labelled,
    label_trials,
    load_eval_results,
)
from vouch.sources.trials._evalplus import comparison as evalplus_comparison
from vouch.sources.trials._inspect import (
    SCORER,
    InspectRun,
    SampleTrial,
    error_score,
    first_line,
    is_vouchs,
    read_inspect_log,
    sample_trial,
    score_passed,
    vouch_score,
    write_back,
    write_back_path,
)
from vouch.sources.trials._inspect import comparison as inspect_comparison
from vouch.sources.trials._samples import (
    BadLine,
    Problem,
    Samples,
    Trial,
    load_problems,
    load_samples,
    merge,
    program_hash,
)

if TYPE_CHECKING:
    from vouch.sources.trials._harbor import (
        HarborJob,
        HarborTask,
        HarborTrial,
        SweRows,
        prediction_lines,
        read_job,
        read_task,
        swe_rows,
    )

_HARBOR_NAMES = (
    "HarborJob",
    "HarborTask",
    "HarborTrial",
    "SweRows",
    "prediction_lines",
    "read_job",
    "read_task",
    "swe_rows",
)


def __getattr__(name: str) -> object:
    # A Harbor job's trials are SWE-bench's (vouch.swebench under them): loaded on first use only,
    # so the function form of the audit, which reads samples, imports none of it.
    if name in _HARBOR_NAMES:
        from vouch.sources.trials import _harbor

        return getattr(_harbor, name)
    raise AttributeError(f"module 'vouch.sources.trials' has no attribute {name!r}")


__all__ = [
    "SCORER",
    "BadLine",
    "EvalPlusEntry",
    "EvalPlusLabel",
    "EvalPlusResults",
    "HarborJob",
    "HarborTask",
    "HarborTrial",
    "InspectRun",
    "Labelled",
    "Problem",
    "SampleTrial",
    "Samples",
    "SweRows",
    "Trial",
    "error_score",
    "evalplus_comparison",
    "first_line",
    "inspect_comparison",
    "is_vouchs",
    "label_trials",
    "load_eval_results",
    "load_problems",
    "load_samples",
    "merge",
    "prediction_lines",
    "program_hash",
    "read_inspect_log",
    "read_job",
    "read_task",
    "sample_trial",
    "score_passed",
    "swe_rows",
    "vouch_score",
    "write_back",
    "write_back_path",
]
