"""The corpus registry: lookup order, a checked download, ``vouch data corpora``, and a package
that ships nothing copied or derived from another public repository."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from _cli import run_vouch
from _shared_data import SHARED_DATA
from vouch import corpora

ROOT = Path(__file__).resolve().parents[2]
SHARED = SHARED_DATA
PACKAGE_DATA = ROOT / "src" / "vouch" / "data"
CODET = corpora.CORPORA[corpora.CODET_HUMANEVAL]


@pytest.fixture
def no_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No $VOUCH_DATA_DIR and an empty cache under tmp_path."""
    monkeypatch.delenv(corpora.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _put(directory: Path, corpus: corpora.Corpus, content: bytes | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / corpus.file
    path.write_bytes(content if content is not None else b"x" * corpus.size)
    return path


def test_the_registered_files_are_the_shared_ones() -> None:
    for c in corpora.CORPORA.values():
        path = SHARED / c.file
        assert path.stat().st_size == c.size, c.name
        assert corpora.sha256_of(path) == c.sha256, c.name
        assert c.source.startswith("https://github.com/"), c.name
        assert c.licence


def test_lookup_order_data_dir_then_env_then_cache(no_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, cache = no_dirs / "explicit", no_dirs / "env", corpora.cache_dir()
    assert cache == no_dirs / "cache" / "vouch" / "data"
    assert corpora.find(CODET, explicit) is None
    in_cache = _put(cache, CODET)
    assert corpora.find(CODET, explicit) == in_cache
    monkeypatch.setenv(corpora.DATA_DIR_ENV, str(env))
    in_env = _put(env, CODET)
    assert corpora.find(CODET) == in_env
    in_explicit = _put(explicit, CODET)
    assert corpora.find(CODET, explicit) == in_explicit
    assert [what for what, _ in corpora.data_dirs(explicit)] == ["--data-dir", "$VOUCH_DATA_DIR", "cache"]


def test_a_file_of_the_wrong_size_is_one_clear_line(no_dirs: Path) -> None:
    _put(no_dirs / "d", CODET, b"short")
    with pytest.raises(corpora.CorpusError) as err:
        corpora.find(CODET, no_dirs / "d")
    assert "5 bytes" in str(err.value) and "\n" not in str(err.value)


def test_absent_without_a_download_address_says_where_to_put_it(no_dirs: Path) -> None:
    with pytest.raises(corpora.CorpusError) as err:
        corpora.resolve(corpora.HUMANEVAL_3MODELS)
    message = str(err.value)
    assert "\n" not in message
    assert "humaneval_3models_samples.jsonl" in message and str(corpora.cache_dir()) in message


class _Server:
    def __init__(self, body: bytes) -> None:
        payload = body

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/corpus.jsonl"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


BODY = b'{"prompt": "def f():\\n", "samples": ["    return 1\\n"]}\n' * 5000


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    s = _Server(BODY)
    try:
        yield s
    finally:
        s.close()


def _served(server: _Server, sha256: str) -> corpora.Corpus:
    return dataclasses.replace(
        CODET, name="loopback", file="loopback.jsonl", size=len(BODY), sha256=sha256, url=server.url
    )


def test_a_missing_corpus_is_downloaded_checked_and_moved_into_place(no_dirs: Path, server: _Server) -> None:
    c = _served(server, hashlib.sha256(BODY).hexdigest())
    path = corpora.resolve(c)
    assert path == corpora.cache_dir() / "loopback.jsonl"
    assert path.read_bytes() == BODY
    assert [p.name for p in path.parent.iterdir()] == ["loopback.jsonl"]  # no temporary file left
    assert corpora.resolve(c) == path  # found now: not fetched again


def test_a_checksum_mismatch_keeps_nothing_and_is_one_line(no_dirs: Path, server: _Server) -> None:
    c = _served(server, "0" * 64)
    target = no_dirs / "into"
    with pytest.raises(corpora.CorpusError) as err:
        corpora.resolve(c, target)
    message = str(err.value)
    assert "\n" not in message and "sha256" in message and "nothing was kept" in message
    assert list(target.iterdir()) == []  # the temporary file is gone, nothing moved into place


def test_offline_is_one_line_saying_where_to_put_the_file(no_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    closed = _Server(BODY)
    closed.close()  # nothing listens on its port any more
    c = dataclasses.replace(CODET, name="loopback", file="loopback.jsonl", url=closed.url)
    with pytest.raises(corpora.CorpusError) as err:
        corpora.resolve(c, no_dirs / "into")
    message = str(err.value)
    assert "\n" not in message and "cannot be fetched" in message and str(no_dirs / "into") in message
    assert list((no_dirs / "into").iterdir()) == []


def test_vouch_data_corpora_lists_the_registry_and_where_each_is(
    no_dirs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    result = run_vouch(capsys, "data", "corpora", "--data-dir", str(SHARED))
    assert result.exit_code == 0, result.output
    for c in corpora.CORPORA.values():
        assert c.name in result.output and c.sha256 in result.output and c.source in result.output
    assert str(SHARED / CODET.file) in result.output
    missing = run_vouch(capsys, "data", "corpora")
    assert missing.exit_code == 0 and missing.output.count("missing") == len(corpora.CORPORA)


def test_vouch_data_get_prints_the_path_or_one_line_and_exit_2(
    no_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = run_vouch(capsys, "data", "get", corpora.CODET_HUMANEVAL, "--data-dir", str(SHARED))
    assert found.exit_code == 0 and found.output.strip() == str(SHARED / CODET.file)
    missing = run_vouch(capsys, "data", "get", corpora.HUMANEVAL_3MODELS)
    assert missing.exit_code == 2


def test_the_demo_slice_is_derived_from_the_corpus() -> None:
    samples = corpora.demo_samples()
    assert len(samples) == corpora.DEMO_TASKS * corpora.DEMO_PER_TASK
    assert {s["task_id"] for s in samples} == {f"HumanEval/{i}" for i in range(corpora.DEMO_TASKS)}
    by_task = corpora.codet_humaneval()
    assert len(by_task) == 164 and all(len(v) == 100 for v in by_task.values())


# Files of vouch's own that ship as package data and are larger than the limit, with the reason.
ALLOWED_LARGE: dict[str, str] = {}
LARGE = 20_000


def test_the_package_ships_nothing_copied_or_derived_from_a_public_corpus() -> None:
    files = [p for p in PACKAGE_DATA.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert files, PACKAGE_DATA
    stems = {Path(c.file).stem for c in corpora.CORPORA.values()} | {"codegen16b", "3models", "codet"}
    hashes = {c.sha256 for c in corpora.CORPORA.values()}
    for path in files:
        rel = path.relative_to(PACKAGE_DATA).as_posix()
        assert not any(stem in path.name.lower() for stem in stems), f"{rel} is named after a registered corpus"
        assert path.stat().st_size <= LARGE or rel in ALLOWED_LARGE, f"{rel} is {path.stat().st_size} bytes"
        assert corpora.sha256_of(path) not in hashes, f"{rel} is a registered corpus"
        if path.suffix in (".jsonl", ".json"):
            text = path.read_text()
            assert '"samples"' not in text and "CodeGen" not in text, f"{rel} holds CodeT rows"
    assert not (ROOT / "scripts" / "derive_humaneval_samples.py").exists()
