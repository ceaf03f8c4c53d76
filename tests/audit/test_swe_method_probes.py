"""Method-level probes of the repository form's offline differential.

The pure parts (targets, member kinds, recipes rendered and mutated, witness text) on their own;
the recorder and ``call_functions`` through the engine on a small world; and the whole per-trial
audit on a repository the test builds, whose fixes are methods: a receiver rebuilt from its
constructor call, one rebuilt from its state, a result that differs, a receiver left otherwise.
"""

from __future__ import annotations

import ast
import random
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _gitrepo import commit_tree, diff_of
from _scratch import scratch_root
from vouch.audit import AuditResults, TrialResult, Verdict
from vouch.audit.repository._audit import SWE_PRELOAD, audit_swe
from vouch.audit.repository._model import SweAuditConfig
from vouch.audit.repository._replay import replay_witness
from vouch.audit.repository._witness import (
    Candidate,
    Probe,
    arg_shape,
    function_targets,
    is_recipe,
    member_kinds,
    mutate_call,
    receiver_class,
    render,
    witness_source,
)
from vouch.exec import Call, Limits, LocalExecutor, RunSpec
from vouch.swebench import SweInstance, SweTrial
from vouch.worlds import WorldCache

# --- the repository -----------------------------------------------------------------------

BASE = '''\
class Account:
    """A ledger account."""

    def __init__(self, owner, currency="EUR"):
        self.owner = owner
        self.currency = currency
        self.entries = []
        self._cache = None

    def deposit(self, amount, memo=""):
        self.entries.append((amount, memo))
        return self.balance()

    def balance(self):
        return sum(amount for amount, _ in self.entries)

    def label(self, width):
        return f"{self.owner}:{self.currency}"[:width]

    def rename(self, owner):
        self.owner = owner

    def history(self):
        yield from self.entries

    @property
    def summary(self):
        return f"{self.owner} {self.balance()}"

    @summary.setter
    def summary(self, value):
        raise AttributeError("read-only")

    @staticmethod
    def split(text):
        return text.split(":")

    @classmethod
    def parse(cls, text):
        owner, currency = text.split(":")
        return cls(owner, currency)


class Journal:
    def __init__(self, account):
        self.account = account

    def post(self, amount):
        return self.account.deposit(amount, memo="journal")


def fmt(amount):
    return f"{amount:.2f}"


def kind(value):
    return type(value).__name__
'''

LABEL_GOLD = BASE.replace(
    '        return f"{self.owner}:{self.currency}"[:width]',
    '        return f"{self.owner}:{self.currency}"[:width].ljust(width, ".")',
)
LABEL_WRONG = BASE.replace(  # pads at most five dots: enough for T0's width 12
    '        return f"{self.owner}:{self.currency}"[:width]',
    '        return (f"{self.owner}:{self.currency}" + ".....")[:width]',
)
LABEL_SOUND = BASE.replace(
    '        return f"{self.owner}:{self.currency}"[:width]',
    '        text = f"{self.owner}:{self.currency}"\n        return text[:width] + "." * (width - len(text))',
)
RENAME_GOLD = BASE.replace(
    "        self.owner = owner\n\n    def history", "        self.owner = owner.strip()\n\n    def history"
)
RENAME_WRONG = BASE.replace(  # strips the right end only: T0's trailing spaces go
    "        self.owner = owner\n\n    def history", "        self.owner = owner.rstrip()\n\n    def history"
)

# G adds Account.reset and a module whose Desk.clear calls it; the other patch clears the entries
# itself, in its own Desk, and has no reset.
CLEAR_GOLD = {
    "ledger/book.py": BASE.replace(
        "    @property", "    def reset(self):\n        self.entries = []\n\n    @property", 1
    ),
    "ledger/desk.py": (
        "class Desk:\n    def __init__(self, account):\n        self.account = account\n\n"
        "    def clear(self):\n        self.account.reset()\n"
    ),
}
CLEAR_OTHER = {
    "ledger/desk.py": (
        "class Desk:\n    def __init__(self, account):\n        self.account = account\n\n"
        "    def clear(self):\n        self.account.entries = []\n"
    ),
}

