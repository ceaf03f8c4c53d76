"""The ``agent`` witness source against a scripted model on a loopback OpenAI-compatible server.

The real openai SDK talks to the server (tests/agent/loopback.py); the trials are real
CodeGen-16B completions of real HumanEval problems:

- HumanEval/0, the bundled demo's third completion: ``abs(a - b) <= threshold`` where P asks for
  "closer than", wrong on two numbers exactly ``threshold`` apart, and T0 never has such a pair.
- HumanEval/156, sample 81 of its row in the CodeT file: correct, and it ships a module-level
  helper ``binarySearch`` that P never names.

The scripted auditor, on HumanEval/0: sends malformed tool-call JSON, runs a witness, submits a
witness G fails, then one the re-judge rejects, then a correct one. On HumanEval/156 it submits
a witness that fails in R[s] only through the helper, then gives up.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _shared_data import SHARED_DATA

sys.path.append(str(Path(__file__).resolve().parents[1] / "agent"))  # loopback.py, shared with tests/agent
from loopback import KEY, AnthropicServer, OpenAIServer, Turn, audit_call, call, first_user, turn_index

from vouch.agent import HarnessConfig, RetryPolicy, get_provider, load_prices, read_trace
from vouch.audit import PRELOAD, AuditConfig, Verdict, WitnessAgent, audit_humaneval
from vouch.audit._agent_calls import json_object
from vouch.audit.function._agent_tools import foreign_names, p_names
from vouch.corpora import demo_samples_file
from vouch.exec import LocalExecutor
from vouch.sources.trials import load_problems
from vouch.store import AuditStore

ROOT = Path(__file__).resolve().parents[2]
DEMO = demo_samples_file()  # the demo's slice of the registered CodeT corpus, written to the user cache
CODET = SHARED_DATA / "humaneval_codegen16b_samples.jsonl"
VOUCH = [sys.executable, "-m", "vouch"]

GOOD = """from solution import has_close_elements


def test_two_numbers_exactly_threshold_apart_are_not_closer():
    # P: "closer to each other than given threshold": a distance equal to it is not closer.
    assert has_close_elements([2.0, 3.0], 1.0) is False
"""
G_FAILS = """from solution import has_close_elements


def test_wrong_expectation():
    assert has_close_elements([1.0, 2.0, 3.0], 0.5) is True
"""
REJECTED = """from solution import has_close_elements


def test_float_boundary():
    assert has_close_elements([1.0, 1.5], 0.5) is False
"""
HELPER = """from solution import int_to_mini_roman


def test_no_stray_helpers():
    try:
        from solution import binarySearch
    except ImportError:
        return  # the reference has no such helper
    assert binarySearch([1, 2, 3], 2) == -1, "the trial ships a helper P never asked for"
