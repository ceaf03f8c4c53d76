"""BFCL as tool-call tasks: the matcher on hand-made answer keys, then built tasks (minima, labels, determinism)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vouch.core import canonical_candidate, content_hash
from vouch.errors import UsageError
from vouch.sources.bfcl import _source as _bfcl
from vouch.sources.bfcl._verifier import matches

needs_bfcl = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None, reason="bfcl-eval is not installed (pip install --no-deps ...)"
)


def _fn(name, properties, required=()):
    return {"name": name, "parameters": {"type": "dict", "properties": properties, "required": list(required)}}


def _calls(*calls):
    return {"calls": [{"function": f, "args": a} for f, a in calls], "final_answer": None}


AREA = _fn(
    "area",
    {"base": {"type": "integer"}, "height": {"type": "float"}, "unit": {"type": "string"}},
    ["base", "height"],
)
AREA_KEY = [{"area": {"base": [10], "height": [5.0], "unit": ["square meters", "m2", ""]}}]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"base": 10, "height": 5.0, "unit": "square meters"}, True),
        ({"base": 10, "height": 5, "unit": "square meters"}, True),  # int for float
        ({"base": 10.0, "height": 5.0}, False),  # float for integer
        ({"base": True, "height": 5.0}, False),  # a bool is not a number
        ({"base": "10", "height": 5.0}, False),
        ({"base": 10, "height": 5.0, "unit": "Square-Meters"}, True),  # case and "-" ignored
        ({"base": 10, "height": 5.0, "unit": " square  meters. "}, True),  # spaces and "." ignored
        ({"base": 10, "height": 5.0, "unit": "M2"}, True),  # another allowed value
        ({"base": 10, "height": 5.0, "unit": "square feet"}, False),
        ({"base": 10, "height": 5.0}, True),  # "" allows omitting unit
        ({"base": 10}, False),  # required height missing
        ({"base": 11, "height": 5.0}, False),
        ({"base": 10, "height": 5.0, "color": "red"}, False),  # no such parameter
    ],
)
def test_matcher_values_types_and_omission(args, expected):
    assert matches(_calls(("area", args)), AREA_KEY, [AREA]) is expected


PAIR = [_fn("price", {"company": {"type": "string"}, "day": {"type": "string"}}, ["company", "day"])]
PAIR_KEY = [
    {"price": {"company": ["Microsoft", "Apple"], "day": ["Jan 1"]}},
    {"price": {"company": ["Apple"], "day": ["Jan 1"]}},
]


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([("price", {"company": "Microsoft", "day": "Jan 1"}), ("price", {"company": "Apple", "day": "Jan 1"})], True),
        # Greedy pairing would give the first expected call to Apple and fail; a full matching passes.
        ([("price", {"company": "Apple", "day": "Jan 1"}), ("price", {"company": "Microsoft", "day": "Jan 1"})], True),
        ([("price", {"company": "Apple", "day": "Jan 1"}), ("price", {"company": "Apple", "day": "Jan 1"})], True),
        (
            [("price", {"company": "Microsoft", "day": "Jan 1"}), ("price", {"company": "Microsoft", "day": "Jan 1"})],
            False,
        ),
        ([("price", {"company": "Apple", "day": "Jan 1"})], False),  # a call missing
        ([("price", {"company": "Apple", "day": "Jan 1"})] * 3, False),  # an extra call
        ([("cost", {"company": "Apple", "day": "Jan 1"}), ("price", {"company": "Apple", "day": "Jan 1"})], False),
    ],
)
def test_matcher_pairs_parallel_calls_in_any_order(calls, expected):
    assert matches(_calls(*calls), PAIR_KEY, PAIR) is expected


ORDER = _fn(
    "order",
    {
        "prefs": {"type": "dict", "properties": {}},
        "items": {"type": "array", "items": {"type": "dict"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "rooms": {"type": "integer"},
        "note": {"type": "string"},
    },
    ["prefs"],
)
ORDER_KEY = [
    {
        "order": {
            "prefs": [{"size": ["large"], "milk": ["soy", ""], "pos": [{"x": 1.5, "y": 2}]}],
            "items": [[{"item": ["burger"], "qty": [2]}, {"item": ["fries"], "qty": [1]}], ""],
            "tags": [["Hot", "Spicy"], ""],
            "rooms": ["dontcare", ""],
            "note": [None, ""],
        }
    }
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"prefs": {"size": "large", "milk": "soy", "pos": {"x": 1.5, "y": 2}}}, True),
        ({"prefs": {"size": "LARGE", "pos": {"y": 2, "x": 1.5}}}, True),  # key omitted, nested dict compared by key
        ({"prefs": {"size": "large"}}, False),  # key pos may not be omitted
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}, "sugar": "none"}}, False),  # unknown key
        ({"prefs": {"size": "small", "pos": {"x": 1.5, "y": 2}}}, False),
        (
            {
                "prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}},
                "items": [{"item": "Burger", "qty": 2}, {"item": "fries", "qty": 1}],
            },
            True,
        ),
        (
            {
                "prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}},
                "items": [{"item": "fries", "qty": 1}, {"item": "burger", "qty": 2}],
            },
            False,
        ),
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "tags": ["hot", "spicy"]}, True),
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "tags": ["spicy", "hot"]}, False),  # lists keep order
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "tags": []}, True),  # BFCL: [] where "" is allowed
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "rooms": "dontcare"}, True),  # a listed variable
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "rooms": "three"}, False),
        ({"prefs": {"size": "large", "pos": {"x": 1.5, "y": 2}}, "note": None}, True),  # None when listed
    ],
)
def test_matcher_dict_specs_lists_and_listed_variables(args, expected):
    assert matches(_calls(("order", args)), ORDER_KEY, [ORDER]) is expected


@pytest.mark.parametrize(
    "candidate",
    [
        None,
        {},
        {"calls": "area(10, 5)"},
        {"calls": [["area", {"base": 10, "height": 5.0}]]},
        {"calls": [{"function": "area", "args": [10, 5.0]}]},
        {"calls": [{"name": "area", "args": {"base": 10, "height": 5.0}}]},
        {"calls": [], "final_answer": "The area is 25 square meters."},
    ],
)
def test_matcher_rejects_malformed_candidates_without_raising(candidate):
    assert matches(candidate, AREA_KEY, [AREA]) is False


# --- built tasks ------------------------------------------------------------------------------


def _verifier(task):
    """The task's ``verify``, run from its own source text as a standalone file."""
    namespace: dict = {}
    exec(compile(task.reference["verifier.py"], "verifier.py", "exec"), namespace)
    env = SimpleNamespace(tools=json.loads(task.environment["tools.json"]))
    return lambda candidate: namespace["verify"](candidate, env)