LABEL_TESTS = """\
from ledger.book import Account, Journal


def test_label_pads_to_width():
    assert Account("ann").label(12) == "ann:EUR....."


def test_label_cuts():
    assert Account("ann").label(3) == "ann"


def test_label_after_deposits():
    account = Account("bo", "USD")
    Journal(account).post(5)
    account.deposit(2, memo="tip")
    assert account.label(10) == "bo:USD...."
    assert account.summary == "bo 7"
    assert Account.split("a:b") == ["a", "b"]
    assert Account.parse("cy:GBP").label(6) == "cy:GBP"
    assert list(account.history()) == [(5, "journal"), (2, "tip")]
"""

RENAME_TESTS = """\
from ledger.book import Account


def test_rename_strips():
    account = Account("ann")
    account.rename("bob  ")
    assert account.owner == "bob"
"""

CLEAR_TESTS = """\
from ledger.book import Account
from ledger.desk import Desk


def test_clear_empties():
    desk = Desk(Account("ann"))
    desk.account.deposit(5)
    desk.clear()
    assert desk.account.balance() == 0
"""

CLEAR_P = "Add `ledger.desk.Desk(account)`, whose `clear()` empties its account's entries."
LABEL_P = (
    "`Account.label(width)` cuts the `owner:currency` label to `width` characters, but a shorter "
    "label is not padded: it must be padded on the right with dots to exactly `width` characters."
)
RENAME_P = "`Account.rename(owner)` must strip surrounding whitespace from the new owner, e.g. `' bob '`."


def _make_repo(root: Path) -> tuple[Path, str]:
    repo = root / "repos" / "ledger"
    files = {
        "ledger/__init__.py": "",
        "ledger/book.py": BASE,
        "tests/__init__.py": "",
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
    }
    return repo, commit_tree(repo, files, "ledger")


def _instance(
    repo: Path, commit: str, name: str, problem: str, gold: str | dict[str, str], tests: str, ids: list[str]
) -> SweInstance:
    return SweInstance.model_validate(
        {
            "instance_id": f"vouch-tests__ledger-{name}",
            "repo": str(repo),
            "base_commit": commit,
            "problem_statement": problem,
            "patch": diff_of(repo, gold if isinstance(gold, dict) else {"ledger/book.py": gold}),
            "test_patch": diff_of(repo, {f"tests/test_{name}.py": tests}),
            "FAIL_TO_PASS": [f"tests/test_{name}.py::{i}" for i in ids],
            "PASS_TO_PASS": [],
        }
    )


def _trial(repo: Path, instance: SweInstance, n: int, text: str | dict[str, str]) -> SweTrial:
    return SweTrial(
        trial_id=f"{instance.instance_id}#{n}",
        instance_id=instance.instance_id,
        model=f"agent-{n}",
        patch=diff_of(repo, text if isinstance(text, dict) else {"ledger/book.py": text}),
    )


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swe-methods-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as pool:
        yield pool


@pytest.fixture(scope="module")
def audited(scratch: Path, executor: LocalExecutor) -> AuditResults:
    repo, commit = _make_repo(scratch)
    label = _instance(
        repo,
        commit,
        "label",
        LABEL_P,
        LABEL_GOLD,
        LABEL_TESTS,
        ["test_label_pads_to_width", "test_label_cuts", "test_label_after_deposits"],
    )
    rename = _instance(repo, commit, "rename", RENAME_P, RENAME_GOLD, RENAME_TESTS, ["test_rename_strips"])
    clear = _instance(repo, commit, "clear", CLEAR_P, CLEAR_GOLD, CLEAR_TESTS, ["test_clear_empties"])
    trials = [
        _trial(repo, label, 0, LABEL_WRONG),
        _trial(repo, label, 1, LABEL_SOUND),
        _trial(repo, rename, 0, RENAME_WRONG),
        _trial(repo, clear, 0, CLEAR_OTHER),
    ]
    config = SweAuditConfig(mutants=0, k=2, repeats=2, witness_dir=scratch / "witnesses")
    return audit_swe(
        [label, rename, clear], trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config
    )


