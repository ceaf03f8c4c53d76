"""V4V's checks on hand-made tasks: each check passes on a sound task and fails for its reason."""

from __future__ import annotations

import dataclasses

import pytest

from vouch.bench import load_task
from vouch.core import Case, MutationTarget, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.store import Store
from vouch.v4v import _checks as checks
from vouch.v4v import run_v4v

REFERENCE = "def verify(c, env):\n    return [x['args'].get('city') for x in c['calls']] == ['Paris']\n"


def _case(case_id, label, category, sub, city, construction="test", derived="gold", answer=None):
    candidate = {"calls": [{"function": "get_weather", "args": {"city": city}}], "final_answer": answer}
    return Case(
        id=case_id,
        label=label,
        category=category,
        subcategory=sub,
        candidate=candidate,
        provenance=Provenance(construction=construction, derived_from=derived, content_hash=content_hash(candidate)),
        rationale="test",
    )


def _task(root, cases, reference=REFERENCE, task_id="t"):
    write_task(
        root,
        TaskFiles(
            spec=TaskSpec(
                id=task_id, kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="t")
            ),
            instruction="Weather in Paris.",
            reference={"verifier.py": reference},
            cases=cases,
        ),
    )
    return load_task(root / task_id)


SOUND = [
    _case("gold", "positive", "gold", "gold", "Paris", construction="gold", derived=None),
    _case("alt", "positive", "variant", "cosmetic", "Paris", answer="It is sunny in Paris."),
    _case("err1", "negative", "error", "wrong_value", "London"),
    _case("err2", "negative", "error", "wrong_value", "Rome"),
    _case("hack", "negative", "attack", "hack", "paris"),
]


def test_pure_checks_pass_on_a_sound_task(tmp_path):
    task = _task(tmp_path, SOUND)
    assert checks.provenance(task).passed
    assert checks.label_consistency(task).passed


def test_label_consistency_finds_twins_with_different_labels(tmp_path):
    twin = _case("twin", "negative", "error", "wrong_value", "Paris")
    result = checks.label_consistency(_task(tmp_path, [*SOUND, twin]))
    assert not result.passed and "same candidate as gold" in (result.reason or "")


def test_provenance_finds_a_wrong_hash(tmp_path):
    bad = SOUND[2].model_copy(
        update={"provenance": SOUND[2].provenance.model_copy(update={"content_hash": "sha256:0"})}
    )
    result = checks.provenance(_task(tmp_path, [*SOUND[:2], bad, *SOUND[3:]]))
    assert not result.passed and "content hash" in (result.reason or "")


def test_trivial_baselines_flag_a_suite_gold_exact_match_solves(tmp_path):
    # Only the gold is positive and every negative differs from it: gold-exact-match is perfect.
    weak = [SOUND[0], _case("n1", "negative", "error", "x", "London"), _case("n2", "negative", "error", "y", "Rome")]
    result = checks.trivial_baselines(_task(tmp_path, weak))
    assert not result.passed
    assert result.evidence["ba_norm"]["gold_exact_match"] == 100.0
    assert abs(result.evidence["ba_norm"]["random_mean"]) < 40


@pytest.mark.parametrize("broken", [False, True])
def test_run_replays_the_reference_and_excludes_a_task_it_gets_wrong(tmp_path, broken):
    reference = REFERENCE if not broken else "def verify(c, env):\n    return True\n"
    task = _task(tmp_path, SOUND, reference=reference)
    body = run_v4v(
        [task],
        store=Store(tmp_path / "s.sqlite"),
        checks=["replay", "repeatability", "provenance", "label_consistency"],
        repeat=2,
    )
    row = body["tasks"][0]
    assert row["checks"]["repeatability"]["passed"]
    if broken:
        assert not row["retained"]
        disagreements = row["checks"]["replay"]["evidence"]["disagreements"]
        assert {d["case_id"] for d in disagreements} == {"err1", "err2", "hack"}
        assert body["excluded"] == [{"task_id": "t", "failed_checks": ["replay"]}]
    else:
        assert row["retained"] and body["excluded"] == []


def test_mutation_check_lists_undetected_mutants(tmp_path):
    # The suite has no case with another city in a second call, and none that checks the function
    # name: mutants that drop those checks survive.
    reference = (
        "def verify(c, env):\n"
        "    calls = c['calls']\n"
        "    if len(calls) != 1:\n"
        "        return False\n"
        "    return calls[0]['args'].get('city') == 'Paris'\n"
    )
    task = _task(tmp_path, SOUND, reference=reference)
    body = run_v4v([task], store=Store(tmp_path / "s.sqlite"), checks=["replay", "mutation"])
    check = body["tasks"][0]["checks"]["mutation"]
    assert check["evidence"]["mutants"] >= 3
    assert check["evidence"]["detected"] >= 1
    undetected = check["evidence"]["undetected"]
    assert not check["passed"] and undetected  # no case has two calls: the length check is unpinned
    assert all(u["diff"].startswith("---") for u in undetected)


