"""The SWE form's ``agent`` witness source against a scripted model on a loopback OpenAI server.

The real openai SDK talks to the server (tests/agent/loopback.py); the trials are the bundled
cookiestore fixture's:

- cookiestore #1 drops ``secure`` and ``expires`` on the import path (``import_records``), which
  P's third point requires and T0 never checks.
- cookiestore #2 is correct, and ships a constant ``COOKIE_FIELDS`` that neither P nor G names.

The scripted auditor, on #1: sends malformed tool-call JSON, reads a file of R[s], tries to read
outside the world, runs a witness, submits a witness G fails, then one the re-judge rejects, then
a correct one. On #2 it submits a witness that fails in R[s] only through the trial's constant,
then gives up.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.append(str(Path(__file__).resolve().parents[1] / "agent"))  # loopback.py, shared with tests/agent
from loopback import KEY, OpenAIServer, Turn, audit_call, call, first_user, turn_index

from _scratch import scratch_root
from vouch.agent import HarnessConfig, RetryPolicy, get_provider, load_prices, read_trace
from vouch.audit import SWE_PRELOAD, AuditResults, SweAuditConfig, TrialResult, Verdict, WitnessAgent, audit_swe
from vouch.audit.repository._agent_tools import RepoNames, foreign_repo_names
from vouch.audit.repository._audit import _config_key
from vouch.exec import LocalExecutor
from vouch.store import AuditStore
from vouch.swebench import fixture_files, load_instances, load_predictions, materialise_fixture_repo
from vouch.worlds import WorldCache

VOUCH = [sys.executable, "-m", "vouch"]
INSTANCE = "vouch-fixtures__cookiestore-1"
DROPPED, SOUND = f"{INSTANCE}#1", f"{INSTANCE}#2"

GOOD = """from cookiestore.jar import cookie_header, import_records


def test_an_imported_secure_record_keeps_its_attributes():
    # P 3: import_records keeps secure and expires, so a secure record is withheld from http.
    record = {"name": "t", "value": "v", "domain": "example.org", "secure": True, "expires": 1700000000}
    (cookie,) = import_records([record])
    assert cookie.get("secure") is True and cookie.get("expires") == 1700000000, f"import_records gave {cookie}"
    assert cookie_header([cookie], "http://example.org/") == ""
"""
G_FAILS = """from cookiestore.jar import cookie_header, import_records


def test_wrong_expectation():
    record = {"name": "t", "value": "v", "domain": "example.org", "secure": True}
    assert cookie_header(import_records([record]), "https://example.org/") == ""
"""
REJECTED = """from cookiestore.jar import import_records


def test_exact_keys():
    (cookie,) = import_records([{"name": "t", "value": "v", "domain": "example.org"}])
    assert sorted(cookie) == ["domain", "expires", "host_only", "name", "path", "secure", "value"]
"""
TRIAL_ONLY = """def test_no_stray_constant():
    try:
        from cookiestore.jar import COOKIE_FIELDS
    except ImportError:
        return  # the gold patch has no such constant
    assert not COOKIE_FIELDS, "the trial ships a constant P never asked for"