def _result(results: AuditResults, trial_id: str) -> TrialResult:
    return next(t for t in results.trials if t.trial_id == trial_id)


# --- the whole audit ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_method_fix_that_pads_too_little_is_refuted_by_a_rebuilt_receiver(audited: AuditResults) -> None:
    wrong = _result(audited, "vouch-tests__ledger-label#0")
    assert wrong.verdict is Verdict.REFUTED, (wrong.reason, wrong.evidence.discarded)
    witness = next(w for w in wrong.witnesses if w.validation.valid)
    assert witness.validation.fails_by_assertion and witness.validation.rejudged
    assert all(r.outcome == "pass" for r in witness.validation.reference_runs)
    source = witness.source
    ast.parse(source)
    assert "receiver = " in source and ".label(" in source and "from ledger.book import Account" in source
    # The input is a T0 call varied in one literal: the width, or the receiver's constructor argument.
    assert witness.input.startswith("Account.label(")
    census = [s for s in wrong.evidence.steps if s.startswith("differential:")]
    assert census and "class members" in census[0]
    targets, probeable = _census(census[0])
    assert targets >= 8 and 3 <= probeable <= targets  # label, deposit, balance, summary, split, parse, post, ...


@pytest.mark.slow
def test_a_sound_method_fix_stands_after_its_probes(audited: AuditResults) -> None:
    sound = _result(audited, "vouch-tests__ledger-label#1")
    assert sound.verdict is Verdict.SOUND, (sound.reason, [w.validation.reason for w in sound.evidence.discarded])
    assert sound.evidence.candidates_tried > 20 and not sound.witnesses


@pytest.mark.slow
def test_a_receiver_left_otherwise_is_witnessed_on_its_state(audited: AuditResults) -> None:
    wrong = _result(audited, "vouch-tests__ledger-rename#0")
    assert wrong.verdict is Verdict.REFUTED, (wrong.reason, wrong.evidence.discarded)
    witness = next(w for w in wrong.witnesses if w.validation.valid)
    # rename returns None in both worlds: what differs is the owner it leaves on the receiver.
    assert "assert _canon(receiver, public=True) == " in witness.source
    assert "assert _canon(got" not in witness.source
    assert "leaves its receiver as" in (witness.defect or "")


@pytest.mark.slow
def test_a_member_only_g_has_never_refutes(audited: AuditResults) -> None:
    """G adds ``Account.reset`` and calls it from another module; the trial empties the entries
    itself. The probes of ``reset`` disagree (the trial has no such method), but a witness calling
    it fails in R[s] on a name P never gives, not by an assertion: it is discarded, and the trial
    stands."""
    other = _result(audited, "vouch-tests__ledger-clear#0")
    assert other.verdict is Verdict.SOUND, (other.reason, other.witnesses)
    reasons = [w.validation.reason or "" for w in other.evidence.discarded]
    assert reasons and all(r.startswith("fails in R[s] on a name P never mentions (AttributeError") for r in reasons)
    assert all(w.input.startswith("Account.reset(") for w in other.evidence.discarded)


@pytest.mark.slow
def test_a_method_witness_replays(audited: AuditResults, scratch: Path, executor: LocalExecutor) -> None:
    wrong = _result(audited, "vouch-tests__ledger-label#0")
    witness = next(w for w in wrong.witnesses if w.validation.valid)
    written = Path(witness.replay.split()[-1])
    assert written.is_file()
    outcome = replay_witness(written, executor=executor, cache=WorldCache(scratch / "worlds"), repeats=2)
    assert outcome.holds, outcome


