"""Real repositories for the SWE form: where each instance's repo is, and its environment.

``--repo-root DIR`` holds local clones or bare mirrors, found for ``owner/name`` under any of
``DIR/owner+name/repo`` (a mirror directory as vouch's fetch makes it), ``DIR/owner+name``,
``DIR/owner__name`` (SWE-bench's instance-id spelling), ``DIR/owner/name`` and ``DIR/name``;
``--repo-map owner/name=PATH`` names one directly; ``--repo-url TEMPLATE`` (``{repo}``,
``{owner}``, ``{name}``) clones from a URL. A repo that is a path or URL in the instance itself
is used as it is.

With ``--environments environments.json`` each instance gets the environment of its
repo/version (``vouch.worlds.EnvCache``), built once from the newest base commit of that
version among the instances (the closest commit to SWE-bench's ``environment_setup_commit``,
which the data does not carry) and reused by every world of the version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vouch.errors import UsageError, VouchError
from vouch.swebench._instances import SweInstance
from vouch.swebench._runner import WorldEnv
from vouch.swebench._specs import (
    REPO_SERVICES,
    RepoEnvs,
    harness_options,
    spec_recipe,
    touched_test_files,
    touches_packaging,
)
from vouch.worlds import SERVICES, EnvCache, EnvFailure, Environment, WorldCache, available, git

__all__ = ["EnvPlan", "RepoLocator", "plan_environments", "siblings_of"]


@dataclass(frozen=True)
class RepoLocator:
    """Finds an instance's repository: root directory, explicit map, URL template."""

    root: Path | None = None
    mapping: Mapping[str, str] | None = None
    url: str | None = None

    def candidates(self, repo: str) -> list[Path]:
        if self.root is None:
            return []
        owner, _, name = repo.partition("/")
        names = [f"{owner}+{name}/repo", f"{owner}+{name}", f"{owner}__{name}", f"{owner}/{name}", name]
        return [self.root / n for n in names if name] + ([self.root / repo] if not name else [])

    def locate(self, instance: SweInstance) -> str:
        """A local path or git URL for the instance's repo.

        Raises:
            UsageError: Nothing found (the message lists where it looked).
        """
        repo = instance.repo
        if "://" in repo or repo.startswith("git@"):
            return repo
        if self.mapping and repo in self.mapping:
            return str(Path(self.mapping[repo]).resolve()) if "://" not in self.mapping[repo] else self.mapping[repo]
        for path in self.candidates(repo):
            if path.exists():
                return str(path.resolve())
        if Path(repo).exists():
            return str(Path(repo).resolve())
        if self.url is not None:
            owner, _, name = repo.partition("/")
            return self.url.format(repo=repo, owner=owner, name=name)
        looked = ", ".join(str(p) for p in self.candidates(repo)) or "no --repo-root given"
        raise UsageError(
            f"instance {instance.instance_id}: repo {repo!r} not found ({looked}); "
            "give --repo-root DIR, --repo-map REPO=PATH or --repo-url TEMPLATE"
        )


@dataclass(frozen=True)
class EnvPlan:
    """Per instance: its environment (a WorldEnv) or why it has none."""

    envs: dict[str, WorldEnv]
    errors: dict[str, str]
    """instance_id -> one line."""
    built: dict[str, Environment]
    """recipe name -> the environment (built or found)."""
    failed: dict[str, EnvFailure]
    notes: dict[str, tuple[str, ...]]
    """recipe name -> what the recipe mapped or left out."""


EnvProgress = Callable[[str, int, int], None]


def _commit_time(clone: Path, commit: str) -> int:
    done = git(["log", "-1", "--format=%ct", commit], cwd=clone)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def siblings_of(
    instances: Sequence[SweInstance], every: Sequence[SweInstance], locator: RepoLocator
) -> tuple[list[SweInstance], dict[str, str]]:
    """The other instances of the file that share a repo/version with ``instances`` (what
    ``plan_environments`` chooses each version's environment over), and where each one is."""
    versions = {(i.repo, i.version) for i in instances}
    chosen = {i.instance_id for i in instances}
    siblings = [i for i in every if (i.repo, i.version) in versions and i.instance_id not in chosen]
    where: dict[str, str] = {}
    for inst in siblings:
        try:
            where[inst.instance_id] = locator.locate(inst)
        except VouchError:
            pass  # a sibling that cannot be found does not choose the environment
    return siblings, where