@pytest.fixture(scope="module")
def default_build():
    return _bfcl.build(Path("unused"), seed=0, options={})


@needs_bfcl
def test_default_build_spreads_80_tasks_over_the_sets(default_build):
    tasks = default_build.tasks
    assert len(tasks) == _bfcl.DEFAULT_LIMIT
    by_set = {s: sum(t.spec.source.subset == s for t in tasks) for s in _bfcl.SUBSETS}
    assert by_set == dict.fromkeys(_bfcl.SUBSETS, 10)
    assert len({t.spec.id for t in tasks}) == len(tasks)
    assert all(reason for _, reason in default_build.skipped)


@needs_bfcl
def test_every_task_has_every_category_and_the_minima(default_build):
    for task in default_build.tasks:
        cases = task.cases
        assert cases[0].id == "gold"
        assert {c.category for c in cases} == {"gold", "variant", "error", "attack"}, task.spec.id
        positives = [c for c in cases if c.label == "positive"]
        variants = [c for c in cases if c.category == "variant"]
        negatives = [c for c in cases if c.label == "negative"]
        assert len(positives) >= 5 and len(variants) >= 3 and len(negatives) >= 6, task.spec.id
        assert any(c.category == "attack" for c in negatives)
        assert len({c.id for c in cases}) == len(cases)
        canon = [canonical_candidate("tool_call", c.candidate) for c in cases]
        assert len(set(canon)) == len(canon), f"{task.spec.id}: canonical twins"
        for case in cases:
            assert case.provenance.content_hash == content_hash(case.candidate)
            assert case.rationale and "\n" not in case.rationale


@needs_bfcl
def test_an_alternative_wherever_the_answer_key_offers_one(default_build):
    for task in default_build.tasks:
        if task.spec.source.subset.endswith(("parallel", "parallel_multiple")):
            assert any(c.subcategory == "alternative" for c in task.cases), task.spec.id