def _census(line: str) -> tuple[int, int]:
    words = line.replace(";", " ").replace("(", " ").split()
    return int(words[1]), int(words[words.index("probeable") - 1])


# --- the recorder and the calls, through the engine -------------------------------------------


@pytest.fixture
def world(visible_tmp: Path) -> Path:
    (visible_tmp / "ledger").mkdir()
    (visible_tmp / "ledger" / "__init__.py").write_text("")
    (visible_tmp / "ledger" / "book.py").write_text(LABEL_GOLD)
    (visible_tmp / "test_book.py").write_text(LABEL_TESTS)
    return visible_tmp


def _run(executor: LocalExecutor, function: str, first: Any, **kwargs: Any) -> Any:
    result = executor.run(
        RunSpec(Call(f"vouch.worlds._inrun:{function}", args=(first,), kwargs=kwargs), limits=Limits(timeout_s=120))
    )
    assert result.ok, (result.reason, result.stderr_tail)
    return result.value


@pytest.mark.slow
def test_receivers_are_recorded_as_recipes_and_rebuilt(executor: LocalExecutor, world: Path) -> None:
    targets = function_targets(BASE, "ledger/book.py")
    value = _run(executor, "run_tests", ["test_book.py"], root=str(world), record=targets)
    assert set(value["outcomes"].values()) == {"passed"}
    calls = value["calls"]
    label = calls["ledger/book.py::Account.label"]
    # A receiver unchanged since its constructor call is that call; one changed since, its state.
    assert {"args": ["_ref('ledger.book', 'Account')('ann', 'EUR')", "12"], "kwargs": {}} in label
    by_state = [c for c in label if c["args"][0].startswith("_rebuild(_ref('ledger.book', 'Account'), ")]
    assert by_state and "'entries': [(5, 'journal'), (2, 'tip')]" in by_state[0]["args"][0]
    assert calls["ledger/book.py::Account.split"] == [{"args": ["'a:b'"], "kwargs": {}}]
    assert calls["ledger/book.py::Account.parse"] == [{"args": ["'cy:GBP'"], "kwargs": {}}]  # cls is not an argument
    assert len(calls["ledger/book.py::Account.summary"]) == 1  # the getter; the setter is not a target
    # Journal.post's receiver holds an Account: a recipe inside a recipe.
    [post] = calls["ledger/book.py::Journal.post"]
    assert post["args"][0].startswith("_ref('ledger.book', 'Journal')(") or "Journal'), {'account': " in post["args"][0]
    assert value["calls_skipped"]["ledger/book.py::Account.label"] == 0
    # A generator's result is compared by nothing: its calls are not kept.
    assert calls["ledger/book.py::Account.history"] == [] and value["calls_skipped"]["ledger/book.py::Account.history"]
    # Only calls into the module from outside: Journal.post's deposit and summary's balance are
    # the module talking to itself.
    [deposit] = calls["ledger/book.py::Account.deposit"]
    assert deposit["args"][1:] == ["2", "'tip'"] and deposit["kwargs"] == {}  # by the signature's order
    assert calls["ledger/book.py::Account.balance"] == []

    probes = [
        {"module": "ledger.book", "qualname": target.partition("::")[2], **record, "public": True}
        for target, records in sorted(calls.items())
        for record in records
    ]
    outcomes = _run(executor, "call_functions", probes, root=str(world))
    assert all(o["ok"] for o in outcomes), [(p["qualname"], o) for p, o in zip(probes, outcomes, strict=True)]
    shown = {(p["qualname"], p["args"][-1]): o for p, o in zip(probes, outcomes, strict=True)}
    assert shown[("Account.label", "12")]["value"] == "'ann:EUR.....'"
    assert (
        shown[("Account.split", "'a:b'")]["value"] == "['a', 'b']" and "state" not in shown[("Account.split", "'a:b'")]
    )
    deposit = next(o for p, o in zip(probes, outcomes, strict=True) if p["qualname"] == "Account.deposit")
    assert "'entries': [" in deposit["state"] and "_cache" not in deposit["state"]  # public attributes only


