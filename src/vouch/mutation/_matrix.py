"""The kill matrix: which probe (test case) detects which mutant, under a caller's oracle.

Only a different *valid* decision kills a mutant; an oracle that reports "invalid" (a crash, an
INVALID output) detects nothing, per VerifierBench's C6 rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from vouch.errors import UsageError
from vouch.mutation._engine import Mutant

__all__ = ["KillMatrix", "Outcome", "kill_matrix"]

Outcome = Literal["killed", "survived", "invalid"]
_FROM_ORACLE: Final[dict[str, Outcome]] = {"different": "killed", "same": "survived", "invalid": "invalid"}
FORMAT_VERSION: Final = 1


@dataclass
class KillMatrix:
    """Outcomes of every (mutant, probe) pair."""

    mutants: list[str]
    probes: list[str]
    outcomes: dict[tuple[str, str], str] = field(default_factory=dict)
    """(mutant_id, probe) -> "killed" | "survived" | "invalid"."""

    def detected(self, mutant_id: str) -> bool:
        """Whether at least one probe killed the mutant.

        Args:
            mutant_id: The id of a mutant in this matrix.

        Raises:
            UsageError: The id is not in this matrix.
        """
        if mutant_id not in self.mutants:
            raise UsageError(f"mutant_id={mutant_id!r} is not in this kill matrix")
        return any(self.outcomes.get((mutant_id, probe)) == "killed" for probe in self.probes)

    def undetected(self) -> list[str]:
        """Ids of mutants no probe killed, in matrix order."""
        return [m for m in self.mutants if not self.detected(m)]

    def score(self) -> float:
        """Detected mutants over all mutants; 1.0 when there are none (nothing escaped)."""
        if not self.mutants:
            return 1.0
        return (len(self.mutants) - len(self.undetected())) / len(self.mutants)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: ids, per-mutant outcomes by probe, detection and the score."""
        return {
            "format_version": FORMAT_VERSION,
            "mutants": list(self.mutants),
            "probes": list(self.probes),
            "outcomes": {
                m: {p: self.outcomes[(m, p)] for p in self.probes if (m, p) in self.outcomes} for m in self.mutants
            },
            "detected": {m: self.detected(m) for m in self.mutants},
            "undetected": self.undetected(),
            "score": self.score(),
        }


def kill_matrix(
    mutants: Sequence[Mutant],
    probes: Sequence[str],
    oracle: Callable[[Mutant, str], str],
) -> KillMatrix:
    """Run `oracle` on every (mutant, probe) pair and record what it says.

    Args:
        mutants: Mutants with distinct ids.
        probes: Names of the probes (test cases) the oracle understands, distinct.
        oracle: Returns "different" when the mutant's valid decision on the probe differs from the
            original's, "same" when it does not, and "invalid" when either run crashed or gave no
            valid decision.

    Returns:
        The full matrix, in the order given.

    Raises:
        UsageError: Duplicate mutant ids or probes, or an oracle answer outside the three above.
    """
    ids = [m.id for m in mutants]
    for what, values in (("mutant id", ids), ("probe", list(probes))):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise UsageError(f"duplicate {what}(s) {dupes}; each must appear once")
    matrix = KillMatrix(mutants=ids, probes=list(probes))
    for mutant in mutants:
        for probe in probes:
            answer = oracle(mutant, probe)
            outcome = _FROM_ORACLE.get(answer)
            if outcome is None:
                raise UsageError(
                    f"oracle returned {answer!r} for mutant={mutant.id!r}, probe={probe!r}; "
                    f"it must return one of {', '.join(map(repr, _FROM_ORACLE))}"
                )
            matrix.outcomes[(mutant.id, probe)] = outcome
    return matrix
