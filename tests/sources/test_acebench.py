"""ACEBench as tool-call tasks: the rules on hand-made answers, built slices of the registered data
(minima, labels the reference verifier agrees with, determinism), and bad input that never stops
the build."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vouch import corpora
from vouch.core import canonical_candidate, content_hash
from vouch.errors import UsageError
from vouch.sources import build_source
from vouch.sources.acebench import _source as _acebench
from vouch.sources.acebench._cases import special_phrases
from vouch.sources.acebench._verifier import decide, refusal_phrase, special_matches, standardize

REFUSAL = "Owing to the tools at hand, this cannot be done."
"""A made-up refusal: the real one is read from the data (``_acebench.read_refusal``)."""
NORMAL, SPECIAL = _acebench.NORMAL, _acebench.SPECIAL
INCOMPLETE = next(c for c in SPECIAL if c.endswith("_incomplete"))
MADE = NORMAL[0]
"""The category the hand-made data files stand in for."""


def _fn(name, properties, required=()):
    return {"name": name, "parameters": {"type": "object", "properties": properties, "required": list(required)}}


def _calls(*calls, final_answer=None):
    return {"calls": [{"function": f, "args": a} for f, a in calls], "final_answer": final_answer}


TRIP = _fn(
    "plan_trip",
    {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "budget": {"type": "number"},
        "pets": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}},
        "hotel": {"type": "object", "properties": {"name": {"type": "string"}, "stars": {"type": "integer"}}},
        "notes": {"type": "string"},
    },
    ["city", "days"],
)
TRIP_ANSWER = [
    {
        "plan_trip": {
            "city": "New York",
            "days": 3,
            "budget": 1500.0,
            "pets": False,
            "tags": ["food tour", "museums"],
            "hotel": {"name": "Grand Plaza", "stars": 4},
        }
    }
]
TRIP_MENTIONED = {"plan_trip": ["budget", "tags", "hotel"]}
GOLD = dict(TRIP_ANSWER[0]["plan_trip"])


def _trip(**changes):
    args = {**GOLD, **changes}
    return _calls(("plan_trip", {k: v for k, v in args.items() if v is not _DROP}))


_DROP = object()


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (_trip(), True),
        (_trip(city="new york"), True),  # letter case ignored
        (_trip(city=" New-York. "), True),  # whitespace and ,./-_*^ ignored
        (_trip(city="New York Harbor"), True),  # ACEBench: the answer's text may be contained
        (_trip(city="Old New-York"), True),  # ... word by word
        (_trip(city="NewYorker"), False),  # ... not inside a word (ACEBench's raw containment accepts it)
        (_trip(hotel={"name": "Grand Plaza Hotel", "stars": 4}), True),
        (_trip(hotel={"name": "Grand Plazas", "stars": 4}), False),
        (_trip(city="Boston"), False),
        (_trip(days=4), False),  # ACEBench itself never compares numbers; vouch does
        (_trip(days="3"), False),  # a string for an integer
        (_trip(days=3.0), False),  # a float for an integer
        (_trip(budget=1500), True),  # an integer for a number
        (_trip(budget=1600.0), False),
        (_trip(pets=True), False),
        (_trip(pets="false"), True),  # ACEBench reads "true"/"false" as booleans
        (_trip(pets=_DROP), True),  # the answer's value is the schema's default
        (_trip(budget=_DROP), False),  # mentioned by the user: ACEBench's prompt asks for it
        (_trip(tags=["Food Tour", "museums"]), True),
        (_trip(tags=["museums", "food tour"]), False),  # lists keep their order
        (_trip(tags=["food tour"]), False),
        (_trip(tags=["food tour", "museums and more"]), False),  # strings in lists compare whole
        (_trip(hotel={"name": "grand plaza", "stars": 4}), True),
        (_trip(hotel={"name": "Grand Plaza", "stars": 5}), False),
        (_trip(hotel={"name": "Grand Plaza"}), False),  # a nested key left out
        (_trip(notes="window seat"), False),  # a parameter the answer does not have
        (_trip(color="red"), False),  # no such parameter
        (_trip(city=_DROP), False),  # required
        (_calls(("plan_trip", GOLD), final_answer="Booked."), True),  # the final answer plays no part
        (_calls(("plan_tour", GOLD)), False),
        (_calls(("plan_trip", GOLD), ("plan_trip", GOLD)), False),
        (_calls(), False),
    ],
)
def test_normal_rules(candidate, expected):
    assert decide(candidate, "normal", TRIP_ANSWER, [TRIP], TRIP_MENTIONED) is expected


def test_an_optional_value_nobody_mentioned_may_be_left_out():
    candidate = _trip(hotel=_DROP)
    assert decide(candidate, "normal", TRIP_ANSWER, [TRIP], {"plan_trip": ["budget"]}) is True
    assert decide(candidate, "normal", TRIP_ANSWER, [TRIP], TRIP_MENTIONED) is False


PRICE = _fn("price", {"company": {"type": "string"}}, ["company"])
PAIR = [{"price_1": {"company": "Apple"}, "price_2": {"company": "Microsoft"}}]


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([("price", {"company": "Apple"}), ("price", {"company": "Microsoft"})], True),
        ([("price", {"company": "Microsoft"}), ("price", {"company": "Apple"})], True),  # any order
        # ACEBench pairs without a matching: two Apple calls pass its checker; one call is never made.
        ([("price", {"company": "Apple"}), ("price", {"company": "Apple"})], False),
        ([("price", {"company": "Apple"})], False),
    ],
)
def test_repeated_calls_are_keyed_name_1_name_2_and_pair_one_to_one(calls, expected):
    assert decide(_calls(*calls), "normal", PAIR, [PRICE], {}) is expected


def test_any_of_several_accepted_answers_passes():
    answers = [{"price": {"company": "Apple"}}, {"price": {"company": "Apple Inc"}}]
    assert decide(_calls(("price", {"company": "apple inc"})), "normal", answers, [PRICE], {})
    assert not decide(_calls(("price", {"company": "Google"})), "normal", answers, [PRICE], {})


@pytest.mark.parametrize(
    ("category", "truth", "text", "expected"),
    [
        (
            "incomplete",
            {"book": ["date", "seats"]},
            "The request lacks required parameters (date, seats) for the function (book).",
            True,
        ),
        (
            "incomplete",
            {"book": ["date", "seats"]},
            "the request  lacks REQUIRED parameters (seats, date) for the function (book)",
            True,
        ),
        (
            "incomplete",
            {"book": [" date ", " seats"]},
            "The request lacks required parameters (date, seats) for the function (book).",
            True,
        ),
        (
            "incomplete",
            {"book": ["date", "seats"]},
            "The request lacks required parameters (date) for the function (book).",
            False,
        ),
        (
            "incomplete",
            {"book": ["date"]},
            "The request lacks required parameters (date) for the function (cancel).",
            False,
        ),
        ("incomplete", {"book": ["date"]}, "Please tell me the date for book.", False),
        (
            "incomplete",
            {"book": ["date"]},
            "The request lacks required parameters (date) for the function (book). "
            "The conversation gives invalid values (x) for y",
            False,
        ),
        (
            "error_param",
            {"seat_code": ["7-B"]},
            "The conversation gives invalid values (7-B) for the parameters (seat_code) ...",
            True,
        ),
        (
            "error_param",
            {"seat_code": ["7-B"]},
            "The conversation gives invalid values for the parameters (seat_code).",
            False,
        ),
        ("irrelevant", REFUSAL, "Sorry: owing to  the TOOLS at hand I must pass.", True),
        ("irrelevant", REFUSAL, "The tools at hand cannot do this.", False),  # not its first clause
        ("irrelevant", REFUSAL, "I cannot help with that.", False),
        ("irrelevant", REFUSAL, None, False),
    ],
)
def test_special_rules(category, truth, text, expected):
    assert special_matches({"calls": [], "final_answer": text}, category, truth) is expected


def test_the_refusal_phrase_is_its_first_clause_and_other_tasks_reject_it():
    assert refusal_phrase(" Owing to the tools\nat hand; no.") == "owing to the tools at hand"
    assert refusal_phrase("No way") == "no way"
    phrases = special_phrases(REFUSAL)
    assert phrases["irrelevant"] == "owing to the tools at hand"
    gold = "The request lacks required parameters (date) for the function (book)."
    truth = {"book": ["date"]}
    assert special_matches({"calls": [], "final_answer": gold}, "incomplete", truth, phrases)
    stuffed = {"calls": [], "final_answer": f"{gold} {REFUSAL}"}
    assert special_matches(stuffed, "incomplete", truth, special_phrases(None))  # the refusal unknown
    assert not special_matches(stuffed, "incomplete", truth, phrases)


def test_a_special_task_fails_any_call_even_with_the_right_text():
    assert not special_matches(_calls(("price", {"company": "x"}), final_answer=REFUSAL), "irrelevant", REFUSAL)


@pytest.mark.parametrize(
    "candidate",
    [
        None,
        {},
        {"calls": "price(company='Apple')"},
        {"calls": [["price", {}]]},
        {"calls": [{"function": "price", "args": []}]},
    ],
)
def test_malformed_candidates_fail_without_raising(candidate):
    assert decide(candidate, "normal", [{"price": {"company": "Apple"}}], [PRICE], {}) is False
    assert decide(candidate, "irrelevant", "x", [PRICE], {}) is False


def test_standardize_is_acebenchs_string_form():
    assert standardize(" New-York, N.Y. ") == "newyorkny"
    assert standardize("it's") == 'it"s'


# --- built slices of the registered data ------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir() -> Path:
    """The data directory the tests read ACEBench from: $VOUCH_DATA_DIR as scripts/test sets it,
    else the user cache, where the registered files are downloaded (sha256 checked) if missing."""
    ace = [c for c in corpora.CORPORA.values() if c.name.startswith("acebench-")]
    (root,) = {Path(str(corpora.resolve(c.name)).removesuffix(c.file)) for c in ace}
    return root


@pytest.fixture(scope="module")
def one_per_category(data_dir) -> _acebench.BuildOutput:
    return _acebench.build(Path("unused"), seed=0, options={"limit": 2 * len(_acebench.CATEGORIES)})


def _verifier(task):
    """The task's ``verify``, run from its own source text as a standalone file."""
    namespace: dict = {}
    exec(compile(task.reference["verifier.py"], "verifier.py", "exec"), namespace)
    env = SimpleNamespace(tools=json.loads(task.environment["tools.json"]))
    return lambda candidate: namespace["verify"](candidate, env)


