"""SWE-bench's per-repo/version environment specs, and the recipe vouch builds from each.

``environments.json`` holds, per repository, ``log_parser``, ``reqs_paths``, ``env_yml_paths``
and ``versions``: the spec dict of each version (``python``, ``packages``, ``pip_packages``,
``install``, ``test_cmd``, ``pre_install``), copied from swebench's
``MAP_REPO_VERSION_TO_SPECS_PY``. ``spec_recipe`` turns one spec into an ``EnvRecipe``:

- ``packages: requirements.txt``: the repo's ``reqs_paths`` file, read from the install commit;
- ``packages: environment.yml`` (xarray): a conda file, mapped to pip (names that differ are
  renamed, conda-only or non-Python packages are left out, each listed in the recipe's notes),
  installed in one pip call together with the spec's pinned ``pip_packages`` so the pins hold;
- any other ``packages`` string: pip requirement specifiers;
- ``install``: ``pip install -e .[extras]`` becomes ``pip install .[extras]`` (non-editable: the
  world's source is imported from ``PYTHONPATH`` instead, see ``vouch.worlds._env``).

The evaluation command is ``test_cmd`` followed by the files the test patch touches, less
non-test extensions (swebench's ``get_test_directives``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import UsageError
from vouch.worlds import EnvRecipe, git, parse_patch

__all__ = [
    "REPO_SERVICES",
    "EnvSpec",
    "RepoEnvs",
    "harness_arguments",
    "harness_options",
    "load_environments",
    "spec_recipe",
    "touched_test_files",
    "touches_packaging",
]

_NON_TEST_EXTENSIONS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")

# conda name -> pip name, for the environment.yml packages whose names differ.
_CONDA_TO_PIP = {
    "matplotlib-base": "matplotlib",
    "dask-core": "dask",
    "netcdf4": "netCDF4",
    "pytables": "tables",
}
# Upper bounds for unpinned packages whose later releases break tests that SWE-bench's images
# (environment.yml solved when they were built) pass with the gold patch: the image's release
# line, not the newest. sparse 0.16 (2025) needs the ``shape`` xarray's ``test_from_sparse``
# does not give (xarray-6938); sparse 0.15 passes it, as the harness's image did.
_IMAGE_BOUNDS = {
    "sparse": "<0.16",
}
# Local services a repository's tests can be pointed at (vouch.worlds._services): requests'
# test_requests.py reads HTTPBIN_URL (httpbin.org by default), as its later suite used
# pytest-httpbin. The harness reached httpbin.org over the network; vouch's runs have none.
REPO_SERVICES = {
    "psf/requests": ("httpbin",),
}
# conda packages with no pip wheel for Linux, C libraries pip wheels bundle, or tools no test
# needs: left out (the recipe's notes list each one left out).
_CONDA_ONLY = {
    "cdms2": "conda-only (no pip distribution)",
    "hdf5": "a C library (the h5py and netCDF4 wheels bundle it)",
    "iris": "scitools-iris needs conda's binary stack (udunits2)",
    "cartopy": "needs GEOS/PROJ system libraries",
    "cfgrib": "needs the eccodes C library",
    "pseudonetcdf": "unmaintained, no wheel",
    "pynio": "conda-only",
    "pip": "pip itself",
    "pre-commit": "a git-hook tool, no test imports it",
    "python": "the interpreter comes from the spec's python",
}


class EnvSpec(BaseModel):
    """One repo/version's spec, as swebench defines it (unknown keys kept, ignored)."""

    model_config = ConfigDict(extra="allow")

    python: str = Field(description="Python version, major.minor.")
    packages: str | None = Field(default=None, description="requirements.txt, environment.yml or pip specifiers.")
    pip_packages: list[str] = Field(default_factory=list, description="Pinned pip requirement specifiers.")
    install: str = Field(default="python -m pip install .", description="How the repository itself is installed.")
    test_cmd: str = Field(default="pytest -rA", description="The test command; the test files are appended.")
    pre_install: list[str] = Field(default_factory=list, description="Shell commands run before the install.")

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class RepoEnvs(BaseModel):
    """One repository's specs."""

    model_config = ConfigDict(extra="ignore")

    reqs_paths: list[str] | None = Field(default=None, description="Files read when packages is requirements.txt.")
    env_yml_paths: list[str] | None = Field(default=None, description="Files read when packages is environment.yml.")
    log_parser: str | None = Field(default=None, description="swebench's parser name for the repo's test logs.")
    versions: dict[str, EnvSpec] = Field(description="version -> spec.")