@pytest.mark.slow
def test_calls_on_plain_values_keep_their_places(executor: LocalExecutor, world: Path) -> None:
    (world / "test_kinds.py").write_text(
        "from ledger.book import Account, kind\n\n"
        "def test_kinds():\n"
        "    assert [kind(Account(str(n))) for n in range(30)] == ['Account'] * 30\n"
        "    assert kind(1) == 'int' and kind('x') == 'str'\n"
    )
    value = _run(executor, "run_tests", ["test_kinds.py"], root=str(world), record=["ledger/book.py::kind"])
    calls = value["calls"]["ledger/book.py::kind"]
    # 30 calls on rebuilt accounts fill their 25 places; the two on literals still have theirs.
    assert len(calls) == 27 and calls[-2:] == [{"args": ["1"], "kwargs": {}}, {"args": ["'x'"], "kwargs": {}}]


@pytest.mark.slow
def test_unrebuildable_receivers_are_skipped_and_counted(executor: LocalExecutor, world: Path) -> None:
    (world / "test_lock.py").write_text(
        "import io\nimport threading\nfrom ledger.book import Account\n\n"
        "def test_fed():\n    account = Account('ann')\n    account.lock = threading.RLock()\n"
        "    assert account.label(3) == 'ann'\n"
        "    account.feed = (n for n in range(3))\n"
        "    assert account.label(3) == 'ann'\n"
        "    account.feed = io.StringIO()\n"
        "    account.feed.write('x')\n"
        "    assert account.label(3) == 'ann'\n"
    )
    value = _run(executor, "run_tests", ["test_lock.py"], root=str(world), record=["ledger/book.py::Account.label"])
    # A lock is made anew (it carries no value); a generator cannot be rebuilt, nor a StringIO
    # written to (its position is not in its text): those calls are counted.
    [call] = value["calls"]["ledger/book.py::Account.label"]
    assert "'lock': _ref('threading', 'RLock')()" in call["args"][0]
    assert value["calls_skipped"]["ledger/book.py::Account.label"] == 2


# --- the pure parts -------------------------------------------------------------------------


def test_targets_are_functions_and_public_members() -> None:
    targets = function_targets(BASE, "ledger/book.py")
    assert targets == [
        "ledger/book.py::fmt",
        "ledger/book.py::kind",
        "ledger/book.py::Account.deposit",
        "ledger/book.py::Account.balance",
        "ledger/book.py::Account.label",
        "ledger/book.py::Account.rename",
        "ledger/book.py::Account.history",
        "ledger/book.py::Account.summary",
        "ledger/book.py::Account.split",
        "ledger/book.py::Account.parse",
        "ledger/book.py::Journal.post",
    ]
    label_line = BASE.splitlines().index('        return f"{self.owner}:{self.currency}"[:width]') + 1
    assert function_targets(BASE, "ledger/book.py", lines=[label_line]) == [
        "ledger/book.py::fmt",
        "ledger/book.py::kind",
        "ledger/book.py::Account.label",
    ]
    nested = "class A:\n    class B:\n        def m(self):\n            pass\n    def _p(self):\n        pass\n"
    assert function_targets(nested, "m.py") == ["m.py::A.B.m"]
    assert member_kinds(BASE) == {
        "Account.deposit": "method",
        "Account.balance": "method",
        "Account.label": "method",
        "Account.rename": "method",
        "Account.history": "method",
        "Account.summary": "property",
        "Account.split": "static",
        "Account.parse": "class",
        "Journal.post": "method",
    }


RECEIVER = "_ref('ledger.book', 'Account')('ann', currency='EUR')"
STATE = "_rebuild(_ref('ledger.book', 'Account'), {'owner': 'bo', 'entries': [(5, 'x')], 'when': _ref('a.b', 'C')(1)})"