def test_a_limited_build_spreads_over_every_category_and_names_the_agent_ones(one_per_category):
    tasks = one_per_category.tasks
    assert len(tasks) == 2 * len(_acebench.CATEGORIES)
    by_category = {c: sum(t.spec.source.subset == c for t in tasks) for c in _acebench.CATEGORIES}
    assert by_category == dict.fromkeys(_acebench.CATEGORIES, 2)
    assert len({t.spec.id for t in tasks}) == len(tasks)
    assert {s for s, _ in one_per_category.skipped} >= set(_acebench.AGENT)
    inputs = one_per_category.inputs
    for category in _acebench.CATEGORIES:
        name = corpora.acebench_corpus(category)
        assert inputs[name] == "sha256:" + corpora.corpus(name).sha256


def test_every_task_has_every_category_and_the_minima(one_per_category):
    for task in one_per_category.tasks:
        cases = task.cases
        assert cases[0].id == "gold"
        assert {c.category for c in cases} == {"gold", "variant", "error", "attack"}, task.spec.id
        assert sum(c.label == "positive" for c in cases) >= 5, task.spec.id
        assert sum(c.label == "negative" for c in cases) >= 6, task.spec.id
        canon = [canonical_candidate("tool_call", c.candidate) for c in cases]
        assert len(set(canon)) == len(canon), f"{task.spec.id}: canonical twins"
        assert all(c.provenance.content_hash == content_hash(c.candidate) for c in cases)


