"""SWE-bench's machinery, shared by the task builder (``sources``) and the audit's repository form.

Instances and predictions in SWE-bench's format, the per-repository environment specs, the
harness's reading and grading of test logs, the environments each instance's worlds run in,
and T0 run through the engine as the harness runs it, with its reproduction of the harness's
results. It sits below both of its users, so neither imports the other for it.
"""

from __future__ import annotations

from vouch.swebench._env import EnvPlan, RepoLocator, plan_environments, siblings_of
from vouch.swebench._harness import (
    HARNESS_SCHEMA_VERSION,
    HarnessReproduction,
    InstanceReproduction,
    classify,
    environment_records,
    reproduce_harness,
    summarise_reproduction,
)
from vouch.swebench._instances import (
    FIXTURES,
    SweInstance,
    SweTrial,
    fixture_dir,
    fixture_files,
    load_agents,
    load_instances,
    load_predictions,
    materialise_fixture_repo,
)
from vouch.swebench._logs import Grade, grade, parse_log, parser_for
from vouch.swebench._runner import (
    CALLS_PER_RUN,
    HOST_CGROUPS,
    CallProbe,
    Runner,
    WorldEnv,
    graded_t0,
    t0_result,
    unwrap,
)
from vouch.swebench._specs import (
    EnvSpec,
    RepoEnvs,
    harness_arguments,
    harness_options,
    load_environments,
    spec_recipe,
    touched_test_files,
)

__all__ = [
    "CALLS_PER_RUN",
    "FIXTURES",
    "HARNESS_SCHEMA_VERSION",
    "HOST_CGROUPS",
    "CallProbe",
    "EnvPlan",
    "EnvSpec",
    "Grade",
    "HarnessReproduction",
    "InstanceReproduction",
    "RepoEnvs",
    "RepoLocator",
    "Runner",
    "SweInstance",
    "SweTrial",
    "WorldEnv",
    "classify",
    "environment_records",
    "fixture_dir",
    "fixture_files",
    "grade",
    "graded_t0",
    "harness_arguments",
    "harness_options",
    "load_agents",
    "load_environments",
    "load_instances",
    "load_predictions",
    "materialise_fixture_repo",
    "parse_log",
    "parser_for",
    "plan_environments",
    "reproduce_harness",
    "siblings_of",
    "spec_recipe",
    "summarise_reproduction",
    "t0_result",
    "touched_test_files",
    "unwrap",
]
