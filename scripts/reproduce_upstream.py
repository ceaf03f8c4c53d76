"""Reproduce V4V's findings about upstream benchmarks with the benchmarks' own code.

vouch's reference verifiers port or wrap a benchmark's checks. A finding about the benchmark (its
check accepts a candidate that violates the instruction, or rejects a valid one) stands only when
the benchmark's own code, called the way the benchmark calls it, gives the same answer. This script
reads vouch's cases as data and judges them with:

* AgentDojo: ``TaskSuite.run_task_with_pipeline`` (the function AgentDojo's benchmark runs for every
  task) with a pipeline element that replays the case's calls through AgentDojo's own
  ``FunctionsRuntime``, once without an injection task (utility) and once per injection task
  (whether the attacker's goal was reached). Nothing of vouch runs in the judgement.
* BFCL: ``bfcl_eval``'s ``ast_checker`` on the case's calls, with the entry's function descriptions
  and possible answer from bfcl-eval's own data files.
* ACEBench: its ``eval_main.py`` functions (``normal_single_turn_eval``, ``normal_multi_turn_eval``,
  ``special_eval``), one case at a time, from a checkout of ACEBench at the pinned commit that the
  user names (``--acebench-repo``; vouch ships none of its code), on the case written as ACEBench's
  raw model output (``[name(key=value, ...)]``, or the text for the special categories) with the
  case's question, functions and possible answer from the registered data files.
* tau2-bench: ``evaluate_simulation`` (what tau2's runner calls for every simulation, evaluation
  type ``all``) on a simulation whose messages are the case's calls, each answered by the
  domain's own ``Environment`` from tau2's registry, set up with the task's initial state as
  tau2's orchestrator does, then the case's final answer.

Usage:
    python scripts/reproduce_upstream.py agentdojo TASKS_DIR [--show N]
    python scripts/reproduce_upstream.py bfcl TASKS_DIR [--show N]
    python scripts/reproduce_upstream.py tau2 TASKS_DIR [--show N]
    python scripts/reproduce_upstream.py acebench TASKS_DIR --acebench-repo CHECKOUT [--show N]

``TASKS_DIR`` is a ``vouch data build`` output (its ``manifest.json`` lists the cases the reference
verifier decided against their labels). Exit code 0; the findings are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import types
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _cases(tasks_dir: Path, source: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(task.toml as data, case) for every case of every task of ``source`` under ``tasks_dir``."""
    import tomllib

    out = []
    for toml in sorted(tasks_dir.rglob("task.toml")):
        spec = tomllib.loads(toml.read_text())
        if spec["source"]["benchmark"] != source:
            continue
        for path in sorted((toml.parent / "cases").glob("*.json")):
            out.append((spec, json.loads(path.read_text())))
    return out


# --- AgentDojo ----------------------------------------------------------------------------------


def _replayer(calls: Sequence[dict[str, Any]], answer: str) -> Any:
    """An AgentDojo pipeline element that makes the given calls, then gives the given answer."""
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.types import ChatAssistantMessage, ChatToolResultMessage, text_content_block_from_string

    class Replay(BasePipelineElement):
        def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
            new: list[Any] = []
            for i, call in enumerate(calls):
                tool_call = FunctionCall(function=call["function"], args=call.get("args") or {}, id=f"c{i}")
                new.append(
                    ChatAssistantMessage(
                        role="assistant", tool_calls=[tool_call], content=[text_content_block_from_string("")]
                    )
                )
                result, error = runtime.run_function(env, tool_call.function, tool_call.args)
                new.append(
                    ChatToolResultMessage(
                        role="tool",
                        content=[text_content_block_from_string(tool_result_to_str(result))],
                        tool_call=tool_call,
                        tool_call_id=tool_call.id,
                        error=error,
                    )
                )
            final = ChatAssistantMessage(
                role="assistant", content=[text_content_block_from_string(answer)], tool_calls=None
            )
            return query, runtime, env, [*messages, *new, final], extra_args or {}

    return Replay()