def test_the_reference_verifier_agrees_with_every_label(one_per_category):
    for task in one_per_category.tasks:
        assert "import vouch" not in task.reference["verifier.py"] and "from vouch" not in task.reference["verifier.py"]
        verify = _verifier(task)
        wrong = [c.id for c in task.cases if verify(c.candidate) is not (c.label == "positive")]
        assert not wrong, f"{task.spec.id}: {wrong}"


def test_special_tasks_share_one_instruction_that_gives_every_format(one_per_category):
    specials = [t for t in one_per_category.tasks if t.spec.source.subset.startswith("special_")]
    rules = {t.instruction.split("---", 1)[1] for t in specials}
    assert len(rules) == 1  # nothing tells the three special categories apart
    (text,) = rules
    assert "lacks required parameters" in text and "gives invalid values" in text
    refusal = _acebench.read_refusal(None)  # from the data directory
    assert refusal and refusal in " ".join(text.split())


def test_the_refusal_comes_from_the_data_and_vouch_does_not_hold_it(one_per_category):
    refusal = _acebench.read_refusal(None)
    assert refusal is not None and one_per_category.inputs["refusal"].startswith("read from")
    irrelevant = [t for t in one_per_category.tasks if t.spec.source.subset == _acebench.IRRELEVANT]
    assert irrelevant and all(json.loads(t.reference["gold.json"])["final_answer"] == refusal for t in irrelevant)
    phrase = refusal_phrase(refusal)
    sources = Path(_acebench.__file__).parent.glob("_acebench*.py")
    assert not [p.name for p in sources if phrase in " ".join(p.read_text().split()).lower()]