@pytest.mark.parametrize(
    ("text", "recipe", "code"),
    [
        ("'ann'", False, "'ann'"),
        ("[1, (2, None)]", False, "[1, (2, None)]"),
        (RECEIVER, True, "ledger.book.Account('ann', currency='EUR')"),
        (STATE, True, "_rebuild(ledger.book.Account, {'owner': 'bo', 'entries': [(5, 'x')], 'when': a.b.C(1)})"),
        ("[_ref('m', 'f'), 2]", True, "[m.f, 2]"),
        ("__import__('os').system('true')", False, None),
        ("_ref('os', 'system')('true')()", False, None),
        ("_ref('os; import sys', 'x')", False, None),
        ("_rebuild(_ref('m', 'C'), {**x})", False, None),
        ("lambda: 1", False, None),
    ],
)
def test_recipes_are_checked_before_they_are_rendered(text: str, recipe: bool, code: str | None) -> None:
    assert is_recipe(text) is recipe
    rendered = render(text)
    assert (rendered.code if rendered else None) == code


def test_rendering_names_its_imports_and_rebuild() -> None:
    rendered = render(STATE)
    assert rendered is not None and rendered.imports == ("ledger.book", "a.b") and rendered.rebuilds
    assert receiver_class(RECEIVER) == ("ledger.book", "Account")
    assert receiver_class(STATE) == ("ledger.book", "Account")
    assert arg_shape(RECEIVER) == "Account(str, currency:str)" and arg_shape(STATE) == "Account(state)"
    assert arg_shape("3") == "int"


def test_a_receiver_varies_by_its_constructor_arguments_never_its_state() -> None:
    probe = Probe("ledger/book.py", "ledger.book", "Account.label", (RECEIVER, "12"))
    mutants = mutate_call(probe, ["bob"], random.Random(0), limit=10_000)
    receivers = {m.args[0] for m in mutants if m.args[1] == "12"}
    assert all(r.startswith("_ref('ledger.book', 'Account')(") for r in receivers)  # recipes, not rendered code
    assert "_ref('ledger.book', 'Account')('bob', currency='EUR')" in receivers
    assert "_ref('ledger.book', 'Account')('ann', currency='EUR.')" in receivers
    assert {m.args[1] for m in mutants if m.args[0] == RECEIVER} >= {"13", "11", "24", "0", "-12"}
    assert all(is_recipe(m.args[0]) for m in mutants)
    assert any(m.origin == "mutated argument 0: Account argument 0: 'ann' -> 'bob'" for m in mutants)
    again = mutate_call(probe, ["bob"], random.Random(0), limit=10)
    assert again == mutate_call(probe, ["bob"], random.Random(0), limit=10) and len(again) == 10
    state = Probe("ledger/book.py", "ledger.book", "Account.label", (STATE, "12"))
    assert {m.args[0] for m in mutate_call(state, [], random.Random(0), limit=10_000)} <= {
        STATE,
        "_rebuild(_ref('ledger.book', 'Account'), {'owner': 'bo', 'entries': [(5, 'x')], 'when': _ref('a.b', 'C')(2)})",
        "_rebuild(_ref('ledger.book', 'Account'), {'owner': 'bo', 'entries': [(5, 'x')], 'when': _ref('a.b', 'C')(0)})",
    }