"""
CHECKLIST = {
    "clauses": [
        {"text": "accept honours Domain: a leading dot is ignored; a non-matching domain is rejected",
         "kind": "explicit",
         "covered_by": ["tests/test_cookiestore_jar.py::test_domain_attribute",
                        "tests/test_cookiestore_jar.py::test_domain_mismatch_is_rejected"]},
        {"text": "a Secure cookie is never sent over http", "kind": "explicit",
         "covered_by": ["tests/test_cookiestore_jar.py::test_secure_is_not_sent_over_http"]},
        {"text": "import_records keeps every attribute: name, value, domain, path, secure and expires",
         "kind": "explicit",
         "covered_by": ["tests/test_cookiestore_jar.py::test_import_keeps_path", "tests/nowhere.py::test_x"]},
    ]
}  # fmt: skip


def _trial(body: dict[str, Any]) -> str:
    found = re.match(r"Trial (\S+) of instance", first_user(body))
    return found.group(1) if found else "?"


def auditor(body: dict[str, Any]) -> Turn:
    """The scripted auditing model (see the module docstring)."""
    kind, n = audit_call(body), turn_index(body)
    if kind == "checklist":
        return Turn(text="```json\n" + json.dumps(CHECKLIST) + "\n```")
    if kind == "rejudge":
        if "sorted(cookie)" in first_user(body):
            return Turn(text='{"answer": "no", "reason": "P names the attributes, not the exact keys of the dict"}')
        return Turn(text='{"answer": "yes", "reason": "P 3 says import_records keeps secure and expires"}')
    if _trial(body) == DROPPED:
        script = [
            Turn(calls=[("run_witness", '{"source": "def test_x(:')]),  # malformed JSON
            call("read_file", {"path": "cookiestore/jar.py", "world": "R[s]"}),
            call("read_file", {"path": "../../etc/passwd", "world": "R[G]"}),
            call("run_witness", {"source": GOOD}),
            call("submit_witness", {"source": G_FAILS, "clause_id": "M3"}),
            call("submit_witness", {"source": REJECTED, "clause_id": "M3"}),
            call("submit_witness", {"source": GOOD, "clause_id": "M3"}),
        ]
    else:
        script = [call("submit_witness", {"source": TRIAL_ONLY, "clause_id": "M3"})]
    return script[n] if n < len(script) else call("give_up", {"reason": "the trial follows P"})


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swe-agent-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    materialise_fixture_repo("cookiestore", path / "repos" / "cookiestore")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def run(scratch: Path) -> dict[str, Any]:
    every = load_instances(fixture_files()[0])
    instances = [i for i in every if i.instance_id == INSTANCE]
    trials = [t for t in load_predictions(fixture_files()[1], every) if t.trial_id in (DROPPED, SOUND)]
    config = SweAuditConfig(
        witness_source="agent",
        agent_model="openai/scripted",
        repo_root=scratch / "repos",
        mutants=0,
        witness_dir=scratch / "witnesses",
    )
    with OpenAIServer(auditor) as server, LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        provider = get_provider("openai/scripted", base_url=server.url, api_key=KEY)
        agent = WitnessAgent(provider, HarnessConfig(name="witness"), load_prices())
        results = audit_swe(
            instances, trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config, agent=agent
        )
        requests = list(server.requests)
    return {"results": results, "requests": requests, "scratch": scratch}


def _of(results: AuditResults, trial_id: str) -> TrialResult:
    return next(t for t in results.trials if t.trial_id == trial_id)


@pytest.mark.slow
def test_a_a_correct_agent_witness_refutes_and_replays(run: dict[str, Any]) -> None:
    results: AuditResults = run["results"]
    assert results.witness_source == "agent"
    trial = _of(results, DROPPED)
    assert trial.benchmark_pass and trial.verdict is Verdict.REFUTED, trial.reason
    (witness,) = trial.witnesses
    assert witness.origin == "agent" and witness.clause_id == "M3" and witness.iteration == 3
    assert witness.clause.startswith("import_records keeps every attribute")
    v = witness.validation
    assert v.valid and v.fails_by_assertion and v.rejudged and (v.rejudge_note or "").startswith("model: yes")
    assert [r.outcome for r in v.reference_runs] == ["pass"] * 3
    assert [r.exception for r in v.model_runs] == ["AssertionError"] * 3
    assert witness.source.endswith(GOOD) and witness.source.startswith("# Written by openai/scripted for ")
    assert re.fullmatch(r"test_\w+_[0-9a-f]{8}\.py", witness.file) and "witness" not in witness.file
    assert "import_records gave" in (witness.actual or "")
    assert witness.defect.startswith("test_an_imported_secure_record_keeps_its_attributes of M3 fails in the trial")
    assert trial.reason == witness.defect
    assert "checklist" in trial.evidence.steps and "witnesses:agent" in trial.evidence.steps
    # Written beside the trial's trace, and replayed through the engine from the CLI.
    assert witness.replay.startswith("vouch audit swe --replay ")
    path = Path(witness.replay.split()[-1])
    assert path.parent == run["scratch"] / "witnesses" / INSTANCE / "1" and (path.parent / "trace.jsonl").is_file()
    replay = subprocess.run(
        [*VOUCH, "audit", "swe", "--replay", str(path), "--repeat", "1", "--cache", str(run["scratch"] / "worlds")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert "witness holds" in replay.stdout and "R[s]: fail" in replay.stdout


@pytest.mark.slow
def test_b_a_witness_the_gold_fails_is_discarded_with_the_reason(run: dict[str, Any]) -> None:
    first = _of(run["results"], DROPPED).evidence.discarded[0]
    assert first.origin == "agent" and first.iteration == 1 and first.source.endswith(G_FAILS)
    v = first.validation
    assert not v.valid and not v.rejudged and v.rejudge_note == "not re-judged: invalid"
    assert (v.reason or "").startswith("does not pass in R[G] every time (fail: ")
    assert {r.outcome for r in v.reference_runs} == {"fail"}


@pytest.mark.slow
def test_c_a_witness_that_fails_only_through_a_name_the_trial_adds_is_discarded(run: dict[str, Any]) -> None:
    trial = _of(run["results"], SOUND)
    (witness,) = trial.evidence.discarded
    v = witness.validation
    # The runs alone would make it a witness: it passes in R[G] and fails in R[s] by an assertion.
    assert [r.outcome for r in v.reference_runs] == ["pass"] * 3
    assert [r.exception for r in v.model_runs] == ["AssertionError"] * 3
    assert not v.valid and not v.fails_by_assertion and not v.rejudged
    assert v.reason == (
        "it imports what P never asked for: cookiestore.jar.COOKIE_FIELDS (only the trial's patch adds it: "
        "P never asks for it)"
    )


def test_c_the_import_check_on_names_p_and_g_never_name(tmp_path: Path) -> None:
    for world in ("gold", "trial"):
        (tmp_path / world / "pkg").mkdir(parents=True)
        (tmp_path / world / "pkg" / "__init__.py").write_text("")
        (tmp_path / world / "pkg" / "sub.py").write_text("def wanted(x):\n    return x\n\n\ndef _helper():\n    pass\n")
    (tmp_path / "trial" / "pkg" / "extra.py").write_text("X = 1\n")
    names = RepoNames(tmp_path / "gold", tmp_path / "trial", frozenset({"pkg", "sub", "wanted"}))
    ok = (
        "import pytest\nfrom pkg.sub import wanted\nimport pkg.sub as s\n\ndef test_a():\n    assert s.wanted(1) == 1\n"
    )
    assert foreign_repo_names(ok, names) == []
    bad = (
        "import pkg.sub\nfrom pkg import extra\nfrom pkg.sub import _helper\nimport inspect\n\n"
        "def test_a():\n    assert pkg.sub._helper() is None and pkg.sub.wanted.__code__\n"
    )
    assert foreign_repo_names(bad, names) == [
        ".__code__ (reads the program, not its behaviour)",
        "inspect (reads the program, not its behaviour)",
        "pkg.extra (only the trial's patch adds it: P never asks for it)",
        "pkg.sub._helper (neither P nor the gold patch names it)",
    ]
    assert foreign_repo_names("from .pkg import wanted\n", names) == ["a relative import (from .pkg import ...)"]
    assert foreign_repo_names("from pkg import sub\nx = getattr(sub, 'X')\n", names) == [
        "the module pkg.sub itself (only module.NAME for names P or G names)"
    ]
    assert foreign_repo_names("import sys\nm = sys.modules['pkg.extra']\nw = 'pkg is fine'\n", names) == [
        "'pkg.extra' named as a string (the module reached by name)"
    ]
    assert foreign_repo_names("from pkg.missing import wanted\n", names) == [
        "module pkg.missing (R[G] has no such module)"
    ]


@pytest.mark.slow
def test_d_a_witness_the_rejudge_rejects_is_discarded_with_its_note(run: dict[str, Any]) -> None:
    second = _of(run["results"], DROPPED).evidence.discarded[1]
    v = second.validation
    assert [r.outcome for r in v.reference_runs] == ["pass"] * 3
    assert [r.exception for r in v.model_runs] == ["AssertionError"] * 3
    note = "model: no: P names the attributes, not the exact keys of the dict"
    assert not v.valid and not v.rejudged and v.rejudge_note == note
    assert v.reason == f"re-judging against P rejected it: {note}"
    rejudges = [r for r in run["requests"] if audit_call(r) == "rejudge"]
    assert len(rejudges) == 2  # the G-failing and the trial-only witnesses never reach the reviewer
    assert all("tools" not in r for r in rejudges)
    assert all("imports the repository's modules" in first_user(r) for r in rejudges)
    assert all("import_records" in first_user(r) for r in rejudges)


@pytest.mark.slow
def test_e_malformed_tool_call_json_is_answered_and_counted(run: dict[str, Any]) -> None:
    results: AuditResults = run["results"]
    usage = results.config["agent"]
    assert usage["model"] == "openai/scripted" and usage["malformed_calls"] == 1 and usage["sessions"] == 2
    assert results.config["agent_model"] == "openai/scripted"
    trace = read_trace(run["scratch"] / "witnesses" / INSTANCE / "1" / "trace.jsonl")
    tools = [e for e in trace if e["type"] == "tool"]
    assert tools[0]["status"] == "malformed" and "not valid JSON" in tools[0]["result"]
    read, outside, ran = tools[1:4]
    assert read["status"] == "ok" and "def import_records" in read["result"] and '"secure": bool(' not in read["result"]
    assert outside["status"] == "refused" and "without .." in outside["result"]
    assert ran["counted"] and ran["data"] == {"R[G]": "pass", "R[s]": "fail"}
    assert "AssertionError: import_records gave" in ran["result"]
    assert [e["valid"] for e in trace if e["type"] == "validation"] == [False, False, True]
    followups = [e["content"] for e in trace if e["type"] == "message" and e["role"] == "user"][1:]
    assert followups[0].startswith("Your witness 1 was discarded: does not pass in R[G] every time")


@pytest.mark.slow
def test_f_a_sound_trial_where_the_agent_gives_up_stays_sound(run: dict[str, Any]) -> None:
    trial = _of(run["results"], SOUND)
    assert trial.verdict is Verdict.SOUND and trial.witnesses == []
    assert trial.reason == "no agent witness: the agent gave up: the trial follows P"


@pytest.mark.slow
def test_the_agent_sees_p_s_g_t0_the_checklist_and_the_evidence(run: dict[str, Any]) -> None:
    results: AuditResults = run["results"]
    specs = load_instances(fixture_files()[0])
    spec = next(i for i in specs if i.instance_id == INSTANCE)
    sessions = [r for r in run["requests"] if audit_call(r) == "witness" and _trial(r) == DROPPED]
    first = first_user(sessions[0])
    assert spec.problem_statement.strip() in first and spec.patch.strip() in first  # P and G
    assert spec.test_patch.strip() in first and "test_domain_attribute (FAIL_TO_PASS)" in first  # T0
    trial_patch = next(t for t in load_predictions(fixture_files()[1], specs) if t.trial_id == DROPPED).patch
    assert trial_patch.strip() in first  # s
    assert "- M3 [explicit] import_records keeps every attribute" in first
    assert re.search(r"offline difference: cookiestore\.jar\.import_records\(.+\) gives .+ in R\[s\]", first)
    assert {t["function"]["name"] for t in sessions[0]["tools"]} == {
        "read_file",
        "run_witness",
        "submit_witness",
        "give_up",
    }
    # The model's checklist replaced the offline one; an unknown test id was left out, with a note.
    (task,) = results.tasks
    assert [(c.id, c.origin) for c in task.checklist] == [("M1", "model"), ("M2", "model"), ("M3", "model")]
    assert task.checklist[2].covered_by == ["tests/test_cookiestore_jar.py::test_import_keeps_path"]
    assert task.note is not None and "unknown test id 'tests/nowhere.py::test_x'" in task.note
    checklist = _of(results, DROPPED).evidence.checklist
    assert checklist[2].implemented is False  # the refuted clause


@pytest.mark.slow
def test_a_provider_error_makes_that_trial_error_and_the_run_goes_on(scratch: Path) -> None:
    broken = {"on": True}

    def script(body: dict[str, Any]) -> Turn:
        if audit_call(body) == "witness" and _trial(body) == DROPPED and broken["on"]:
            return Turn(status=500)
        if audit_call(body) == "witness":
            return call("give_up", {"reason": "no defect found"})
        return auditor(body)

    every = load_instances(fixture_files()[0])
    instances = [i for i in every if i.instance_id == INSTANCE]
    trials = [t for t in load_predictions(fixture_files()[1], every) if t.trial_id in (DROPPED, SOUND)]
    config = SweAuditConfig(
        witness_source="agent",
        agent_model="openai/scripted",
        repo_root=scratch / "repos",
        mutants=0,
        witness_dir=scratch / "errors",
    )
    with OpenAIServer(script) as server, LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:

        def audit() -> AuditResults:
            provider = get_provider(
                "openai/scripted", retry=RetryPolicy(max_retries=0), base_url=server.url, api_key=KEY
            )
            agent = WitnessAgent(provider, HarnessConfig(name="witness"), load_prices())
            store = AuditStore(scratch / "errors.sqlite")
            try:
                return audit_swe(
                    instances,
                    trials,
                    executor=executor,
                    cache=WorldCache(scratch / "worlds"),
                    config=config,
                    agent=agent,
                    store=store,
                )
            finally:
                store.close()

        first = audit()
        failed, other = _of(first, DROPPED), _of(first, SOUND)
        assert failed.verdict is Verdict.ERROR and failed.benchmark_pass
        assert (failed.reason or "").startswith("the auditing model failed") and "HTTP 500" in (failed.reason or "")
        assert other.verdict is Verdict.SOUND and other.reason == "no agent witness: the agent gave up: no defect found"
        assert first.config["agent"]["provider_errors"] == 1
        broken["on"] = False
        second = audit()  # the errored trial was not stored: it is judged again; the other resumes
    assert second.config["resumed_programs"] == 1
    assert _of(second, DROPPED).verdict is Verdict.SOUND


def test_the_store_keys_the_auditing_model_and_keeps_offline_keys() -> None:
    import vouch

    spec = load_instances(fixture_files()[0])[0]
    offline = _config_key(SweAuditConfig(), spec)
    before = {k: v for k, v in SweAuditConfig().to_dict().items() if k not in ("repo_root", "witness_dir")}
    del before["agent_model"], before["agent_config"]  # the key as it was before the agent source
    # Fields the instance does not set (the real-data ones: version, environment) stay out of the key.
    text = repr(sorted(before.items())) + vouch.__version__ + spec.model_dump_json(exclude_none=True)
    assert offline == hashlib.sha256(text.encode()).hexdigest()
    one = SweAuditConfig(witness_source="agent", agent_model="openai/a")
    assert _config_key(one, spec) != offline
    assert _config_key(one, spec) != _config_key(SweAuditConfig(witness_source="agent", agent_model="openai/b"), spec)
    tuned = SweAuditConfig(witness_source="agent", agent_model="openai/a", agent_config="effort-low")
    assert _config_key(one, spec) != _config_key(tuned, spec)


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | extra


@pytest.mark.parametrize(
    ("env_extra", "code", "words"),
    [
        ({}, 2, "OPENAI_API_KEY is not set"),
        ({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, 3, "cannot reach the model endpoint"),
    ],
)
def test_g_no_key_or_no_endpoint_is_one_line_before_any_trial(
    tmp_path: Path, env_extra: dict[str, str], code: int, words: str
) -> None:
    instances, predictions = fixture_files()
    proc = subprocess.run(
        [*VOUCH, "audit", "swe", "--instances", str(instances), "--predictions", str(predictions),
         "--witness-source", "agent", "--agent-model", "openai/m", "--store", str(tmp_path / "s.sqlite"),
         "--witness-out", str(tmp_path / "w"), "--cache", str(tmp_path / "c")],
        capture_output=True, text=True, timeout=300, env=_env(**env_extra), check=False,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "c").exists()  # no trial started


@pytest.mark.slow
def test_the_cli_runs_the_agent_source_and_records_its_usage(scratch: Path) -> None:
    every = load_instances(fixture_files()[0])
    mine = [i for i in every if i.instance_id == INSTANCE]
    (scratch / "instances.jsonl").write_text("".join(i.model_dump_json(by_alias=True) + "\n" for i in mine))
    rows = [json.loads(line) for line in fixture_files()[1].read_text().splitlines()]
    (scratch / "predictions.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r["instance_id"] == INSTANCE)
    )
    out = scratch / "cli" / "audit.json"
    with OpenAIServer(auditor) as server:
        proc = subprocess.run(
            [*VOUCH, "audit", "swe", "--instances", str(scratch / "instances.jsonl"),
             "--predictions", str(scratch / "predictions.jsonl"), "--repo-root", str(scratch / "repos"),
             "--witness-source", "agent", "--agent-model", "openai/scripted", "--mutants", "0",
             "--json", str(out), "--cache", str(scratch / "worlds"), "--store", str(scratch / "cli.sqlite")],
            capture_output=True, text=True, timeout=900, check=False,
            env=_env(OPENAI_BASE_URL=server.url, OPENAI_API_KEY=KEY),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["witness_source"] == "agent" and data["config"]["agent_model"] == "openai/scripted"
    assert data["config"]["agent"]["sessions"] == 3 and data["config"]["agent"]["malformed_calls"] == 1
    verdicts = {t["trial_id"]: t["verdict"] for t in data["trials"]}
    assert verdicts[DROPPED] == "refuted" and verdicts[SOUND] == "sound"
    replay = _of(AuditResults.model_validate(data), DROPPED).witnesses[0].replay
    assert Path(replay.split()[-1]).parent == scratch / "cli" / "audit-witnesses" / INSTANCE / "1"
    assert "auditing model openai/scripted: 3 trial sessions" in proc.stdout


def test_g_agent_source_without_a_model_is_a_usage_error() -> None:
    instances, predictions = fixture_files()
    proc = subprocess.run(
        [*VOUCH, "audit", "swe", "--instances", str(instances), "--predictions", str(predictions),
         "--witness-source", "agent"],
        capture_output=True, text=True, timeout=300, env=_env(), check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "--agent-model PROVIDER/MODEL" in proc.stderr