"""
# HumanEval/156, sample 81 of row 64 of the CodeT file (CodeGen-16B), verbatim, carriage returns included.
HELPER_COMPLETION: str = json.loads(
    '"    if not isinstance(number, int):\\n        return \\"Please input a positive integer.\\"\\n    if nu'
    'mber > 1000 or number < 1:\\n        return \\"Please input a number between 1 and 1000.\\"\\n    roman '
    "= [\\n        ('M', 1000),\\n        ('CM', 900),\\n        ('D', 500),\\n        ('CD', 400),\\n        "
    "('C', 100),\\n        ('XC', 90),\\n        ('L', 50),\\n        ('XL', 40),\\n        ('X', 10),\\n     "
    "   ('IX', 9),\\n        ('V', 5),\\n        ('IV', 4),\\n        ('I', 1),\\n    ]\\n    result = ''\\n   "
    " for symbol, value in roman:\\n        while number >= value:\\n            result += symbol\\n        "
    "    number -= value\\n    return result.lower()\\ndef binarySearch(arr, x):\\r\\n    l = 0\\r\\n    h = le"
    "n(arr) - 1\\r\\n    mid = 0\\r\\n    while l <= h:\\r\\n        mid = (l + h) // 2\\r\\n        if arr[mid] "
    "< x:\\r\\n            l = mid + 1\\r\\n        elif arr[mid] > x:\\r\\n            h = mid - 1\\r\\n        "
    'else:\\r\\n            return mid\\r\\n    return -1\\r\\n\\r\\n\\r"'
)

CHECKLIST_0 = {
    "clauses": [
        {"text": "True when two numbers are strictly closer than threshold", "kind": "explicit",
         "covered_by": ["L10", "L12", "L999"]},
        {"text": "False when no two numbers are closer than threshold", "kind": "explicit", "covered_by": ["L11"]},
        {"text": "returns a bool", "kind": "implicit", "covered_by": []},
        {"text": "", "kind": "sometimes"},
    ]
}  # fmt: skip


def _samples(path: Path) -> Path:
    """HumanEval/0's wrong demo completion and HumanEval/156's sample 81 (row 64 of the CodeT file)."""
    demo = [json.loads(line) for line in DEMO.read_text().splitlines()]
    wrong = [r for r in demo if r["task_id"] == "HumanEval/0"][2]["completion"]
    assert "<= threshold" in wrong
    if CODET.is_file():  # the copy below is the shared file's sample, verbatim
        assert json.loads(CODET.read_text().splitlines()[64])["samples"][81] == HELPER_COMPLETION
    rows = [
        {"task_id": "HumanEval/0", "completion": wrong},
        {"task_id": "HumanEval/156", "completion": HELPER_COMPLETION},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _trial(body: dict[str, Any]) -> str:
    found = re.match(r"Trial (\S+) of task", first_user(body))
    return found.group(1) if found else "?"


def auditor(body: dict[str, Any]) -> Turn:
    """The scripted auditing model (see the module docstring)."""
    kind, n = audit_call(body), turn_index(body)
    if kind == "checklist":
        if "has_close_elements" in first_user(body):
            return Turn(text="```json\n" + json.dumps(CHECKLIST_0) + "\n```")
        return Turn(text="Sure! 1. Convert the number. 2. Lowercase it.")  # never JSON: offline checklist
    if kind == "rejudge":
        if "[1.0, 1.5], 0.5" in first_user(body):
            return Turn(text='{"answer": "no", "reason": "equality of floats at the threshold is not what P states"}')
        return Turn(text='{"answer": "yes", "reason": "P says closer than: equal distance is not closer"}')
    if _trial(body) == "HumanEval/0#0":
        script = [
            Turn(calls=[("run_witness", '{"source": "def test_x(:')]),  # malformed JSON
            call("run_witness", {"source": GOOD}),
            call("submit_witness", {"source": G_FAILS, "clause_id": "M1"}),
            call("submit_witness", {"source": REJECTED, "clause_id": "M1"}),
            call("submit_witness", {"source": GOOD, "clause_id": "M1"}),
        ]
    else:
        script = [call("submit_witness", {"source": HELPER, "clause_id": "S1"})]
    return script[n] if n < len(script) else call("give_up", {"reason": "the trial follows P"})


def _env(server: OpenAIServer | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    if server is not None:
        env |= {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY}
    return env | extra


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("agent-cli")
    config = tmp / "auditor.toml"
    config.write_text('base = "effort-low"\n[budgets]\nexecutions = 5\nturns = 8\nwall_s = 600\n')
    with OpenAIServer(auditor) as server:
        proc = subprocess.run(
            [
                *VOUCH, "audit", "humaneval", "--samples", str(_samples(tmp / "samples.jsonl")),
                "--witness-source", "agent", "--agent-model", "openai/scripted", "--agent-config", str(config),
                "--json", str(tmp / "out.json"), "--store", str(tmp / "store.sqlite"),
                "--witness-dir", str(tmp / "witnesses"), "--workers", "2", "--agent-concurrency", "2",
            ],
            capture_output=True, text=True, timeout=900, env=_env(server), check=False,
        )  # fmt: skip
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp / "out.json").read_text())
    yield {"results": results, "stdout": proc.stdout, "tmp": tmp, "requests": requests}


def _trial_of(results: dict[str, Any], trial_id: str) -> dict[str, Any]:
    return next(t for t in results["trials"] if t["trial_id"] == trial_id)


@pytest.mark.slow
def test_a_correct_agent_witness_refutes_and_replays(cli_run: dict[str, Any]) -> None:
    trial = _trial_of(cli_run["results"], "HumanEval/0#0")
    assert trial["benchmark_pass"] and trial["verdict"] == "refuted", trial["reason"]
    witness = trial["witnesses"][0]
    assert witness["origin"] == "agent" and witness["clause_id"] == "M1" and witness["iteration"] == 3
    assert "strictly closer" in witness["clause"]
    validation = witness["validation"]
    assert validation["valid"] and validation["rejudged"]
    assert validation["rejudge_note"].startswith("model: yes")
    assert [r["outcome"] for r in validation["reference_runs"]] == ["pass"] * 3
    assert [r["exception"] for r in validation["model_runs"]] == ["AssertionError"] * 3
    assert witness["source"].endswith(GOOD) and "vouch-witness" in witness["source"]
    assert witness["defect"] == (
        "test_two_numbers_exactly_threshold_apart_are_not_closer of M1 fails on the trial "
        "(assert True is False) and passes on G"
    )
    replay = subprocess.run(
        [*VOUCH, "audit", "replay", witness["file"]], capture_output=True, text=True, timeout=300, check=False
    )
    assert replay.returncode == 0, replay.stderr
    assert "witness holds" in replay.stdout
    assert "refuted HumanEval/0#0" in cli_run["stdout"]


@pytest.mark.slow
def test_b_a_witness_g_fails_is_discarded_with_the_reason(cli_run: dict[str, Any]) -> None:
    discarded = _trial_of(cli_run["results"], "HumanEval/0#0")["evidence"]["discarded"]
    first = discarded[0]
    assert first["origin"] == "agent" and first["iteration"] == 1
    assert first["validation"]["valid"] is False
    assert first["validation"]["reason"] == "flaky or failing on G: passed 0 of 3 runs in R[G]"
    assert {r["outcome"] for r in first["validation"]["reference_runs"]} == {"fail"}


@pytest.mark.slow
def test_c_a_witness_that_fails_only_through_a_helper_p_never_names_is_discarded(cli_run: dict[str, Any]) -> None:
    trial = _trial_of(cli_run["results"], "HumanEval/156#0")
    assert trial["verdict"] == "sound" and trial["witnesses"] == []
    assert trial["reason"] == "no agent witness: the agent gave up: the trial follows P"
    (witness,) = trial["evidence"]["discarded"]
    validation = witness["validation"]
    # The runs alone would have made it a witness: it passes on G and fails on s by an assertion.
    assert [r["outcome"] for r in validation["reference_runs"]] == ["pass"] * 3
    assert [r["exception"] for r in validation["model_runs"]] == ["AssertionError"] * 3
    assert not validation["valid"] and not validation["fails_by_assertion"]
    assert validation["reason"] == "it reaches names P never defines: binarySearch (imported from solution)"
    # the model's checklist reply was never JSON: the offline checklist stands, and the task says so
    task = next(t for t in cli_run["results"]["tasks"] if t["task_id"] == "HumanEval/156")
    assert "unusable" in task["note"] and "offline checklist is used" in task["note"]
    assert {c["origin"] for c in task["checklist"]} <= {"sentence", "example", "signature"}


@pytest.mark.slow
def test_d_a_witness_the_rejudge_rejects_is_discarded_with_the_note(cli_run: dict[str, Any]) -> None:
    second = _trial_of(cli_run["results"], "HumanEval/0#0")["evidence"]["discarded"][1]
    validation = second["validation"]
    assert [r["outcome"] for r in validation["reference_runs"]] == ["pass"] * 3
    assert [r["exception"] for r in validation["model_runs"]] == ["AssertionError"] * 3
    assert not validation["valid"] and not validation["rejudged"]
    note = "model: no: equality of floats at the threshold is not what P states"
    assert validation["rejudge_note"] == note
    assert validation["reason"] == f"re-judging against P rejected it: {note}"
    rejudges = [r for r in cli_run["requests"] if audit_call(r) == "rejudge"]
    assert len(rejudges) == 2  # the G-failing witness never reaches the reviewer
    assert all("tools" not in r for r in rejudges)
    assert all("solution.py" not in first_user(r) and "def has_close_elements" in first_user(r) for r in rejudges)


@pytest.mark.slow
def test_the_agent_sees_p_s_g_t0_the_checklist_and_the_evidence(cli_run: dict[str, Any]) -> None:
    sessions = [r for r in cli_run["requests"] if audit_call(r) == "witness" and _trial(r) == "HumanEval/0#0"]
    first = first_user(sessions[0])
    problem = load_problems()["HumanEval/0"]
    assert problem.prompt.strip() in first and problem.canonical_solution.strip() in first  # P and G
    assert "abs(numbers[i] - numbers[j]) <= threshold" in first  # s
    assert "def check(candidate):" in first and "- L10: assert candidate(" in first  # T0, with ids
    assert (
        "- M1 [explicit] True when two numbers are strictly closer than threshold (T0 covers it with: L10, L12)"
        in first
    )
    # the offline differential run still runs, as evidence: the input the offline source refutes with
    assert re.search(r"offline difference: has_close_elements\(\*\[\[.+\]\) gives True on s, False on G", first)
    assert "branch coverage of s under T0" in first
    assert {t["function"]["name"] for t in sessions[0]["tools"]} == {"run_witness", "submit_witness", "give_up"}


@pytest.mark.slow
def test_e_malformed_tool_call_json_is_answered_and_counted(cli_run: dict[str, Any]) -> None:
    results = cli_run["results"]
    assert results["config"]["agent"]["malformed_calls"] == 1
    trace = read_trace(Path(_trial_of(results, "HumanEval/0#0")["witnesses"][0]["file"]).parent / "trace.jsonl")
    malformed = [e for e in trace if e["type"] == "tool" and e["status"] == "malformed"]
    assert len(malformed) == 1 and "not valid JSON" in malformed[0]["result"]
    ran = [e for e in trace if e["type"] == "tool" and e["name"] == "run_witness" and e["status"] == "ok"]
    assert ran[0]["counted"] and ran[0]["data"] == {"R[G]": "pass", "R[s]": "fail"}
    start = trace[0]
    assert start["type"] == "start" and start["budgets"]["executions"] == 5 and start["config"]["effort"] == "low"
    assert [e["valid"] for e in trace if e["type"] == "validation"] == [False, False, True]
    # the conversation goes on after a discarded witness, with the reason
    followups = [e["content"] for e in trace if e["type"] == "message" and e["role"] == "user"][1:]
    assert followups[0].startswith("Your witness 1 was discarded: flaky or failing on G")
    # the model's checklist: model clauses, an unknown assertion id and an empty clause left out
    checklist = _trial_of(results, "HumanEval/0#0")["evidence"]["checklist"]
    assert [(c["id"], c["origin"], c["covered_by"]) for c in checklist] == [
        ("M1", "model", ["L10", "L12"]),
        ("M2", "model", ["L11"]),
        ("M3", "model", []),
    ]
    assert checklist[0]["implemented"] is False  # refuted clause
    task = next(t for t in results["tasks"] if t["task_id"] == "HumanEval/0")
    assert "unknown assertion id 'L999'" in task["note"]


@pytest.mark.parametrize(
    ("env_extra", "code", "words"),
    [
        ({}, 2, "OPENAI_API_KEY is not set"),
        ({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, 3, "cannot reach the model endpoint"),
    ],
)
def test_f_no_key_or_no_endpoint_is_one_line_before_any_trial(
    tmp_path: Path, env_extra: dict[str, str], code: int, words: str
) -> None:
    proc = subprocess.run(
        [*VOUCH, "audit", "humaneval", "--samples", str(DEMO), "--witness-source", "agent",
         "--agent-model", "openai/m", "--store", str(tmp_path / "s.sqlite"), "--witness-dir", str(tmp_path / "w")],
        capture_output=True, text=True, timeout=300, env=_env(None, **env_extra), check=False,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "w").exists()  # no trial started


def test_agent_source_without_a_model_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*VOUCH, "audit", "humaneval", "--samples", str(DEMO), "--witness-source", "agent"],
        capture_output=True, text=True, timeout=300, env=_env(None), check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "--agent-model PROVIDER/MODEL" in proc.stderr


@pytest.mark.slow
def test_a_provider_error_makes_that_trial_error_and_the_run_goes_on(tmp_path: Path) -> None:
    broken = {"on": True}

    def script(body: dict[str, Any]) -> Turn:
        if audit_call(body) == "witness" and _trial(body) == "HumanEval/156#0" and broken["on"]:
            return Turn(status=500)
        if audit_call(body) == "witness":
            return call("give_up", {"reason": "no defect found"})
        return auditor(body)

    samples = _samples(tmp_path / "samples.jsonl")
    config = AuditConfig(witness_source="agent", agent_model="openai/scripted")
    with OpenAIServer(script) as server, LocalExecutor(workers=2, preload=PRELOAD) as executor:

        def run() -> Any:
            provider = get_provider(
                "openai/scripted", retry=RetryPolicy(max_retries=0), base_url=server.url, api_key=KEY
            )
            agent = WitnessAgent(provider, HarnessConfig(name="witness"), load_prices())
            store = AuditStore(tmp_path / "store.sqlite")
            try:
                return audit_humaneval(
                    samples, executor=executor, store=store, witness_dir=tmp_path / "w", config=config, agent=agent
                )
            finally:
                store.close()

        first = run()
        by_id = {t.trial_id: t for t in first.trials}
        assert by_id["HumanEval/156#0"].verdict is Verdict.ERROR
        assert "the auditing model failed" in (by_id["HumanEval/156#0"].reason or "")
        assert "HTTP 500" in (by_id["HumanEval/156#0"].reason or "")
        assert by_id["HumanEval/0#0"].verdict is Verdict.SOUND
        assert by_id["HumanEval/0#0"].reason == "no agent witness: the agent gave up: no defect found"
        assert first.config["agent"]["provider_errors"] == 1
        broken["on"] = False
        second = run()  # the errored trial was not stored: it is judged again; the other resumes
        assert second.config["resumed_programs"] == 1
        assert {t.trial_id: t.verdict for t in second.trials}["HumanEval/156#0"] is Verdict.SOUND


def test_the_store_keys_the_auditing_model_and_keeps_offline_keys() -> None:
    offline = AuditConfig()
    assert AuditConfig(agent_model=None, agent_config=None).key() == offline.key()
    one = AuditConfig(witness_source="agent", agent_model="openai/a")
    assert one.key() != AuditConfig(witness_source="agent", agent_model="openai/b").key()
    assert one.key() != AuditConfig(witness_source="agent", agent_model="openai/a", agent_config="effort-low").key()


PROMPT_0 = load_problems()["HumanEval/0"].prompt


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from solution import has_close_elements\n", []),
        ("from solution import has_close_elements, List\n", []),
        ("import solution\nx = solution.has_close_elements\n", []),
        ("from solution import helper\n", ["helper (imported from solution)"]),
        ("from solution import *\n", ["* (imported from solution)"]),
        ("import solution\nx = solution.helper\n", ["solution.helper"]),
        ("import solution as s\nx = dir(s)\n", ["the module s itself (only solution.NAME for names P defines)"]),
        ("import sys\nm = sys.modules['solution']\n", ["'solution' named as a string (the module reached by name)"]),
        ("import inspect\n", ["inspect (reads the program, not its behaviour)"]),
        ("from solution import has_close_elements\nc = has_close_elements.__code__\n",
         [".__code__ (reads the program, not its behaviour)"]),
        ("def test(:\n", ["the file does not parse (invalid syntax, line 1)"]),
    ],
)  # fmt: skip
def test_foreign_names(source: str, found: list[str]) -> None:
    assert foreign_names(source, p_names(PROMPT_0)) == found


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"answer": "yes"}', {"answer": "yes"}),
        ('Here:\n```json\n{"answer": "no", "reason": "r"}\n```', {"answer": "no", "reason": "r"}),
        ('I think {"answer": "yes", "reason": "fine"} holds.', {"answer": "yes", "reason": "fine"}),
        ("yes", None),
        ("[1, 2]", None),
        ("{not json}", None),
    ],
)
def test_json_object(text: str, value: dict[str, Any] | None) -> None:
    assert json_object(text) == value


@pytest.mark.slow
@pytest.mark.parametrize(("clause_id", "verdict"), [("M3", Verdict.SOUND), ("M1", Verdict.REFUTED)])
def test_an_implicit_requirement_every_model_skips_is_withheld(
    tmp_path: Path, clause_id: str, verdict: Verdict
) -> None:
    """Three models' passing trials share the wrong program: every model skips what the witness
    checks, so for each trial two other models do. On the implicit clause M3 the rule withholds
    it (a prompt defect); on the explicit clause M1 it refutes however many models skip it."""

    def script(body: dict[str, Any]) -> Turn:
        if audit_call(body) == "witness":
            return call("submit_witness", {"source": GOOD, "clause_id": clause_id})
        return auditor(body)

    wrong = json.loads(_samples(tmp_path / "both.jsonl").read_text().splitlines()[0])
    samples = tmp_path / "three-models.jsonl"
    samples.write_text("".join(json.dumps(wrong | {"model": m}) + "\n" for m in ("a", "b", "c")))
    with OpenAIServer(script) as server, LocalExecutor(workers=2, preload=PRELOAD) as executor:
        provider = get_provider("openai/scripted", base_url=server.url, api_key=KEY)
        results = audit_humaneval(
            samples,
            executor=executor,
            witness_dir=tmp_path / "w",
            config=AuditConfig(witness_source="agent", agent_model="openai/scripted"),
            agent=WitnessAgent(provider, HarnessConfig(name="witness"), load_prices()),
        )
    assert [t.verdict for t in results.trials] == [verdict] * 3
    first = results.trials[0]
    task = results.tasks[0]
    if verdict is Verdict.SOUND:
        (withheld,) = first.evidence.discarded
        assert withheld.clause_id == "M3" and withheld.validation.rejudged
        assert (withheld.validation.reason or "").startswith("ambiguous requirement (TestJack A.2): M3 is implicit")
        assert task.ambiguous_requirements == ["M3: returns a bool (rho 1.00)"]
    else:
        assert first.witnesses[0].clause_id == "M1" and first.evidence.discarded == []
        assert task.ambiguous_requirements == []


@pytest.mark.slow
def test_the_anthropic_provider_drives_the_same_session(tmp_path: Path) -> None:
    """The Messages API through the real anthropic SDK: a discarded witness's feedback shares the
    user turn with the tool result; the checklist and re-judging calls carry no tools."""

    def script(body: dict[str, Any]) -> Turn:
        system = str(body.get("system") or "")
        if system.startswith("You decompose"):
            return Turn(text=json.dumps(CHECKLIST_0))
        if system.startswith("You review"):
            return Turn(text='{"answer": "yes", "reason": "P says closer than"}')
        turns = [
            call("submit_witness", {"source": G_FAILS, "clause_id": "M2"}),
            call("submit_witness", {"source": GOOD, "clause_id": "M1"}),
        ]
        return turns[turn_index(body)]

    wrong = json.loads(_samples(tmp_path / "both.jsonl").read_text().splitlines()[0])
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps(wrong) + "\n")
    with AnthropicServer(script) as server, LocalExecutor(workers=2, preload=PRELOAD) as executor:
        provider = get_provider("anthropic/claude-sonnet-4-test", base_url=server.url, api_key=KEY)
        agent = WitnessAgent(provider, HarnessConfig(name="witness"), load_prices())
        results = audit_humaneval(
            samples,
            executor=executor,
            witness_dir=tmp_path / "w",
            config=AuditConfig(witness_source="agent", agent_model="anthropic/claude-sonnet-4-test"),
            agent=agent,
        )
        requests = list(server.requests)
    (trial,) = results.trials
    assert trial.verdict is Verdict.REFUTED and trial.witnesses[0].iteration == 2
    assert trial.witnesses[0].origin == "agent" and trial.evidence.discarded[0].clause_id == "M2"
    last = [r for r in requests if str(r.get("system", "")).startswith("You audit")][-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]
    assert [b["type"] for b in last[2]["content"]] == ["tool_result", "text"]
    assert last[2]["content"][1]["text"].startswith("Your witness 1 was discarded: flaky or failing on G")
    assert all("tools" not in r for r in requests if not str(r.get("system", "")).startswith("You audit"))
    usage = results.config["agent"]
    assert usage["model_calls"] == 4 and usage["cost_usd"] == pytest.approx(4 * (100 * 3.0 + 20 * 15.0) / 1e6)