def plan_environments(
    instances: Sequence[SweInstance],
    sources: Mapping[str, str],
    specs: Mapping[str, RepoEnvs],
    worlds: WorldCache,
    envs: EnvCache,
    progress: EnvProgress | None = None,
    siblings: Sequence[SweInstance] = (),
) -> EnvPlan:
    """Build (or find) the environment of every repo/version the instances use.

    Args:
        instances: The instances; each needs ``version``.
        sources: instance_id -> repository source (``RepoLocator.locate``).
        specs: ``load_environments`` of environments.json.
        worlds: Where repositories are cloned.
        envs: Where environments are built.
        progress: Called per build step.
        siblings: Other instances of the same file (located in ``sources``): a version's
            environment is installed from the newest base commit of all its instances, and
            covers each of theirs, so that a run on some instances (``--only``) finds the
            environment a run on all of them built.

    Returns:
        The plan; an instance whose environment cannot be had is in ``errors`` with the reason,
        and the others go on.
    """
    groups: dict[tuple[str, str], list[SweInstance]] = {}
    errors: dict[str, str] = {}
    for inst in instances:
        if inst.repo not in specs:
            errors[inst.instance_id] = f"no environment spec for repo {inst.repo!r} in the environments file"
        elif inst.version is None:
            errors[inst.instance_id] = "the instance has no 'version': its environment spec cannot be chosen"
        else:
            groups.setdefault((inst.repo, inst.version), []).append(inst)
    out: dict[str, WorldEnv] = {}
    built: dict[str, Environment] = {}
    failed: dict[str, EnvFailure] = {}
    notes: dict[str, tuple[str, ...]] = {}
    for (repo, version), members in groups.items():
        usable: list[tuple[SweInstance, Path]] = []
        for inst in members:
            try:
                usable.append((inst, worlds.repo(sources[inst.instance_id], inst.base_commit)))
            except UsageError as exc:
                errors[inst.instance_id] = str(exc)
        if not usable:
            continue
        chosen = {inst.instance_id for inst in members}
        kin = list(usable)
        for inst in siblings:
            if (inst.repo, inst.version) == (repo, version) and inst.instance_id not in chosen:
                try:
                    kin.append((inst, worlds.repo(sources[inst.instance_id], inst.base_commit)))
                except (KeyError, UsageError):
                    pass  # a sibling that cannot be had does not choose the environment
        newest, clone = max(kin, key=lambda pair: _commit_time(pair[1], pair[0].base_commit))
        repo_specs = specs[repo]
        try:
            recipe = spec_recipe(repo, version, repo_specs, clone, newest.base_commit)
        except UsageError as exc:
            for inst, _ in usable:
                errors[inst.instance_id] = f"environment {repo} {version}: {exc}"
            continue
        notes[recipe.name] = recipe.notes
        others = [inst.base_commit for inst, _ in kin]
        # The harness's environment is built at a commit after the version's fixes: a dependency
        # a gold patch adds is there (pylint-4661's appdirs), so vouch installs that tree too.
        patched = {inst.base_commit: inst.patch for inst, _ in kin if inst.patch and touches_packaging(inst.patch)}
        env = envs.get(recipe, clone, newest.base_commit, progress, others=others, patched=patched)
        if isinstance(env, EnvFailure):
            failed[recipe.name] = env
            for inst, _ in usable:
                errors[inst.instance_id] = f"environment {recipe.name} failed at {env.step}: {env.reason}"[:600]
            continue
        built[recipe.name] = env
        spec = repo_specs.versions[version]
        services = tuple(name for name in REPO_SERVICES.get(repo, ()) if available(name))
        for name in REPO_SERVICES.get(repo, ()):
            if name not in services:
                notes[recipe.name] = (
                    *notes[recipe.name],
                    f"{name} is not installed (pip install 'vouch[swebench]'): tests that call it fail as offline",
                )
            else:
                notes[recipe.name] = (*notes[recipe.name], f"a local {name} on each run's loopback ({SERVICES[name]})")
        for inst, _ in usable:
            try:
                options = tuple(harness_options(spec))
            except UsageError as exc:
                errors[inst.instance_id] = str(exc)
                continue
            files = tuple(touched_test_files(inst.test_patch))
            if not files:
                errors[inst.instance_id] = "the test patch touches no test file: nothing for the harness to run"
                continue
            own = envs.for_commit(env, recipe, clone, inst.base_commit)  # a layer where the commit pins otherwise
            out[inst.instance_id] = WorldEnv(
                env=own, harness=options, test_files=files, parser=repo_specs.log_parser, services=services
            )
    return EnvPlan(envs=out, errors=errors, built=built, failed=failed, notes=notes)