def test_builds_are_deterministic_and_the_seed_changes_the_sample(data_dir):
    options = {"limit": 4, "categories": [NORMAL[0], INCOMPLETE]}
    first = _acebench.build(Path("unused"), seed=3, options=options)
    again = _acebench.build(Path("unused"), seed=3, options=options)
    other = _acebench.build(Path("unused"), seed=4, options=options)
    assert first.tasks == again.tasks and first.skipped == again.skipped
    assert [t.spec.id for t in first.tasks] != [t.spec.id for t in other.tasks]


def test_the_default_build_is_400_tasks_over_every_category():
    assert _acebench._parse_options({}) == (_acebench.DEFAULT_LIMIT, list(_acebench.CATEGORIES))
    assert _acebench.DEFAULT_LIMIT >= 300


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"limit": 0}, "1 or more"),
        ({"limit": True}, "1 or more"),
        ({"categories": NORMAL[0]}, "list of names"),
        ({"categories": [NORMAL[0] + "_x"]}, "unknown category"),
        ({"suite_version": "v1"}, "unknown option"),
    ],
)
def test_bad_options_are_one_line(options, message, data_dir):
    with pytest.raises(UsageError, match=message) as err:
        _acebench.build(Path("unused"), seed=0, options=options)
    assert "\n" not in str(err.value)


# --- bad input: the build goes on, the manifest lists it --------------------------------------

FUNCS = [_fn("get_weather", {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}}, ["city"])]


def _row(case_id, question, function=FUNCS):
    return json.dumps({"id": case_id, "question": question, "function": function, "time": ""})


def _answer(case_id, truth):
    return json.dumps({"id": case_id, "ground_truth": truth})


def _register(monkeypatch, root: Path, category: str, data: str | None, answers: str | None) -> None:
    """Write one category's files under ``root`` and register them with their own sizes."""
    for content, answer in ((data, False), (answers, True)):
        name = corpora.acebench_corpus(category, answer=answer)
        c = corpora.corpus(name)
        if content is not None:
            path = root / c.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            c = dataclasses.replace(c, size=len(content.encode()))
        monkeypatch.setitem(corpora.CORPORA, name, c)