def test_mutation_uses_the_task_operator_set_and_shows_equivalence(tmp_path):
    # The checks live in an answer key; the suite pins Paris but has no case with "paris, fr",
    # so dropping that allowed value goes undetected, and a probe cannot tell it apart either
    # (the gold uses "Paris"): no evidence of a difference. Dropping "Paris" breaks the gold.
    reference = (
        "import json as _json\n"
        'ANSWER = _json.loads(\'["Paris", "paris, fr"]\')\n'
        "def verify(c, env):\n"
        "    calls = c['calls']\n"
        "    return len(calls) == 1 and calls[0]['args'].get('city') in ANSWER\n"
    )
    task = _task(tmp_path, SOUND, reference=reference)
    spec = task.spec.model_copy(update={"mutation": [MutationTarget(kind="data", name="ANSWER")]})
    task = dataclasses.replace(task, spec=spec)
    body = run_v4v([task], store=Store(tmp_path / "s.sqlite"), checks=["replay", "mutation"])
    evidence = body["tasks"][0]["checks"]["mutation"]["evidence"]
    assert evidence["operator_set"] == [{"kind": "data", "name": "ANSWER"}]
    ids = {m["id"] for m in evidence["equivalent"]} | {m["id"] for m in evidence["undetected"]}
    assert evidence["detected_by"]  # dropping "Paris" or changing it: the gold case detects it
    assert all(i.startswith("ANSWER/") for i in [*ids, *evidence["detected_by"]])
    for row in evidence["equivalent"]:
        assert row["evidence"]["method"] in ("identical_bytecode", "probes")


def test_stillborn_mutants_are_reported_apart(tmp_path):
    # Every mutant of this constant makes the verifier crash on every case: nothing to detect.
    reference = (
        "KEY = {'a': 1, 'b': 2}\n"
        "def verify(c, env):\n"
        "    assert KEY == {'a': 1, 'b': 2}\n"
        "    return c['calls'][0]['args'].get('city') == 'Paris'\n"
    )
    task = _task(tmp_path, SOUND, reference=reference)
    spec = task.spec.model_copy(update={"mutation": [MutationTarget(kind="data", name="KEY")]})
    task = dataclasses.replace(task, spec=spec)
    body = run_v4v([task], store=Store(tmp_path / "s.sqlite"), checks=["replay", "mutation"])
    check = body["tasks"][0]["checks"]["mutation"]
    assert check["evidence"]["stillborn"] and not check["evidence"]["undetected"]
    assert not check["passed"] and "stillborn" in check["reason"]


def test_shape_only_baseline_knows_the_schema_not_the_answer(tmp_path):
    # Every negative is well-formed and calls the same tool: checking the shape catches none.
    task = _task(tmp_path, SOUND)
    evidence = checks.trivial_baselines(task).evidence
    assert evidence["ba_norm"]["shape_only"] == 0.0
    missing_arg = Case.model_validate(
        SOUND[2].model_dump() | {"id": "noarg", "candidate": {"calls": [{"function": "get_weather", "args": {}}]}}
    )
    with_tools = dataclasses.replace(
        _task(tmp_path / "b", [*SOUND, missing_arg]),
        tools=[{"name": "get_weather", "parameters": {"properties": {"city": {}}, "required": ["city"]}}],
    )
    assert checks.trivial_baselines(with_tools).evidence["ba_norm"]["shape_only"] > 0


def test_a_mutant_decides_probes_up_to_the_first_that_tells_it_apart(tmp_path):
    # Every case has two calls, so dropping the count check goes undetected; the probe that
    # drops the second call tells that mutant apart, and its later probes are never decided; the
    # reference decides the probes only up to the last one a mutant needed.
    reference = (
        "def verify(c, env):\n"
        "    calls = c['calls']\n"
        "    if len(calls) != 2:\n"
        "        return False\n"
        "    return calls[0]['args'].get('city') == 'Paris'\n"
    )

    def two(case):
        second = {"function": "get_weather", "args": {"city": "Oslo"}}
        candidate = {**case.candidate, "calls": [*case.candidate["calls"], second]}
        provenance = case.provenance.model_copy(update={"content_hash": content_hash(candidate)})
        return case.model_copy(update={"candidate": candidate, "provenance": provenance})

    task = _task(tmp_path, [two(c) for c in SOUND], reference=reference)
    body = run_v4v([task], store=Store(tmp_path / "s.sqlite"), checks=["replay", "mutation"])
    evidence = body["tasks"][0]["checks"]["mutation"]["evidence"]
    told = [u["evidence"] for u in evidence["undetected"] if "distinguishing_probe" in u.get("evidence", {})]
    assert told, evidence["undetected"]
    for found in told:
        probe = found["distinguishing_probe"]
        assert [c["args"]["city"] for c in probe["probe"]["calls"]] == ["Paris"]
        assert (probe["reference"], probe["mutant"]) == ("FAIL", "PASS")
        assert found["compared"] <= found["probes"]
    probed = len(told) + sum(1 for e in evidence["equivalent"] if e["evidence"]["method"] == "probes")
    stats = body["stats"]
    assert not any(e["evidence"]["method"] == "probes" for e in evidence["equivalent"])
    assert stats["probe_decisions"] == max(f["compared"] for f in told) + sum(f["compared"] for f in told)
    assert stats["probe_decisions"] < told[0]["probes"] * (1 + probed)  # the early stop saved decisions
