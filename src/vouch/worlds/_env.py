"""Environments: one virtualenv per repository/version, built once and cached by its recipe's hash.

A world is a directory of source; the interpreter and the packages its tests import come from
an environment. Every world of one repo/version (SWE-bench's unit of environment) shares it:
the recipe (Python version, requirement files, pinned packages, install command) is hashed,
and the venv under ``<env root>/<hash>`` is built the first time and found the next.

Runs must be able to read the interpreter, and a pyenv Python lives under a home other users
cannot search (``/root/.pyenv``), so its prefix is copied once into ``<env root>/pythons`` and
the venv is made from the copy (``LD_LIBRARY_PATH`` finds its ``libpython``).

The repository's own package is installed non-editable into the venv from a scratch checkout
(its dependencies and metadata, e.g. entry points); in a run the world's import root comes first
on ``PYTHONPATH``, so the code imported is always the world's own (docs/design.md, "Worlds and
environments"). Building runs pip and the spec's ``pre_install`` on trusted upstream material
(the registry, the repository at its base commit), never on a trial's patch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from vouch.errors import UsageError
from vouch.exec import expose_to_runs, visible_in_runs
from vouch.worlds._files import leads_out, read_world_text
from vouch.worlds._world import _locked, git

__all__ = [
    "EnvCache",
    "EnvFailure",
    "EnvRecipe",
    "Environment",
    "default_env_dir",
    "find_python",
    "generated_files",
    "import_root",
    "scm_version",
]

_PIP_TIMEOUT_S = 1800
_TAIL_LINES = 6
_COPY_IGNORE = shutil.ignore_patterns("test", "tests", "idle_test", "__pycache__", "*.pyc", "tkinter", "turtledemo")
_MANIFEST = "vouch-env.json"
_VARIANT = "vouch-variant.json"
"""Marks a finished variant of an environment (``EnvCache.for_commit``)."""
_FORMAT = 1
"""Bumped when the layout of a built environment changes: older ones are rebuilt."""

EnvProgress = Callable[[str, int, int], None]
"""Called as ``(step, done, total)`` while an environment is built."""


@dataclass(frozen=True)
class EnvRecipe:
    """What an environment holds; its hash names it."""

    name: str
    """A label, e.g. ``psf/requests 2.9``."""
    python: str
    """The Python version, ``3.9`` (the newest patch release found is used)."""
    requirement_files: tuple[str, ...] = ()
    """Repository paths of requirement files, read at the install commit (``pip install -r``)."""
    packages: tuple[str, ...] = ()
    """Requirement specifiers installed first."""
    pip_packages: tuple[str, ...] = ()
    """Pinned requirement specifiers installed after (the spec's ``pip_packages``)."""
    pre_install: tuple[str, ...] = ()
    """Shell commands run in the scratch checkout before the install (the spec's ``pre_install``)."""
    install: tuple[str, ...] = (".",)
    """``pip install`` arguments for the repository itself, run in the scratch checkout."""
    pip: str | None = "pip<24.1"
    """The pip the venv gets first (old setup.py projects need a pip before 24.1); None: ensurepip's."""
    tools: tuple[str, ...] = ("coverage",)
    """What vouch's own in-run code needs besides the tests' packages (branch coverage)."""
    notes: tuple[str, ...] = ()
    """What was mapped or left out while deriving the recipe (e.g. conda-only packages)."""
    digest: str = ""
    """Hash of the inputs read to derive it (the spec, requirement files' text): part of the key."""

    def key(self, python_version: str) -> str:
        """The hash naming this recipe's environment with one exact interpreter version."""
        data = asdict(self) | {"python_version": python_version, "format": _FORMAT}
        # The name (repo and version) stays in: two versions with the same spec still install
        # different trees of the repository, with different dependencies.
        data.pop("notes")
        if data["pip"] == "pip<24.1":
            data.pop("pip")  # at its default, out of the key (keys of environments built before it stay)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Environment:
    """A built environment: a venv whose interpreter runs can start."""

    key: str
    root: Path
    python: Path
    """The venv's interpreter."""
    library_path: Path
    """Where the copied interpreter's ``libpython`` is (``LD_LIBRARY_PATH`` in runs)."""
    python_version: str
    built: bool
    """True when this call built it (False: found in the cache)."""
    build_s: float
    """Seconds this call spent (building, or finding it)."""
    installs: int
    """pip installs this call ran (0 when found in the cache)."""
    notes: tuple[str, ...] = ()

    def run_env(self, world: Path) -> dict[str, str]:
        """Variables a run of this environment's interpreter in ``world`` needs."""
        return {
            "PATH": f"{self.python.parent}:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": str(self.library_path),
            "PYTHONPATH": str(import_root(world)),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "VIRTUAL_ENV": str(self.root),
            "MPLBACKEND": "Agg",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "NUMBA_DISABLE_JIT": "0",
        }

    def record(self) -> dict[str, str]:
        """What a replay file or a task set keeps to run in this environment again."""
        return {
            "key": self.key,
            "root": str(self.root),
            "python": str(self.python),
            "library_path": str(self.library_path),
            "python_version": self.python_version,
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Environment:
        """The environment a ``record`` names (found, not built).

        Raises:
            KeyError: A field is missing.
        """
        return cls(
            key=str(data["key"]),
            root=Path(data["root"]),
            python=Path(data["python"]),
            library_path=Path(data["library_path"]),
            python_version=str(data["python_version"]),
            built=False,
            build_s=0.0,
            installs=0,
        )


@dataclass(frozen=True)
class EnvFailure:
    """An environment that could not be built: the step and pip's (or the tool's) last lines."""

    key: str
    step: str
    reason: str


def default_env_dir() -> Path:
    """``$VOUCH_CACHE/envs`` when set, else ``.vouch/envs`` under the working directory.

    Not the user cache under the home directory: runs cannot search a private home.
    """
    base = os.environ.get("VOUCH_CACHE")
    root = Path(base) / "envs" if base else Path.cwd() / ".vouch" / "envs"
    return root.resolve()


def import_root(world: Path) -> Path:
    """Where a world's package is imported from: ``src/`` for a src layout, else its root."""
    src = world / "src"
    if src.is_dir() and any((child / "__init__.py").is_file() for child in src.iterdir() if child.is_dir()):
        return src
    return world


_WRITE_TO = re.compile(r"""(?:write_to|version_file)["']?\s*[:=]\s*["']([^"']+\.py)["']""")


_DESCRIBED = re.compile(r"v?(\d+(?:\.\d+)*)((?:\.?(?:dev|rc|a|b)\d*)?)-(\d+)-g([0-9a-f]+)")


def scm_version(described: str) -> str:
    """The version setuptools_scm would write for ``git describe --tags --long`` output.

    A tag ``7.2.0.dev0`` at distance 157 is ``7.2.0.dev157+g<sha>``; a release tag ``5.4.1`` at
    distance 593 is ``5.4.1.dev593+g<sha>``; no tag at all is ``0.0.dev0``.
    """
    match = _DESCRIBED.fullmatch(described)
    if not match:
        return "0.0.dev0"
    release, pre, distance, sha = match.groups()
    if distance == "0":
        return release + pre
    if pre and not pre.lstrip(".").startswith("dev"):
        return f"{release}{pre}.post{distance}.dev0+g{sha}"
    return f"{release}.dev{distance}+g{sha}"


def generated_files(world: Path) -> list[str]:
    """Write what an install would generate into a world's tree, and name what was written.

    A setuptools_scm project (pytest) has its version module (``write_to``) written by the
    install; the harness's editable install writes it into the tree, and the package cannot
    be imported without it. vouch writes it from ``git describe`` (data only: nothing of the
    repository runs), so every world carries its own.
    """
    written: list[str] = []
    for config in ("setup.py", "setup.cfg", "pyproject.toml"):
        try:
            text = read_world_text(world, config)
        except (OSError, UnicodeDecodeError):
            continue
        for relative in _WRITE_TO.findall(text):
            target = world / relative
            if os.path.lexists(target) or ".." in Path(relative).parts or Path(relative).is_absolute():
                continue
            version = scm_version(git(["describe", "--tags", "--long", "--always"], cwd=world).stdout.strip())
            if leads_out(world, relative):
                continue  # a directory on the way is a link out of the world: nothing is written there
            target.parent.mkdir(parents=True, exist_ok=True)
            body = (
                "# written by vouch in place of the install's setuptools_scm\n"
                f"version = __version__ = {version!r}\n"
                f"version_tuple = __version_tuple__ = {tuple(version.split('.')[:3])!r}\n"
            )
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "w") as handle:
                handle.write(body)
            os.chmod(target, 0o644)
            written.append(relative)
    return written


def _version_of(python: Path) -> str | None:
    done = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def _release(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


def find_python(version: str, explicit: Mapping[str, str] | None = None) -> Path | None:
    """An interpreter of ``version`` (``3.9``): ``explicit[version]``, else pyenv, else ``uv``.

    Args:
        version: Major.minor.
        explicit: ``--python`` values: version -> path (``*`` for any version).

    Returns:
        The interpreter's path, or None when none is found.
    """
    chosen = dict(explicit or {})
    for name in (version, "*"):
        if name in chosen:
            return Path(chosen[name])
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        found = sorted(
            (p for p in pyenv.iterdir() if re.fullmatch(re.escape(version) + r"\.\d+", p.name)),
            key=lambda p: _release(p.name),
        )
        for prefix in reversed(found):
            binary = prefix / "bin" / f"python{version}"
            if binary.exists():
                return binary
    uv = shutil.which("uv")
    if uv is not None:
        done = subprocess.run([uv, "python", "find", version], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip())
    return None


def _tail(text: str, n: int = _TAIL_LINES) -> str:
    """The last lines that say something: pip ends with notes and hints that name no cause."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    telling = [line for line in lines if not line.startswith(("note:", "hint:", "╰─>", "[end of output]"))]
    errors = [line for line in telling if "error" in line.lower()]
    return " | ".join((errors or telling or lines)[-n:]) or "no output"


class _StepFailed(Exception):
    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason


class EnvCache:
    """Builds and finds environments under one directory, one lock per environment.

    Args:
        root: Directory of the environments; default ``default_env_dir()``. It must be
            readable by runs (not under /tmp, not behind a private home).
        python: ``--python`` values: version -> interpreter path (``*`` for any version).
    """

    def __init__(self, root: Path | str | None = None, python: Mapping[str, str] | None = None) -> None:
        resolved = Path(root).resolve() if root is not None else default_env_dir()
        expose_to_runs(resolved)  # runs start the interpreters made here
        hidden = visible_in_runs(resolved)
        if hidden is not None:
            raise UsageError(
                f"environment directory {str(resolved)!r} cannot be read by runs ({hidden}); "
                "pass --env-dir elsewhere or set VOUCH_CACHE"
            )
        self.root = resolved
        self.python = dict(python or {})
        for sub in ("pythons", "locks", "scratch"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)  # noqa: S103 - runs (another uid) start these interpreters

    # --- interpreters -------------------------------------------------------------------

    def _interpreter(self, version: str) -> tuple[Path, Path, str]:
        """(binary, library dir, exact version) of a copy of the base interpreter runs can read."""
        found = find_python(version, self.python)
        if found is None:
            raise _StepFailed(
                "python", f"no Python {version} found under pyenv or uv; install it or pass --python {version}=PATH"
            )
        exact = _version_of(found)
        if exact is None:
            raise _StepFailed("python", f"{found} does not run")
        if visible_in_runs(found) is None and visible_in_runs(Path(os.path.realpath(found)).parent.parent) is None:
            prefix = Path(os.path.realpath(found)).parent.parent
            return found, prefix / "lib", exact
        prefix = Path(os.path.realpath(found)).parent.parent
        name = f"{exact}-{hashlib.sha256(str(prefix).encode()).hexdigest()[:8]}"
        dest = self.root / "pythons" / name
        with _locked(self.root / "locks" / f"python-{name}.lock"):
            if not (dest / ".complete").exists():
                if dest.exists():
                    shutil.rmtree(dest)
                # Runs cannot search a private home: copy the prefix (without its test suite).
                shutil.copytree(prefix, dest, symlinks=True, ignore=_COPY_IGNORE)
                site = dest / "lib" / f"python{version}" / "site-packages"
                if site.is_dir():
                    shutil.rmtree(site)
                    site.mkdir()
                for where, _dirs, files in os.walk(dest):
                    os.chmod(where, 0o755)  # noqa: S103 - runs start this interpreter
                    for file in files:
                        path = Path(where) / file
                        if not path.is_symlink():
                            os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
                (dest / ".complete").write_text(str(prefix))
        return dest / "bin" / f"python{version}", dest / "lib", exact

    # --- environments -------------------------------------------------------------------

    def get(
        self,
        recipe: EnvRecipe,
        repo: Path,
        commit: str,
        progress: EnvProgress | None = None,
        others: Sequence[str] = (),
        patched: Mapping[str, str] | None = None,
    ) -> Environment | EnvFailure:
        """The environment of ``recipe``, built from ``repo`` at ``commit`` if not cached.

        Args:
            recipe: What to install.
            repo: A git clone holding ``commit`` (requirement files and the install come from it).
            commit: The commit whose tree is installed (any commit of the recipe's version).
            progress: Called per build step.
            others: Other commits of the version whose worlds use the environment. SWE-bench
                installs the repository at each instance's own base commit, so an older commit
                may need a dependency the newest no longer declares (pytest 5.4's ``wcwidth``):
                each is installed once (its dependencies stay), then ``commit`` again, and the
                manifest remembers them, so a later call with the same commits installs nothing.
            patched: Commits of ``others`` to install once more with a patch applied (commit ->
                patch text): SWE-bench builds a version's environment at a commit after its
                instances' fixes, so a dependency a gold patch adds to the packaging files
                (pylint-4661's ``appdirs``) is installed there.

        Returns:
            The Environment, or an EnvFailure naming the step and the tool's last lines (a
            failure is not cached: the next call tries again).
        """
        started = time.monotonic()
        try:
            base, library, exact = self._interpreter(recipe.python)
        except _StepFailed as exc:
            return EnvFailure(key=recipe.key("?"), step=exc.step, reason=exc.reason)
        key = recipe.key(exact)
        venv = self.root / key
        with _locked(self.root / "locks" / f"env-{key}.lock"):
            manifest = venv / _MANIFEST
            if manifest.exists():
                covered = self._cover(recipe, venv, library, repo, commit, others, patched or {}, progress)
                return Environment(
                    key=key,
                    root=venv,
                    python=venv / "bin" / "python",
                    library_path=library,
                    python_version=exact,
                    built=False,
                    build_s=time.monotonic() - started,
                    installs=covered,
                    notes=recipe.notes,
                )
            try:
                installs = self._build(recipe, venv, base, library, repo, commit, progress)
            except _StepFailed as exc:
                shutil.rmtree(venv, ignore_errors=True)
                return EnvFailure(key=key, step=exc.step, reason=exc.reason)
            elapsed = time.monotonic() - started
            freeze = self._pip(venv, library, ["freeze", "--all"], cwd=venv, step="freeze") if installs else ""
            manifest.write_text(
                json.dumps(
                    {
                        "format": _FORMAT,
                        "recipe": asdict(recipe),
                        "python": exact,
                        "base_interpreter": str(base),
                        "install_commit": commit,
                        "build_s": round(elapsed, 1),
                        "freeze": freeze.splitlines(),
                    },
                    indent=1,
                )
            )
            installs += self._cover(recipe, venv, library, repo, commit, others, patched or {}, progress)
            elapsed = time.monotonic() - started
        return Environment(
            key=key,
            root=venv,
            python=venv / "bin" / "python",
            library_path=library,
            python_version=exact,
            built=True,
            build_s=elapsed,
            installs=installs,
            notes=recipe.notes,
        )

    def _cover(
        self,
        recipe: EnvRecipe,
        venv: Path,
        library: Path,
        repo: Path,
        commit: str,
        others: Sequence[str],
        patched: Mapping[str, str],
        progress: EnvProgress | None,
    ) -> int:
        """Install the repository at each of ``others`` not installed yet (and at each commit of
        ``patched`` with its patch applied), then ``commit`` again.

        Returns:
            The pip installs run (0 when every commit was covered before).
        """
        manifest_path = venv / _MANIFEST
        manifest = json.loads(manifest_path.read_text())
        installed = set(manifest.get("installed_commits") or [manifest.get("install_commit")])
        trees = {c: None for c in others if c != commit} | {
            f"{c}+{hashlib.sha256(text.encode()).hexdigest()[:12]}": text for c, text in patched.items()
        }
        missing = [label for label in trees if label not in installed]
        if not missing or not recipe.install:
            return 0
        scratch = self.root / "scratch" / f"{venv.name}-cover"
        shutil.rmtree(scratch, ignore_errors=True)
        installs = 0
        skipped: dict[str, str] = dict(manifest.get("cover_failures") or {})
        try:
            cloned = git(["clone", "--quiet", "--shared", "--no-checkout", str(repo), str(scratch)])
            if cloned.returncode != 0:
                return 0
            for index, other in enumerate([*missing, commit], 1):
                if progress is not None:
                    progress(f"{recipe.name}: install at {other[:10]}", index, len(missing) + 1)
                git(["checkout", "--quiet", "--force", "--detach", other.partition("+")[0]], cwd=scratch)
                git(["clean", "-fdxq"], cwd=scratch)
                patch = trees.get(other)
                if patch is not None and git(["apply", "-"], cwd=scratch, stdin=patch).returncode != 0:
                    skipped[other] = "the patch does not apply"
                    installed.add(other)
                    continue
                for command in recipe.pre_install:
                    subprocess.run(
                        ["/bin/sh", "-c", command], cwd=scratch, capture_output=True, timeout=600, check=False
                    )
                # ``commit`` comes last, so that its package and its constraints win; what only
                # an older commit needed (a dependency since dropped) stays.
                try:
                    self._pip(venv, library, ["install", *recipe.install], cwd=scratch, step=f"install at {other[:10]}")
                except _StepFailed as exc:
                    skipped[other] = exc.reason[:300]  # that commit's worlds may still run
                installs += 1
                installed.add(other)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        manifest["installed_commits"] = sorted(installed)
        manifest["cover_failures"] = skipped
        manifest["freeze"] = self._pip(venv, library, ["freeze", "--all"], cwd=venv, step="freeze").splitlines()
        manifest_path.write_text(json.dumps(manifest, indent=1))
        return installs

    def for_commit(self, env: Environment, recipe: EnvRecipe, repo: Path, commit: str) -> Environment:
        """The environment of worlds at ``commit``: ``env``, or a variant of it with the packages
        the repository at ``commit`` pins differently.

        SWE-bench installs the repository at each instance's own base commit, so pip moves a
        dependency the commit pins elsewhere (pylint 2.15's newest commit wants astroid 2.13,
        7080's ``<=2.12.0-dev0``). A version shares one environment; what one commit needs
        besides is asked of pip once (a dry run at the commit), and the variant is a copy of the
        environment (hard links) with just those packages installed over it.

        Returns:
            ``env`` when nothing differs (or pip cannot tell, or the variant fails to install),
            else the variant, whose key names the commit.
        """
        if not recipe.install:
            return env
        manifest_path = env.root / _MANIFEST
        with _locked(self.root / "locks" / f"env-{env.key}.lock"):
            manifest = json.loads(manifest_path.read_text())
            variants: dict[str, list[str]] = manifest.setdefault("variants", {})
            if commit not in variants:
                variants[commit] = self._differing(recipe, env, manifest, repo, commit)
                manifest_path.write_text(json.dumps(manifest, indent=1))
            pins = variants[commit]
            if not pins:
                return env
            key = f"{env.key}+{commit[:12]}"
            root = self.root / key
            done = root / _VARIANT
            if not done.exists():
                shutil.rmtree(root, ignore_errors=True)
                try:
                    copied = subprocess.run(["cp", "-al", str(env.root), str(root)], capture_output=True, check=False)
                    if copied.returncode != 0:
                        shutil.copytree(env.root, root, symlinks=True)
                    # The copy's files share the environment's inodes: pip replaces the packages
                    # it installs (new files), and nothing is written in place.
                    (root / _MANIFEST).unlink()
                    self._pip(
                        root,
                        env.library_path,
                        ["install", "--no-deps", "--no-compile", *pins],
                        cwd=root,
                        step=f"variant at {commit[:10]}",
                    )
                except (_StepFailed, OSError):
                    shutil.rmtree(root, ignore_errors=True)
                    return env
                done.write_text(json.dumps({"format": _FORMAT, "of": env.key, "commit": commit, "packages": pins}))
        note = f"at {commit[:12]}: {', '.join(pins)} (the repository there pins them)"
        return replace(env, key=key, root=root, python=root / "bin" / "python", notes=(*env.notes, note))

    def _differing(
        self, recipe: EnvRecipe, env: Environment, manifest: dict[str, Any], repo: Path, commit: str
    ) -> list[str]:
        """``name==version`` of what installing the repository at ``commit`` would change,
        less the repository's own distribution (a pip dry run; empty when pip cannot tell)."""
        frozen = dict(line.split("==", 1) for line in manifest.get("freeze") or [] if "==" in line)
        frozen = {name.lower(): version for name, version in frozen.items()}
        scratch = self.root / "scratch" / f"{env.root.name}-dry"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            if git(["clone", "--quiet", "--shared", "--no-checkout", str(repo), str(scratch)]).returncode != 0:
                return []
            if git(["checkout", "--quiet", "--force", "--detach", commit], cwd=scratch).returncode != 0:
                return []
            for command in recipe.pre_install:
                subprocess.run(["/bin/sh", "-c", command], cwd=scratch, capture_output=True, timeout=600, check=False)
            report = scratch / ".vouch-dry-run.json"
            try:
                self._pip(
                    env.root,
                    env.library_path,
                    ["install", "--dry-run", "--quiet", "--report", str(report), *recipe.install],
                    cwd=scratch,
                    step="dry run",
                )
                items = json.loads(report.read_text()).get("install") or []
            except (_StepFailed, OSError, ValueError):
                return []
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        out = []
        for item in items:
            meta = item.get("metadata") or {}
            name, version = str(meta.get("name", "")), str(meta.get("version", ""))
            # What was asked for is the repository itself (its tree, with extras); the rest is
            # what it pulls in.
            if name and not item.get("requested") and frozen.get(name.lower()) != version:
                out.append(f"{name}=={version}")
        return sorted(out)

    def _pip(self, venv: Path, library: Path, args: Sequence[str], *, cwd: Path, step: str) -> str:
        env = {
            "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LD_LIBRARY_PATH": str(library),
            "HOME": os.environ.get("HOME", str(cwd)),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "PIP_PROGRESS_BAR": "off",
            "LANG": "C.UTF-8",
            "VIRTUAL_ENV": str(venv),
        }
        for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CACHE_DIR", "PIP_FIND_LINKS", "SSL_CERT_FILE"):
            if name in os.environ:
                env[name] = os.environ[name]
        try:
            done = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", *args],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=_PIP_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise _StepFailed(step, f"pip {' '.join(args[:3])} ran past {_PIP_TIMEOUT_S} s") from None
        if done.returncode != 0:
            raise _StepFailed(step, _tail(done.stdout + "\n" + done.stderr))
        return done.stdout

    def _build(
        self,
        recipe: EnvRecipe,
        venv: Path,
        base: Path,
        library: Path,
        repo: Path,
        commit: str,
        progress: EnvProgress | None,
    ) -> int:
        steps: list[tuple[str, list[str]]] = [("pip", ["install", recipe.pip])] if recipe.pip else []
        if recipe.packages:
            steps.append(("packages", ["install", *recipe.packages]))
        for path in recipe.requirement_files:
            steps.append((f"requirements {path}", ["install", "-r", path]))
        if recipe.pip_packages:
            steps.append(("pip_packages", ["install", *recipe.pip_packages]))
        if recipe.install:
            steps.append(("install", ["install", *recipe.install]))
        if recipe.tools:
            steps.append(("tools", ["install", *recipe.tools]))
        total = len(steps) + 2
        if venv.exists():
            shutil.rmtree(venv)
        scratch = self.root / "scratch" / venv.name
        shutil.rmtree(scratch, ignore_errors=True)

        def tell(step: str, done: int) -> None:
            if progress is not None:
                progress(f"{recipe.name}: {step}", done, total)

        tell("venv", 0)
        made = subprocess.run(
            [str(base), "-m", "venv", *([] if steps else ["--without-pip"]), str(venv)],
            env={**os.environ, "LD_LIBRARY_PATH": str(library)},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if made.returncode != 0:
            raise _StepFailed("venv", _tail(made.stdout + made.stderr))
        tell("checkout", 1)
        cloned = git(["clone", "--quiet", "--shared", "--no-checkout", str(repo), str(scratch)])
        if cloned.returncode != 0:
            raise _StepFailed("checkout", _tail(cloned.stderr))
        checked = git(["checkout", "--quiet", "--detach", commit], cwd=scratch)
        if checked.returncode != 0:
            raise _StepFailed("checkout", _tail(checked.stderr))
        try:
            for command in recipe.pre_install:
                done = subprocess.run(
                    ["/bin/sh", "-c", command], cwd=scratch, capture_output=True, text=True, timeout=600, check=False
                )
                if done.returncode != 0:
                    raise _StepFailed("pre_install", f"{command!r}: {_tail(done.stdout + done.stderr)}")
            for index, (step, args) in enumerate(steps, 2):
                tell(step, index)
                self._pip(venv, library, args, cwd=scratch, step=step)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        for where, _, names in os.walk(venv):
            os.chmod(where, 0o755)  # noqa: S103 - runs read the environment
            for name in names:
                entry = Path(where) / name
                if not entry.is_symlink():
                    mode = entry.stat().st_mode
                    os.chmod(entry, mode | 0o444 | (0o111 if mode & 0o100 else 0))
        tell("done", total)
        return len(steps)
