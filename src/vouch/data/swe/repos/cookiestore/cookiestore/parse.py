"""Parsing a Set-Cookie header value into a cookie record."""

from typing import Any


def parse_set_cookie(header: str) -> dict[str, Any]:
    """Parse ``name=value; Attr=val; Flag`` into a record.

    The record has ``name``, ``value``, ``domain`` (None unless the header has one), ``path``
    (default ``/``), ``secure`` and ``expires`` (the raw attribute text, or None).
    """
    first, *attributes = [part.strip() for part in header.split(";")]
    name, sep, value = first.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"Set-Cookie without a name: {header!r}")
    record: dict[str, Any] = {
        "name": name.strip(),
        "value": value.strip(),
        "domain": None,
        "path": "/",
        "secure": False,
        "expires": None,
    }
    for attribute in attributes:
        key, _, val = attribute.partition("=")
        key = key.strip().lower()
        if key == "domain" and val.strip():
            record["domain"] = val.strip()
        elif key == "path" and val.strip().startswith("/"):
            record["path"] = val.strip()
        elif key == "secure":
            record["secure"] = True
        elif key == "expires":
            record["expires"] = val.strip()
    return record