def load_environments(path: Path | str) -> dict[str, RepoEnvs]:
    """Read ``environments.json`` (``{"environments": {repo: {...}}}`` or ``{repo: {...}}``).

    Raises:
        UsageError: A missing file, bad JSON or a spec with an ill-typed field.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror}); pass an environments.json") from None
    except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
        raise UsageError(f"{path}: not JSON ({why_not_json(exc)})") from None
    repos = data.get("environments", data) if isinstance(data, dict) else None
    if not isinstance(repos, dict):
        raise UsageError(f"{path}: an object of repo -> spec was expected")
    out: dict[str, RepoEnvs] = {}
    for repo, value in repos.items():
        if not isinstance(value, dict) or "versions" not in value:
            continue
        try:
            out[repo] = RepoEnvs.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"{path}: {repo}: field {where!r}: {first['msg']}") from None
    if not out:
        raise UsageError(f"{path}: no repository specs found")
    return out


def touched_test_files(test_patch: str) -> list[str]:
    """The files a test patch touches, less non-test extensions, in patch order."""
    files = [c.path for c in parse_patch(test_patch) if not c.deleted]
    return [f for f in dict.fromkeys(files) if not f.endswith(_NON_TEST_EXTENSIONS)]


_PACKAGING = re.compile(r"(^|/)(setup\.py|setup\.cfg|pyproject\.toml|requirements[^/]*\.txt)$")


def touches_packaging(patch: str) -> bool:
    """Whether a patch changes what installing the repository pulls in (setup.py, setup.cfg,
    pyproject.toml, requirements files)."""
    return any(_PACKAGING.search(c.path) for c in parse_patch(patch))


def harness_options(spec: EnvSpec) -> list[str]:
    """pytest's options from ``test_cmd``: the words after its program name.

    Raises:
        UsageError: A test_cmd that does not run pytest (vouch reads pytest logs only).
    """
    words = shlex.split(spec.test_cmd)
    if not words or words[0] not in ("pytest", "py.test"):
        raise UsageError(f"test_cmd={spec.test_cmd!r}: only pytest commands are supported")
    return words[1:]


def harness_arguments(spec: EnvSpec, test_patch: str) -> list[str]:
    """The harness's pytest arguments: ``harness_options`` then the test patch's files."""
    return [*harness_options(spec), *touched_test_files(test_patch)]


def _install_args(install: str) -> tuple[str, ...]:
    words = shlex.split(install)
    if "pip" not in words or "install" not in words[words.index("pip") :]:
        raise UsageError(f"install={install!r}: a pip install command was expected")
    args = [w for w in words[words.index("install") + 1 :] if w not in ("-e", "--editable")]
    return tuple(args) or (".",)


def _conda_dependencies(text: str) -> tuple[list[str], list[str]]:
    """(conda specifiers, pip specifiers) of an environment.yml, without a YAML library."""
    conda: list[str] = []
    pip: list[str] = []
    in_deps = False
    in_pip = False
    pip_indent = 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not line.startswith((" ", "-")):
            in_deps = line.strip() == "dependencies:"
            in_pip = False
            continue
        if not in_deps:
            continue
        indent = len(line) - len(line.lstrip())
        item = line.strip()
        if not item.startswith("-"):
            continue
        item = item[1:].strip()
        if in_pip and indent > pip_indent:
            pip.append(item)
            continue
        in_pip = False
        if item == "pip:":
            in_pip, pip_indent = True, indent
            continue
        conda.append(item)
    return conda, pip


def _conda_to_pip(specifier: str) -> tuple[str | None, str | None]:
    """(pip specifier, note) for one conda specifier; None when it is left out."""
    match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", specifier)
    if not match:
        return None, f"{specifier!r}: not a package specifier, left out"
    name, rest = match.groups()
    if name in _CONDA_ONLY:
        return None, f"{name}: left out ({_CONDA_ONLY[name]})"
    rest = rest.strip()
    if rest.startswith("=") and not rest.startswith("=="):
        rest = "==" + rest[1:].rstrip("*").rstrip(".")  # conda's name=1.2 is pip's name==1.2
    pip_name = _CONDA_TO_PIP.get(name, name)
    note = f"{name}: installed as {pip_name}" if pip_name != name else None
    if not rest and name in _IMAGE_BOUNDS:
        rest = _IMAGE_BOUNDS[name]
        note = f"{name}: bounded {rest} (the release line of the harness's image)"
    return pip_name + rest, note


def _show(repo: Path, commit: str, path: str) -> str | None:
    done = git(["show", f"{commit}:{path}"], cwd=repo)
    return done.stdout if done.returncode == 0 else None


def spec_recipe(repo_name: str, version: str, envs: RepoEnvs, repo: Path, commit: str) -> EnvRecipe:
    """The recipe of one repo/version, with files read from ``repo`` at ``commit``.

    Args:
        repo_name: ``owner/name``.
        version: The instance's ``version``.
        envs: That repository's specs.
        repo: A git clone holding ``commit``.
        commit: The commit whose files are read (and later installed).

    Raises:
        UsageError: No spec for the version, or a spec file missing at the commit.
    """
    spec = envs.versions.get(version)
    if spec is None:
        known = ", ".join(sorted(envs.versions))
        raise UsageError(f"{repo_name} has no environment spec for version {version!r}; known: {known}")
    notes: list[str] = []
    packages: list[str] = []
    requirement_files: list[str] = []
    digest = hashlib.sha256(spec.model_dump_json().encode())
    pip_packages = list(spec.pip_packages)
    if spec.packages == "requirements.txt":
        for path in envs.reqs_paths or []:
            text = _show(repo, commit, path)
            if text is not None:
                requirement_files.append(path)
                digest.update(text.encode())
                break
        else:
            raise UsageError(f"{repo_name} {version}: none of {envs.reqs_paths} exists at {commit[:12]}")
    elif spec.packages == "environment.yml":
        for path in envs.env_yml_paths or []:
            text = _show(repo, commit, path)
            if text is not None:
                break
        else:
            raise UsageError(f"{repo_name} {version}: none of {envs.env_yml_paths} exists at {commit[:12]}")
        conda, pip_extra = _conda_dependencies(text)
        pinned = {re.split(r"[<>=!~ \[]", p, maxsplit=1)[0].lower() for p in pip_packages}
        for specifier in conda:
            mapped, note = _conda_to_pip(specifier)
            if note:
                notes.append(note)
            if mapped and re.split(r"[<>=!~ \[]", mapped, maxsplit=1)[0].lower() not in pinned:
                packages.append(mapped)
        packages.extend(p for p in pip_extra if p.lower() not in pinned)
        # One pip call with the pins, so that the resolver keeps them (conda solves the same way).
        packages.extend(pip_packages)
        notes.append(f"{path} (conda) mapped to pip; installed together with the pinned pip_packages")
    elif spec.packages:
        packages.extend(shlex.split(spec.packages))
    sed_only = [c for c in spec.pre_install if c.strip().startswith("sed ")]
    notes.extend(f"pre_install {c!r} not run (only sed edits are)" for c in spec.pre_install if c not in sed_only)
    install = _install_args(spec.install)
    if "-e" in shlex.split(spec.install):
        notes.append("install is non-editable; the world's source comes first on PYTHONPATH in every run")
    return EnvRecipe(
        name=f"{repo_name} {version}",
        python=spec.python,
        requirement_files=tuple(requirement_files),
        packages=tuple(packages),
        pip_packages=tuple(pip_packages),
        pre_install=tuple(sed_only),
        install=install,
        notes=tuple(notes),
        digest=digest.hexdigest()[:16],
    )
