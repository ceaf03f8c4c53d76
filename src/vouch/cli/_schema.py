"""``vouch schema KIND``: the JSON Schema of a results file vouch writes, from its pydantic model."""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from vouch.errors import UsageError

__all__ = ["KINDS", "ResultsKind", "results_schema", "schema_command"]

_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic writes; named so that validators do not have to guess it."""


@dataclass(frozen=True)
class ResultsKind:
    """One kind of results file and the model it is written from."""

    model: str
    """``module:Class`` of the pydantic model, imported only when its schema is asked for."""
    written_by: str
    """The commands that write it."""
    body_modelled: bool = True
    """False when only the envelope is a model and the rest is built as a dict: the schema then
    checks the envelope and lets every other property through."""


KINDS: dict[str, ResultsKind] = {
    "audit": ResultsKind(
        "vouch.audit:AuditResults",
        "vouch audit humaneval|swe|inspect --json; vouch demo (audit.json, audit-swe.json)",
    ),
    "export": ResultsKind("vouch.core:ExportManifest", "vouch export --out DIR (manifest.json)"),
    "exec": ResultsKind("vouch.core:ExecReport", "vouch exec --json"),
    "swe-harness": ResultsKind("vouch.swebench._harness:HarnessReproduction", "vouch audit swe --harness-only --json"),
    "vouch-task-build": ResultsKind("vouch.core:Manifest", "vouch data build (manifest.json)"),
    "bench": ResultsKind("vouch.core:Envelope", "vouch bench score --json", body_modelled=False),
    "baselines": ResultsKind(
        "vouch.core:Envelope", "vouch bench baselines --json; vouch demo (baselines.json)", body_modelled=False
    ),
    "v4v": ResultsKind("vouch.core:Envelope", "vouch v4v --json; vouch demo (v4v.json)", body_modelled=False),
    "generate": ResultsKind("vouch.core:Envelope", "vouch bench generate --json", body_modelled=False),
}
"""Every results kind ``vouch schema`` knows, by the ``kind`` its files carry."""


def _model(kind: ResultsKind) -> type[BaseModel]:
    module, _, name = kind.model.partition(":")
    model: type[BaseModel] = getattr(importlib.import_module(module), name)
    return model


def _lookup(name: str) -> ResultsKind:
    if name not in KINDS:
        raise UsageError(f"unknown results kind {name!r}: choose one of {', '.join(KINDS)}")
    return KINDS[name]


def schema_version(name: str) -> int:
    """The ``schema_version`` that files of kind ``name`` carry (the model's default)."""
    version: int = _model(_lookup(name)).model_fields["schema_version"].default
    return version


def results_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of results kind ``name``: pydantic's ``model_json_schema()`` of its model.

    Args:
        name: A key of ``KINDS``.

    Returns:
        The schema, with ``$schema`` (its dialect), ``x-vouch-kind``, ``x-vouch-schema-version``
        and ``x-vouch-model`` added; for a kind whose body is not modelled, ``kind`` is pinned
        to ``name`` and properties beyond the envelope are allowed.

    Raises:
        UsageError: ``name`` is not a known kind.
    """
    kind = _lookup(name)
    model = _model(kind)
    body = model.model_json_schema()
    if not kind.body_modelled:
        body["title"] = f"{name} results"
        body["description"] = (
            f"{model.__doc__ or ''} Only the envelope is modelled; the rest of a {name} file is not described here."
        ).strip()
        body["properties"]["kind"] = {**body["properties"]["kind"], "const": name}
        body["additionalProperties"] = True
    head = {
        "$schema": _DIALECT,
        "x-vouch-kind": name,
        "x-vouch-schema-version": model.model_fields["schema_version"].default,
        "x-vouch-model": kind.model.replace(":", "."),
    }
    return head | body


@click.command("schema")
@click.argument("kind", required=False)
@click.option("--list", "list_kinds", is_flag=True, help="List the results kinds and their schema versions.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), help="Write the schema here.")
def schema_command(kind: str | None, list_kinds: bool, out_file: Path | None) -> None:
    """Print the JSON Schema of results KIND (audit, bench, v4v, ...), with its schema_version."""
    if list_kinds:
        width = max(map(len, KINDS))
        for name, k in KINDS.items():
            body = "" if k.body_modelled else " (envelope only)"
            click.echo(f"{name:<{width}}  schema_version {schema_version(name)}  {k.written_by}{body}")
        return
    if kind is None:
        raise UsageError(f"give a results kind ({', '.join(KINDS)}) or --list")
    text = json.dumps(results_schema(kind), indent=2) + "\n"
    if out_file is None:
        click.echo(text, nl=False)
        return
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(text)
    click.echo(f"wrote {out_file}", err=True)
