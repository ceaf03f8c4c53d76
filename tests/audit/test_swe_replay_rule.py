"""``vouch audit swe --replay`` decides as the audit's validation does: a witness the audit
discards does not hold, and one whose runs did not complete is undecided (None), never "does NOT
hold"."""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.audit.repository._replay import ReplayOutcome
from vouch.core import RunRecord


def _runs(world: str, outcome: str, exception: str | None = None) -> tuple[RunRecord, ...]:
    return tuple(RunRecord(world=world, outcome=outcome, exception=exception) for _ in range(3))  # type: ignore[arg-type]


G_PASSES = _runs("reference", "pass")


@pytest.mark.parametrize(
    ("model", "holds"),
    [
        (_runs("model", "fail", "AssertionError"), True),
        (_runs("model", "fail", "TypeError"), False),  # discarded by the audit: no assertion says so
        (_runs("model", "pass"), False),
        (_runs("model", "timeout"), None),  # incomplete: undecided, never "does NOT hold"
        (_runs("model", "infrastructure", "VouchError"), None),
    ],
    ids=["assertion", "type-error", "passes", "timeout", "vouch"],
)
def test_a_replay_holds_by_the_audits_rule(model: tuple[RunRecord, ...], holds: bool | None) -> None:
    assert ReplayOutcome(Path("t.py"), G_PASSES, model).holds is holds