@needs_bfcl
def test_reference_verifier_agrees_with_every_label(default_build):
    disagreements = []
    for task in default_build.tasks:
        verify = _verifier(task)
        disagreements += [
            (task.spec.id, c.id) for c in task.cases if verify(c.candidate) is not (c.label == "positive")
        ]
    assert disagreements == []


@needs_bfcl
def test_task_files_are_consistent(default_build):
    task = default_build.tasks[0]
    entry = next(e for e in _bfcl.load_subset(task.spec.source.subset) if e.task_id == task.spec.id)
    assert task.spec.kind == "tool_call" and task.spec.public_tools == []
    assert task.spec.source.benchmark == "bfcl" and task.spec.source.version == _bfcl.BFCL_VERSION
    assert task.spec.id == f"bfcl-{entry.subset}-{entry.original_id}"
    assert json.loads(task.environment["tools.json"]) == entry.functions
    assert json.loads(task.reference["gold.json"]) == task.cases[0].candidate
    assert "environment/tools.json" in task.instruction
    assert entry.messages[-1]["content"] in task.instruction
    assert "import vouch" not in task.reference["verifier.py"]  # standalone: stdlib only


@needs_bfcl
def test_same_seed_same_output_other_seed_other_sample(default_build):
    again = _bfcl.build(Path("unused"), seed=0, options={})
    assert [t.model_dump(mode="json") for t in again.tasks] == [t.model_dump(mode="json") for t in default_build.tasks]
    other = _bfcl.build(Path("unused"), seed=1, options={"limit": 8})
    assert [t.spec.id for t in other.tasks] != [t.spec.id for t in default_build.tasks[:8]]


@needs_bfcl
def test_limit_and_subsets():
    output = _bfcl.build(Path("unused"), seed=3, options={"limit": 5, "subsets": ["parallel", "live_parallel"]})
    assert len(output.tasks) == 5
    assert {t.spec.source.subset for t in output.tasks} == {"parallel", "live_parallel"}
    reorders = [c for t in output.tasks for c in t.cases if c.provenance.construction == "alt-reorder-calls"]
    assert reorders and all(c.label == "positive" for c in reorders)


@needs_bfcl
def test_a_known_entry_gets_its_omission_and_its_errors():
    entry = next(e for e in _bfcl.load_subset("simple_python") if e.original_id == "simple_python_0")
    task = _bfcl.build_task(entry, seed=0)
    assert not isinstance(task, str), task
    by_construction = {c.provenance.construction: c for c in task.cases}
    omitted = by_construction["alt-omit-optional"].candidate["calls"][0]["args"]
    assert omitted == {"base": 10, "height": 5}  # unit may be left out: its default is "units"
    assert {"err-wrong-value", "err-wrong-type", "hack-default-args"} <= set(by_construction)
    assert all(c.label == "negative" for k, c in by_construction.items() if k.startswith(("err-", "hack-")))
    # Mostly mistakes in values: a verifier that checks the shape alone must not score well.
    negatives = [c for c in task.cases if c.label == "negative"]
    shape_only = {"err-missing-required", "err-unknown-param", "err-wrong-function", "err-extra-call"}
    reshaped = [
        c for c in negatives if c.provenance.construction in shape_only | {"err-missing-call", "hack-answer-only"}
    ]
    assert reshaped and len(reshaped) * (1 + _bfcl.SAME_SHAPE_PER_RESHAPE) <= len(negatives)
    wrong_values = [c for c in negatives if c.provenance.construction == "err-wrong-value"]
    assert len({json.dumps(c.candidate, sort_keys=True) for c in wrong_values}) >= 3


@pytest.mark.parametrize(
    "options",
    [
        {"limit": 0},
        {"limit": "5"},
        {"limit": True},
        {"subsets": ["simple"]},
        {"subsets": "parallel"},
        {"subsets": []},
        {"suite_version": "v1.2.2"},
    ],
)
def test_bad_options_are_usage_errors(options):
    with pytest.raises(UsageError, match="bfcl"):
        _bfcl.build(Path("unused"), seed=0, options=options)


def test_a_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(_bfcl.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"pip install --no-deps bfcl-eval==2026\.3\.23"):
        _bfcl.data_dir()