def agentdojo_judgement(spec: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """AgentDojo's own utility and per-injection security for a case's candidate. A task of the
    injection subset (``injection:<suite>/<version>``) is its injection task run as AgentDojo
    runs one on its own (its GOAL as the prompt, its ``security`` as the task's result)."""
    from agentdojo.task_suite.load_suites import get_suite

    subset = spec["source"]["subset"]
    suite_name, version = subset.removeprefix("injection:").split("/")
    suite = get_suite(version, suite_name)
    calls, answer = candidate.get("calls") or [], candidate.get("final_answer") or ""
    if subset.startswith("injection:"):
        goal = suite.injection_tasks[spec["source"]["original_id"]]
        reached, _ = suite.run_task_with_pipeline(_replayer(calls, answer), goal, injection_task=None, injections={})
        return {"utility": bool(reached), "injection_goals_reached": [], "accepts": bool(reached)}
    task = suite.user_tasks[spec["source"]["original_id"]]
    utility, _ = suite.run_task_with_pipeline(_replayer(calls, answer), task, injection_task=None, injections={})
    reached = []
    for name, injection in sorted(suite.injection_tasks.items()):
        _, goal = suite.run_task_with_pipeline(_replayer(calls, answer), task, injection_task=injection, injections={})
        if goal:
            reached.append(name)
    return {"utility": bool(utility), "injection_goals_reached": reached, "accepts": bool(utility) and not reached}


def reproduce_agentdojo(tasks_dir: Path, show: int) -> None:
    manifest = json.loads((tasks_dir / "manifest.json").read_text())
    flagged = {(f["task_id"], f["case_id"]) for f in manifest.get("flagged", [])}
    cases = [(s, c) for s, c in _cases(tasks_dir, "agentdojo") if (s["id"], c["id"]) in flagged]
    reproduced: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    for spec, case in cases:
        verdict = agentdojo_judgement(spec, case["candidate"])
        wrong = verdict["accepts"] if case["label"] == "negative" else not verdict["accepts"]
        if wrong:
            reproduced.append((spec, case, verdict))
    print(f"AgentDojo {manifest['options'].get('suite_version', 'v1.2.2')}: {len(cases)} cases where vouch's reference")
    print("verifier disagrees with the label; AgentDojo's own run_task_with_pipeline agrees with vouch's verifier on")
    print(f"{len(reproduced)} of them (its checks accept a negative / reject a positive).")
    by_kind = Counter((c["label"], c["subcategory"]) for _, c, _ in reproduced)
    for (label, sub), n in by_kind.most_common():
        print(f"  {n:4d}  {label} {sub}")
    seen_tasks: set[str] = set()
    for spec, case, verdict in reproduced:
        user_task = f"{spec['source']['subset']} {spec['source']['original_id']}"
        if user_task in seen_tasks or len(seen_tasks) >= show:
            continue
        seen_tasks.add(user_task)
        print(
            f"- {user_task}, case {case['id']} ({case['label']}): utility={verdict['utility']}, "
            f"injection goals reached={verdict['injection_goals_reached'] or 'none'}"
        )
        print(f"    why it is {case['label']}: {case['rationale']}")


# --- BFCL ---------------------------------------------------------------------------------------


def _bfcl_checker() -> Any:
    """bfcl-eval's ``ast_checker``. Its ``constants.model_config`` imports every model handler
    (and their SDKs); the checker reads it only to decide whether a model writes ``.`` in function
    names as ``_``. The script gives it a one-entry table for a model that keeps dots."""
    if "bfcl_eval.constants.model_config" not in sys.modules:
        config = types.ModuleType("bfcl_eval.constants.model_config")
        config.MODEL_CONFIG_MAPPING = {"vouch/replay": types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
        sys.modules["bfcl_eval.constants.model_config"] = config
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker


def bfcl_judgement(spec: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """bfcl-eval's own verdict on a case's calls."""
    from bfcl_eval.constants.enums import Language

    from vouch.sources.bfcl._source import load_subset  # reads bfcl-eval's data files, nothing more

    subset, original = spec["source"]["subset"], spec["source"]["original_id"]
    entry = next(e for e in load_subset(subset) if e.original_id == original)
    output = [{c["function"]: c.get("args") or {}} for c in candidate.get("calls") or []]
    try:
        result = _bfcl_checker()(entry.functions, output, entry.ground_truth, Language.PYTHON, subset, "vouch_replay")
    except Exception as exc:  # noqa: BLE001 - a crash of the checker is a finding too
        return {"valid": False, "error": [f"checker raised {type(exc).__name__}: {exc}"]}
    return {"valid": bool(result["valid"]), "error": result.get("error")}


def reproduce_bfcl(tasks_dir: Path, show: int) -> None:
    cases = _cases(tasks_dir, "bfcl")
    wrong: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    for spec, case in cases:
        verdict = bfcl_judgement(spec, case["candidate"])
        if verdict["valid"] != (case["label"] == "positive"):
            wrong.append((spec, case, verdict))
    tasks = {s["id"] for s, _ in cases}
    print(f"BFCL: {len(cases)} cases of {len(tasks)} tasks judged by bfcl-eval's own ast_checker;")
    print(f"it disagrees with the label on {len(wrong)} cases of {len({s['id'] for s, _, _ in wrong})} tasks.")
    by_kind = Counter((c["label"], c["provenance"]["construction"]) for _, c, _ in wrong)
    for (label, construction), n in by_kind.most_common():
        print(f"  {n:4d}  {label} {construction}")
    shown: set[str] = set()
    for spec, case, verdict in wrong:
        key = case["provenance"]["construction"]
        if key in shown or len(shown) >= show:
            continue
        shown.add(key)
        print(f"- {spec['id']}, case {case['id']} ({case['label']}): bfcl valid={verdict['valid']} {verdict['error']}")
        print(f"    why it is {case['label']}: {case['rationale']}")


def bfcl_default_omissions(tasks_dir: Path) -> list[tuple[str, str, Any]]:
    """(task id, parameter, default) where bfcl-eval rejects the gold with an argument left out
    whose value is the schema's own default: the call means the same, the answer key lacks ``""``."""
    import tomllib

    found = []
    for toml in sorted(tasks_dir.rglob("task.toml")):
        spec = tomllib.loads(toml.read_text())
        if spec["source"]["benchmark"] != "bfcl":
            continue
        gold = json.loads((toml.parent / "cases" / "gold.json").read_text())["candidate"]
        tools = {t["name"]: t for t in json.loads((toml.parent / "environment" / "tools.json").read_text())}
        for i, call in enumerate(gold["calls"]):
            schema = (tools.get(call["function"]) or {}).get("parameters") or {}
            for name, value in sorted(call["args"].items()):
                prop = (schema.get("properties") or {}).get(name) or {}
                if name in (schema.get("required") or []) or "default" not in prop or prop["default"] != value:
                    continue
                args = {k: v for k, v in call["args"].items() if k != name}
                omitted = {**gold, "calls": [*gold["calls"][:i], {**call, "args": args}, *gold["calls"][i + 1 :]]}
                if not bfcl_judgement(spec, omitted)["valid"]:
                    found.append((spec["id"], f"{call['function']}.{name}", value))
    return found


# --- tau2-bench ---------------------------------------------------------------------------------


def _tau2_evaluator() -> Any:
    """tau2's ``evaluate_simulation`` and registry. The evaluator's module imports tau2's LLM
    utilities (for its natural-language assertions, which evaluation type ``all`` never runs), and
    those import ``litellm``, which ``vouch[tau2]`` does not install: the script gives it an empty
    stand-in that nothing here calls."""

    class _Absent(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    for name in ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main"):
        sys.modules.setdefault(name, _Absent(name))
    from loguru import logger

    logger.disable("tau2")  # its notes on loading, and a debug line per tool response
    with contextlib.redirect_stdout(io.StringIO()):  # the registry prints its contents when loaded
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
        from tau2.registry import registry
    return evaluate_simulation, EvaluationType.ALL, registry


def tau2_judgement(spec: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """tau2's own reward for a case's calls and final answer."""
    evaluate_simulation, evaluation_type, registry = _tau2_evaluator()
    from tau2.data_model.message import AssistantMessage, ToolCall
    from tau2.data_model.simulation import SimulationRun, TerminationReason

    domain = spec["source"]["subset"].split("/")[0]
    task = next(t for t in registry.get_tasks_loader(domain)(None) if t.id == spec["source"]["original_id"])
    env = registry.get_env_constructor(domain)()
    state = task.initial_state
    if state is not None and (state.initialization_data or state.initialization_actions):
        env.set_state(state.initialization_data, state.initialization_actions, [])
    messages: list[Any] = []
    for i, call in enumerate(candidate.get("calls") or []):
        tool_call = ToolCall(id=f"call_{i}", name=call["function"], arguments=call.get("args") or {})
        messages += [AssistantMessage(role="assistant", tool_calls=[tool_call]), env.get_response(tool_call)]
    if (candidate.get("final_answer") or "").strip():
        messages.append(AssistantMessage(role="assistant", content=candidate["final_answer"]))
    simulation = SimulationRun(
        id="vouch-replay",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.AGENT_STOP,
        messages=messages,
    )
    info = evaluate_simulation(simulation, task, evaluation_type, solo_mode=False, domain=domain)
    return {"reward": info.reward, "accepts": info.reward == 1.0}


def reproduce_tau2(tasks_dir: Path, show: int) -> None:
    manifest = json.loads((tasks_dir / "manifest.json").read_text())
    flagged = {(f["task_id"], f["case_id"]) for f in manifest.get("flagged", [])}
    cases = [(s, c) for s, c in _cases(tasks_dir, "tau2") if (s["id"], c["id"]) in flagged]
    reproduced = []
    for spec, case in cases:
        verdict = tau2_judgement(spec, case["candidate"])
        if verdict["accepts"] != (case["label"] == "positive"):
            reproduced.append((spec, case, verdict))
    print(f"tau2-bench: {len(cases)} cases where vouch's reference verifier (tau2's evaluator) disagrees with")
    print(f"the label; tau2's own evaluate_simulation agrees with vouch's verifier on {len(reproduced)} of them.")
    _by_subcategory(reproduced, show, lambda verdict: f"tau2 reward {verdict['reward']}")


def _by_subcategory(found: list[tuple[dict[str, Any], dict[str, Any], Any]], show: int, said: Any) -> None:
    """Counts of (label, subcategory), then one example of each of the first ``show`` subcategories."""
    for (label, sub), n in Counter((c["label"], c["subcategory"]) for _, c, _ in found).most_common():
        print(f"  {n:4d}  {label} {sub}")
    shown: set[str] = set()
    for spec, case, verdict in found:
        if case["subcategory"] in shown or len(shown) >= show:
            continue
        shown.add(case["subcategory"])
        print(f"- {spec['id']}, case {case['id']} ({case['label']}): {said(verdict)}")
        print(f"    why it is {case['label']}: {case['rationale']}")


# --- ACEBench -----------------------------------------------------------------------------------


def _acebench_eval(repo: Path, scratch: Path) -> Any:
    """ACEBench's ``eval_main`` module from a checkout. Its score files go to ``scratch``; its
    spreadsheet export (openpyxl, which vouch does not install) is switched off: the verdict is
    the returned accuracy."""
    if str(repo) not in sys.path:
        sys.path.insert(0, str(repo))
    for name in ("openpyxl", "openpyxl.styles"):
        module = types.ModuleType(name)
        module.Workbook = module.Alignment = object  # type: ignore[attr-defined]
        sys.modules.setdefault(name, module)
    import eval_main  # type: ignore[import-not-found]

    eval_main.OUTPUT_PATH = str(scratch)
    eval_main.convert_result_to_excel = lambda *args, **kwargs: None
    return eval_main


def _acebench_raw(candidate: dict[str, Any]) -> str:
    """A candidate's calls as ACEBench's raw model output, ``[name(key=value, ...)]``."""
    calls = [
        f"{c['function']}({', '.join(f'{k}={v!r}' for k, v in (c.get('args') or {}).items())})"
        for c in candidate.get("calls") or []
    ]
    return "[" + ", ".join(calls) + "]"


def acebench_judgement(eval_main: Any, rows: dict[str, Any], spec: dict[str, Any], candidate: dict[str, Any]) -> bool:
    """ACEBench's own verdict on a case: its evaluation of one model result for the case's entry."""
    category, original = spec["source"]["subset"], spec["source"]["original_id"]
    prompt, answer = rows[original]
    with contextlib.redirect_stdout(io.StringIO()):
        if category.startswith("special_"):
            result = [{"id": original, "result": candidate.get("final_answer") or ""}]
            return bool(eval_main.special_eval(result, [prompt], [answer], category, "vouch", None) == 1)
        result = [{"id": original, "result": _acebench_raw(candidate)}]
        if "multi_turn" in category:
            return bool(eval_main.normal_multi_turn_eval(result, [prompt], [answer], category, "vouch", None) == 1)
        return bool(eval_main.normal_single_turn_eval(result, [prompt], [answer], category, "vouch", None) == 1)


def reproduce_acebench(tasks_dir: Path, repo: Path | None, show: int) -> int:
    import tempfile

    from vouch import corpora  # finds the registered data files, nothing more

    if repo is None or not (repo / "eval_main.py").is_file():
        print("error: acebench needs --acebench-repo, a checkout of ACEBench (its eval_main.py)", file=sys.stderr)
        return 2
    cases = _cases(tasks_dir, "acebench")
    rows: dict[str, Any] = {}
    for category in sorted({s["source"]["subset"] for s, _ in cases}):
        data = corpora.resolve(corpora.acebench_corpus(category))
        answers = corpora.resolve(corpora.acebench_corpus(category, answer=True))
        questions = {r["id"]: r for r in map(json.loads, data.read_text().splitlines()) if r}
        for row in map(json.loads, answers.read_text().splitlines()):
            if row.get("id") in questions:
                rows[row["id"]] = (questions[row["id"]], row)
    wrong = []
    with tempfile.TemporaryDirectory() as scratch:
        eval_main = _acebench_eval(repo.resolve(), Path(scratch))
        for spec, case in cases:
            accepts = acebench_judgement(eval_main, rows, spec, case["candidate"])
            if accepts != (case["label"] == "positive"):
                wrong.append((spec, case, accepts))
    tasks = {s["id"] for s, _ in cases}
    print(f"ACEBench: {len(cases)} cases of {len(tasks)} tasks judged by ACEBench's own eval_main;")
    print(f"it disagrees with the label on {len(wrong)} cases of {len({s['id'] for s, _, _ in wrong})} tasks.")
    golds = sorted(s["id"] for s, c, _ in wrong if c["category"] == "gold")
    print(f"it rejects the gold of {len(golds)} tasks" + (f", e.g. {', '.join(golds[:show])}" if golds else ""))
    _by_subcategory(wrong, show, lambda accepts: f"ACEBench {'accepts' if accepts else 'rejects'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", choices=["agentdojo", "bfcl", "tau2", "acebench"])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--show", type=int, default=5, help="Examples to print.")
    parser.add_argument("--acebench-repo", type=Path, default=None, help="A checkout of ACEBench (acebench).")
    args = parser.parse_args(argv)
    if not (args.tasks / "manifest.json").is_file():
        print(f"error: {args.tasks} has no manifest.json; give a `vouch data build` output", file=sys.stderr)
        return 2
    if args.source == "agentdojo":
        reproduce_agentdojo(args.tasks, args.show)
    elif args.source == "tau2":
        reproduce_tau2(args.tasks, args.show)
    elif args.source == "acebench":
        return reproduce_acebench(args.tasks, args.acebench_repo, args.show)
    else:
        reproduce_bfcl(args.tasks, args.show)
        omissions = bfcl_default_omissions(args.tasks)
        print(
            f"bfcl-eval rejects the gold with an optional argument left out whose value is the schema's default "
            f'(same call, answer key without "") on {len(omissions)} arguments of '
            f"{len({t for t, _, _ in omissions})} tasks:"
        )
        for task_id, name, value in omissions[: args.show]:
            print(f"- {task_id}: {name} (default {value!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
