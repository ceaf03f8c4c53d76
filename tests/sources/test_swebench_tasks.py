"""``vouch data build swebench``: code tasks whose candidates are patches, on fixture repositories.

The repositories are the bundled SWE fixtures, made into git repositories by the test; T0 runs in
the pool's own interpreter (no environments file), through the engine, as ``vouch audit swe``
runs it on them.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from _scratch import scratch_root
from vouch.core import LABEL_OF_CATEGORY, load_cases, load_task_spec
from vouch.errors import UsageError
from vouch.sources.swebench._cases import Texts, _skipped, apply_to_texts, build_candidates, make_diff
from vouch.sources.swebench._tasks import load_labels
from vouch.swebench import fixture_files, load_instances, materialise_fixture_repo

VOUCH = [sys.executable, "-m", "vouch"]
FIXTURES = ("unitconv", "booknotes", "cookiestore")
UNITCONV = "swebench-vouch-fixtures__unitconv-1"


def vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swebench-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    for name in FIXTURES:
        materialise_fixture_repo(name, path / "repos" / name)
    # The harness's verdicts on two of unitconv's trials (vouch audit swe: #2 sound, #3 not passing).
    rows = [json.loads(line) for line in fixture_files()[1].read_text().splitlines() if line.strip()]
    seen: dict[str, int] = {}
    for row in rows:
        n = seen.get(row["instance_id"], 0)
        seen[row["instance_id"]] = n + 1
        if row["instance_id"] == "vouch-fixtures__unitconv-1" and n in (2, 3):
            row["resolved"] = n == 2
    (path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _build(scratch: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return vouch(
        "data",
        "build",
        "swebench",
        "--instances",
        str(fixture_files()[0]),
        "--predictions",
        str(scratch / "predictions.jsonl"),
        "--repo-root",
        str(scratch / "repos"),
        "--cache",
        str(scratch / "cache"),
        "--out",
        str(out),
        "--progress",
        "none",
        *extra,
    )


@pytest.fixture(scope="module")
def built(scratch: Path) -> Path:
    out = scratch / "tasks"
    proc = _build(scratch, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow
def test_every_instance_becomes_a_code_task_of_patches(built: Path) -> None:
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["source"] == "swebench" and manifest["tasks"] == 3
    assert manifest["source_versions"]["swebench-instances"].startswith("sha256:")
    for task_dir in sorted(p for p in built.iterdir() if (p / "task.toml").exists()):
        spec = load_task_spec(task_dir)
        assert spec.kind == "code" and spec.source.benchmark == "swebench" and spec.public_tools == ["run_public"]
        cases = load_cases(task_dir)
        assert {c.category for c in cases} == {"gold", "variant", "error", "attack"}
        for case in cases:
            assert set(case.candidate) == {"patch"} and case.label == LABEL_OF_CATEGORY[case.category]
            assert case.rationale and case.provenance.content_hash.startswith("sha256:")
        gold = json.loads((task_dir / "reference" / "gold.json").read_text())["patch"]
        assert next(c for c in cases if c.id == "gold").candidate["patch"] == gold
        instance = json.loads((task_dir / "reference" / "instance.json").read_text())
        verifier = (task_dir / "reference" / "verifier.py").read_text()
        assert all(t in verifier for t in instance["FAIL_TO_PASS"])
        public = json.loads((task_dir / "environment" / "public_tests.json").read_text())
        assert public and not set(public) & set(instance["FAIL_TO_PASS"])  # the hidden ids stay hidden
        assert not any(t in (task_dir / "instruction.md").read_text() for t in instance["FAIL_TO_PASS"])


@pytest.mark.slow
def test_the_reference_check_flags_what_t0_cannot_see(built: Path) -> None:
    manifest = json.loads((built / "manifest.json").read_text())
    decisions = json.loads((built / "swebench-build.json").read_text())["decisions"]
    flagged = {(f["task_id"], f["case_id"]): f for f in manifest["flagged"]}
    for instance, cases in decisions.items():
        task = f"swebench-{instance}"
        # T0 accepts the gold change in any form, and rejects tests skipped or deleted instead of a fix.
        for case_id in ("gold", "variant-recontext", "variant-with-tests", "variant-added-test"):
            assert cases[case_id]["decision"] == "PASS", (task, case_id, cases[case_id])
        for case_id in ("attack-skip-tests", "attack-delete-tests", "error-comment-only"):
            if case_id in cases:
                assert cases[case_id]["decision"] == "FAIL", (task, case_id, cases[case_id])
        # What T0 cannot tell apart: a runner-sniffing fix and forged reports (flagged, not relabelled).
        for case_id in ("attack-sniff-pytest", "attack-forge-reports"):
            assert cases[case_id]["decision"] == "PASS"
            assert flagged[(task, case_id)]["label"] == "negative"
        for (t, c), flag in flagged.items():
            if t == task:
                label = "positive" if c.startswith(("gold", "variant")) else "negative"
                assert flag["label"] == label and flag["reference_decision"] != (
                    "PASS" if label == "positive" else "FAIL"
                )
    unitconv = decisions["vouch-fixtures__unitconv-1"]
    # The agents' patches: labelled by the harness's verdict in the predictions.
    assert unitconv["variant-agent-2"]["decision"] == "PASS"
    assert unitconv["error-agent-3"]["decision"] == "FAIL"
    assert "variant-commented" in unitconv  # comments inside a dict literal are legal


@pytest.mark.slow
def test_run_public_and_the_reference_verifier(built: Path) -> None:
    from vouch.audit import SWE_PRELOAD
    from vouch.exec import LocalExecutor
    from vouch.sources.swebench._check import run_public

    task = built / UNITCONV
    cases = {c.id: c.candidate["patch"] for c in load_cases(task)}
    public = json.loads((task / "environment" / "public_tests.json").read_text())
    f2p = json.loads((task / "reference" / "instance.json").read_text())["FAIL_TO_PASS"]
    namespace: dict[str, object] = {}
    exec(compile((task / "reference" / "verifier.py").read_text(), "verifier.py", "exec"), namespace)

    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:

        class Env:
            def __init__(self, patch: str) -> None:
                self.patch = patch

            def run_public(self, tests: list[str] | None = None) -> dict[str, object]:
                return run_public(executor, task, self.patch, tests, hidden=True)

        gold = run_public(executor, task, cases["gold"])
        assert gold["ok"] is True and set(gold["outcomes"]) == set(public)
        assert set(gold["outcomes"].values()) == {"passed"}
        # A verifier under test never hears of a FAIL_TO_PASS test, even by naming it.
        named = run_public(executor, task, cases["gold"], [f2p[0], public[0]])
        assert named["outcomes"] == {f2p[0]: "not public", public[0]: "passed"}
        # The reference verifier, with hidden ids allowed: T0.
        verify = namespace["verify"]
        assert callable(verify)
        assert verify({"patch": cases["gold"]}, Env(cases["gold"])) is True
        assert verify({"patch": cases["error-comment-only"]}, Env(cases["error-comment-only"])) is False
        broken = run_public(executor, task, cases["gold"].replace("unitconv/", "nowhere/"))
        assert broken["ok"] is False and "unappliable" in str(broken["error"])


@pytest.mark.slow
def test_reference_verifier_in_the_engine_agrees_with_the_build(built: Path) -> None:
    """verifier.py, run as vouch bench runs a verifier (its own sandbox, env over the service
    channel, run_public answered in the candidate patch's world), decides every case as the
    build's check did."""
    from vouch.audit import SWE_PRELOAD
    from vouch.bench import PRELOAD, check_references
    from vouch.exec import LocalExecutor

    with LocalExecutor(workers=2, preload=[*PRELOAD, *SWE_PRELOAD]) as executor:
        flagged = check_references(executor, built, [UNITCONV])
    manifest = json.loads((built / "manifest.json").read_text())
    expected = {(f["case_id"], f["reference_decision"]) for f in manifest["flagged"] if f["task_id"] == UNITCONV}
    assert {(f.case_id, f.reference_decision) for f in flagged} == expected


def test_a_verifier_under_test_cannot_read_the_worlds_or_the_repository(built: Path) -> None:
    """The world cache holds worlds with the gold patch applied and the repository's history
    holds the upstream fix: both are withheld from a verifier under test, not from the reference."""
    from vouch.bench import load_task
    from vouch.bench._decide import _withheld
    from vouch.sources.swebench._check import WORLDS_FILE, withheld_paths

    task = load_task(built / UNITCONV)
    record = json.loads((built / WORLDS_FILE).read_text())
    paths = withheld_paths(task.root)
    iid = json.loads((task.root / "reference" / "instance.json").read_text())["instance_id"]
    assert record["cache"] in paths and record["instances"][iid]["source"] in paths
    under_test = _withheld(task, ["/data/tasks/withheld"])
    assert under_test[0] == "/data/tasks/withheld" and set(paths) <= set(under_test)
    assert _withheld(task, []) == (), "the reference verifier's runs withhold nothing"


@pytest.mark.slow
def test_a_second_build_is_the_same_and_reads_its_decisions(scratch: Path, built: Path) -> None:
    again = scratch / "tasks-again"
    proc = _build(scratch, again)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = json.loads((built / "manifest.json").read_text())
    second = json.loads((again / "manifest.json").read_text())
    assert first["content_hash"] == second["content_hash"]
    assert first["flagged"] == second["flagged"]
    stats = vouch("data", "stats", str(again), "--json")
    assert stats.returncode == 0, stats.stderr
    figures = json.loads(stats.stdout)
    assert figures["by_source"] == {"swebench": 3} and figures["cases"] == second["cases"]


@pytest.mark.slow
def test_bad_inputs_cost_one_instance_each(scratch: Path) -> None:
    good = [json.loads(line) for line in fixture_files()[0].read_text().splitlines() if line.strip()]
    unitconv = next(r for r in good if r["repo"] == "unitconv")
    bad = [
        unitconv,
        {**unitconv, "instance_id": "bad__missing-commit", "base_commit": "0" * 40},
        {**unitconv, "instance_id": "bad__gold-unappliable", "patch": unitconv["patch"].replace("unitconv/", "no/")},
        {**unitconv, "instance_id": "bad__no-such-test", "FAIL_TO_PASS": ["tests/test_nothing_here.py::test_x"]},
        {**unitconv, "instance_id": "bad__no-repo", "repo": "nowhere"},
    ]
    instances = scratch / "bad.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in bad))
    out = scratch / "bad-tasks"
    proc = vouch(
        "data",
        "build",
        "swebench",
        "--instances",
        str(instances),
        "--repo-root",
        str(scratch / "repos"),
        "--cache",
        str(scratch / "cache"),
        "--out",
        str(out),
        "--progress",
        "none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    skipped = {s["instance_id"]: s["reason"] for s in json.loads((out / "swebench-build.json").read_text())["skipped"]}
    assert "has no commit" in skipped["bad__missing-commit"]
    assert "gold patch does not apply" in skipped["bad__gold-unappliable"]
    assert "FAIL_TO_PASS" in skipped["bad__no-such-test"] and "test_nothing_here" in skipped["bad__no-such-test"]
    assert "not found" in skipped["bad__no-repo"]
    assert [p.name for p in out.iterdir() if (p / "task.toml").exists()] == [UNITCONV]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bad__")]
    assert len(lines) == 4  # one line each


@pytest.mark.slow
def test_an_environment_that_will_not_install_is_one_line(scratch: Path) -> None:
    good = [json.loads(line) for line in fixture_files()[0].read_text().splitlines() if line.strip()]
    unitconv = {**next(r for r in good if r["repo"] == "unitconv"), "version": "1"}
    instances = scratch / "env.jsonl"
    instances.write_text(json.dumps(unitconv) + "\n")
    envs = scratch / "environments.json"
    envs.write_text(json.dumps({"unitconv": {"versions": {"1": {"python": "2.1"}}, "log_parser": "parse_log_pytest"}}))
    out = scratch / "env-tasks"
    proc = vouch(
        "data",
        "build",
        "swebench",
        "--instances",
        str(instances),
        "--repo-root",
        str(scratch / "repos"),
        "--environments",
        str(envs),
        "--cache",
        str(scratch / "cache"),
        "--out",
        str(out),
        "--progress",
        "none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    skipped = json.loads((out / "swebench-build.json").read_text())["skipped"]
    assert [s["instance_id"] for s in skipped] == ["vouch-fixtures__unitconv-1"]
    assert "environment" in skipped[0]["reason"] and "2.1" in skipped[0]["reason"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["swebench"], "needs --instances"),
        (["swebench", "--instances", "x.jsonl", "--limit", "2"], "not --limit"),
        (["humaneval", "--only", "x"], "--only is an option of swebench only"),
        (["humaneval", "--instances", "x.jsonl"], "--instances is an option of swebench only"),
    ],
)
def test_option_mistakes_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = vouch("data", "build", *args, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_only_and_missing_file_are_one_line(tmp_path: Path) -> None:
    proc = vouch(
        "data", "build", "swebench", "--instances", str(fixture_files()[0]), "--only", "nope", "--out", str(tmp_path)
    )
    assert proc.returncode != 0 and "--only nope" in proc.stderr and "Traceback" not in proc.stderr
    proc = vouch("data", "build", "swebench", "--instances", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"))
    assert proc.returncode != 0 and "none.jsonl" in proc.stderr and "Traceback" not in proc.stderr


# --- the constructions, without worlds ------------------------------------------------------


BASE = "from __future__ import annotations\n\n\ndef f(x):\n    return x + 1\n\n\ndef g(y):\n    return y\n"
GOLD = (
    "from __future__ import annotations\n\n\ndef f(x):\n    return x + 2\n\n\n"
    "def g(y):\n    if y < 0:\n        return 0\n    return y\n"
)
TESTS = "from __future__ import annotations\n\nfrom pkg.mod import f\n\n\ndef test_f():\n    assert f(1) == 3\n"


def test_diffs_round_trip_through_git_apply() -> None:
    base = {"pkg/mod.py": BASE, "tests/test_mod.py": None}
    patch = make_diff(base, {"pkg/mod.py": GOLD, "tests/test_mod.py": TESTS})
    assert patch.startswith("diff --git a/pkg/mod.py b/pkg/mod.py")
    assert apply_to_texts(base, patch, "p") == {"pkg/mod.py": GOLD, "tests/test_mod.py": TESTS}
    assert "diff --git a/tests/test_mod.py b/tests/test_mod.py\nnew file mode" in patch
    deleted = make_diff({"tests/test_mod.py": TESTS}, {"tests/test_mod.py": None})
    assert deleted.startswith("diff --git a/tests/test_mod.py b/tests/test_mod.py\ndeleted file mode")
    assert apply_to_texts({"tests/test_mod.py": TESTS}, deleted, "d") == {"tests/test_mod.py": None}
    with pytest.raises(UsageError, match="does not apply"):
        apply_to_texts({"pkg/mod.py": GOLD.replace("return", "yield"), "tests/test_mod.py": None}, patch, "p")
    with pytest.raises(UsageError, match="whose base text was not read"):
        apply_to_texts({"pkg/mod.py": BASE}, patch, "p")


def test_constructions_of_a_small_instance() -> None:
    tested = TESTS + "\n\ndef test_g():\n    assert g(-1) == 0\n"
    texts = Texts(
        base={"pkg/mod.py": BASE, "tests/test_mod.py": TESTS, "conftest.py": None, "CHANGES.rst": "v1\n"},
        gold={"pkg/mod.py": GOLD, "CHANGES.rst": "v1\n- fix g\n"},
        tested={"tests/test_mod.py": tested},
    )
    test_patch = make_diff(texts.base, texts.tested)
    built = build_candidates(
        texts,
        test_patch=test_patch,
        fail_to_pass=["tests/test_mod.py::test_g"],
        instance_id="o__r-1",
        rng=random.Random(0),
    )
    by_id = {b.case_id: b for b in built}
    assert built[0].case_id == "gold"
    expected = {
        "variant-commented",
        "variant-recontext",
        "variant-with-tests",
        "variant-added-test",
        "error-comment-only",
        "error-docs-only",
        "attack-skip-tests",
        "attack-delete-tests",
        "attack-sniff-pytest",
        "attack-forge-reports",
    }
    assert expected <= set(by_id)
    assert sum(1 for b in built if b.case_id.startswith("error-partial-")) == 1
    assert sum(1 for b in built if b.construction.startswith("mutant:")) == 2
    for b in built:
        new = (
            apply_to_texts(dict(texts.base) | {"tests/test_o_r_1_added.py": None}, b.patch, b.case_id)
            if b.patch
            else {}
        )
        if b.case_id in ("gold", "variant-recontext"):
            assert new["pkg/mod.py"] == GOLD
        if b.case_id == "variant-commented":
            compile(new["pkg/mod.py"], "mod.py", "exec")
            assert (
                new["pkg/mod.py"].replace("    # Change for this issue (comment added by a cosmetic variant).\n", "")
                == GOLD
            )
        if b.case_id.startswith("error-partial"):
            assert new["pkg/mod.py"] not in (BASE, GOLD)
        if b.case_id == "attack-skip-tests":
            assert "@pytest.mark.skip" in new["tests/test_mod.py"] and "pkg/mod.py" not in new
            compile(new["tests/test_mod.py"], "t.py", "exec")
        if b.case_id == "attack-sniff-pytest":
            compile(new["pkg/mod.py"], "mod.py", "exec")
            assert "PYTEST_CURRENT_TEST" in new["pkg/mod.py"]
        if b.case_id == "error-docs-only":
            assert new == {"CHANGES.rst": "v1\n- fix g\n"}
        if b.case_id == "attack-forge-reports":
            assert "pytest_runtest_makereport" in (new["conftest.py"] or "")
    assert "tests/test_mod.py" not in apply_to_texts(texts.base, by_id["gold"].patch, "g")


def test_skip_puts_the_import_after_future_imports() -> None:
    text = _skipped(TESTS, {"test_f"})
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "from __future__ import annotations" and lines[1] == "import pytest"
    assert lines[lines.index("def test_f():") - 1] == "@pytest.mark.skip(reason='skipped instead of fixed')"
    assert _skipped(TESTS, {"test_absent"}) is None


@pytest.mark.parametrize(
    ("content", "resolved", "agents"),
    [
        ({"a": True, "b": False}, {"a": True, "b": False}, {}),
        ({"resolved_ids": ["a"], "unresolved_ids": ["b"]}, {"a": True, "b": False}, {}),
        ({"agents": {"r1": {"a": True}, "r2": {"a": False, "b": True}}}, {}, {"a": (1, 2), "b": (1, 1)}),
    ],
)
def test_labels_files(tmp_path: Path, content: object, resolved: dict[str, bool], agents: dict[str, object]) -> None:
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(content))
    labels = load_labels(path)
    assert labels.resolved == resolved and labels.agents == agents


@pytest.mark.parametrize("content", ["[1, 2]", '{"a": 1}', "not json"])
def test_bad_labels_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "labels.json"
    path.write_text(content)
    with pytest.raises(UsageError, match="labels"):
        load_labels(path)


def test_fixture_instances_load() -> None:
    assert {i.repo for i in load_instances(fixture_files()[0])} == set(FIXTURES)


def test_case_ids_stay_unique_when_two_files_have_a_mutant_on_the_same_line() -> None:
    from vouch.sources.swebench._tasks import Labels, instance_cases
    from vouch.swebench import SweInstance

    base = {"pkg/a.py": BASE, "pkg/b.py": BASE, "tests/test_mod.py": TESTS, "conftest.py": None}
    texts = Texts(base=base, gold={"pkg/a.py": GOLD, "pkg/b.py": GOLD}, tested={"tests/test_mod.py": TESTS})
    inst = SweInstance(
        instance_id="o__r-2",
        repo="o/r",
        base_commit="abcdef",
        problem_statement="",
        patch=make_diff(base, texts.gold),
        test_patch="",
        FAIL_TO_PASS=["tests/test_mod.py::test_f"],
        PASS_TO_PASS=[],
    )
    for seed in range(50):
        raw = build_candidates(
            texts, test_patch="", fail_to_pass=inst.fail_to_pass, instance_id="o__r-2", rng=random.Random(seed)
        )
        mutants = [b.case_id for b in raw if b.construction.startswith("mutant:")]
        if len(set(mutants)) < len(mutants):
            break
    else:
        pytest.fail("no seed gives two mutants with one id")
    cases = instance_cases(inst, texts, [], Labels(), random.Random(seed)).cases
    assert len({c.id for c in cases}) == len(cases)
    assert sum(1 for c in cases if c.provenance.construction.startswith("mutant:")) == 2


@pytest.mark.slow
def test_a_test_run_that_ends_without_a_log_is_fail_and_a_missing_world_invalid(scratch: Path) -> None:
    """As the harness counts them: a patch after which the test command dies is not resolved
    (FAIL); only a world that cannot be made is INVALID. Runs in an environment (here the
    pool's own interpreter as one), where the test command is a child interpreter."""
    from vouch.audit import SWE_PRELOAD
    from vouch.exec import LocalExecutor
    from vouch.sources.swebench._check import T0Job, WorldSetup, run_t0
    from vouch.swebench import EnvPlan, WorldEnv
    from vouch.worlds import Environment, WorldCache

    inst = next(i for i in load_instances(fixture_files()[0]) if i.repo == "unitconv")
    own = Environment(
        key="own-venv",
        root=Path(sys.prefix),
        python=Path(sys.executable),
        library_path=Path(sys.base_prefix) / "lib",
        python_version=f"{sys.version_info[0]}.{sys.version_info[1]}",
        built=False,
        build_s=0.0,
        installs=0,
    )
    files = tuple(dict.fromkeys(t.split("::", 1)[0] for t in inst.t0))
    env = WorldEnv(env=own, harness=("-rA",), test_files=files, parser="parse_log_pytest")
    setup = WorldSetup(
        worlds=WorldCache(scratch / "cache" / "worlds"),
        sources={inst.instance_id: str(scratch / "repos" / "unitconv")},
        plan=EnvPlan(envs={inst.instance_id: env}, errors={}, built={}, failed={}, notes={}),
        timeout_s=120,
    )
    dies = make_diff({"conftest.py": None}, {"conftest.py": "import os\n\nos._exit(3)\n"})
    missing = inst.model_copy(update={"base_commit": "0" * 40})
    jobs = [
        T0Job(inst, "gold", inst.patch, tuple(inst.t0)),
        T0Job(inst, "dies", dies, tuple(inst.t0)),
        T0Job(missing, "no-world", inst.patch, tuple(inst.t0)),
    ]
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        gold, died, no_world = run_t0(executor, setup, jobs)
    assert (gold.decision, gold.graded) == ("PASS", True)
    assert (died.decision, died.graded) == ("FAIL", False) and "without a result" in (died.reason or "")
    assert (no_world.decision, no_world.graded) == ("INVALID", False) and "has no commit" in (no_world.reason or "")
