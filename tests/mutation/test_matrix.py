"""The kill matrix over a scripted oracle: killed, survived and invalid, and what each counts as."""

from __future__ import annotations

import json

import pytest

from vouch.errors import UsageError
from vouch.mutation import KillMatrix, Mutant, kill_matrix, mutate

SOURCE = "def verify(n):\n    return n < 3 and n != 0\n"


@pytest.fixture
def mutants() -> list[Mutant]:
    return mutate(SOURCE, operators=["compare_swap", "boolean_swap"])


def scripted(table: dict[tuple[str, str], str]) -> object:
    def oracle(mutant: Mutant, probe: str) -> str:
        return table.get((mutant.id, probe), "same")

    return oracle


def test_killed_survived_and_invalid(mutants: list[Mutant]) -> None:
    a, b, c, *rest = [m.id for m in mutants]
    table = {(a, "p1"): "different", (b, "p1"): "invalid", (b, "p2"): "invalid", (c, "p2"): "different"}
    matrix = kill_matrix(mutants, ["p1", "p2"], scripted(table))  # type: ignore[arg-type]
    assert matrix.mutants == [m.id for m in mutants]
    assert matrix.outcomes[(a, "p1")] == "killed"
    assert matrix.outcomes[(a, "p2")] == "survived"
    assert matrix.outcomes[(b, "p1")] == "invalid"
    assert matrix.detected(a) and matrix.detected(c)
    assert not matrix.detected(b)  # a crash or INVALID detects nothing
    assert matrix.undetected() == [b, *rest]
    assert matrix.score() == pytest.approx(2 / len(mutants))


def test_to_dict_is_json_ready(mutants: list[Mutant]) -> None:
    first = mutants[0].id
    matrix = kill_matrix(mutants, ["p"], scripted({(first, "p"): "different"}))  # type: ignore[arg-type]
    data = json.loads(json.dumps(matrix.to_dict()))
    assert data["outcomes"][first] == {"p": "killed"}
    assert data["detected"][first] is True
    assert data["undetected"] == [m.id for m in mutants[1:]]
    assert data["score"] == pytest.approx(1 / len(mutants))
    assert data["format_version"] == 1


def test_every_pair_is_asked_once(mutants: list[Mutant]) -> None:
    asked: list[tuple[str, str]] = []

    def oracle(mutant: Mutant, probe: str) -> str:
        asked.append((mutant.id, probe))
        return "different"

    kill_matrix(mutants, ["p1", "p2"], oracle)
    assert asked == [(m.id, p) for m in mutants for p in ("p1", "p2")]


def test_empty_matrices() -> None:
    assert kill_matrix([], ["p"], lambda m, p: "same").score() == 1.0
    none_probed = kill_matrix(mutate(SOURCE, operators=["boolean_swap"]), [], lambda m, p: "same")
    assert none_probed.score() == 0.0
    assert KillMatrix(mutants=[], probes=[], outcomes={}).undetected() == []


@pytest.mark.parametrize(
    ("answer", "probes", "pattern"),
    [
        ("killed", ["p"], r"oracle returned 'killed'.*'different', 'same', 'invalid'"),
        ("PASS", ["p"], r"oracle returned 'PASS'"),
        ("same", ["p", "p"], r"duplicate probe"),
    ],
)
def test_bad_oracle_answers_and_inputs(mutants: list[Mutant], answer: str, probes: list[str], pattern: str) -> None:
    with pytest.raises(UsageError, match=pattern):
        kill_matrix(mutants, probes, lambda m, p: answer)


def test_duplicate_mutant_ids_and_unknown_id(mutants: list[Mutant]) -> None:
    with pytest.raises(UsageError, match="duplicate mutant id"):
        kill_matrix([mutants[0], mutants[0]], ["p"], lambda m, p: "same")
    matrix = kill_matrix(mutants, ["p"], lambda m, p: "same")
    with pytest.raises(UsageError, match="mutant_id='nope'"):
        matrix.detected("nope")