@pytest.fixture
def made_data(tmp_path, monkeypatch) -> Path:
    """A data directory of hand-made ACEBench-shaped files: good cases, a line that is not JSON,
    answers that do not parse, and a category whose answer file is missing."""
    root = tmp_path / "data"
    monkeypatch.setenv(corpora.DATA_DIR_ENV, str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    questions = [
        _row("weather-q0", "user: What's the weather in Lisbon, in F?\n"),
        "{this is not json",
        _row("weather-q2", "user: Weather in Paris please.\n"),
        _row("weather-q3", "user: Weather in Rome please.\n"),
        _row("weather-q4", "user: Weather in Oslo please.\n"),
    ]
    answers = [
        _answer("weather-q0", {"get_weather": {"city": "Lisbon", "unit": "F"}}),
        _answer("weather-q2", {"get_outlook": {"city": "Paris"}}),  # no such function
        _answer("weather-q3", {"get_weather": {"city": "Rome", "unit": "K"}}),  # not in its enum
    ]  # weather-q4 has no answer
    _register(monkeypatch, root, MADE, "\n".join(questions) + "\n", "\n".join(answers) + "\n")
    _register(monkeypatch, root, _acebench.IRRELEVANT, _row("song-q0", "user: Sing me a song.\n"), None)
    return root


def test_bad_input_is_one_line_each_and_the_build_goes_on(made_data):
    lines: list[str] = []
    out = _acebench.build(
        Path("unused"),
        seed=0,
        options={"categories": [MADE, _acebench.IRRELEVANT]},
        line=lines.append,
    )
    assert [t.spec.id for t in out.tasks] == ["acebench-weather-q0"]
    reasons = dict(out.skipped)
    missing = corpora.corpus(corpora.acebench_corpus(_acebench.IRRELEVANT, answer=True)).file
    assert f"missing {missing}" in reasons[_acebench.IRRELEVANT]
    assert "not JSON" in reasons[f"{MADE}:2"]
    assert "names no function" in reasons["weather-q2"]
    assert "contradicts its own schema" in reasons["weather-q3"]
    assert "no answer" in reasons["weather-q4"]
    assert all("\n" not in line for line in lines) and len(lines) == 5
    listed = {k.removeprefix("skipped/") for k in out.inputs if k.startswith("skipped/")}
    assert listed == {_acebench.IRRELEVANT, f"{MADE}:2", *(f"weather-q{i}" for i in (2, 3, 4))}


def test_the_manifest_lists_the_data_files_and_the_bad_input(made_data, tmp_path):
    report = build_source("acebench", tmp_path / "tasks", options={"categories": [MADE, _acebench.IRRELEVANT]})
    manifest = json.loads((tmp_path / "tasks" / "manifest.json").read_text())
    versions = manifest["source_versions"]
    assert versions["acebench"].startswith(corpora.ACEBENCH_COMMIT)
    assert versions[corpora.acebench_corpus(MADE)].startswith("sha256:")
    assert "registered" in versions[corpora.acebench_corpus(MADE)]  # not the registered file
    assert "skipped/weather-q3" in versions and f"skipped/{_acebench.IRRELEVANT}" in versions
    assert report.manifest.tasks == 1 and (tmp_path / "tasks" / "acebench-weather-q0" / "task.toml").exists()


def test_no_acebench_data_anywhere_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(corpora.DATA_DIR_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def offline(c, directory, **kwargs):
        raise corpora.CorpusError(f"corpus {c.name} is missing and cannot be fetched (offline)")

    monkeypatch.setattr(corpora, "fetch", offline)
    with pytest.raises(UsageError, match="no ACEBench data") as err:
        _acebench.build(Path("unused"), seed=0, options={"categories": [INCOMPLETE]})
    assert "\n" not in str(err.value)


def test_the_answers_are_hidden_from_verifiers(data_dir):
    from vouch.sources import answer_data_paths

    answers = corpora.resolve(corpora.acebench_corpus(_acebench.NORMAL[0], answer=True)).parent
    assert str(answers.resolve()) in answer_data_paths()


@pytest.mark.slow
def test_vouch_data_build_acebench_checks_every_case_through_the_engine(data_dir, tmp_path, capsys):
    from _cli import run_vouch

    out = tmp_path / "tasks"
    args = ["data", "build", "acebench", "--out", str(out), "--limit", "2", "--progress", "none"]
    result = run_vouch(capsys, *args, "--category", NORMAL[0], "--category", _acebench.IRRELEVANT)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"] == "acebench" and manifest["tasks"] == 2 and manifest["flagged"] == []
    built = sorted(t.name for t in out.iterdir() if t.is_dir())
    assert [name.split("_")[0] for name in built] == ["acebench-normal", "acebench-special"]
    wrong = run_vouch(capsys, "data", "build", "bfcl", "--out", str(tmp_path / "b"), "--category", NORMAL[0])
    assert wrong.exit_code == 2 and "only acebench has categories" in wrong.output


def test_the_refusal_is_the_most_common_answer_text(tmp_path):
    answers = tmp_path / "answers.json"
    rows = [_answer(f"r{i}", text) for i, text in enumerate([REFUSAL, "Other  text.", f" {REFUSAL}", {"a": 1}])]
    answers.write_text("\n".join([*rows, "{not json"]) + "\n")
    assert _acebench.read_refusal((tmp_path / "data.json", answers)) == REFUSAL
    answers.write_text(_answer("r0", {"a": 1}) + "\n")
    assert _acebench.read_refusal((tmp_path / "data.json", answers)) is None