@pytest.mark.parametrize(
    ("qualname", "kind", "args", "call"),
    [
        ("Account.label", "method", (RECEIVER, "24"), "got = receiver.label(24)"),
        ("Account.summary", "property", (STATE,), "got = receiver.summary"),
        ("Account.split", "static", ("'a:b'",), "got = Account.split('a:b')"),
        ("Account.parse", "class", ("'cy:GBP'",), "got = Account.parse('cy:GBP')"),
        ("Account.label", "method", ("_ref('ledger.book', 'Savings')('ann')", "3"), "got = Account.label(receiver, 3)"),
    ],
)
def test_witness_text_calls_the_member_as_t0_did(qualname: str, kind: str, args: tuple[str, ...], call: str) -> None:
    probe = Probe("ledger/book.py", "ledger.book", qualname, args, origin="mutated argument 1: 12 -> 24")
    text = witness_source(
        Candidate(probe, "'ann:EUR....'", "'ann:EUR....'", "'ann:EUR'"), instance_id="i", clause="c", index=3, kind=kind
    )
    tree = ast.parse(text)
    assert call in text and "from ledger.book import Account" in text
    assert "assert _canon(got, public=True) == \"'ann:EUR....'\"" in text
    assert ("def _rebuild(" in text) == ("_rebuild(" in args[0])
    if kind in ("method", "property"):
        assert "import ledger.book" in text
    [test] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert test.name == f"test_{qualname.rsplit('.', 1)[1]}_3"
    assert "witness" not in text.lower() and "vouch" not in text.lower()


def test_witness_text_runs_as_a_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text a witness carries is a test that passes on G's behaviour and fails by an
    assertion otherwise: run here on the two sides of a class written for the test."""
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = Probe(
        "ledger/book.py", "ledger.book", "Account.rename", ("_ref('ledger.book', 'Account')('ann')", "' bob '")
    )
    cand = Candidate(
        probe,
        "None",
        "None",
        "None",
        expected_state="Account({'currency': 'EUR', 'entries': [], 'owner': 'bob'})",
        actual_state="Account({'currency': 'EUR', 'entries': [], 'owner': ' bob'})",
        same_result=True,
    )
    text = witness_source(cand, instance_id="i", clause="c", index=0, kind="method")
    for source, passes in ((RENAME_GOLD, True), (RENAME_WRONG, False)):
        (tmp_path / "ledger" / "book.py").write_text(source)
        namespace: dict[str, Any] = {}
        for name in [m for m in sys.modules if m.startswith("ledger")]:
            monkeypatch.delitem(sys.modules, name)
        exec(compile(text, "witness.py", "exec"), namespace)
        if passes:
            namespace["test_rename_0"]()
        else:
            with pytest.raises(AssertionError, match="the receiver afterwards is"):
                namespace["test_rename_0"]()


def test_recipes_rebuild_what_their_text_shows() -> None:
    """The recorder's recipes (in this process): each one builds a value with the same canonical
    text, and values whose state their text cannot show have none."""
    import collections
    import http.cookiejar
    import io
    import threading

    from vouch.worlds._inrun import _Recorder, build, canon

    recorder = _Recorder([], "/")
    written = io.StringIO()
    written.write("x")
    policy = http.cookiejar.DefaultCookiePolicy(blocked_domains=["a.example"])
    cases: list[tuple[object, str | None]] = [
        (io.StringIO("ab"), "_ref('_io', 'StringIO')('ab')"),
        (written, None),  # its position is not in its text
        (ValueError("x"), None),  # an exception keeps its args outside __dict__
        (collections.OrderedDict(a=1), "_ref('collections', 'OrderedDict')({'a': 1})"),
        ([1, collections.OrderedDict()], "[1, _ref('collections', 'OrderedDict')({})]"),
        ((n for n in ()), None),
    ]
    for value, expected in cases:
        assert recorder.recipe(value) == expected, value
    lock = recorder.recipe(threading.Lock())  # made anew: the name of its factory varies by version
    assert lock is not None and lock.endswith("()") and type(build(lock)) is type(threading.Lock())
    text = recorder.recipe(policy)
    assert text is not None and text.startswith("_rebuild(_ref('http.cookiejar', 'DefaultCookiePolicy'), {")
    assert is_recipe(text) and canon(build(text)) == canon(policy)
    assert build(text).is_blocked("a.example") and not build(text).is_blocked("b.example")
